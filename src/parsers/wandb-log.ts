/**
 * W&B run files (`run-<id>.wandb`), the transaction log wandb-core writes locally for every run,
 * online or offline. A 7-byte header (`:W&B`, 0xBEE1 little-endian, version 0), then LevelDB-log
 * framing in 32 KiB blocks counted from offset 0: each chunk is a CRC32 (zlib's, of the type byte
 * and the data, little-endian), a 2-byte length and a type (FULL, or FIRST, MIDDLE... LAST for a
 * record that spans chunks and blocks); a block's last bytes, fewer than a chunk header, are
 * padding. Each record is a protobuf `Record` (wandb_internal.proto); of those barwatch reads
 * `history` rows, `run` (project, names, start time, config), `metric` (define_metric: the step
 * a key is logged against) and `exit`.
 *
 * The file only grows, in whole blocks while the run goes on: a record cut at the end is "not
 * yet", and reading resumes at the start of the record it belongs to.
 */
import type * as Zlib from 'node:zlib';
import { EXACT_DIGITS, exactDecimal } from './json.js';
import { canonicalKey, END_OF_TRAINING, ListedRecord, trainTag } from './keys.js';
import { settingsOf } from './run-config.js';
import type { FormatId, Framing, MetricRecord, ParsedRecord, ParserOptions, RecordParser } from './types.js';
import { defineInput } from './types.js';
import { lazy } from '../util/lazy.js';

export const WANDB_MAGIC = Buffer.from(':W&B', 'latin1');
export const WANDB_HEADER_BYTES = 7;
export const WANDB_BLOCK = 32 * 1024;
const CHUNK_HEADER = 7;
const FULL = 1;
const FIRST = 2;
const MIDDLE = 3;
const LAST = 4;
/** node:zlib, loaded with the first W&B file read (issue 32: start-up of a run without one). */
const zlib = lazy<typeof Zlib>('node:zlib');
/** zlib's CRC32, and the CRC32 of each type byte a chunk's CRC starts from (a chunk's CRC covers its type, then its data). */
let crcs: { crc32: typeof Zlib.crc32; typeCrc: number[] } | null = null;
function chunkCrcs(): { crc32: typeof Zlib.crc32; typeCrc: number[] } {
  if (crcs !== null) return crcs;
  const crc32 = zlib().crc32;
  return (crcs = { crc32, typeCrc: Array.from({ length: 256 }, (_, t) => crc32(Uint8Array.of(t))) });
}

export interface WandbChunks {
  /** The data of every complete record, in order. */
  records: Uint8Array[];
  /** Bytes of `buf` up to the end of the last complete record (reading resumes there). */
  consumed: number;
  /** Records dropped for a chunk whose CRC did not match, or a chunk sequence that broke off. */
  bad: number;
}

/**
 * The complete records in `buf`, which starts at byte `at` of the file (at 0 with the header, or at
 * the end of a record read before). Block boundaries are counted from the file's start.
 */
export function wandbRecords(buf: Uint8Array, at: number): WandbChunks {
  const records: Uint8Array[] = [];
  let bad = 0;
  let pos = 0;
  if (at === 0) {
    if (buf.length < WANDB_HEADER_BYTES) return { records, consumed: 0, bad };
    pos = WANDB_HEADER_BYTES;
  }
  let consumed = pos;
  let parts: Uint8Array[] | null = null;
  let broken = false;
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const { crc32, typeCrc } = chunkCrcs();
  while (pos < buf.length) {
    const inBlock = WANDB_BLOCK - ((at + pos) % WANDB_BLOCK);
    if (inBlock < CHUNK_HEADER) {
      // Padding to the block's end: a record boundary if no record is open.
      if (pos + inBlock > buf.length) break;
      pos += inBlock;
      if (parts === null) consumed = pos;
      continue;
    }
    if (pos + CHUNK_HEADER > buf.length) break;
    const crc = view.getUint32(pos, true);
    const len = view.getUint16(pos + 4, true);
    const type = buf[pos + 6]!;
    if (type === 0 && len === 0) {
      // Zeros where the writer had not written yet (a preallocated block): the rest of the block.
      if (pos + inBlock > buf.length) break;
      pos += inBlock;
      if (parts === null) consumed = pos;
      continue;
    }
    if (CHUNK_HEADER + len > inBlock) {
      // A chunk never crosses a block: this is not a chunk header. Skip the block, drop what was open.
      bad++;
      parts = null;
      if (pos + inBlock > buf.length) break;
      pos += inBlock;
      consumed = pos;
      continue;
    }
    const end = pos + CHUNK_HEADER + len;
    if (end > buf.length) break;
    const data = buf.subarray(pos + CHUNK_HEADER, end);
    const ok = crc32(data, typeCrc[type]) >>> 0 === crc;
    pos = end;
    if (!ok) {
      bad++;
      parts = null;
      broken = type === FIRST || type === MIDDLE;
      if (!broken) consumed = pos;
      continue;
    }
    if (type === FULL) {
      if (parts !== null) bad++;
      parts = null;
      broken = false;
      records.push(data);
      consumed = pos;
    } else if (type === FIRST) {
      if (parts !== null) bad++;
      parts = [data];
      broken = false;
    } else if (type === MIDDLE) {
      if (parts !== null) parts.push(data);
      else if (!broken) bad++;
    } else if (type === LAST) {
      if (parts !== null) {
        parts.push(data);
        records.push(Buffer.concat(parts));
      } else if (!broken) bad++;
      parts = null;
      broken = false;
      consumed = pos;
    } else {
      bad++;
      parts = null;
      consumed = pos;
    }
  }
  return { records, consumed, bad };
}

