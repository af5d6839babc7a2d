/**
 * reward_history.jsonl (SPEC 3.2): one JSON object per line with a required `step`; components
 * under their aliases, possibly nested under `rewards`, the whole record possibly under `data`
 * (verl's file logger, see verl-jsonl.ts). The parser reports which of the two the file is.
 */
import { JsonNumberReader, parseJsonLenient, skipSpace } from './json.js';
import { JSON_LINES_AHEAD } from './json-lines-ahead.js';
import { Flattener, ListedRecord, toNumber } from './keys.js';
import { unwrapVerlRecord } from './verl-jsonl.js';
import type { Shape } from './keys.js';
import type { FormatId, LineParser, LineResult, MetricRecord, ParserOptions } from './types.js';
import { defineInput } from './types.js';
import { NOTHING } from './types.js';

const META_KEYS: ReadonlySet<string> = new Set(['step', 'time', 'timestamp', 'data', 'global_step', '_step']);

export function parseTime(v: unknown): number | undefined {
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  if (typeof v === 'number' && Number.isFinite(v)) return v < 1e11 ? v * 1000 : v; // seconds or ms
  return undefined;
}

/** Reads one JSONL record into a metric record; `wrapped` says whether it came under `data`. */
export function readJsonRecord(
  text: string,
  keyMap: Record<string, string>,
  flattener = new Flattener(keyMap, META_KEYS),
): { record: MetricRecord; wrapped: boolean } | { error: string } | null {
  // JSON.parse skips surrounding whitespace itself: no copy of every line just to trim it.
  if (text.length === 0 || (text.charCodeAt(0) <= 32 && text.trim() === '')) return null;
  let obj: unknown;
  try {
    obj = parseJsonLenient(text);
  } catch {
    return { error: 'not valid JSON' };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return { error: 'not a JSON object' };
  const unwrapped = unwrapVerlRecord(obj as Record<string, unknown>);
  const wrapped = unwrapped !== null;
  const rec = unwrapped ?? (obj as Record<string, unknown>);
  const step = toNumber(rec['step'] ?? rec['global_step'] ?? rec['_step']);
  if (step === undefined || !Number.isFinite(step)) return { error: 'no numeric "step"' };
  // The common line (the keys of the line before, numbers) is read through the shape: no values object.
  const record = flattener.record(step, rec);
  const time = parseTime(rec['time'] ?? rec['timestamp']);
  if (time !== undefined) record.time = time;
  return { record, wrapped };
}

/** Whether a key can be found in a line's text as it is: no escapes in JSON, not an array index (for-in would put it first). */
function plainKey(key: string): boolean {
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 32 || c === 34 || c === 92) return false;
  }
  return !/^(0|[1-9]\d*)$/.test(key);
}

/**
 * A line with the keys of the Flattener's learned shape in that order, read from its characters:
 * no object is parsed for it, and the record is a ListedRecord with the shape's series names. Any
 * other text (another key, a string or null where a series is, an escape, nesting) is left to
 * JSON.parse, which gives the same record or the error. The text between the values of the last
 * line read (`{"step": `, `, "boundary": `, `}`) is kept: a line written the same way is matched
 * piece by piece, and only one that is not (other spaces) is walked character by character.
 */
class ShapedLineReader {
  private names: Shape | null = null;
  private keys: readonly string[] = [];
  /** The series names in key order, shared by every record read. */
  private series: string[] = [];
  /** The place in the series names of each key's value (-1: skipped). */
  private seriesAt: number[] = [];
  private stepAt = -1;
  private timeAt = -1;
  private readonly number = new JsonNumberReader();
  /** The text before each value in the last line read, and after the last one; empty: none yet. */
  private between: string[] = [];
  private after = '';
  /** Where each value of the line being read starts and ends. */
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  // The line being read: its values (series only), step and time.
  private nums: number[] = [];
  private step: unknown;
  private time: unknown;
  /** The last key list found to be the shape's keys (fromValues): the decode thread's lists are the same array every time. */
  private matched: readonly string[] | null = null;

  constructor(private readonly flattener: Flattener) {}

  /**
   * The record of a line whose keys (in its order) and numbers the decode thread read
   * (json-lines-ahead.ts), `values[from...]`: what record() gives for its text, or null where
   * record() would give null (the parser then reads the text).
   */
  fromValues(keys: readonly string[], values: Float64Array, from: number): MetricRecord | null {
    if (this.flattener.shapeNames !== this.names) this.prepare();
    if (this.stepAt < 0) return null;
    if (keys !== this.matched) {
      if (keys.length !== this.keys.length || keys.some((k, i) => k !== this.keys[i])) return null;
      this.matched = keys;
    }
    const at = values[from + this.stepAt]!;
    if (!Number.isFinite(at)) return null;
    const nums = new Array<number>(this.series.length);
    const seriesAt = this.seriesAt;
    for (let k = 0; k < seriesAt.length; k++) if (seriesAt[k]! >= 0) nums[seriesAt[k]!] = values[from + k]!;
    const record = new ListedRecord(at, this.series, nums);
    const t = this.timeAt < 0 ? undefined : parseTime(values[from + this.timeAt]);
    if (t !== undefined) record.time = t;
    return record;
  }

