/**
 * The daemon's read queue: files with something new to read, worked through by one reader so a
 * file is never read twice at once and a burst of events on one file costs one read.
 *
 * A file is read at most once every `spacingMs` (watch.read_spacing): an event within that time
 * of the file's last read waits for the rest of it, and every event meanwhile joins the same read.
 * A file written once a second is read at each write, as soon as it is written; one written 20
 * times a second (a stress, or a logger that flushes every line) is read four times a second, a
 * few lines at a time, not once per line: each read costs system calls, the merge of the round's
 * files and an evaluation of the detectors that judge a read (Vector's file source waits 1 s
 * between looks at a file, Filebeat's backoff starts at 1 s).
 */
import type { ReadOutcome } from '../sources/tailer.js';
import { breathe, breatheDue } from '../util/breathe.js';

/**
 * Longer than chokidar's change-event throttle (50 ms), and than the gap between a steady
 * writer's appends (100 ms at 10 Hz), so steady writers cost no extra reads; see recheck.
 */
const RECHECK_MS = 150;

export interface ReadQueueOptions {
  /** Reads what is new in a file: 'more' when it stopped before the end, 'gone' when the file is gone. */
  read: (file: string) => Promise<ReadOutcome>;
  /** A file was removed. */
  gone: (file: string) => Promise<void>;
  now: () => number;
  /** Least time between two reads of one file (ms); 0 reads at every event. */
  spacingMs?: number;
}

export class ReadQueue {
  private readonly queue = new Set<string>();
  private working: Promise<void> | null = null;
  private readonly rechecks = new Map<string, NodeJS.Timeout>();
  /** When each queued file was queued (ms): the ingest lag. */
  private readonly queuedAt = new Map<string, number>();
  /** When each file's last read began (performance.now() ms), for the spacing. */
  private readonly lastRead = new Map<string, number>();
  /** Files whose read waits for the spacing, and the timer that queues each. */
  private readonly spaced = new Map<string, NodeJS.Timeout>();
  /** Resolves the waiters of idle() once no read waits for its spacing. */
  private spacedDone: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly opts: ReadQueueOptions) {}

  /** Files waiting to be read, those waiting for their spacing included. */
  get size(): number {
    return this.queue.size + this.spaced.size;
  }

  /** When the file that has waited longest was queued, or null when nothing waits. */
  oldestQueuedAt(): number | null {
    let oldest: number | null = null;
    for (const at of this.queuedAt.values()) oldest = oldest === null ? at : Math.min(oldest, at);
    return oldest;
  }

  /** Queues a file for reading: now, or once its spacing since its last read has passed. */
  schedule(file: string): void {
    if (this.stopped || this.spaced.has(file)) return;
    if (!this.queuedAt.has(file)) this.queuedAt.set(file, this.opts.now());
    const wait = (this.lastRead.get(file) ?? -Infinity) + (this.opts.spacingMs ?? 0) - performance.now();
    if (wait > 0 && !this.queue.has(file)) {
      const t = setTimeout(() => {
        this.spaced.delete(file);
        this.enqueue(file);
        if (this.spaced.size === 0) for (const done of this.spacedDone.splice(0)) done();
      }, Math.ceil(wait));
      // Not unref'd: the read is owed (stop() clears it).
      this.spaced.set(file, t);
      return;
    }
    this.enqueue(file);
  }

  private enqueue(file: string): void {
    this.queue.add(file);
    this.working ??= this.work().finally(() => {
      this.working = null;
    });
  }

  /**
   * chokidar drops a file's change events for 50 ms after one it emits (leading edge only), so a
   * write inside that window raises nothing. One more read RECHECK_MS after a file's latest event
   * picks such a write up without waiting for the sweep.
   */
  recheck(file: string): void {
    clearTimeout(this.rechecks.get(file));
    const t = setTimeout(() => {
      this.rechecks.delete(file);
      this.schedule(file);
    }, RECHECK_MS);
    t.unref();
    this.rechecks.set(file, t);
  }

  private async work(): Promise<void> {
    while (this.queue.size > 0) {
      // Reads of local files are synchronous: between two, /healthz, timers and signals get their turn.
      if (breatheDue()) await breathe();
      const file = this.queue.values().next().value as string;
      this.queue.delete(file);
      this.lastRead.set(file, performance.now());
      const out = await this.opts.read(file);
      if (out === 'more') {
        this.queue.add(file);
        continue;
      }
      this.queuedAt.delete(file);
      if (out === 'gone') {
        this.lastRead.delete(file);
        await this.opts.gone(file);
      }
    }
  }

  /** Resolves when every queued read is done, those waiting for their spacing included. */
  async idle(): Promise<void> {
    for (;;) {
      if (this.spaced.size > 0) await new Promise<void>((resolve) => this.spacedDone.push(resolve));
      else if (this.working !== null) await this.working;
      else return;
    }
  }

  /** Drops what is queued and waits for the read under way; nothing is queued after. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.rechecks.values()) clearTimeout(t);
    this.rechecks.clear();
    for (const t of this.spaced.values()) clearTimeout(t);
    this.spaced.clear();
    for (const done of this.spacedDone.splice(0)) done();
    this.queue.clear();
    await this.idle();
  }
}