/** A protobuf message's fields: numbers for varints and fixed ones, bytes for length-delimited ones. */
type Field = { no: number; wire: 0 | 1 | 5; num: number } | { no: number; wire: 2; bytes: Uint8Array };

/** The fields of a message, in order (the cold path: records other than history rows). */
function* fields(b: Uint8Array): Generator<Field> {
  const at = [0];
  while (at[0]! < b.length) {
    const tag = varintAt(b, at);
    const no = Math.floor(tag / 8);
    const wire = tag & 7;
    const start = at[0]!;
    if (wire === 0) yield { no, wire, num: varintAt(b, at) };
    else if (wire === 2) {
      const end = lengthEnd(b, at, b.length);
      yield { no, wire, bytes: b.subarray(at[0], end) };
      at[0] = end;
    } else {
      skipValue(b, at, wire, b.length);
      const view = new DataView(b.buffer, b.byteOffset + start, at[0]! - start);
      yield wire === 1 ? { no, wire, num: view.getFloat64(0, true) } : { no, wire: 5, num: view.getFloat32(0, true) };
    }
  }
}

const text = (f: Field): string => (f.wire === 2 ? asText(f.bytes, 0, f.bytes.length) : '');

/** One key of a history row or a config: its name (a nested key's parts joined by `/`) and its JSON text. */
export interface WandbItem {
  key: string;
  json: string;
}

export type WandbRecord =
  | { kind: 'history'; step: number | null; items: WandbItem[] }
  | { kind: 'run'; project: string; name: string; runId: string; startTime: number | null; config: WandbItem[] }
  | { kind: 'metric'; name: string; glob: string; stepMetric: string }
  | { kind: 'exit'; exitCode: number }
  | { kind: 'stats'; time: number | null }
  | { kind: 'other'; field: number };

/** `key` / `nested_key` and `value_json` of a HistoryItem or ConfigItem (the same field numbers). */
function item(b: Uint8Array): WandbItem {
  let key = '';
  const nested: string[] = [];
  let json = '';
  for (const f of fields(b)) {
    if (f.no === 1) key = text(f);
    else if (f.no === 2) nested.push(text(f));
    else if (f.no === 16) json = text(f);
  }
  return { key: nested.length > 0 ? nested.join('/') : key, json };
}

/** Reads a varint at `at[0]` of `b`, moving `at[0]` past it. */
function varintAt(b: Uint8Array, at: number[]): number {
  let i = at[0]!;
  let v = 0;
  let mul = 1;
  for (;;) {
    if (i >= b.length) throw new RangeError('protobuf: varint past the end');
    const byte = b[i++]!;
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) break;
    mul *= 128;
  }
  at[0] = i;
  return v;
}

/** Where the varint read last by varint() ended. */
let varintEnd = 0;

/** The varint at `pos` of `b` (one byte: inline), its end in varintEnd; RangeError past the end. */
function varint(b: Uint8Array, pos: number): number {
  const c = b[pos];
  if (c !== undefined && c < 0x80) {
    varintEnd = pos + 1;
    return c;
  }
  const at = [pos];
  const v = varintAt(b, at);
  varintEnd = at[0]!;
  return v;
}

/** Moves `at[0]` past a field's value of wire type `wire`. */
function skipValue(b: Uint8Array, at: number[], wire: number, end: number): void {
  if (wire === 0) varintAt(b, at);
  else if (wire === 1) at[0]! += 8;
  else if (wire === 5) at[0]! += 4;
  else if (wire === 2) at[0] = lengthEnd(b, at, end);
  else throw new RangeError(`protobuf: wire type ${wire}`);
  if (at[0]! > end) throw new RangeError('protobuf: field past the end');
}

/** A length-delimited value's length read at `at[0]`: returns where the value ends (`at[0]` is at its start), at most `limit`. */
function lengthEnd(b: Uint8Array, at: number[], limit: number): number {
  const end = fieldEnd(b, at[0]!, limit);
  at[0] = varintEnd;
  return end;
}

/** lengthEnd with a scalar position: the value's start (after its length) in varintEnd. */
function fieldEnd(b: Uint8Array, pos: number, limit: number): number {
  const end = varint(b, pos) + varintEnd;
  if (end > limit) throw new RangeError('protobuf: field past the end');
  return end;
}

/**
 * The next length-delimited field of a message before `limit`, fields of other wire types
 * skipped: its number (0 at the end), `at[0]` at its value and `end[0]` where the value ends.
 */
function nextBytes(b: Uint8Array, at: number[], limit: number, end: number[]): number {
  while (at[0]! < limit) {
    const t = varintAt(b, at);
    if ((t & 7) !== 2) {
      skipValue(b, at, t & 7, limit);
      continue;
    }
    end[0] = lengthEnd(b, at, limit);
    return t >>> 3;
  }
  return 0;
}

interface Sliceable {
  utf8Slice(start: number, end: number): string;
}
/** A buffer's bytes as text: Buffer's own decoder, without toString's argument handling (a long run decodes millions of keys). */
const asText = (b: Uint8Array, start: number, end: number): string =>
  b instanceof Buffer
    ? (b as unknown as Sliceable).utf8Slice(start, end)
    : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8', start, end);

/** Keys told apart by id, at most this many: a run with more distinct keys reads the rest the general way. */
const MAX_KEYS = 1 << 16;

/**
 * The keys of the last row by their place in it: a run logs the same keys in the same order row
 * after row, so a key whose bytes equal the last row's at its place is that key again. Every key
 * met has an id (its place in `strs`, given in order and never reused), so decoded rows can carry
 * ids from one thread to another.
 */
export class KeyCache {
  private bytes: Uint8Array[] = [];
  private ids: number[] = [];
  /** Every key met, by id. */
  readonly strs: string[] = [];
  private readonly idOf = new Map<string, number>();

