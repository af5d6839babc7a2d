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
import { nodeCrypto } from '../util/lazy.js';

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
}

const CHUNK_BYTES = 1 << 18;
const MAX_BYTES_PER_READ = 16 << 20;

export interface TailNotices {
  /** The same file shrank, or was cut and rewritten past the old end (its first line changed). */
  truncated?(info: { from: number; rewritten: boolean }): void;
  rotated?(info: { reason: 'inode' | 'while-stopped' }): void;
  longLine?(info: { offset: number; bytes: number }): void;
}

/** Lines, oldest first, and the offset after the last of them. */
export type Deliver = (lines: string[], endOffset: number) => void;

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

  constructor(
    readonly file: string,
    private readonly opts: TailOptions,
    saved: TailCheckpoint | null = null,
    private readonly notices: TailNotices = {},
  ) {
    this.saved = saved;
    this.io = opts.sync === true ? SYNC_IO : ASYNC_IO;
    this.trustEvents = opts.trustEvents === true && opts.sync === true;
  }

  checkpoint(): TailCheckpoint | null {
    if (this.ino === -1) return this.saved;
    return { dev: this.dev, ino: this.ino, offset: this.offset, fp: this.fp, fpLen: this.fpLen };
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

  /** After a verified read: a file found cut ('truncated') or rewritten is read again from the start. */
  private async settle(
    outcome: ReadOutcome | 'truncated' | 'rewritten',
    deliver: Deliver,
    budget: number,
    size: number,
  ): Promise<ReadOutcome> {
    if (outcome !== 'truncated' && outcome !== 'rewritten') return outcome;
    this.notices.truncated?.({ from: this.readPos, rewritten: outcome === 'rewritten' });
    this.reset();
    // From the start again, with nothing to compare: neither can come back.
    return (await this.readFrom(deliver, budget, size)) as ReadOutcome;
  }

  async close(): Promise<void> {
    const fh = this.fh;
    this.fh = null;
    if (fh !== null) await fh.close().catch(() => undefined);
  }

  private reset(): void {
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
    const fh = await fsp.open(this.file, 'r');
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
      old.fh = await fsp.open(candidate, 'r');
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
    const buf = takeChunk(this.opts.chunkBytes ?? CHUNK_BYTES);
    try {
      let readThisCall = 0;
      let check = verify && this.tailLen > 0 ? this.tailLen : 0;
      for (;;) {
        if (this.readPos >= size) return 'idle';
        const at = this.readPos - check;
        const got = await this.io.read(fh, buf, buf.length, at);
        if (check > 0) {
          if (got < check) return 'truncated';
          if (buf.compare(this.tail, 0, check, 0, check) !== 0) return 'rewritten';
        }
        const bytesRead = got - check;
        if (bytesRead <= 0) return 'idle';
        const base = this.readPos;
        this.readPos += bytesRead;
        readThisCall += bytesRead;
        this.keepTail(buf, check, got);
        this.consume(check > 0 ? buf.subarray(check, got) : buf, bytesRead, base, deliver);
        check = 0;
        if (readThisCall >= budget) return 'more';
        // A regular file reads short only at its end.
        if (size === Infinity && got < buf.length) return 'idle';
      }
    } finally {
      giveChunk(buf);
    }
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

  /** Splits one chunk into lines; `base` is the file offset of chunk[0]. */
  private consume(chunk: Buffer, len: number, base: number, deliver: Deliver): void {
    const lines: string[] = [];
    const max = this.opts.maxLineBytes;
    let start = 0;
    let lineStart = this.offset;
    for (let nl = chunk.indexOf(10, start); nl !== -1 && nl < len; nl = chunk.indexOf(10, start)) {
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
        lines.push(decode(buf, from, to));
      }
      this.pending = [];
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
      deliver(lines, lineStart);
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
