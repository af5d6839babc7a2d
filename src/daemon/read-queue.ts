/**
 * The daemon's read queue: files with something new to read, worked through by one reader so a
 * file is never read twice at once and a burst of events on one file costs one read.
 */
import type { ReadOutcome } from '../sources/tailer.js';
import { breathe } from '../util/breathe.js';

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
}

export class ReadQueue {
  private readonly queue = new Set<string>();
  private working: Promise<void> | null = null;
  private readonly rechecks = new Map<string, NodeJS.Timeout>();
  /** When each queued file was queued (ms): the ingest lag. */
  private readonly queuedAt = new Map<string, number>();
  private stopped = false;

  constructor(private readonly opts: ReadQueueOptions) {}

  get size(): number {
    return this.queue.size;
  }

  /** When the file that has waited longest was queued, or null when nothing waits. */
  oldestQueuedAt(): number | null {
    let oldest: number | null = null;
    for (const at of this.queuedAt.values()) oldest = oldest === null ? at : Math.min(oldest, at);
    return oldest;
  }

  /** Queues a file for reading. */
  schedule(file: string): void {
    if (this.stopped) return;
    this.queue.add(file);
    if (!this.queuedAt.has(file)) this.queuedAt.set(file, this.opts.now());
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
      await breathe();
      const file = this.queue.values().next().value as string;
      this.queue.delete(file);
      const out = await this.opts.read(file);
      if (out === 'more') {
        this.queue.add(file);
        continue;
      }
      this.queuedAt.delete(file);
      if (out === 'gone') await this.opts.gone(file);
    }
  }

  /** Resolves when every queued read is done. */
  async idle(): Promise<void> {
    while (this.working !== null) await this.working;
  }

  /** Drops what is queued and waits for the read under way; nothing is queued after. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.rechecks.values()) clearTimeout(t);
    this.rechecks.clear();
    this.queue.clear();
    await this.idle();
  }
}
