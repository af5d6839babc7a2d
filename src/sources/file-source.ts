/**
 * One file barwatch reads: where it belongs (run, role, round), how it is read (tailed by lines,
 * or re-read whole when it changes), its parser, and what went wrong with it, counted.
 */
import { constants, promises as fsp } from 'node:fs';
import { createParser, type FileKind } from '../parsers/index.js';
import type { FormatId, ParsedRecord, Parser, ParserOptions } from '../parsers/types.js';
import { isMalformed } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import { RecordTailer, type RecordCheckpoint } from './record-tailer.js';
import { FileTailer, type ReadOutcome, type TailCheckpoint, type TailNotices, type TailOptions } from './tailer.js';

export interface FileCounters {
  /** Lines (or document reads) handed to the parser. */
  lines: number;
  records: number;
  malformed: number;
  longLines: number;
  truncations: number;
  rotations: number;
}

interface DocSignature {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface FileCheckpoint {
  kind: FileKind;
  place: FilePlace;
  tail: TailCheckpoint | null;
  /** Binary record files (TensorBoard): where reading stands. Absent in states saved before they were read. */
  records?: RecordCheckpoint | null;
  /** Records read but held back for the round's other files (see FileSource.held), numbers that are not finite as strings. */
  held?: Batch[];
  doc: DocSignature | null;
  parser: unknown;
  counters: FileCounters;
}

/** Something about a file that the operator should hear of, once. */
export interface FileProblem {
  file: string;
  kind: 'malformed' | 'long-line' | 'truncated' | 'rotated' | 'too-large' | 'corrupt';
  message: string;
  offset?: number;
}

/** Records read together from one file, with the format they were read as. */
export interface Batch {
  records: ParsedRecord[];
  format: FormatId;
  /** Held back (FileSource.held): since when (epoch ms). */
  heldAt?: number;
}

/** Records from one file, with the format they were read as. */
export type Sink = (records: ParsedRecord[], format: FormatId, source: FileSource) => void;

export const MAX_DOCUMENT_BYTES = 64 << 20;

export class FileSource {
  readonly parser: Parser;
  readonly counters: FileCounters = { lines: 0, records: 0, malformed: 0, longLines: 0, truncations: 0, rotations: 0 };
  private readonly tailer: FileTailer | null;
  private readonly recordTailer: RecordTailer | null;
  /** The parser's count of undecodable records at the last read (new ones count as malformed). */
  private undecodable = 0;
  private doc: DocSignature | null = null;
  /** Last time new data was read (epoch ms). */
  lastData: number | null = null;
  /** When this process first read data of it (epoch ms). */
  firstData: number | null = null;
  /** Records from this step on are superseded by a newer file (a restarted TensorBoard writer) and dropped. */
  stepLimit: number | null = null;
  /**
   * Records read but not yet applied: steps past where the round's other files stand, kept until
   * they catch up (Pipeline.drainRound). They are part of the checkpoint, as the offset is past them.
   */
  held: Batch[] = [];
  /** The step of the last record of this file applied to its run (null before one with a step). */
  lastStep: number | null = null;

  constructor(
    readonly file: string,
    readonly kind: FileKind,
    readonly place: FilePlace,
    parserOpts: ParserOptions,
    tailOpts: TailOptions,
    private readonly problem: (p: FileProblem) => void,
    saved: FileCheckpoint | null = null,
  ) {
    this.parser = createParser(kind, parserOpts);
    if (saved !== null) {
      Object.assign(this.counters, saved.counters);
      if (saved.parser !== undefined && saved.parser !== null) this.parser.restore?.(saved.parser);
      this.doc = saved.doc;
      if (saved.held !== undefined) this.held = saved.held.map((b) => ({ ...b, records: b.records.map((r) => revive(r)) }));
    }
    this.tailer = this.parser.kind === 'lines' ? new FileTailer(file, tailOpts, saved?.tail ?? null, this.notices()) : null;
    this.recordTailer =
      this.parser.kind === 'records'
        ? new RecordTailer(file, saved?.records ?? null, {
            corrupt: ({ offset }) =>
              this.problem({
                file,
                kind: 'corrupt',
                message: `a record length at byte ${offset} does not match its CRC: the file is corrupt from there; what was read before it is kept, and the file is read again only once it is rewritten`,
                offset,
              }),
            rewritten: ({ from }) => {
              this.counters.truncations++;
              this.problem({
                file,
                kind: 'truncated',
                message: `file was rewritten (was read to byte ${from}); reading it again from the start`,
                offset: from,
              });
            },
          })
        : null;
  }