  /** The key b[start, end) at place `i`. */
  key(i: number, b: Uint8Array, start: number, end: number): string {
    const id = this.idAt(i, b, start, end);
    return id >= 0 ? this.strs[id]! : asText(b, start, end);
  }

  /** The id of the key b[start, end) at place `i`; -1 when MAX_KEYS are taken and it is a new one. */
  idAt(i: number, b: Uint8Array, start: number, end: number): number {
    const id = this.cached(i, b, start, end);
    return id >= 0 ? id : this.keep(i, b, start, end, asText(b, start, end));
  }

  /** The id of the key at place `i` when its bytes are b[start, end) again, else -1. */
  cached(i: number, b: Uint8Array, start: number, end: number): number {
    const old = this.bytes[i];
    const len = end - start;
    if (old === undefined || old.length !== len) return -1;
    for (let j = 0; j < len; j++) if (old[j] !== b[start + j]) return -1;
    return this.ids[i]!;
  }

  /** Keeps `s` as the key at place `i`, for its bytes b[start, end); returns its id (-1: see idAt). */
  keep(i: number, b: Uint8Array, start: number, end: number, s: string): number {
    let id = this.idOf.get(s);
    if (id === undefined) {
      if (this.strs.length >= MAX_KEYS) return -1;
      id = this.strs.length;
      this.strs.push(s);
      this.idOf.set(s, id);
    }
    if (i < 4096) {
      // A copy: Buffer's slice is a view, which would keep the whole read (up to 16 MiB) alive for
      // a key's few bytes, and see other bytes once Node's buffer pool hands that memory out again.
      this.bytes[i] = Uint8Array.prototype.slice.call(b, start, end);
      this.ids[i] = id;
    }
    return id;
  }
}

/**
 * The history row of a Record, or null when the record is of another kind: the hot path (a long
 * run is mostly rows), read in place without a message object per field.
 */
export function decodeHistoryRow(b: Uint8Array, keys?: KeyCache): { step: number | null; items: WandbItem[] } | null {
  const at = [0];
  while (at[0]! < b.length) {
    const tag = varintAt(b, at);
    const wire = tag & 7;
    if (tag >>> 3 !== 2 || wire !== 2) {
      skipValue(b, at, wire, b.length);
      continue;
    }
    const hEnd = lengthEnd(b, at, b.length);
    const items: WandbItem[] = [];
    let step: number | null = null;
    const ends = [0];
    for (let no = nextBytes(b, at, hEnd, ends); no !== 0; no = nextBytes(b, at, hEnd, ends)) {
      const end = ends[0]!;
      if (no === 1) {
        let key = '';
        let nested: string | null = null;
        let json = '';
        while (at[0]! < end) {
          const ft = varintAt(b, at);
          if ((ft & 7) !== 2) {
            skipValue(b, at, ft & 7, end);
            continue;
          }
          const fEnd = lengthEnd(b, at, end);
          const no = ft >>> 3;
          if (no === 1) key = keys === undefined ? asText(b, at[0]!, fEnd) : keys.key(items.length, b, at[0]!, fEnd);
          else if (no === 2) nested = nested === null ? asText(b, at[0]!, fEnd) : `${nested}/${asText(b, at[0]!, fEnd)}`;
          else if (no === 16) json = asText(b, at[0]!, fEnd);
          at[0] = fEnd;
        }
        items.push({ key: nested ?? key, json });
      } else if (no === 2) {
        while (at[0]! < end) {
          const st = varintAt(b, at);
          if (st === 8) step = varintAt(b, at);
          else skipValue(b, at, st & 7, end);
        }
      }
      at[0] = end;
    }
    return { step, items };
  }
  return null;
}

/** A google.protobuf.Timestamp (seconds 1, nanos 2) in epoch ms. */
function timestampOf(b: Uint8Array): number {
  let seconds = 0;
  let nanos = 0;
  for (const t of fields(b)) {
    if (t.no === 1 && t.wire === 0) seconds = t.num;
    else if (t.no === 2 && t.wire === 0) nanos = t.num;
  }
  return seconds * 1000 + Math.floor(nanos / 1e6);
}

/** One `Record` of a run file, as far as barwatch reads it; throws RangeError on bytes that are no protobuf. */
export function decodeWandbRecord(b: Uint8Array, keys?: KeyCache): WandbRecord {
  const row = decodeHistoryRow(b, keys);
  if (row !== null) return { kind: 'history', ...row };
  for (const f of fields(b)) {
    if (f.wire !== 2) continue;
    switch (f.no) {
      case 17: {
        const run = { kind: 'run' as const, project: '', name: '', runId: '', startTime: null as number | null, config: [] as WandbItem[] };
        for (const r of fields(f.bytes)) {
          if (r.wire !== 2) continue;
          if (r.no === 1) run.runId = text(r);
          else if (r.no === 3) run.project = text(r);
          else if (r.no === 8) run.name = text(r);
          else if (r.no === 4) for (const c of fields(r.bytes)) if (c.no === 1 && c.wire === 2) run.config.push(item(c.bytes));
          if (r.no === 17) run.startTime = timestampOf(r.bytes);
        }
        return run;
      }
      case 12: {
        const m = { kind: 'metric' as const, name: '', glob: '', stepMetric: '' };
        for (const x of fields(f.bytes)) {
          if (x.no === 1) m.name = text(x);
          else if (x.no === 2) m.glob = text(x);
          else if (x.no === 4) m.stepMetric = text(x);
        }
        return m;
      }
      case 18: {
        let exitCode = 0;
        for (const x of fields(f.bytes)) if (x.no === 1 && x.wire === 0) exitCode = x.num > 0x7fffffff ? x.num - 2 ** 64 : x.num;
        return { kind: 'exit', exitCode };
      }
      case 7: {
        // StatsRecord: its timestamp (field 2, a google.protobuf.Timestamp) is when wandb sampled the system.
        let time: number | null = null;
        for (const x of fields(f.bytes)) if (x.no === 2 && x.wire === 2) time = timestampOf(x.bytes);
        return { kind: 'stats', time };
      }
      default:
        if (f.no !== 16 && f.no !== 19 && f.no !== 200) return { kind: 'other', field: f.no };
    }
  }
  return { kind: 'other', field: 0 };
}

