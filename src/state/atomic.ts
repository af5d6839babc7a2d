/**
 * Replacing a file so that a crash at any moment leaves either the old file or the new one: write
 * a temporary file, fsync it, rename it over the target, fsync the folder. The temporary file is
 * created exclusively and 0600 (a symlink planted in its place is removed, never written through)
 * and the rename replaces whatever is at the target, a symlink included, without following it.
 */
import { promises as fsp, writeSync } from 'node:fs';
import path from 'node:path';
import { CREATE_EXCLUSIVE, PRIVATE_FILE_MODE } from './private.js';

/** Pieces are copied into a buffer of this size and written when it fills. */
const WRITE_BUFFER = 1 << 20;

/** UTF-8 takes at most this many bytes for a UTF-16 code unit of a string. */
const MOST_BYTES_PER_UNIT = 3;

/** A piece is cut where the buffer has room for fewer units than this: the buffer is written first. */
const LEAST_CUT = 4096;

/**
 * The pieces of a text: given, or pushed by a function into the sink it is handed (the same shape
 * as util/pieces.ts's PieceSink). A function's pieces are written as it pushes them.
 */
export type Pieces = readonly string[] | ((sink: { push(...pieces: string[]): unknown }) => void);

/**
 * The one write buffer: pieces are written synchronously, one save at a time, so no save lends it
 * to another (a fresh 1 MiB buffer for each save was mapped and faulted in page by page).
 */
let shared: Buffer | null = null;

/**
 * Writes pieces one after the other through one buffer, synchronously: no string of the whole
 * text is built, and each piece is written while it is the newest thing on the heap. A state of
 * 200 runs is 24 MB of pieces; held until an asynchronous write had taken them all, they outlived
 * four or five young-generation collections, each copying them (9-22 ms a collection, 4-5 MB
 * promoted each) into the old generation, which then needed a full collection to give them back.
 * A piece is encoded once, straight into the buffer, in cuts that surely fit (three bytes a unit
 * at most): Buffer.byteLength would read every piece once more.
 */
class WriteSink {
  private used = 0;
  /** Bytes written so far. */
  written = 0;

  constructor(
    private readonly fd: number,
    private readonly buf: Buffer,
  ) {}

  push(...pieces: string[]): void {
    for (const piece of pieces) this.put(piece);
  }

  private put(piece: string): void {
    const buf = this.buf;
    for (let at = 0; at < piece.length;) {
      const room = Math.floor((buf.length - this.used) / MOST_BYTES_PER_UNIT);
      if (room < piece.length - at && room < LEAST_CUT) {
        this.flush();
        continue;
      }
      // A piece longer than the room goes in cuts (a slice shares the piece's characters, no
      // copy), never between the two halves of a surrogate pair.
      let end = Math.min(piece.length, at + room);
      if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end--;
      this.used += buf.write(at === 0 && end === piece.length ? piece : piece.slice(at, end), this.used);
      at = end;
    }
  }

  flush(): void {
    for (let at = 0; at < this.used;) at += writeSync(this.fd, this.buf, at, this.used - at);
    this.written += this.used;
    this.used = 0;
  }
}

/** Writes the pieces; the bytes written. */
function writePieces(fd: number, pieces: Pieces): number {
  const sink = new WriteSink(fd, (shared ??= Buffer.allocUnsafe(WRITE_BUFFER)));
  if (typeof pieces === 'function') pieces(sink);
  else for (const piece of pieces) sink.push(piece);
  sink.flush();
  return sink.written;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/** Creates `tmp` exclusively; a leftover (an interrupted save, or a planted symlink) is unlinked first. */
async function openExclusive(tmp: string): Promise<fsp.FileHandle> {
  try {
    return await fsp.open(tmp, CREATE_EXCLUSIVE, PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  await fsp.unlink(tmp);
  return fsp.open(tmp, CREATE_EXCLUSIVE, PRIVATE_FILE_MODE);
}

/**
 * Replaces `file` with `data` (a text, or the pieces of one) so that a crash at any moment leaves
 * either the old file or the new one. Resolves to the bytes written.
 */
export async function writeAtomic(file: string, data: string | Pieces): Promise<number> {
  const tmp = `${file}.tmp`;
  const fh = await openExclusive(tmp);
  let bytes: number;
  try {
    await fh.chmod(PRIVATE_FILE_MODE);
    if (typeof data === 'string') {
      await fh.writeFile(data, 'utf8');
      bytes = Buffer.byteLength(data, 'utf8');
    } else bytes = writePieces(fh.fd, data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, file);
  try {
    const dir = await fsp.open(path.dirname(file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch {
    // Some file systems refuse fsync on a folder; the rename is still atomic.
  }
  return bytes;
}
