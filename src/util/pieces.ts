/**
 * Where the pieces of one text go, one after the other: an array that keeps them, or the state
 * save's write buffer (state/atomic.ts), which writes each piece as it comes so that no piece
 * outlives the moment it is written.
 */
export interface PieceSink {
  push(...pieces: string[]): unknown;
}