/** A history row as barwatch reads it: the step, the trainer's time, the scalar values, what was skipped. */
export interface WandbRow {
  step: number | null;
  /** `_timestamp`, epoch ms. */
  time: number | null;
  values: Record<string, number>;
  /** Histograms, media, tables (`_type`), strings and booleans: not series. */
  skipped: number;
}

/** A value_json: JSON, or the bare `NaN` / `Infinity` / `-Infinity` W&B writes for non-finite numbers. */
function valueOf(json: string): unknown {
  // Most values are plain numbers: Number() reads them without the JSON parser (and '' is no number).
  const c = json.charCodeAt(0);
  if ((c >= 48 && c <= 57) || c === 45) {
    const n = Number(json);
    if (!Number.isNaN(n)) return n;
  }
  try {
    return JSON.parse(json) as unknown;
  } catch {
    const t = json.trim();
    if (t === 'NaN') return NaN;
    if (t === 'Infinity') return Infinity;
    if (t === '-Infinity') return -Infinity;
    return undefined;
  }
}

/**
 * The values of a history row under their W&B keys (a nested dict unfolded with `/`); `stepKey`
 * is the metric a define_metric made the row's step (TRL: `train/global_step`), else `_step`.
 */
export function wandbRow(
  items: readonly WandbItem[],
  stepKey: string | null,
  /** A key's series name, or null for a key of the end-of-training summary. */
  rename: (key: string) => string | null = (k) => k,
): WandbRow & { summary: boolean } {
  const values: Record<string, number> = {};
  let skipped = 0;
  let step: number | null = null;
  let declared: number | null = null;
  let time: number | null = null;
  let summary = false;
  const declaredStep = stepKey !== null && stepKey !== '_step';
  const put = (key: string, v: unknown): void => {
    if (typeof v === 'number') {
      const name = rename(key);
      if (name === null) summary = true;
      else values[name] = v;
    } else if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      if ('_type' in v) skipped++;
      else for (const [k, x] of Object.entries(v)) put(`${key}/${k}`, x);
    } else if (v !== null && v !== undefined) skipped++;
  };
  // W&B unfolds a histogram or a media object into nested keys beside its `_type`: one skipped object.
  let objects: string[] | null = null;
  for (const { key } of items) if (key.endsWith('/_type')) (objects ??= []).push(key.slice(0, -5));
  if (objects !== null) skipped += objects.length;
  for (const { key, json } of items) {
    if (objects !== null && objects.some((o) => key.startsWith(o))) continue;
    if (key === '_runtime') continue;
    const v = valueOf(json);
    if (key === '_step') {
      if (typeof v === 'number') step ??= v;
    } else if (key === '_timestamp') {
      if (typeof v === 'number') time = Math.round(v * 1000);
    } else if (declaredStep && key === stepKey) {
      if (typeof v === 'number' && Number.isFinite(v)) declared = v;
    } else put(key, v);
  }
  return { step: declaredStep ? declared : step, time, values, skipped, summary };
}

interface Latin1Sliceable {
  latin1Slice(start: number, end: number): string;
}

/** Bytes of ASCII (a number's text) as a string: Buffer's own decoder where it can. */
const latin1At = (b: Uint8Array, start: number, end: number): string =>
  b instanceof Buffer ? (b as unknown as Latin1Sliceable).latin1Slice(start, end) : Buffer.from(b.subarray(start, end)).toString('latin1');

/**
 * A value_json that is a number, read from its bytes: undefined when it is anything else (a
 * string, an object, `true`...). Up to EXACT_DIGITS significant digits with a power of ten up to
 * 22 are read in place, correctly rounded (exactDecimal: Python writes most floats with 16 or 17
 * digits); anything else through Number() of its text.
 */
export function jsonNumberAt(b: Uint8Array, start: number, end: number): number | undefined {
  let i = start;
  if (i >= end) return undefined;
  let c = b[i]!;
  const neg = c === 45; /* - */
  if (neg) c = ++i < end ? b[i]! : 0;
  if (c === 78 /* N */) return !neg && end - i === 3 && b[i + 1] === 97 && b[i + 2] === 78 ? NaN : undefined;
  if (c === 73 /* I */) return end - i === 8 && b[i + 7] === 121 ? (neg ? -Infinity : Infinity) : undefined;
  // DecimalDigits' fields as locals (a number a value of a long run: no stores to an object per digit).
  let hi = 0;
  let lo = 0;
  let count = 0;
  let exp = 0;
  if (c === 48 /* 0 */) c = ++i < end ? b[i]! : 0;
  else if (c >= 49 && c <= 57)
    for (; c >= 48 && c <= 57; c = ++i < end ? b[i]! : 0) {
      if (++count <= 9) hi = hi * 10 + (c - 48);
      else if (count <= EXACT_DIGITS) lo = lo * 10 + (c - 48);
      else exp++;
    }
  else return undefined;
  if (c === 46 /* . */) {
    c = ++i < end ? b[i]! : 0;
    if (!(c >= 48 && c <= 57)) return undefined;
    for (; c >= 48 && c <= 57; c = ++i < end ? b[i]! : 0) {
      if (count === 0 && c === 48)
        exp--; // leading zeros of 0.000123
      else if (++count <= 9) {
        hi = hi * 10 + (c - 48);
        exp--;
      } else if (count <= EXACT_DIGITS) {
        lo = lo * 10 + (c - 48);
        exp--;
      }
    }
  }
  if (c === 101 || c === 69 /* e E */) {
    c = ++i < end ? b[i]! : 0;
    let eneg = false;
    if (c === 45 || c === 43) {
      eneg = c === 45;
      c = ++i < end ? b[i]! : 0;
    }
    if (!(c >= 48 && c <= 57)) return undefined;
    let e = 0;
    for (; c >= 48 && c <= 57; c = ++i < end ? b[i]! : 0) if (e < 100_000) e = e * 10 + (c - 48);
    exp += eneg ? -e : e;
  }
  if (i < end) return undefined;
  const v = count <= EXACT_DIGITS ? exactDecimal(hi, lo, count > 9 ? count - 9 : 0, exp) : NaN;
  if (v === v) return neg ? -v : v;
  return Number(latin1At(b, start, end));
}

