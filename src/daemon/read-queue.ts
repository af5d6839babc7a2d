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

/**
 * What the queue knows of one file, found with one lookup per event: a daemon following hundreds
 * of files touched four maps and a set keyed by the file's path at each event and each read.
 */
interface Slot {
  readonly file: string;
  /** When it was queued (ms, opts.now()), NaN while not queued: the ingest lag. */
  queuedAt: number;
  /** When its last read began (performance.now() ms), for the spacing; -Infinity before any. */
  lastRead: number;
  /** Whether it is in `queue` (waiting for the reader, not for its spacing). */
  queued: boolean;
  /** The timer that queues it once its spacing has passed, while it waits for that. */
  spaced: NodeJS.Timeout | null;
}

export class ReadQueue {
  /** Files queued for the reader, first come first read; each at most once (Slot.queued). */
  private queue: Slot[] = [];
  private head = 0;
  private working: Promise<void> | null = null;
  private readonly rechecks = new Map<string, NodeJS.Timeout>();
  private readonly slots = new Map<string, Slot>();
  /** Files waiting for their spacing (Slot.spaced set). */
  private spacedCount = 0;
  /** Resolves the waiters of idle() once no read waits for its spacing. */
  private spacedDone: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly opts: ReadQueueOptions) {}

  /** Files waiting to be read, those waiting for their spacing included. */
  get size(): number {
    return this.queue.length - this.head + this.spacedCount;
  }

  /** When the file that has waited longest was queued, or null when nothing waits. */
  oldestQueuedAt(): number | null {
    let oldest: number | null = null;
    for (const slot of this.slots.values())
      if (!Number.isNaN(slot.queuedAt)) oldest = oldest === null ? slot.queuedAt : Math.min(oldest, slot.queuedAt);
    return oldest;
  }

  private slotOf(file: string): Slot {
    let slot = this.slots.get(file);
    if (slot === undefined) {
      slot = { file, queuedAt: NaN, lastRead: -Infinity, queued: false, spaced: null };
      this.slots.set(file, slot);
    }
    return slot;
  }

  /** Queues a file for reading: now, or once its spacing since its last read has passed. */
  schedule(file: string): void {
    if (this.stopped) return;
    const slot = this.slotOf(file);
    if (slot.spaced !== null) return;
    if (Number.isNaN(slot.queuedAt)) slot.queuedAt = this.opts.now();
    const wait = slot.lastRead + (this.opts.spacingMs ?? 0) - performance.now();
    if (wait > 0 && !slot.queued) {
      // Not unref'd: the read is owed (stop() clears it).
      slot.spaced = setTimeout(() => {
        slot.spaced = null;
        this.spacedCount--;
        this.enqueue(slot);
        if (this.spacedCount === 0) for (const done of this.spacedDone.splice(0)) done();
      }, Math.ceil(wait));
      this.spacedCount++;
      return;
    }
    this.enqueue(slot);
  }

  private enqueue(slot: Slot): void {
    if (!slot.queued) {
      slot.queued = true;
      this.queue.push(slot);
    }
    this.working ??= this.work().finally(() => {
      this.working = null;
    });
  }

  /** The next file for the reader, taken off the queue; null when it is empty. */
  private take(): Slot | null {
    if (this.head === this.queue.length) return null;
    const slot = this.queue[this.head++]!;
    // The queue is emptied as read and made anew once read to its end, so it never grows past what waits at once.
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    slot.queued = false;
    return slot;
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
    while (this.head < this.queue.length) {
      // Reads of local files are synchronous: between two, /healthz, timers and signals get their
      // turn (an event meanwhile finds its file still queued).
      if (breatheDue()) await breathe();
      const slot = this.take();
      if (slot === null) return;
      slot.lastRead = performance.now();
      const out = await this.opts.read(slot.file);
      if (out === 'more') {
        this.enqueue(slot);
        continue;
      }
      slot.queuedAt = NaN;
      if (out === 'gone') {
        this.slots.delete(slot.file);
        await this.opts.gone(slot.file);
      }
    }
  }

  /** Resolves when every queued read is done, those waiting for their spacing included. */
  async idle(): Promise<void> {
    for (;;) {
      if (this.spacedCount > 0) await new Promise<void>((resolve) => this.spacedDone.push(resolve));
      else if (this.working !== null) await this.working;
      else return;
    }
  }

  /** Drops what is queued and waits for the read under way; nothing is queued after. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.rechecks.values()) clearTimeout(t);
    this.rechecks.clear();
    for (const slot of this.slots.values()) {
      if (slot.spaced !== null) clearTimeout(slot.spaced);
      slot.spaced = null;
      slot.queued = false;
    }
    this.spacedCount = 0;
    for (const done of this.spacedDone.splice(0)) done();
    this.queue = [];
    this.head = 0;
    await this.idle();
  }
}
