/**
 * One file barwatch reads, whatever its read mode: where it belongs (run, role, round), its input
 * format and parser, what went wrong with it (counted), and what it read but holds back. Each read
 * mode is a subclass (line-source.ts, document-source.ts, record-source.ts); openSource picks one
 * from the format's descriptor.
 */
import { createParser, inputOf, type FileKind } from '../parsers/index.js';
import type { FormatId, InputFormat, ParsedRecord, Parser, ParserOptions } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import type { RecordCheckpoint } from './record-tailer.js';
import type { ReadOutcome, TailCheckpoint, TailOptions } from './tailer.js';

export interface FileCounters {
  /** Lines (or document reads) handed to the parser. */
  lines: number;
  records: number;
  malformed: number;
  longLines: number;
  truncations: number;
  rotations: number;
}

export interface DocSignature {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface FileCheckpoint {
  kind: FileKind;
  place: FilePlace;
  /** Line files: where the tail stands. */
  tail: TailCheckpoint | null;
  /** Binary record files (TensorBoard): where reading stands. Absent in states saved before they were read. */
  records?: RecordCheckpoint | null;
  /** Whole documents: the file as it was last read. */
  doc: DocSignature | null;
  parser: unknown;
  counters: FileCounters;
  /** Records read but held back for the round's other files (see FileSource.held), numbers that are not finite as `{ $number }`. */
  held?: Batch[];
  /** Null values read, per series. Absent in states saved before they were counted, and while there were none. */
  nulls?: Record<string, NullCount>;
}

/** What a null value is, in words for the log and the report. */
export const NULL_VALUES = 'null values, read as missing (orjson, which verl logs with from 0.8, writes NaN and Inf as null)';

/** How often a series' value was `null` in a file, and at which steps first and last. */
export interface NullCount {
  count: number;
  first: number | null;
  last: number | null;
}

/** Something about a file that the operator should hear of, once. */
export interface FileProblem {
  file: string;
  kind: 'malformed' | 'long-line' | 'truncated' | 'rotated' | 'too-large' | 'corrupt' | 'binary' | 'partial';
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

/** What a source needs besides its file: the parser's and the tailer's options, and where problems go. */
export interface SourceContext {
  parser: ParserOptions;
  /** Line files: how they are tailed. */
  tail: TailOptions;
  problem: (p: FileProblem) => void;
}

export abstract class FileSource<P extends Parser = Parser> {
  readonly input: InputFormat;
  readonly parser: P;
  readonly counters: FileCounters = { lines: 0, records: 0, malformed: 0, longLines: 0, truncations: 0, rotations: 0 };
  /** Last time new data was read (epoch ms). */
  lastData: number | null = null;
  /** When this process first read data of it (epoch ms). */
  firstData: number | null = null;
  /** Records from this step on are superseded by a newer file of its stream (a restarted writer) and dropped. */
  stepLimit: number | null = null;
  /**
   * Records read but not yet applied: steps past where the round's other files stand, kept until
   * they catch up (Pipeline.drainRound). They are part of the checkpoint, as the offset is past them.
   */
  held: Batch[] = [];
  /** The step of the last record of this file applied to its run (null before one with a step). */
  lastStep: number | null = null;
  /**
   * Whether the file may hold something not read yet: true until its first read, set by each
   * watcher event and sweep of it (Pipeline.changed), cleared as a read starts. A daemon whose
   * watcher's events are trusted reads a round's other files only when they are so marked
   * (Pipeline.drainRound).
   */
  unread = true;
  /** Why nothing of this file is read (a binary file named like a log), or null. */
  refused: string | null = null;
  /** What the last read of the file left out (a W&B export of several runs: all but the first), or null. */
  partial: string | null = null;
  /** Why the last malformed line or document was skipped, or null. */
  lastMalformed: string | null = null;
  /** Per series: its values written as `null` (MetricRecord.nulls). */
  readonly nulls = new Map<string, NullCount>();
  protected readonly problem: (p: FileProblem) => void;