/** A nested_key's parts (fields from `from` to `to`, tags included) joined with '/'. */
function nestedKey(b: Uint8Array, from: number, to: number): string {
  const parts: string[] = [];
  const p = [from];
  while (p[0]! < to) {
    varintAt(b, p);
    const e = lengthEnd(b, p, to);
    parts.push(asText(b, p[0]!, e));
    p[0] = e;
  }
  return parts.join('/');
}

/** The keys (ids of a KeyCache) and values of decoded rows, one after the other: a growing pair of arrays. */
export class RowItems {
  ids = new Int32Array(256);
  vals = new Float64Array(256);
  n = 0;

  push(id: number, v: number): void {
    if (this.n === this.ids.length) {
      const ids = new Int32Array(this.n * 2);
      ids.set(this.ids);
      this.ids = ids;
      const vals = new Float64Array(this.n * 2);
      vals.set(this.vals);
      this.vals = vals;
    }
    this.ids[this.n] = id;
    this.vals[this.n++] = v;
  }
}

/**
 * A history row of plain numbers under flat or nested keys, read straight from a Record's bytes
 * (no item objects, no value text for most numbers): its keys and values appended to `items`, in
 * order, `_runtime`'s value as NaN (never read). False for a record it does not read (another
 * kind, a value that is no number, a field it does not know), or a RangeError on bytes that are
 * no protobuf; either way what it appended is the caller's to drop. Needs nothing of the parser,
 * so it runs on any thread.
 */
export function decodeRow(b: Uint8Array, keys: KeyCache, items: RowItems): boolean {
  const size = b.length;
  if (size === 0) return false;
  // A Record's history (field 2), after its number (field 1) and other leading varints.
  let tag = varint(b, 0);
  let pos = varintEnd;
  while ((tag & 7) === 0) {
    varint(b, pos);
    pos = varintEnd;
    if (pos >= size) return false;
    tag = varint(b, pos);
    pos = varintEnd;
  }
  if (tag !== 18) return false;
  const hEnd = fieldEnd(b, pos, size);
  pos = varintEnd;
  let i = 0;
  while (pos < hEnd) {
    const t = varint(b, pos);
    pos = varintEnd;
    if ((t & 7) !== 2) {
      const at = [pos];
      skipValue(b, at, t & 7, hEnd);
      pos = at[0]!;
      continue;
    }
    // Field 0 is no field: the row ends there (as nextBytes reads it).
    if (t >>> 3 === 0) break;
    const end = fieldEnd(b, pos, hEnd);
    pos = varintEnd;
    if (t >>> 3 !== 1) {
      pos = end;
      continue;
    }
    // An item: key (1) or nested_key (2, its parts one after the other), value_json (16).
    let id = -1;
    let vStart = -1;
    let vEnd = -1;
    let nStart = -1;
    let nEnd = -1;
    while (pos < end) {
      const fieldAt = pos;
      const ft = varint(b, pos);
      pos = varintEnd;
      if ((ft & 7) !== 2) return false;
      const fEnd = fieldEnd(b, pos, end);
      pos = varintEnd;
      const no = ft >>> 3;
      if (no === 1) {
        id = keys.idAt(i, b, pos, fEnd);
        if (id < 0) return false;
      } else if (no === 16) {
        vStart = pos;
        vEnd = fEnd;
      } else if (no === 2) {
        if (nStart < 0) nStart = fieldAt;
        else if (nEnd !== fieldAt) return false;
        nEnd = fEnd;
      }
      pos = fEnd;
    }
    if (nStart >= 0) {
      if (id >= 0) return false;
      // The parts' bytes (tags included) are the cache's key; their text joined with '/' its value.
      id = keys.cached(i, b, nStart, nEnd);
      if (id < 0) id = keys.keep(i, b, nStart, nEnd, nestedKey(b, nStart, nEnd));
    }
    if (id < 0 || vStart < 0) return false;
    i++;
    if (keys.strs[id] === '_runtime') {
      items.push(id, NaN);
      continue;
    }
    const v = jsonNumberAt(b, vStart, vEnd);
    if (v === undefined) return false;
    items.push(id, v);
  }
  return true;
}

/** DecodedRows.from of a record left for the reading thread to decode (past the decode thread's share). */
export const NOT_TRIED = -2;

/**
 * The rows of a part of a run file decoded ahead (decodeRow on another thread): record r of the
 * part is items [from[r], to[r]) of ids and vals; from[r] = -1 when decodeRow did not read it,
 * NOT_TRIED when it was left to the reading thread. `strs` holds the keys by id.
 */
