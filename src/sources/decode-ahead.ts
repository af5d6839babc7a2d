/**
 * A backlog's next part split and decoded on another thread while the reading thread hands over
 * the part before it (issue 30: `analyze` of a long W&B run file is otherwise one core doing the
 * CRCs, the protobuf and the statistics in turn). One decode thread serves every file of a
 * framing that declares AheadFraming; it is started on the first part handed to it, and the
 * process never waits for it to exit.
 *
 * The thread reads the part itself (from the file the reading thread holds open), so reading and
 * decoding go on while the reading thread is busy with the part before. What it gives back is
 * what the reading thread would have computed itself: the same frames (records as views into the
 * bytes read, which come back without a copy) and the decoding that needs no parser state. If
 * the thread cannot start or fails, every later part is read and split on the reading thread as
 * before, so nothing is lost. When the reading thread comes for a part before it is back, it says
 * so (AheadPart.hurry, through memory both threads share): the decode thread stops decoding and
 * hands the part back at once, the records it has not decoded left to the reading thread, which
 * would otherwise idle until the whole part was done.
 */
import { fileURLToPath } from 'node:url';
import type * as WorkerThreads from 'node:worker_threads';
import type { FileKind } from '../parsers/index.js';
import type { AheadFraming, Frames } from '../parsers/types.js';
import { lazy } from '../util/lazy.js';

/** Loaded with the first decode thread: most reads never start one (issue 32: start-up). */
const workerThreads = lazy<typeof WorkerThreads>('node:worker_threads');

/**
 * A part handed to the decode thread: `want` bytes from byte `at` of the file open as `fd` (the
 * thread reads them); it decodes the first `share` (0 to 1) of the part's records.
 */
export interface AheadRequest {
  id: number;
  kind: FileKind;
  fd: number;
  want: number;
  at: number;
  share: number;
}

/**
 * The part handed back: the bytes read (`got` of `buf`; null when the read failed), its frames as
 * spans of `buf` ([offset, length]; [-1, i] for extras[i], a record of several chunks).
 */
export interface AheadReply {
  id: number;
  buf: ArrayBuffer | null;
  got: number;
  consumed: number;
  badData: number;
  corruptAt: number | null;
  spans: Int32Array;
  extras: Uint8Array[];
  decoded: unknown;
}

/** Frames as split() gives them, with what AheadFraming.receive made of the decoding, and the bytes read. */
export type AheadFrames = Frames & { buf: Buffer; got: number };

/**
 * A part handed to the decode thread: `result` settles when it is back; `hurry` says the reading
 * thread waits for it, and the decode thread hands it back with the records it has not decoded
 * yet left to the reading thread.
 */
export interface AheadPart {
  result: Promise<AheadFrames | null>;
  readonly hurry: () => void;
  /**
   * Whether the decode thread has handed the part back, though its message may not have been
   * taken yet: a reader that does not yield to the event loop between parts (synchronous reads)
   * would otherwise find every part not ready.
   */
  readonly done: () => boolean;
}

interface Waiting {
  ahead: AheadFraming;
  done: (f: AheadFrames | null) => void;
}

/**
 * The decode thread's module, when this one is bundled (scripts/bundle.ts defines it): a CommonJS
 * file, which a thread starts about 6 ms sooner than an ES module (no ES module loader to set up).
 */
declare const __barwatchDecodeWorker: string | undefined;

class DecodeThread {
  private readonly worker: WorkerThreads.Worker;
  /** Beside this module: dist/src/sources/ as compiled, or dist/bundle/ beside barwatch.cjs. */
  private readonly module = new URL(
    typeof __barwatchDecodeWorker === 'string' ? __barwatchDecodeWorker : './decode-worker.js',
    import.meta.url,
  );
  private next = 1;
  private told = false;
  private readonly waiting = new Map<number, Waiting>();
  private failed = false;
  /** The id of the latest part the reading thread waits for: the decode thread leaves the rest of its decoding to it. */
  private readonly waitedFor = new Int32Array(new SharedArrayBuffer(4));
  /** The id of the latest part the decode thread handed back. */
  private readonly handedBack = new Int32Array(new SharedArrayBuffer(4));

  constructor() {
    this.worker = new (workerThreads().Worker)(this.module, { workerData: { hurry: this.waitedFor, done: this.handedBack } });
    this.worker.on('message', (m: AheadReply) => this.reply(m));
    this.worker.on('error', () => this.fail());
    this.worker.on('exit', () => this.fail());
    // After the listeners: one added to an unref'd worker refs it again (nodejs/node#53036), and
    // the process would stay up once the last part is back.
    this.worker.unref();
  }

