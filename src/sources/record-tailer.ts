/**
 * Tailing a file of TFRecord frames (TensorBoard event files) from a saved offset. A frame cut at
 * the end of a file still being written waits for its rest, exactly like a partial line. A bad
 * length CRC is corruption: reported once, what was read is kept, and the file is not read again
 * until it is rewritten (a new inode, or shorter than what was read). A bad data CRC skips that
 * record, counted. The file is identified by device and inode; a file that shrank was rewritten.
 */
import type { promises as fsp } from 'node:fs';
import type { FileKind } from '../parsers/index.js';
import { MAX_RECORD_BYTES } from '../parsers/tfrecord.js';
import type { Frames, Framing } from '../parsers/types.js';
import { readDecoded, startDecodeThread } from './decode-ahead.js';
import { openToRead } from './open.js';
import type { ReadOutcome } from './tailer.js';

export interface RecordCheckpoint {
  /** End of the last complete frame read. */
  offset: number;
  dev: number;
  ino: number;
  /** Where a bad length CRC was found: reading stops there until the file is rewritten. */
  corruptAt: number | null;
}

export interface RecordNotices {
  corrupt?(info: { offset: number }): void;
  rewritten?(info: { from: number }): void;
}

/** Bytes read per poll before yielding to other files. */
const BUDGET = 16 << 20;
/**
 * Bytes per read where the decode thread reads ahead: parts this small keep what both threads
 * work on in the caches (16 MiB parts made both threads slower than one: BENCHMARKS.md).
 */
const AHEAD_BUDGET = 2 << 20;
/** A backlog at least this large is read with the decode thread: below it, the thread's start costs more than it saves. */
const AHEAD_FROM = 32 << 20;
/**
 * The first part of a backlog read with the decode thread, which the reading thread splits and
 * decodes itself while the thread starts (about 45 ms): a full part (2 MiB, some 1,500 W&B rows)
 * left the thread idle while the reading thread decoded them, at their slowest, before the
 * optimising compiler had the decoder (BENCHMARKS.md, session 31).
 */
const FIRST_AHEAD_PART = 256 << 10;
/** Reads ahead held at once over every tailer (a part each): see RecordTailer.read. */
const MAX_AHEAD = 2;
/** How far the decode thread's share of a part's decoding moves a part (see nextShare). */
const SHARE_STEP = 1 / 16;

/**
 * The decode thread's share of the next part's decoding (the first records of the part; the
 * reading thread's parser decodes the rest as it hands them over). A part the reading thread had
 * to wait for means the decode thread has more than its half of the work: the share goes down a
 * step (and that part comes back at once with what is not decoded yet: AheadPart.hurry); a part
 * that was ready goes up a step. The two threads' work (the statistics and detectors
 * on one, the reading, CRCs and decoding on the other) differs from run to run and machine to
 * machine, and while the compiler is still warming up: neither thread idles for long either way.
 */
export function nextShare(share: number, waited: boolean): number {
  return Math.min(1, Math.max(0, share + (waited ? -SHARE_STEP : SHARE_STEP)));
}

/** The next part of a file, read while the part before it was handed over. */
interface Ahead {
  offset: number;
  dev: number;
  ino: number;
  want: number;
  /** The bytes read, and their frames when the decode thread split them (the bytes are then the frames'). */
  result: Promise<{ buf: Buffer; got: number; frames: Frames | null } | null>;
  /** Whether `result` has settled. */
  ready: boolean;
  /** Read and split on the decode thread (else by the thread pool). */
  decoded: boolean;
  /** Tells the decode thread the part is waited for (AheadPart.hurry). */
  readonly hurry: () => void;
}

/** Where a read's frames go: their data, the frames whose data CRC failed, Frames.ahead. */
type DeliverFrames = (records: Uint8Array[], badData: number, ahead?: unknown) => void;

export class RecordTailer {
  private state: RecordCheckpoint;
  private ahead: Ahead | null = null;
  /** Reading a backlog of at least AHEAD_FROM bytes with the decode thread, in AHEAD_BUDGET parts. */
  private decoding = false;
  /** The decode thread's share of a part's decoding (nextShare). */
  private share = 1;
  /** The tailers holding a read ahead, oldest first: a new one past MAX_AHEAD drops the oldest. */
  private static readonly holding = new Set<RecordTailer>();

  constructor(
    readonly file: string,
    saved: RecordCheckpoint | null,
    private readonly framing: Framing,
    private readonly notices: RecordNotices = {},
    /** The file's format, for the decode thread (framings with `ahead`). */
    private readonly kind: FileKind | null = null,
  ) {
    this.state = saved ?? { offset: 0, dev: -1, ino: -1, corruptAt: null };
  }

  checkpoint(): RecordCheckpoint {
    return { ...this.state };
  }

  /**
   * Reads new complete frames; `deliver` gets their data, the count of frames whose data CRC
   * failed, and what the decode thread decoded of them (AheadFraming.receive) when it split them.
   */
  async read(deliver: DeliverFrames): Promise<ReadOutcome> {
    const out = await this.readPart(deliver);
    // A backlog is read with the decode thread (or without) to its end.
    if (out !== 'more') this.decoding = false;
    return out;
  }