export class DecodedRows {
  constructor(
    readonly strs: readonly string[],
    readonly ids: Int32Array,
    readonly vals: Float64Array,
    readonly from: Int32Array,
    readonly to: Int32Array,
  ) {}
}

/** The decoding of a part's records, as the decode thread hands it over. */
export interface AheadRows {
  /** Keys the decode thread met first in this part, in the order of their ids. */
  keys: string[];
  ids: Int32Array<ArrayBuffer>;
  vals: Float64Array<ArrayBuffer>;
  from: Int32Array<ArrayBuffer>;
  to: Int32Array<ArrayBuffer>;
}

/**
 * The first `share` (0 to 1) of `records` decoded by decodeRow with `keys`, the rest NOT_TRIED:
 * the decode thread's work on a part, the rest the reading thread's (see RecordTailer's share).
 * `items`: arrays to decode into, used again from part to part (what is handed back is a copy).
 */
export function decodeRows(
  records: readonly Uint8Array[],
  keys: KeyCache,
  share: number,
  hurry?: () => boolean,
  items = new RowItems(),
): AheadRows {
  const known = keys.strs.length;
  items.n = 0;
  const n = records.length;
  let upTo = Math.min(n, Math.ceil(share * n));
  const from = new Int32Array(n);
  const to = new Int32Array(n);
  for (let r = 0; r < n; r++) {
    const start = items.n;
    let ok = false;
    // The reading thread waits for the part: the records from here on are its own.
    if (r < upTo && (r & (HURRY_EVERY - 1)) === 0 && hurry?.() === true) upTo = r;
    if (r < upTo) {
      try {
        ok = decodeRow(records[r]!, keys, items);
      } catch {
        // Not a row decodeRow reads: the parser's general path decides.
      }
    }
    if (!ok) items.n = start;
    from[r] = ok ? start : r < upTo ? -1 : NOT_TRIED;
    to[r] = items.n;
  }
  return { keys: keys.strs.slice(known), ids: items.ids.slice(0, items.n), vals: items.vals.slice(0, items.n), from, to };
}

/** Records decoded between two looks at whether the reading thread waits for the part (a power of two). */
const HURRY_EVERY = 16;

/** The decode thread's keys (one cache a thread, kept from part to part and file to file), and the arrays it decodes rows into. */
let aheadKeys: KeyCache | null = null;
let aheadItems: RowItems | null = null;
/** On the reading thread: the decode thread's keys by id, as its parts arrive (see AheadFraming.receive). */
const aheadStrs: string[] = [];

/** The framing as the record tailer uses it, and ahead: history rows decoded on the decode thread. */
export const WANDB_FRAMING: Framing = {
  split(buf, at) {
    const r = wandbRecords(buf, at);
    return { records: r.records, consumed: r.consumed, badData: r.bad, corruptAt: null };
  },
  minBytes: CHUNK_HEADER,
  ahead: {
    decode(buf, at, share, hurry) {
      const frames = WANDB_FRAMING.split(buf, at);
      const decoded = decodeRows(frames.records, (aheadKeys ??= new KeyCache()), share, hurry, (aheadItems ??= new RowItems()));
      return { frames, decoded, transfer: [decoded.ids.buffer, decoded.vals.buffer, decoded.from.buffer, decoded.to.buffer] };
    },
    receive(decoded) {
      const d = decoded as AheadRows;
      for (const k of d.keys) aheadStrs.push(k);
      return new DecodedRows(aheadStrs, d.ids, d.vals, d.from, d.to);
    },
  },
};

/** What a row's value is, by its key (WandbParser.layout): none (`_runtime`), the step, the time, the declared step, the end-of-training summary, or a series' value. */
const ROLE_NONE = 0;
const ROLE_STEP = 1;
const ROLE_TIME = 2;
const ROLE_DECLARED = 3;
const ROLE_SUMMARY = 4;
const ROLE_VALUE = 5;

/** Whether ids[from, from + n) are `known`, id for id. */
function sameIds(known: Int32Array, ids: ArrayLike<number>, from: number, n: number): boolean {
  if (known.length !== n) return false;
  for (let k = 0; k < n; k++) if (known[k] !== ids[from + k]) return false;
  return true;
}

/**
 * A W&B run file's records as barwatch's: each history row a metric record at its step (`_step`,
 * or the key a define_metric made the step: TRL's `train/global_step`), at the trainer's
 * `_timestamp`, through the same key map as every format (TRL's `train/` prefix dropped); the
 * run's config for its settings and verl's rollout count; `exit` as the finish line, or as a
 * fatal error with its code.
 */
export class WandbParser implements RecordParser {
  readonly kind = 'records';
  undecodable = 0;
  skipped = 0;
  /** The step metric of every key (define_metric with a name) and of every other (a glob `*`). */
  private stepOf: Record<string, string> = {};
  private stepOfAll: string | null = null;
  private declared = 0;
  private readonly keys = new KeyCache();
  private readonly items = new RowItems();
  /** How the file grows in the trainer's time: its first and latest time (rows, system stats), bytes and rows read. */
  private grown = { first: null as number | null, latest: null as number | null, bytes: 0, rows: 0 };

  constructor(private readonly opts: ParserOptions) {}

  format(): FormatId {
    return 'wandb';
  }

