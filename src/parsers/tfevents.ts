/**
 * TensorBoard event files (`events.out.tfevents.*`): each TFRecord holds an `Event` protobuf. A
 * small wire decoder reads the few fields barwatch needs: `wall_time` (1, double), `step` (2,
 * int64), `file_version` (3) and `summary` (5) with its values (`tag` 1, `simple_value` 2, or a
 * rank-0 `tensor` 8 of DT_FLOAT or DT_DOUBLE in `float_val` 5, `double_val` 6 or 4/8 bytes of
 * `tensor_content` 4, with plugin `scalars` in `metadata` 9). Images, histograms, text, audio and
 * other plugins are skipped and counted. Tags go through the same key map as every format.
 */
import { canonicalKey, END_OF_TRAINING, trainTag } from './keys.js';
import { TFRECORD } from './tfrecord.js';
import type { FormatId, MetricRecord, ParsedRecord, ParserOptions, RecordParser } from './types.js';
import { defineInput } from './types.js';

const DT_FLOAT = 1;
const DT_DOUBLE = 2;

class Reader {
  at: number;

  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.at = start;
  }

  get done(): boolean {
    return this.at >= this.end;
  }

  varint(): number {
    let result = 0;
    let shift = 1;
    for (let i = 0; i < 10; i++) {
      if (this.at >= this.end) throw new Error('varint past the end');
      const b = this.buf[this.at++]!;
      result += (b & 0x7f) * shift;
      if (b < 0x80) return result;
      shift *= 128;
    }
    throw new Error('varint too long');
  }

  /**
   * A signed int64 (an Event's step): protobuf writes a negative one as ten bytes of two's
   * complement, which as an unsigned number is near 1.8e19; read as signed, exactly.
   */
  int64(): number {
    const from = this.at;
    const v = this.varint();
    if (this.at - from < 10) return v;
    let big = 0n;
    for (let i = this.at - 1; i >= from; i--) big = (big << 7n) | BigInt(this.buf[i]! & 0x7f);
    return Number(BigInt.asIntN(64, big));
  }

  /** A length-delimited field: a sub-reader over its bytes. */
  sub(): Reader {
    const len = this.varint();
    if (this.at + len > this.end) throw new Error('field past the end');
    const r = new Reader(this.buf, this.at, this.at + len);
    this.at += len;
    return r;
  }

  double(): number {
    if (this.at + 8 > this.end) throw new Error('double past the end');
    const v = this.buf.readDoubleLE(this.at);
    this.at += 8;
    return v;
  }

  float(): number {
    if (this.at + 4 > this.end) throw new Error('float past the end');
    const v = this.buf.readFloatLE(this.at);
    this.at += 4;
    return v;
  }

  string(): string {
    const len = this.varint();
    if (this.at + len > this.end) throw new Error('field past the end');
    const s = this.buf.toString('utf8', this.at, this.at + len);
    this.at += len;
    return s;
  }

  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.at += 8;
    else if (wire === 2) this.sub();
    else if (wire === 5) this.at += 4;
    else throw new Error(`wire type ${wire} not supported`);
  }
}

export interface DecodedEvent {
  wallTime: number | null;
  step: number | null;
  fileVersion: string | null;
  /** Scalar values by tag. */
  scalars: [string, number][];
  /** Summary values that are not scalars (images, histograms, text, other plugins). */
  skipped: number;
}

function tensorScalar(r: Reader): number | null {
  let dtype = 0;
  let rank = 0;
  let content: Reader | null = null;
  const values: number[] = [];
  while (!r.done) {
    const key = r.varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (field === 1 && wire === 0) dtype = r.varint();
    else if (field === 2 && wire === 2) {
      const shape = r.sub();
      while (!shape.done) {
        const k = shape.varint();
        if (k >>> 3 === 2) rank++;
        shape.skip(k & 7);
      }
    } else if (field === 4 && wire === 2) content = r.sub();
    else if (field === 5 && wire === 2) {
      const p = r.sub();
      while (!p.done) values.push(p.float());
    } else if (field === 5 && wire === 5) values.push(r.float());
    else if (field === 6 && wire === 2) {
      const p = r.sub();
      while (!p.done) values.push(p.double());
    } else if (field === 6 && wire === 1) values.push(r.double());
    else r.skip(wire);
  }
  if (rank !== 0 || (dtype !== DT_FLOAT && dtype !== DT_DOUBLE)) return null;
  if (values.length === 1) return values[0]!;
  if (content !== null) {
    const n = content.end - content.at;
    if (dtype === DT_FLOAT && n === 4) return content.float();
    if (dtype === DT_DOUBLE && n === 8) return content.double();
  }
  return null;
}