  constructor(
    readonly file: string,
    readonly kind: FileKind,
    readonly place: FilePlace,
    ctx: SourceContext,
    saved: FileCheckpoint | null,
  ) {
    this.input = inputOf(kind);
    this.parser = createParser(kind, ctx.parser) as P;
    this.problem = ctx.problem;
    if (saved !== null) {
      Object.assign(this.counters, saved.counters);
      if (saved.parser !== undefined && saved.parser !== null) this.parser.restore?.(saved.parser);
      if (saved.held !== undefined) this.held = saved.held.map((b) => ({ ...b, records: b.records.map((r) => revive(r)) }));
      for (const [name, n] of Object.entries(saved.nulls ?? {})) this.nulls.set(name, { ...n });
    }
  }

  /**
   * Reads what is new. 'more' means the read budget ran out and the file has more to give.
   * `maxBytes`: a smaller budget for a line file (a reader that merges files by step).
   */
  abstract poll(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome>;

  /** Where reading stands, in the checkpoint's reader fields. */
  protected abstract position(): Pick<FileCheckpoint, 'tail' | 'records' | 'doc'>;

  /** The watcher saw this file's name change: a line file stats its path at the next read. */
  suspectPath(): void {}

  /** Whether a read now would find nothing new, from one stat (a line file read on local disks; false where in doubt). */
  unchangedOnDisk(): boolean {
    return false;
  }

  /**
   * Time passes without a read (Daemon.sweep): a format whose records end when the writer pauses
   * (InputFormat.idleFlush) gives the one it holds once the file has been quiet for `idleMs`.
   */
  tick(now: number, idleMs: number, sink: Sink): void {
    if (this.input.idleFlush !== true || this.lastData === null || now - this.lastData <= idleMs) return;
    this.finish(sink);
    this.lastData = null;
  }

  /** End of input (analyze): emits what multi-line parsers still hold. */
  finish(sink: Sink): void {
    const parser = this.parser;
    if (parser.kind !== 'lines' || parser.flush === undefined) return;
    const out = parser.flush();
    if (out.length > 0) {
      this.counters.records += countable(out);
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
      ...this.position(),
      parser: this.parser.snapshot?.() ?? null,
      counters: { ...this.counters },
      ...(this.held.length > 0 ? { held: this.held.map((b) => ({ ...b, records: b.records.map((r) => keepable(r)) })) } : {}),
      ...(this.nulls.size > 0 ? { nulls: Object.fromEntries([...this.nulls].map(([k, v]) => [k, { ...v }])) } : {}),
    };
  }

  /** Counts the record's null values; returns the series whose first null this is. */
  countNulls(names: readonly string[], step: number | null): string[] {
    const fresh: string[] = [];
    for (const name of names) {
      const n = this.nulls.get(name);
      if (n === undefined) {
        this.nulls.set(name, { count: 1, first: step, last: step });
        fresh.push(name);
      } else {
        n.count++;
        n.last = step;
      }
    }
    return fresh;
  }

  async close(): Promise<void> {}

  protected readAt(now: number): void {
    this.firstData ??= now;
    this.lastData = now;
  }

  protected malformed(error: string, offset: number): void {
    this.counters.malformed++;
    this.lastMalformed = error;
    this.problem({ file: this.file, kind: 'malformed', message: `skipped a malformed line (${error})`, offset });
  }

  /** Parsed records, counted and handed on. */
  protected give(records: ParsedRecord[], sink: Sink): void {
    if (records.length === 0) return;
    this.counters.records += countable(records);
    sink(records, this.parser.format(), this);
  }
}

/**
 * Records that count as read: all but a block log's `reach` (how far the file reaches, given once
 * a read), so the count of a file does not depend on how many parts it was read in.
 */
function countable(records: readonly ParsedRecord[]): number {
  let n = records.length;
  for (const r of records) if (r.kind === 'reach') n--;
  return n;
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