  records(data: readonly Uint8Array[], ahead?: unknown): ParsedRecord[] {
    const out: ParsedRecord[] = [];
    const g = this.grown;
    const decoded = ahead instanceof DecodedRows && ahead.from.length === data.length ? ahead : null;
    for (let r = 0; r < data.length; r++) {
      const bytes = data[r]!;
      g.bytes += bytes.length + CHUNK_HEADER;
      try {
        if (this.fastRow(bytes, r, decoded, out)) {
          g.rows++;
          continue;
        }
      } catch {
        // Not a history row it can read: the general decoder decides, and counts what it cannot read.
      }
      let rec: WandbRecord;
      try {
        rec = decodeWandbRecord(bytes, this.keys);
      } catch {
        this.undecodable++;
        continue;
      }
      if (rec.kind === 'history') {
        g.rows++;
        this.row(rec.items, out);
      } else if (rec.kind === 'stats' && rec.time !== null) this.seen(rec.time);
      else if (rec.kind === 'metric') {
        if (rec.stepMetric === '') continue;
        if (rec.name !== '') {
          this.stepOf[rec.name] = rec.stepMetric;
          this.declared = Object.keys(this.stepOf).length;
        } else if (rec.glob === '*') this.stepOfAll = rec.stepMetric;
      } else if (rec.kind === 'run') this.run(rec.config, out);
      else if (rec.kind === 'exit')
        out.push(rec.exitCode === 0 ? { kind: 'finished' } : { kind: 'fatal', message: `the W&B run exited with code ${rec.exitCode}` });
    }
    if (data.length > 0 && g.latest !== null) out.push(this.reach());
    return out;
  }

  private seen(time: number): void {
    const g = this.grown;
    g.first ??= time;
    if (g.latest === null || time > g.latest) g.latest = time;
  }

  /**
   * How far the file reaches in the trainer's time, and how late its rows come: wandb-core writes
   * whole 32 KiB blocks while the run goes on, so about a block's worth of rows (and the time it
   * takes to write them) is not on disk yet.
   */
  private reach(): ParsedRecord {
    const g = this.grown;
    const perBlock = (x: number): number => (g.bytes > 0 ? (x * WANDB_BLOCK) / g.bytes : 0);
    return {
      kind: 'reach',
      time: g.latest!,
      block: { steps: Math.round(perBlock(g.rows)), ms: Math.round(perBlock(g.latest! - g.first!)) },
    };
  }

  /** W&B key to series name (null: the end-of-training summary), one lookup a key after the first row. */
  private readonly names = new Map<string, string | null>();

  private readonly rename = (key: string): string | null => {
    let name = this.names.get(key);
    if (name === undefined) {
      const bare = trainTag(key);
      name = END_OF_TRAINING.has(bare) ? null : canonicalKey(bare, this.opts.keyMap);
      if (this.names.size < 10_000) this.names.set(key, name);
    }
    return name;
  };

  /** The series names of the last row's keys by their place, and whether they are all distinct (see fastRow). */
  private rowKeys: string[] = [];
  private rowNames: (string | null)[] = [];
  private rowNamesOut: string[] = [];
  private rowItems = -1;
  private rowUnique = true;
  /** The step key (stepOfAll) the names in rowNames were made under. */
  private rowStepKey: string | null = null;
  /**
   * The last row read in full, as its keys' ids (of `layout.strs`: the reading thread's cache or
   * the decode thread's) and what each value is (ROLE_*): a row with the same ids is read by place
   * alone, without a look at its keys' text (each row of a long run names the same keys).
   */
  private layout: { strs: readonly string[]; ids: Int32Array; roles: Uint8Array; stepKey: string | null } | null = null;

  /** Record r of a read as a row: decoded ahead (a record decodeRow did not read there is not tried again), or by decodeRow here (past the decode thread's share, or not read ahead). */
  private fastRow(b: Uint8Array, r: number, decoded: DecodedRows | null, out: ParsedRecord[]): boolean {
    if (decoded !== null) {
      const from = decoded.from[r]!;
      if (from !== NOT_TRIED) return from >= 0 && this.rowRecord(decoded.strs, decoded.ids, decoded.vals, from, decoded.to[r]!, out);
    }
    const items = this.items;
    items.n = 0;
    return decodeRow(b, this.keys, items) && this.rowRecord(this.keys.strs, items.ids, items.vals, 0, items.n, out);
  }