function pluginName(r: Reader): string | null {
  let name: string | null = null;
  while (!r.done) {
    const key = r.varint();
    if (key >>> 3 === 1 && (key & 7) === 2) {
      const pd = r.sub();
      while (!pd.done) {
        const k = pd.varint();
        if (k >>> 3 === 1 && (k & 7) === 2) name = pd.string();
        else pd.skip(k & 7);
      }
    } else r.skip(key & 7);
  }
  return name;
}

function summaryValue(r: Reader): { tag: string; value: number } | null {
  let tag = '';
  let value: number | null = null;
  let plugin: string | null = null;
  let tensor: Reader | null = null;
  let other = false;
  while (!r.done) {
    const key = r.varint();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === 1 && wire === 2) tag = r.string();
    else if (field === 2 && wire === 5) value = r.float();
    else if (field === 8 && wire === 2) tensor = r.sub();
    else if (field === 9 && wire === 2) plugin = pluginName(r.sub());
    else {
      if (field >= 3 && field <= 6) other = true;
      r.skip(wire);
    }
  }
  if (value === null && tensor !== null && (plugin === null || plugin === 'scalars')) value = tensorScalar(tensor);
  if (value === null || other || tag === '') return null;
  return { tag, value };
}

/** Decodes one Event; throws on bytes that are not one. */
export function decodeEvent(bytes: Uint8Array): DecodedEvent {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const r = new Reader(buf);
  const out: DecodedEvent = { wallTime: null, step: null, fileVersion: null, scalars: [], skipped: 0 };
  while (!r.done) {
    const key = r.varint();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === 1 && wire === 1) out.wallTime = r.double();
    else if (field === 2 && wire === 0) out.step = r.int64();
    else if (field === 3 && wire === 2) out.fileVersion = r.string();
    else if (field === 5 && wire === 2) {
      const s = r.sub();
      while (!s.done) {
        const k = s.varint();
        if (k >>> 3 === 1 && (k & 7) === 2) {
          const v = summaryValue(s.sub());
          if (v === null) out.skipped++;
          else out.scalars.push([v.tag, v.value]);
        } else s.skip(k & 7);
      }
    } else r.skip(wire);
  }
  return out;
}

/**
 * Event records to metric records: the scalars of consecutive events with the same step become
 * one record (a writer logs each tag as its own event), with the trainer's wall time.
 */

export class TfEventsDecoder {
  /** Summary values that were not scalars, and records that did not decode. */
  skipped = 0;
  undecodable = 0;

  constructor(private readonly opts: ParserOptions) {}

  decode(records: readonly Uint8Array[]): ParsedRecord[] {
    const out: ParsedRecord[] = [];
    let cur: MetricRecord | null = null;
    for (const rec of records) {
      let e: DecodedEvent;
      try {
        e = decodeEvent(rec);
      } catch {
        this.undecodable++;
        continue;
      }
      this.skipped += e.skipped;
      if (e.scalars.length === 0 || e.step === null) continue;
      const scalars = e.scalars.filter(([tag]) => !END_OF_TRAINING.has(trainTag(tag)));
      if (scalars.length < e.scalars.length && e.scalars.some(([tag]) => trainTag(tag) === 'train_runtime')) out.push({ kind: 'finished' });
      if (scalars.length === 0) continue;
      if (cur === null || cur.step !== e.step) {
        cur = { kind: 'metrics', step: e.step, values: {} };
        if (e.wallTime !== null) cur.time = Math.round(e.wallTime * 1000);
        out.push(cur);
      }
      for (const [tag, value] of scalars) cur.values[canonicalKey(trainTag(tag), this.opts.keyMap)] = value;
    }
    return out;
  }
}

export class TensorBoardParser implements RecordParser {
  readonly kind = 'records';
  private readonly decoder: TfEventsDecoder;

  constructor(opts: ParserOptions) {
    this.decoder = new TfEventsDecoder(opts);
  }

  format(): FormatId {
    return 'tensorboard';
  }

  records(data: readonly Uint8Array[]): ParsedRecord[] {
    return this.decoder.decode(data);
  }

  counts(): { undecodable: number; skipped: number } {
    return { undecodable: this.decoder.undecodable, skipped: this.decoder.skipped };
  }
}

export const tensorboardInput = defineInput({
  id: 'tensorboard',
  read: 'records',
  named: (base) => base.startsWith('events.out.tfevents.'),
  create: (opts) => new TensorBoardParser(opts),
  framing: TFRECORD,
  stream: {
    firstStep(records) {
      for (const rec of records) {
        try {
          const e = decodeEvent(rec);
          if (e.step !== null && e.scalars.length > 0) return e.step;
        } catch {
          // Not an event: the next one may be.
        }
      }
      return null;
    },
  },
});