  split(kind: FileKind, ahead: AheadFraming, fd: number, want: number, at: number, share: number): AheadPart {
    if (this.failed) return NO_PART;
    const id = this.next++;
    const req: AheadRequest = { id, kind, fd, want, at, share };
    const result = new Promise<AheadFrames | null>((done) => {
      this.waiting.set(id, { ahead, done });
      // Waited for: the process stays up until the part is back.
      if (this.waiting.size === 1) this.worker.ref();
      this.worker.postMessage(req);
    });
    return { result, hurry: () => Atomics.store(this.waitedFor, 0, id), done: () => Atomics.load(this.handedBack, 0) >= id };
  }

  private reply(m: AheadReply): void {
    const w = this.waiting.get(m.id);
    if (w === undefined) return;
    this.waiting.delete(m.id);
    if (this.waiting.size === 0) this.worker.unref();
    if (m.buf === null) {
      w.done(null);
      return;
    }
    // BARWATCH_START_INFO=1 (bin/barwatch.js): what the decode thread started from, once it has worked.
    if (!this.told && process.env['BARWATCH_START_INFO'] === '1')
      process.stderr.write(`barwatch: decode thread started from ${fileURLToPath(this.module)}\n`);
    this.told = true;
    // Every part's decoding is received, in order, even one nobody waits for any more.
    const ahead = w.ahead.receive(m.decoded);
    const buf = Buffer.from(m.buf, 0, m.got);
    const records: Uint8Array[] = [];
    for (let i = 0; i < m.spans.length; i += 2) {
      const at = m.spans[i]!;
      const x = at >= 0 ? null : m.extras[m.spans[i + 1]!]!;
      records.push(x === null ? buf.subarray(at, at + m.spans[i + 1]!) : Buffer.from(x.buffer, x.byteOffset, x.byteLength));
    }
    w.done({ records, consumed: m.consumed, badData: m.badData, corruptAt: m.corruptAt, ahead, buf, got: m.got });
  }

  private fail(): void {
    this.failed = true;
    for (const w of this.waiting.values()) w.done(null);
    this.waiting.clear();
  }
}

/**
 * The decode thread pays only with a core of its own: on a machine whose other core is busy, the
 * two threads share one, and a 1M-line JSONL file took 1.56 s against 1.37 s read on one thread
 * (BENCHMARKS.md, session 32). A backlog read with the thread holds a trial: the process's CPU
 * time over its bytes TRIAL_FROM to TRIAL_TO (after the thread's start and both threads' first
 * compiles, which keep a core busy anyway) is set against the time passed, and under
 * TRIAL_MIN_CORES cores in use (1.77-1.86 with a core free, 1.01-1.05 with the other core busy)
 * the rest of the backlog is read without the thread. Line files hold it (FileTailer); W&B's
 * record tailer does not: there the thread paid even with the other core busy (a 30,000-row file
 * 627 ms with it to the end, 664 ms ended at its trial).
 */
const TRIAL_FROM = 8 << 20;
const TRIAL_TO = 16 << 20;
const TRIAL_MIN_CORES = 1.4;

/** Where a trial measures, and what it asks for (tests set other bounds, and Infinity cores to end the thread's part there). */
export interface TrialBounds {
  from: number;
  to: number;
  minCores: number;
}

export class CoreTrial {
  private bytes = 0;
  private cpu = 0;
  private at = 0;

  constructor(private readonly bounds: TrialBounds = { from: TRIAL_FROM, to: TRIAL_TO, minCores: TRIAL_MIN_CORES }) {}

  /** A part of `bytes` read with the thread is taken: false once the trial finds too few cores in use. */
  taken(bytes: number): boolean {
    const { from, to, minCores } = this.bounds;
    const before = this.bytes;
    this.bytes += bytes;
    if (before < from && this.bytes >= from) {
      this.cpu = cpuMs();
      this.at = performance.now();
    } else if (before < to && this.bytes >= to && this.at > 0) {
      return (cpuMs() - this.cpu) / (performance.now() - this.at) >= minCores;
    }
    return true;
  }
}

/** The process's CPU time so far, every thread, in ms. */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

let thread: DecodeThread | null = null;

/** A part the decode thread will not read: the caller reads it. */
const NO_PART: AheadPart = { result: Promise.resolve(null), hurry: () => undefined, done: () => true };

/**
 * Up to `want` bytes from byte `at` of the file open as `fd` (of kind `kind`), read, split and
 * the first `share` of its records decoded on the decode thread; null when that thread is not
 * there or the read failed (then the caller reads). The caller keeps `fd` open until this settles.
 */
export function readDecoded(kind: FileKind, ahead: AheadFraming, fd: number, want: number, at: number, share = 1): AheadPart {
  return startDecodeThread()?.split(kind, ahead, fd, want, at, share) ?? NO_PART;
}

/** The decode thread, started now if it was not (it loads its modules while the reading thread goes on); null when it cannot start. */
export function startDecodeThread(): DecodeThread | null {
  try {
    thread ??= new DecodeThread();
  } catch {
    return null;
  }
  return thread;
}