  /**
   * The hot path of a long run: a history row read by decodeRow (here, or ahead on another
   * thread) made a ListedRecord (the names of the last row's keys reused). False, having written
   * nothing, for a row it does not read (a histogram, a step declared per key, two keys of one
   * name): then wandbRow reads it.
   */
  private rowRecord(
    strs: readonly string[],
    ids: ArrayLike<number>,
    vals: ArrayLike<number>,
    from: number,
    to: number,
    out: ParsedRecord[],
  ): boolean {
    // Steps declared per key (define_metric with a name) are the general path's.
    if (this.declared > 0) return false;
    const stepKey = this.stepOfAll;
    if (this.rowStepKey !== stepKey) {
      // A key declared the step since the last row is no series any more: every name is made again.
      this.rowStepKey = stepKey;
      this.rowKeys.length = 0;
    }
    const n = to - from;
    const known =
      this.layout !== null && this.layout.strs === strs && this.layout.stepKey === stepKey && sameIds(this.layout.ids, ids, from, n);
    // Room for every key of the row, cut to the values taken at the end: pushed to, the array
    // would be made three times over (V8 grows it by half again plus 16) for each row.
    const nums = new Array<number>(known ? this.rowNamesOut.length : n);
    let taken = 0;
    let step: number | null = null;
    let declaredValue: number | null = null;
    let time: number | null = null;
    let summary = false;
    let i = 0;
    let same = true;
    // A row with the keys of the row before, in the same order, takes each value's role from that
    // row; another has its keys looked at, and its roles kept for the rows after it.
    const roles = known ? this.layout!.roles : new Uint8Array(n);
    for (let k = from; k < to; k++, i++) {
      if (!known) {
        const key = strs[ids[k]!]!;
        if (key.endsWith('/_type')) return this.unread();
        const special = key === '_runtime' || key === '_step' || key === '_timestamp' || key === stepKey;
        if (this.rowKeys[i] !== key) {
          same = false;
          this.rowKeys[i] = key;
          this.rowNames[i] = special ? null : this.rename(key);
        }
        roles[i] =
          key === '_runtime'
            ? ROLE_NONE
            : key === '_step'
              ? ROLE_STEP
              : key === '_timestamp'
                ? ROLE_TIME
                : key === stepKey && stepKey !== '_step'
                  ? ROLE_DECLARED
                  : this.rowNames[i] === null
                    ? ROLE_SUMMARY
                    : ROLE_VALUE;
      }
      const role = roles[i]!;
      const v = vals[k]!;
      if (role === ROLE_VALUE) nums[taken++] = v;
      else if (role === ROLE_STEP) step ??= v;
      else if (role === ROLE_TIME) time = Math.round(v * 1000);
      else if (role === ROLE_DECLARED) {
        if (Number.isFinite(v)) declaredValue = v;
      } else if (role === ROLE_SUMMARY) summary = true;
    }
    nums.length = taken;
    if (!known) this.layout = { strs, ids: Int32Array.from({ length: n }, (_, k) => ids[from + k]!), roles, stepKey };
    const rowStep = stepKey !== null && stepKey !== '_step' ? declaredValue : step;
    if (rowStep === null) return this.unread();
    if (!same || this.rowItems !== i) {
      // The keys changed: their names again, in order, and whether two keys give one name.
      this.rowKeys.length = i;
      this.rowNames.length = i;
      this.rowItems = i;
      const names: string[] = [];
      for (let k = 0; k < i; k++) {
        const key = this.rowKeys[k]!;
        const name = this.rowNames[k];
        if (name === null || name === undefined || key === '_runtime' || key === '_step' || key === '_timestamp' || key === stepKey)
          continue;
        names.push(name);
      }
      this.rowNamesOut = names;
      this.rowUnique = new Set(names).size === names.length;
    }
    if (!this.rowUnique || nums.length !== this.rowNamesOut.length) return false;
    if (summary) out.push({ kind: 'finished' });
    if (nums.length === 0) return true;
    const rec = new ListedRecord(rowStep, this.rowNamesOut, nums);
    if (time !== null) {
      rec.time = time;
      this.seen(time);
    }
    out.push(rec);
    return true;
  }

  /** A row rowRecord gave up on after taking some of its keys: the next row's names are made again. */
  private unread(): false {
    this.rowItems = -1;
    this.layout = null;
    return false;
  }

  private row(items: readonly WandbItem[], out: ParsedRecord[]): void {
    const row = wandbRow(items, this.stepKey(items), this.rename);
    this.skipped += row.skipped;
    if (row.summary) out.push({ kind: 'finished' });
    let any = false;
    for (const _ in row.values) {
      any = true;
      break;
    }
    if (!any) return;
    const rec: MetricRecord = { kind: 'metrics', step: row.step, values: row.values };
    if (row.time !== null) {
      rec.time = row.time;
      this.seen(row.time);
    }
    out.push(rec);
  }

  /** The step metric of a row: the one declared for a key it holds, else the glob's, else `_step`. */
  private stepKey(items: readonly WandbItem[]): string | null {
    if (this.declared === 0) return this.stepOfAll;
    for (const { key } of items) {
      const s = this.stepOf[key];
      if (s !== undefined) return s;
    }
    return this.stepOfAll;
  }

  private run(config: readonly WandbItem[], out: ParsedRecord[]): void {
    const doc: Record<string, unknown> = {};
    for (const { key, json } of config) {
      try {
        doc[key] = JSON.parse(json) as unknown;
      } catch {
        // A value W&B could not write as JSON: not a setting barwatch reads.
      }
    }
    const settings = settingsOf(doc);
    if (Object.keys(settings).length > 0) out.push({ kind: 'settings', settings });
    const n = (doc['actor_rollout_ref'] as { rollout?: { n?: unknown } } | undefined)?.rollout?.n;
    if (typeof n === 'number' && Number.isInteger(n) && n > 0) out.push({ kind: 'rollouts', k: n });
    const total = (doc['trainer'] as { total_training_steps?: unknown } | undefined)?.total_training_steps;
    if (typeof total === 'number' && total > 0) out.push({ kind: 'plan', total, source: 'stated' });
  }

  counts(): { undecodable: number; skipped: number } {
    return { undecodable: this.undecodable, skipped: this.skipped };
  }

  snapshot(): unknown {
    return { stepOf: this.stepOf, stepOfAll: this.stepOfAll, grown: this.grown };
  }

  restore(state: unknown): void {
    const s = (state ?? {}) as { stepOf?: Record<string, string>; stepOfAll?: string | null; grown?: WandbParser['grown'] };
    if (s.grown !== undefined && typeof s.grown === 'object' && typeof s.grown.bytes === 'number') this.grown = { ...s.grown };
    if (s.stepOf !== undefined && typeof s.stepOf === 'object') this.stepOf = { ...s.stepOf };
    this.declared = Object.keys(this.stepOf).length;
    if (typeof s.stepOfAll === 'string') this.stepOfAll = s.stepOfAll;
  }
}

/** `run-<id>.wandb` in a W&B run folder (online `run-<ts>-<id>`, offline `offline-run-<ts>-<id>`). */
export const wandbInput = defineInput({
  id: 'wandb',
  read: 'records',
  named: (base) => base.endsWith('.wandb'),
  sniffed: (head) => head.startsWith(':W&B'),
  create: (opts) => new WandbParser(opts),
  framing: WANDB_FRAMING,
  wholeRun: false,
  stepClock: true,
  late: true,
});