  record(text: string): MetricRecord | null {
    if (this.flattener.shapeNames !== this.names) this.prepare();
    if (this.stepAt < 0) return null;
    this.nums = new Array<number>(this.series.length);
    this.step = this.time = undefined;
    if (!this.byPieces(text)) {
      if (!this.byChars(text)) return null;
      this.learnPieces(text);
    }
    const at = toNumber(this.step);
    if (at === undefined || !Number.isFinite(at)) return null;
    const record = new ListedRecord(at, this.series, this.nums);
    const t = this.time === undefined ? undefined : parseTime(this.time);
    if (t !== undefined) record.time = t;
    return record;
  }

  /** The line with the last line's text between its values. */
  private byPieces(text: string): boolean {
    const between = this.between;
    if (between.length === 0) return false;
    let i = 0;
    for (let k = 0; k < between.length; k++) {
      const piece = between[k]!;
      // A slice compared whole is cheaper here than startsWith's walk, character by character.
      if (text.slice(i, i + piece.length) !== piece) return false;
      i = this.value(text, i + piece.length, k);
      if (i < 0) return false;
    }
    return i + this.after.length === text.length && text.endsWith(this.after);
  }

  /** The line walked by JSON's grammar (any spaces), keys in the shape's order. */
  private byChars(text: string): boolean {
    const keys = this.keys;
    let i = skipSpace(text, 0);
    if (text.charCodeAt(i) !== 123 /* { */) return false;
    for (let k = 0; k < keys.length; k++) {
      i = skipSpace(text, i + 1);
      const key = keys[k]!;
      if (text.charCodeAt(i) !== 34 || !text.startsWith(key, i + 1) || text.charCodeAt(i + 1 + key.length) !== 34) return false;
      i = skipSpace(text, i + 2 + key.length);
      if (text.charCodeAt(i) !== 58 /* : */) return false;
      i = skipSpace(text, i + 1);
      this.starts[k] = i;
      i = this.value(text, i, k);
      if (i < 0) return false;
      this.ends[k] = i;
      i = skipSpace(text, i);
      if (text.charCodeAt(i) !== (k === keys.length - 1 ? 125 /* } */ : 44) /* , */) return false;
    }
    return skipSpace(text, i + 1) === text.length;
  }

  private learnPieces(text: string): void {
    const n = this.keys.length;
    this.between = Array.from({ length: n }, (_, k) => text.slice(k === 0 ? 0 : this.ends[k - 1], this.starts[k]));
    this.after = text.slice(this.ends[n - 1]);
  }

  /** Reads the k-th value at `i`: a number (a string only where the key is skipped, without escapes). Returns where it ends, or -1. */
  private value(text: string, i: number, k: number): number {
    const series = this.names![k] !== null;
    let v: unknown;
    let end: number;
    if (text.charCodeAt(i) === 34) {
      const close = text.indexOf('"', i + 1);
      if (series || close < 0 || text.lastIndexOf('\\', close) > i) return -1;
      v = text.slice(i + 1, close);
      end = close + 1;
    } else {
      const x = this.number.read(text, i);
      if (x === undefined) return -1;
      v = x;
      end = this.number.end;
    }
    if (series) this.nums[this.seriesAt[k]!] = v as number;
    else if (k === this.stepAt) this.step = v;
    else if (k === this.timeAt) this.time = v;
    return end;
  }

  private prepare(): void {
    this.names = this.flattener.shapeNames;
    this.keys = this.flattener.shapeKeys;
    this.series = this.names.filter((x): x is string => x !== null);
    let n = 0;
    this.seriesAt = this.names.map((x) => (x === null ? -1 : n++));
    this.between = [];
    this.matched = null;
    const at = (key: string): number => this.keys.indexOf(key);
    this.stepAt = [at('step'), at('global_step'), at('_step')].find((x) => x >= 0) ?? -1;
    this.timeAt = at('time') >= 0 ? at('time') : at('timestamp');
    if (!this.keys.every(plainKey)) this.stepAt = -1;
  }
}

export class RewardHistoryParser implements LineParser {
  readonly kind = 'lines';
  private wrapped = 0;
  private plain = 0;
  private readonly flattener: Flattener;
  private readonly shaped: ShapedLineReader;

  constructor(private readonly opts: ParserOptions) {
    this.flattener = new Flattener(opts.keyMap, META_KEYS);
    this.shaped = new ShapedLineReader(this.flattener);
  }

  format(): FormatId {
    return this.wrapped > this.plain ? 'verl-jsonl' : 'reward-history';
  }

  /** A line the decode thread read (LineParser.fromValues). */
  fromValues(keys: readonly string[], values: Float64Array, from: number): LineResult | null {
    const r = this.shaped.fromValues(keys, values, from);
    if (r === null) return null;
    this.plain++;
    return [r];
  }

  line(text: string): LineResult {
    const fast = this.shaped.record(text);
    if (fast !== null) {
      this.plain++;
      return [fast];
    }
    const r = readJsonRecord(text, this.opts.keyMap, this.flattener);
    if (r === null) return NOTHING;
    if ('error' in r) return r;
    if (r.wrapped) this.wrapped++;
    else this.plain++;
    return [r.record];
  }
}

/** JSON lines: BAR-RAG's reward_history.jsonl, verl's file logger, any trainer's metrics JSONL. */
export const jsonlInput = defineInput({
  id: 'jsonl',
  read: 'lines',
  named: (base) => base.endsWith('.jsonl'),
  sniffed: (head) => {
    const t = head.trimStart();
    return t.startsWith('{"') || t.startsWith('{ "');
  },
  create: (opts) => new RewardHistoryParser(opts),
  linesAhead: JSON_LINES_AHEAD,
  wholeRun: true,
});