  private notices(): TailNotices {
    return {
      truncated: ({ from, rewritten }) => {
        this.counters.truncations++;
        const how = rewritten
          ? `truncated and rewritten past byte ${from} (its first line changed)`
          : `truncated (was read to byte ${from})`;
        this.problem({ file: this.file, kind: 'truncated', message: `file was ${how}; reading it again from the start`, offset: from });
      },
      rotated: ({ reason }) => {
        this.counters.rotations++;
        const why = reason === 'inode' ? 'a new file replaced it' : 'it was replaced while barwatch was stopped';
        this.problem({ file: this.file, kind: 'rotated', message: `file was rotated (${why}); reading the new file from the start` });
      },
      longLine: ({ offset, bytes }) => {
        this.counters.longLines++;
        this.problem({
          file: this.file,
          kind: 'long-line',
          message: `skipped a line of ${bytes} bytes at byte ${offset} (longer than the line limit)`,
          offset,
        });
      },
    };
  }

  /** The watcher saw this file's name change: the next read stats the path (FileTailer.suspectPath). */
  suspectPath(): void {
    this.tailer?.suspectPath();
  }

  /**
   * Reads what is new. 'more' means the read budget ran out and the file has more to give.
   * `maxBytes`: a smaller budget for a line file (a reader that merges files by step).
   */
  async poll(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome> {
    if (this.tailer !== null) {
      return this.tailer.read((lines, endOffset) => this.applyLines(lines, endOffset, sink, now), maxBytes);
    }
    if (this.recordTailer !== null) {
      return this.recordTailer.read((records, badData) => this.applyRecords(records, badData, sink, now));
    }
    return this.pollDocument(sink, now);
  }

  private applyLines(lines: string[], endOffset: number, sink: Sink, now: number): void {
    const parser = this.parser;
    if (parser.kind !== 'lines') return;
    const out: ParsedRecord[] = [];
    for (const line of lines) {
      this.counters.lines++;
      const r = parser.line(line);
      if (isMalformed(r)) {
        this.malformed(r.error, endOffset);
        continue;
      }
      for (const rec of r) out.push(rec);
    }
    if (lines.length > 0) this.readAt(now);
    if (out.length > 0) {
      this.counters.records += out.length;
      sink(out, parser.format(), this);
    }
  }

  private applyRecords(data: Uint8Array[], badData: number, sink: Sink, now: number): void {
    const parser = this.parser;
    if (parser.kind !== 'records') return;
    this.counters.lines += data.length + badData;
    for (let i = 0; i < badData; i++) this.malformed('a record whose data does not match its CRC', this.recordTailer!.checkpoint().offset);
    const limit = this.stepLimit;
    const out =
      limit === null ? parser.records(data) : parser.records(data).filter((r) => r.kind !== 'metrics' || r.step === null || r.step < limit);
    const undecodable = parser.counts().undecodable;
    for (; this.undecodable < undecodable; this.undecodable++)
      this.malformed('a record that is not a TensorBoard event', this.recordTailer!.checkpoint().offset);
    this.readAt(now);
    if (out.length > 0) {
      this.counters.records += out.length;
      sink(out, parser.format(), this);
    }
  }

  private readAt(now: number): void {
    this.firstData ??= now;
    this.lastData = now;
  }

  private malformed(error: string, offset: number): void {
    this.counters.malformed++;
    this.problem({ file: this.file, kind: 'malformed', message: `skipped a malformed line (${error})`, offset });
  }

  private async pollDocument(sink: Sink, now: number): Promise<ReadOutcome> {
    const parser = this.parser;
    if (parser.kind !== 'document') return 'idle';
    // Opened without blocking and checked on the handle: a FIFO named like a config would hang a
    // plain read (and shutdown with it), a link to /dev/zero would read without end. Only
    // regular files are read, as the line tailers do.
    let fh;
    try {
      fh = await fsp.open(this.file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
      throw err;
    }
    let text: string;
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error(`not a regular file: ${this.file}`), { code: 'ENOTFILE' });
      const sig: DocSignature = { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
      const d = this.doc;
      if (d !== null && d.dev === sig.dev && d.ino === sig.ino && d.size === sig.size && d.mtimeMs === sig.mtimeMs) return 'idle';
      if (st.size > MAX_DOCUMENT_BYTES) {
        this.doc = sig;
        this.problem({
          file: this.file,
          kind: 'too-large',
          message: `file is ${st.size} bytes, over the ${MAX_DOCUMENT_BYTES}-byte limit for whole-file formats; not read`,
        });
        return 'idle';
      }
      // At most the limit, even if the file grows while it is read.
      const buf = Buffer.alloc(Math.min(st.size, MAX_DOCUMENT_BYTES));
      let got = 0;
      for (let n = -1; n !== 0 && got < buf.length; got += n) n = (await fh.read(buf, got, buf.length - got, got)).bytesRead;
      text = buf.subarray(0, got).toString('utf8');
      this.doc = sig;
    } finally {
      await fh.close();
    }
    this.counters.lines++;
    this.readAt(now);
    const r = parser.document(text);
    if (isMalformed(r)) {
      // A document caught mid-write reads as malformed; the next change re-reads it.
      this.malformed(r.error, 0);
      return 'idle';
    }
    if (r.length > 0) {
      this.counters.records += r.length;
      sink(r, parser.format(), this);
    }
    return 'idle';
  }

  /** End of input (analyze): emits what multi-line parsers still hold. */
  finish(sink: Sink): void {
    const parser = this.parser;
    if (parser.kind !== 'lines' || parser.flush === undefined) return;
    const out = parser.flush();
    if (out.length > 0) {
      this.counters.records += out.length;
      sink(out, parser.format(), this);
    }
  }

  format(): FormatId {
    return this.parser.format();
  }

  checkpoint(): FileCheckpoint {
    return {
      kind: this.kind,
      place: this.place,
      tail: this.tailer?.checkpoint() ?? null,
      records: this.recordTailer?.checkpoint() ?? null,
      doc: this.doc,
      parser: this.parser.snapshot?.() ?? null,
      counters: { ...this.counters },
      ...(this.held.length > 0 ? { held: this.held.map((b) => ({ ...b, records: b.records.map((r) => keepable(r)) })) } : {}),
    };
  }

  async close(): Promise<void> {
    await this.tailer?.close();
  }
}

/** A value as JSON keeps it: a number that is not finite (a NaN reward) becomes `{ $number: 'NaN' }`. */
function keepable<T>(v: T): T {
  if (typeof v === 'number') return (Number.isFinite(v) ? v : { $number: String(v) }) as T;
  if (Array.isArray(v)) return v.map((x: unknown) => keepable(x)) as T;
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, keepable(x)])) as T;
  return v;
}

/** The inverse of keepable. */
function revive<T>(v: T): T {
  if (Array.isArray(v)) return v.map((x: unknown) => revive(x)) as T;
  if (typeof v === 'object' && v !== null) {
    const n = (v as { $number?: unknown }).$number;
    if (typeof n === 'string' && Object.keys(v).length === 1) return Number(n) as T;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, revive(x)])) as T;
  }
  return v;
}