  private async readPart(deliver: DeliverFrames): Promise<ReadOutcome> {
    let fh: fsp.FileHandle;
    try {
      // Non-blocking: a FIFO put in the file's place must not hang the reader.
      fh = await openToRead(this.file, { nonblock: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
      throw err;
    }
    let closeLater = false;
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error(`${this.file} is not a regular file`), { code: 'ENOTFILE' });
      const s = this.state;
      const known = s.dev !== -1;
      if (known && (st.dev !== s.dev || st.ino !== s.ino || st.size < s.offset)) {
        this.notices.rewritten?.({ from: s.offset });
        this.state = { offset: 0, dev: st.dev, ino: st.ino, corruptAt: null };
      } else if (!known) {
        this.state = { ...s, dev: st.dev, ino: st.ino };
      }
      const cur = this.state;
      if (cur.corruptAt !== null || st.size <= cur.offset) return 'idle';
      const left = st.size - cur.offset;
      const starting = !this.decoding && left >= AHEAD_FROM && this.framing.ahead !== undefined && this.kind !== null;
      if (starting) {
        this.decoding = true;
        startDecodeThread();
      }
      const parts = this.decoding ? AHEAD_BUDGET : BUDGET;
      const budget = starting ? FIRST_AHEAD_PART : parts;
      let want = Math.min(left, budget);
      let buf: Buffer;
      let got: number;
      let f: Frames;
      let early = await this.takeAhead(cur.offset, st);
      if (early !== null) want = early.want;
      for (;;) {
        let frames: Frames | null = null;
        if (early !== null) {
          ({ buf, got, frames } = early);
          early = null;
        } else {
          buf = Buffer.allocUnsafe(want);
          got = (await fh.read(buf, 0, want, cur.offset)).bytesRead;
        }
        f = frames ?? this.framing.split(buf.subarray(0, got), cur.offset);
        // One record larger than the budget: read more, up to the record limit.
        if (f.consumed > 0 || f.corruptAt !== null || got < want || want >= left || want > MAX_RECORD_BYTES) break;
        want = Math.min(want * 2, left);
      }
      const next = cur.offset + f.consumed;
      const more = f.corruptAt === null && f.consumed > 0 && st.size - next >= this.framing.minBytes && got === want && want >= budget;
      // A backlog: the next part is read (by the thread pool) while this one is handed over.
      if (more) {
        this.readAhead(fh, next, Math.min(st.size - next, parts), st);
        closeLater = true;
      }
      if (f.records.length > 0 || f.badData > 0) deliver(f.records, f.badData, f.ahead);
      cur.offset = next;
      if (f.corruptAt !== null) {
        cur.corruptAt = cur.offset;
        this.notices.corrupt?.({ offset: cur.offset });
        return 'idle';
      }
      return more ? 'more' : 'idle';
    } finally {
      if (!closeLater) await fh.close();
    }
  }

  /** Starts reading [offset, offset + want) of the open file; it is closed once that read ends. */
  private readAhead(fh: fsp.FileHandle, offset: number, want: number, st: { dev: number; ino: number }): void {
    const holding = RecordTailer.holding;
    if (holding.size >= MAX_AHEAD) {
      const oldest = holding.values().next().value!;
      oldest.ahead = null;
      holding.delete(oldest);
    }
    const ahead = this.framing.ahead;
    const decoded = this.decoding && ahead !== undefined && this.kind !== null;
    let result: Ahead['result'];
    let hurry = (): void => undefined;
    if (decoded) {
      // Read, split and decoded on the decode thread; read here when it cannot.
      const part = readDecoded(this.kind, ahead, fh.fd, want, offset, this.share);
      hurry = part.hurry;
      result = part.result.then((f) => (f === null ? this.readBytes(fh, want, offset) : { buf: f.buf, got: f.got, frames: f }));
    } else result = this.readBytes(fh, want, offset);
    const a: Ahead = { offset, dev: st.dev, ino: st.ino, want, result, ready: false, decoded, hurry };
    void result
      .then(() => {
        a.ready = true;
        return fh.close();
      })
      .catch(() => undefined);
    this.ahead = a;
    holding.add(this);
  }

  /** `want` bytes from `offset` of the open file, read by the thread pool. */
  private readBytes(fh: fsp.FileHandle, want: number, offset: number): Ahead['result'] {
    const buf = Buffer.allocUnsafe(want);
    return fh.read(buf, 0, want, offset).then(
      (r) => ({ buf, got: r.bytesRead, frames: null }),
      () => null,
    );
  }

  /** The read ahead, when it is of the part wanted now from the same file and what it read is still there. */
  private async takeAhead(
    offset: number,
    st: { dev: number; ino: number; size: number },
  ): Promise<{ buf: Buffer; got: number; want: number; frames: Frames | null } | null> {
    const a = this.ahead;
    if (a === null) return null;
    this.ahead = null;
    RecordTailer.holding.delete(this);
    if (a.decoded) this.share = nextShare(this.share, !a.ready);
    if (!a.ready) a.hurry();
    const r = await a.result;
    if (r === null || a.offset !== offset || a.dev !== st.dev || a.ino !== st.ino || offset + r.got > st.size) return null;
    return { ...r, want: a.want };
  }
}

/** The complete records in the first 64 KiB of a file (none when it cannot be read). */
export async function firstRecords(file: string, framing: Framing): Promise<Uint8Array[]> {
  let fh: fsp.FileHandle;
  try {
    fh = await openToRead(file, { nonblock: true });
  } catch {
    return [];
  }
  try {
    const buf = Buffer.alloc(64 << 10);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return framing.split(buf.subarray(0, bytesRead), 0).records;
  } catch {
    return [];
  } finally {
    await fh.close();
  }
}
