/**
 * A progress line on a terminal for work that takes a while: nothing for the first second (short
 * inputs print nothing), then the latest text at most four times a second, erased at the end.
 * Off a terminal it prints nothing, so pipes and logs stay clean.
 */
export class ProgressLine {
  private readonly started = Date.now();
  private last = 0;
  private shown = false;

  constructor(
    /** null: none (the caller logs what it does instead). */
    private readonly stream: NodeJS.WriteStream | null,
    private readonly delayMs = 1000,
  ) {}

  update(text: string): void {
    if (this.stream?.isTTY !== true) return;
    const now = Date.now();
    if (now - this.started < this.delayMs || now - this.last < 250) return;
    this.last = now;
    this.shown = true;
    this.stream.write(`\r\x1b[K${text}`);
  }

  clear(): void {
    if (this.shown) this.stream?.write('\r\x1b[K');
    this.shown = false;
  }
}
