/**
 * Follows one growing file from a saved offset and hands over complete lines.
 *
 * - Only complete lines leave the tailer; a partial last line waits for its newline.
 * - The offset that is saved is the end of the last line handed over, so a restart resumes at
 *   the first line not yet applied (the caller applies a batch before the next one is read).
 * - The file is identified by device + inode and a checksum of its first line. A different
 *   inode at the path means rotation: the old file (still open) is read to its end first. A
 *   file shorter than the offset, or whose first line changed, was truncated or replaced: reading
 *   starts again at 0.
 * - A line longer than `maxLineBytes` is skipped and counted without being held in memory.
 */
import { promises as fsp, readSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { AheadLines } from '../parsers/json-lines-ahead.js';
import type { FileKind } from '../parsers/index.js';
import type { AheadFraming } from '../parsers/types.js';
import { nodeCrypto } from '../util/lazy.js';
import { CoreTrial, readDecoded, startDecodeThread, type AheadFrames, type TrialBounds } from './decode-ahead.js';
import { openToRead } from './open.js';
import { nextShare } from './record-tailer.js';

export interface TailCheckpoint {
  dev: number;
  ino: number;
  offset: number;
  /** sha1 of the first `fpLen` bytes (the first line, capped), once the first line is complete. */
  fp: string | null;
  fpLen: number;
}

export interface TailOptions {
  /** parse.max_line_bytes: longer lines are skipped without being loaded. */
  maxLineBytes: number;
  /** Bytes read per read call (default 256 KiB). */
  chunkBytes?: number;
  /**
   * Stat and read with synchronous calls on the open descriptor (local disks: a page-cache read
   * costs microseconds, a thread-pool round trip far more); asynchronous when files may sit on a
   * slow or network file system (watch.poll).
   */
  sync?: boolean;
  /**
   * The watcher reports every rename, creation and removal of the file's name (the folder
   * watcher; not chokidar or polling): with `sync`, a read of a file already open skips the stat
   * of its path until FileTailer.suspectPath says the name changed. A truncation or a rewrite
   * still shows, in the bytes read again before the new ones.
   */
  trustEvents?: boolean;
  /** Bytes read per poll before yielding to other files (default 16 MiB). */
  maxBytesPerRead?: number;
  /** A backlog at least this large is read with the decode thread where the format has linesAhead (default 32 MiB; tests set less). */
  aheadFrom?: number;
  /** Bytes of a part read on the decode thread (default 512 KiB; tests set less). */
  aheadPart?: number;
  /** The decode thread's trial (CoreTrial; tests set their own bounds). */
  aheadTrial?: TrialBounds;
}

const CHUNK_BYTES = 1 << 18;
const MAX_BYTES_PER_READ = 16 << 20;

export interface TailNotices {
  /** The same file shrank, or was cut and rewritten past the old end (its first line changed). */
  truncated?(info: { from: number; rewritten: boolean }): void;
  rotated?(info: { reason: 'inode' | 'while-stopped' }): void;
  longLine?(info: { offset: number; bytes: number }): void;
}

/**
 * Lines, oldest first, and the offset after the last of them; `ahead`: which of them the decode
 * thread read (their text is then left undecoded: ReadAhead.text).
 */
export type Deliver = (lines: string[], endOffset: number, ahead?: ReadAhead) => void;

/**
 * The lines of a batch that the decode thread read (a tailer given LinesAhead): line i of the batch is
 * `lines`' line index[i] (-1: not read there, its text is in the batch), and text(i) decodes its
 * text where the parser wants it after all.
 */
export interface ReadAhead {
  lines: AheadLines;
  index: readonly number[];
  text(i: number): string;
}

/** A backlog's lines read ahead on the decode thread: which format's reading, and the file's kind for the thread. */
export interface LinesAhead {
  kind: FileKind;
  framing: AheadFraming;
}

/** A backlog at least this large is read in parts with the decode thread (record-tailer.ts has the same). */
const AHEAD_FROM = 32 << 20;
/**
 * The size of a part the decode thread reads and splits: small parts keep both threads busy (the
 * reading thread takes over the lines of a part that is not ready). 2 MiB, 1 MiB, 512 KiB, 256 KiB
 * and 128 KiB measured: 512 KiB and 256 KiB best (BENCHMARKS.md, session 32).
 */
const AHEAD_PART = 512 << 10;
/** Parts held at once over every tailer: the oldest past this is dropped (memory, with many backlogs). */
const MAX_AHEAD = 2;

/** A part of the backlog being read on the decode thread while the part before it is handed over. */
interface Part {
  offset: number;
  want: number;
  result: Promise<AheadFrames | null>;
  hurry: () => void;
  /** Whether the decode thread is done with it (AheadPart.done: a synchronous reader never sees its message before it waits). */
  done: () => boolean;
}

export type ReadOutcome = 'idle' | 'more' | 'gone';

const FP_CAP = 1024;

function sha1(buf: Buffer): string {
  return nodeCrypto().createHash('sha1').update(buf).digest('hex');
}

/** The text of buf[start, end), a CR before the newline dropped (CRLF). */
function decode(buf: Buffer, start = 0, end = buf.length): string {
  if (end > start && buf[end - 1] === 13) end--;
  return buf.toString('utf8', start, end);
}

/**
 * Read buffers are taken from and given back to a small pool: a buffer allocated per read is
 * external memory that only a full GC frees, and a burst of reads over many files let it pile up
 * (bench/memory). Nothing keeps a chunk after consume() returns (a held partial line is copied).
 */
const spareChunks: Buffer[] = [];
const SPARE_CHUNKS = 8;

/** Bytes before the read position compared on each read (see FileTailer.tail). */
const TAIL_BYTES = 64;

function takeChunk(bytes: number): Buffer {
  const b = spareChunks.pop();
  return b !== undefined && b.length === bytes ? b : Buffer.allocUnsafeSlow(bytes);
}

function giveChunk(b: Buffer): void {
  if (spareChunks.length < SPARE_CHUNKS) spareChunks.push(b);
}

/** How a tailer stats a path and reads its open file (TailOptions.sync), chosen once per tailer. */
interface FileIo {
  stat(file: string): Stats | Promise<Stats>;
  /** Bytes read into buf[0, length) from `at`. */
  read(fh: fsp.FileHandle, buf: Buffer, length: number, at: number): number | Promise<number>;
}

const SYNC_IO: FileIo = {
  stat: (file) => statSync(file),
  read: (fh, buf, length, at) => readSync(fh.fd, buf, 0, length, at),
};

const ASYNC_IO: FileIo = {
  stat: (file) => fsp.stat(file),
  read: async (fh, buf, length, at) => (await fh.read(buf, 0, length, at)).bytesRead,
};

export class FileTailer {
  private fh: fsp.FileHandle | null = null;
  private dev = -1;
  private ino = -1;
  /** End of the last line handed over. */
  private offset = 0;
  /** Bytes read so far; [offset, readPos) is the held partial line. */
  private readPos = 0;
  private pending: Buffer[] = [];
  private pendingLen = 0;
  private skipping = false;
  private fp: string | null = null;
  private fpLen = 0;
  /**
   * The last bytes read, just before readPos. The next read starts that many bytes early and
   * compares them: a file cut and rewritten past the old end (copytruncate, then fast regrowth)
   * shows there, in the same read, without reading its first line again.
   */
  private readonly tail = Buffer.alloc(TAIL_BYTES);
  private tailLen = 0;
  /** Whether the path must be stat'ed at the next read (always, unless opts.trustEvents). */
  private pathSuspect = true;
  private saved: TailCheckpoint | null;
  private readonly io: FileIo;
  /** A read of the open file may skip the stat of its path while no event made it suspect (TailOptions.trustEvents). */
  private readonly trustEvents: boolean;
  /** Reading a backlog of at least AHEAD_FROM bytes in parts read on the decode thread (`ahead`). */
  private decoding = false;
  /** Set where the trial found no core for the decode thread: this backlog is read here to its end. */
  private alone = false;
  private trial = new CoreTrial();
  /** The decode thread's share of a part's lines (record-tailer.ts nextShare). */
  private share = 1;
  /** The next part, being read on the decode thread. */
  private part: Part | null = null;
  /** The latest part's read, even one dropped: the file stays open until it is done (the thread reads its descriptor). */
  private reading: Promise<unknown> = Promise.resolve();
  /** The tailers holding a part, oldest first. */
  private static readonly holding = new Set<FileTailer>();

  constructor(
    readonly file: string,
    private readonly opts: TailOptions,
    saved: TailCheckpoint | null = null,
    private readonly notices: TailNotices = {},
    /** What the decode thread reads of a backlog's lines; null: every line is read here. */
    private readonly ahead: LinesAhead | null = null,
  ) {
    this.saved = saved;
    this.io = opts.sync === true ? SYNC_IO : ASYNC_IO;
    this.trustEvents = opts.trustEvents === true && opts.sync === true;
  }

  checkpoint(): TailCheckpoint | null {
    if (this.ino === -1) return this.saved;
    return { dev: this.dev, ino: this.ino, offset: this.offset, fp: this.fp, fpLen: this.fpLen };
  }

  /**
   * Whether a read now would find nothing (one stat of the path, synchronous reads only): the name
   * leads to the open file, which is as long as what was read. False where in doubt (not open yet,
   * a backlog on the decode thread, asynchronous reads, a stat that fails): the read then decides.
   * The read itself answers 'idle' for such a file (see read), so passing over it changes nothing.
   */
  unchangedOnDisk(): boolean {
    if (this.io !== SYNC_IO || this.fh === null || this.decoding || this.part !== null) return false;
    let st: Stats | undefined;
    try {
      st = statSync(this.file, { throwIfNoEntry: false });
    } catch {
      return false;
    }
    return st !== undefined && st.isFile() && st.ino === this.ino && st.dev === this.dev && st.size === this.readPos;
  }

  /** The watcher saw the file's name renamed, created or removed: the next read looks at the path again. */
  suspectPath(): void {
    this.pathSuspect = true;
  }

  /**
   * Reads what is new and hands it over, up to `maxBytes` (default: maxBytesPerRead) before
   * returning 'more'. Throws on I/O errors other than a vanished file.
   */
  async read(deliver: Deliver, maxBytes?: number): Promise<ReadOutcome> {
    const budget = maxBytes ?? this.opts.maxBytesPerRead ?? MAX_BYTES_PER_READ;
    if (this.trustEvents && !this.pathSuspect && this.fh !== null && this.tailLen > 0) {
      // The name still leads to the open file: read on from the descriptor, no stat. A shorter
      // file or changed bytes before readPos show in the verified read.
      return this.settle(await this.readFrom(deliver, budget, Infinity, true), deliver, budget, Infinity);
    }
    let st: Stats;
    try {
      st = await this.io.stat(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // The name is gone; what the open handle still reaches is read to its end.
      if (this.fh !== null) await this.drainAndClose(deliver);
      return 'gone';
    }
    if (!st.isFile()) throw Object.assign(new Error(`not a regular file: ${this.file}`), { code: 'ENOTFILE' });
    this.pathSuspect = false;

    if (this.fh === null) {
      await this.open(deliver);
    } else if (st.ino !== this.ino || st.dev !== this.dev) {
      await this.drainAndClose(deliver);
      this.notices.rotated?.({ reason: 'inode' });
      await this.open(deliver);
    } else if (st.size < this.readPos) {
      this.notices.truncated?.({ from: this.readPos, rewritten: false });
      this.reset();
    } else if (st.size === this.readPos) {
      // Nothing new: no read at all (sweeps of idle files cost one stat).
      return 'idle';
    } else if (this.tailLen === 0 && this.fp !== null && !(await this.sameFirstLine())) {
      // Cut and rewritten past the old end (copytruncate, then fast regrowth): with no bytes of
      // the last read to compare (just opened), the first line tells.
      this.notices.truncated?.({ from: this.readPos, rewritten: true });
      this.reset();
    }
    return this.settle(await this.readFrom(deliver, budget, st.size, true), deliver, budget, st.size);
  }

  /**
   * After a verified read: a file found cut ('truncated') or rewritten is read again from the
   * start; any other outcome is handed back as it is, without a promise of its own.
   */
  private settle(
    outcome: ReadOutcome | 'truncated' | 'rewritten',
    deliver: Deliver,
    budget: number,
    size: number,
  ): ReadOutcome | Promise<ReadOutcome> {
    if (outcome !== 'truncated' && outcome !== 'rewritten') return outcome;
    this.notices.truncated?.({ from: this.readPos, rewritten: outcome === 'rewritten' });
    this.reset();
    // From the start again, with nothing to compare: neither can come back.
    return this.readFrom(deliver, budget, size) as Promise<ReadOutcome>;
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    this.dropPart();
    if (fh === null) return;
    await this.reading;
    await fh.close().catch(() => undefined);
  }

  private dropPart(): void {
    this.part = null;
    FileTailer.holding.delete(this);
  }

  private reset(): void {
    this.dropPart();
    this.offset = 0;
    this.readPos = 0;
    this.pending = [];
    this.pendingLen = 0;
    this.skipping = false;
    this.fp = null;
    this.fpLen = 0;
    this.tailLen = 0;
  }

  private async open(deliver: Deliver): Promise<void> {
    const fh = await openToRead(this.file);
    const fst = await fh.stat().catch(async (err: unknown) => {
      await fh.close();
      throw err;
    });
    this.fh = fh;
    this.reset();
    this.dev = fst.dev;
    this.ino = fst.ino;
    const saved = this.saved;
    this.saved = null;
    if (saved === null) return;
    if (saved.dev === fst.dev && saved.ino === fst.ino) {
      // Same file as before the restart, unless it was truncated or replaced meanwhile.
      this.fp = saved.fp;
      this.fpLen = saved.fpLen;
      if (fst.size < saved.offset) {
        this.notices.truncated?.({ from: saved.offset, rewritten: false });
        this.reset();
      } else if (saved.fp !== null && !(await this.sameFirstLine())) {
        this.notices.truncated?.({ from: saved.offset, rewritten: true });
        this.reset();
      } else {
        this.offset = this.readPos = saved.offset;
      }
      return;
    }
    // Rotated while barwatch was stopped: finish the old file if it is still beside this one.
    this.notices.rotated?.({ reason: 'while-stopped' });
    await this.drainRotatedSibling(saved, deliver);
  }

  private async drainRotatedSibling(saved: TailCheckpoint, deliver: Deliver): Promise<void> {
    const dir = path.dirname(this.file);
    let names: string[];
    try {
      names = await fsp.readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (candidate === this.file) continue;
      const cst = await fsp.stat(candidate).catch(() => null);
      if (cst === null || cst.ino !== saved.ino || cst.dev !== saved.dev) continue;
      const old = new FileTailer(candidate, this.opts, saved, this.notices);
      old.saved = null;
      old.fh = await openToRead(candidate);
      old.dev = cst.dev;
      old.ino = cst.ino;
      old.offset = old.readPos = Math.min(saved.offset, cst.size);
      await old.drainAndClose(deliver);
      return;
    }
  }

  /** Reads the open file to its end, the last unterminated line included, then closes it. */
  private async drainAndClose(deliver: Deliver): Promise<void> {
    while ((await this.readFrom(deliver, Infinity)) === 'more');
    if (!this.skipping && this.pendingLen > 0) {
      const end = this.readPos;
      const text = decode(Buffer.concat(this.pending, this.pendingLen));
      this.pending = [];
      this.pendingLen = 0;
      deliver([text], end);
      this.offset = end;
    }
    await this.close();
  }

  private async sameFirstLine(): Promise<boolean> {
    if (this.fh === null || this.fp === null) return true;
    const buf = Buffer.alloc(this.fpLen);
    const bytesRead = await this.io.read(this.fh, buf, this.fpLen, 0);
    return bytesRead === this.fpLen && sha1(buf) === this.fp;
  }

  /**
   * Reads from readPos; `size` (from stat) spares the final empty read, and without one a short
   * read is the end. With `verify`, the first read starts at the kept tail and answers
   * 'truncated' when the file no longer reaches readPos, 'rewritten' when those bytes changed.
   */
  private async readFrom(
    deliver: Deliver,
    budget: number,
    size = Infinity,
    verify = false,
  ): Promise<ReadOutcome | 'truncated' | 'rewritten'> {
    const fh = this.fh;
    if (fh === null) return 'idle';
    if (
      !this.decoding &&
      !this.alone &&
      this.ahead !== null &&
      size !== Infinity &&
      size - this.readPos >= (this.opts.aheadFrom ?? AHEAD_FROM)
    ) {
      this.decoding = true;
      this.trial = new CoreTrial(this.opts.aheadTrial);
      startDecodeThread();
    }
    const buf = takeChunk(this.opts.chunkBytes ?? CHUNK_BYTES);
    try {
      let readThisCall = 0;
      let check = verify && this.tailLen > 0 ? this.tailLen : 0;
      for (;;) {
        if (this.readPos >= size) return this.backlogRead('idle');
        // (No part read ahead, the usual case: nothing to wait for.)
        const part = this.part === null ? null : await this.takePart(size);
        if (part !== null && check > 0) {
          // The bytes before the part compared, as a read from `check` bytes early would.
          const head = Buffer.allocUnsafe(check);
          if ((await this.io.read(fh, head, check, this.readPos - check)) < check) return 'truncated';
          if (head.compare(this.tail, 0, check, 0, check) !== 0) return 'rewritten';
          check = 0;
        }
        const data = part?.buf ?? buf;
        let got = part?.got ?? this.io.read(fh, buf, buf.length, this.readPos - check);
        // A synchronous read (TailOptions.sync) is not awaited: no turn of the microtask queue.
        if (typeof got !== 'number') got = await got;
        if (check > 0) {
          if (got < check) return 'truncated';
          if (buf.compare(this.tail, 0, check, 0, check) !== 0) return 'rewritten';
        }
        const bytesRead = got - check;
        if (bytesRead <= 0) return this.backlogRead('idle');
        const base = this.readPos;
        this.readPos += bytesRead;
        readThisCall += bytesRead;
        this.keepTail(data, check, got);
        // A backlog: the next part is read on the decode thread while this one is handed over.
        if (this.decoding && size !== Infinity) this.readAhead(fh, size);
        this.consume(
          check > 0 ? data.subarray(check, got) : data,
          bytesRead,
          base,
          deliver,
          (part?.ahead as AheadLines | undefined) ?? null,
        );
        check = 0;
        if (readThisCall >= budget) return 'more';
        // A regular file reads short only at its end.
        if (size === Infinity && got < data.length) return this.backlogRead('idle');
      }
    } finally {
      giveChunk(buf);
    }
  }

  /** The backlog read to its end: a later one starts with the decode thread again only if it is large. */
  private backlogRead(out: 'idle'): 'idle' {
    this.decoding = false;
    this.alone = false;
    return out;
  }

  /** Starts reading the part from readPos on the decode thread, unless one is under way or little is left. */
  private readAhead(fh: fsp.FileHandle, size: number): void {
    const left = size - this.readPos;
    if (this.part !== null || this.ahead === null || left <= (this.opts.chunkBytes ?? CHUNK_BYTES)) return;
    const holding = FileTailer.holding;
    if (holding.size >= MAX_AHEAD) holding.values().next().value!.dropPart();
    const want = Math.min(left, this.opts.aheadPart ?? AHEAD_PART);
    const p = readDecoded(this.ahead.kind, this.ahead.framing, fh.fd, want, this.readPos, this.share);
    this.part = { offset: this.readPos, want, result: p.result, hurry: p.hurry, done: p.done };
    this.reading = p.result;
    holding.add(this);
  }

  /** The part read ahead, when it starts at readPos and what it read is still in the file; null: read here. */
  private async takePart(size: number): Promise<AheadFrames | null> {
    const p = this.part;
    if (p === null || p.offset !== this.readPos) return null;
    this.dropPart();
    const done = p.done();
    this.share = nextShare(this.share, !done);
    if (!this.trial.taken(p.want)) {
      this.decoding = false;
      this.alone = true;
    }
    if (!done) p.hurry();
    const f = await p.result;
    // The file was cut while the part was read (a later read sees the rest): read again here.
    return f === null || f.got === 0 || p.offset + f.got > size ? null : f;
  }

  /** Keeps the last TAIL_BYTES bytes read so far (buf[from, to) was just read, ending at readPos). */
  private keepTail(buf: Buffer, from: number, to: number): void {
    const n = to - from;
    if (n >= TAIL_BYTES) {
      buf.copy(this.tail, 0, to - TAIL_BYTES, to);
      this.tailLen = TAIL_BYTES;
      return;
    }
    // Fewer new bytes than the tail holds: shift the old ones left and append.
    const keepOld = Math.min(this.tailLen, TAIL_BYTES - n);
    this.tail.copy(this.tail, 0, this.tailLen - keepOld, this.tailLen);
    buf.copy(this.tail, keepOld, from, to);
    this.tailLen = keepOld + n;
  }

  /**
   * Splits one chunk into lines; `base` is the file offset of chunk[0]. `read`: what the decode
   * thread read of the lines after the chunk's first newline (a part read ahead).
   */
  private consume(chunk: Buffer, len: number, base: number, deliver: Deliver, read: AheadLines | null = null): void {
    const lines: string[] = [];
    const max = this.opts.maxLineBytes;
    let start = 0;
    let lineStart = this.offset;
    // With `read`: each line's place among the lines read there (-1: not), and the newlines found there.
    const index: number[] = [];
    const newlines = read?.newlines;
    let nth = 0;
    const next = (): number => (newlines === undefined ? chunk.indexOf(10, start) : nth < newlines.length ? newlines[nth]! : -1);
    for (let nl = next(); nl !== -1 && nl < len; nth++, nl = next()) {
      const lineLen = this.pendingLen + (nl - start);
      if (this.skipping || lineLen > max) {
        this.notices.longLine?.({ offset: lineStart, bytes: lineLen });
        this.skipping = false;
      } else {
        // A line inside the chunk is decoded in place; one that began in an earlier chunk is joined first.
        let buf = chunk;
        let from = start;
        let to = nl;
        if (this.pendingLen > 0) {
          buf = Buffer.concat([...this.pending, chunk.subarray(start, nl)], lineLen);
          from = 0;
          to = lineLen;
        }
        if (this.fp === null && lineStart === 0) this.setFingerprint(buf.subarray(from, to));
        if (read === null) lines.push(decode(buf, from, to));
        else {
          // Read on the decode thread (not the chunk's first line, which may have begun before it):
          // its text is decoded only if the parser asks for it.
          const j = nth > 0 && read.ids[nth - 1]! >= 0 ? nth - 1 : -1;
          index.push(j);
          lines.push(j >= 0 ? '' : decode(buf, from, to));
        }
      }
      if (this.pending.length > 0) this.pending = [];
      this.pendingLen = 0;
      start = nl + 1;
      lineStart = base + start;
    }
    if (start < len) {
      if (!this.skipping) {
        const restLen = len - start;
        if (this.pendingLen + restLen > max) {
          this.skipping = true;
          this.pending = [];
          this.pendingLen += restLen; // keep counting the length of the skipped line
        } else {
          this.pending.push(Buffer.from(chunk.subarray(start, len)));
          this.pendingLen += restLen;
        }
      } else {
        this.pendingLen += len - start;
      }
    }
    if (lines.length > 0 || lineStart !== this.offset) {
      const ahead: ReadAhead | undefined =
        read === null ? undefined : { lines: read, index, text: (i) => decode(chunk, newlines![index[i]!]! + 1, newlines![index[i]! + 1]) };
      deliver(lines, lineStart, ahead);
      this.offset = lineStart;
    }
  }

  private setFingerprint(firstLine: Buffer): void {
    const withNewline = firstLine.length + 1;
    this.fpLen = Math.min(withNewline, FP_CAP);
    const bytes = Buffer.alloc(this.fpLen);
    firstLine.copy(bytes, 0, 0, Math.min(firstLine.length, this.fpLen));
    if (this.fpLen === withNewline) bytes[this.fpLen - 1] = 10;
    this.fp = sha1(bytes);
  }
}
