/**
 * A W&B run-file writer for the simulator (`simulate --logger wandb`) and the tests: the header, LevelDB-log chunks in 32 KiB blocks,
 * protobuf `Record`s (history rows, the run, define_metric, exit) as wandb-core writes them. Like
 * wandb-core, it can hold the last partial block back and write only whole blocks while the run
 * goes on (`flushBlocks`), and the rest at the end (`finish`).
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';

const BLOCK = 32 * 1024;

function varint(n: number): number[] {
  const out: number[] = [];
  let v = n < 0 ? 2 ** 64 + n : n;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
  return out;
}

function bytesField(no: number, payload: Uint8Array | string): Buffer {
  const b = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : Buffer.from(payload);
  return Buffer.concat([Buffer.from(varint(no * 8 + 2)), Buffer.from(varint(b.length)), b]);
}

function intField(no: number, n: number): Buffer {
  return Buffer.from([...varint(no * 8), ...varint(n)]);
}

/** A history row: each key's value as W&B writes it (`NaN` bare), `_step` and `_timestamp` beside. */
export function historyRecord(step: number, values: Record<string, number | string | object>, timestamp: number): Buffer {
  const items: Buffer[] = [];
  const item = (key: string, json: string): Buffer =>
    bytesField(
      1,
      Buffer.concat([
        key.includes('/') ? Buffer.concat(key.split('/').map((k) => bytesField(2, k))) : bytesField(1, key),
        bytesField(16, json),
      ]),
    );
  for (const [k, v] of Object.entries(values))
    items.push(item(k, typeof v === 'number' && !Number.isFinite(v) ? String(v) : JSON.stringify(v)));
  items.push(item('_step', String(step)), item('_timestamp', String(timestamp)), item('_runtime', '1.5'));
  return bytesField(2, Buffer.concat([...items, bytesField(2, intField(1, step))]));
}

export function runRecord(opts: { project: string; name: string; id: string; start: number; config: Record<string, unknown> }): Buffer {
  const config = Buffer.concat(
    Object.entries(opts.config).map(([k, v]) => bytesField(1, Buffer.concat([bytesField(1, k), bytesField(16, JSON.stringify(v))]))),
  );
  const start = Buffer.concat([intField(1, Math.floor(opts.start / 1000)), intField(2, (opts.start % 1000) * 1e6)]);
  return bytesField(
    17,
    Buffer.concat([
      bytesField(1, opts.id),
      bytesField(3, opts.project),
      bytesField(4, config),
      bytesField(8, opts.name),
      bytesField(17, start),
    ]),
  );
}

export function metricRecord(glob: string, stepMetric: string): Buffer {
  return bytesField(12, Buffer.concat([bytesField(2, glob), bytesField(4, stepMetric)]));
}

/** A system-stats record (wandb's system monitor) sampled at `ms` (epoch ms), with `pad` bytes of items. */
export function statsRecord(ms: number, pad = 0): Buffer {
  const ts = Buffer.concat([intField(1, Math.floor(ms / 1000)), intField(2, (ms % 1000) * 1e6)]);
  const items = [bytesField(3, Buffer.concat([bytesField(1, 'cpu'), bytesField(16, '12.5')]))];
  if (pad > 0) items.push(bytesField(3, Buffer.concat([bytesField(1, 'proc.note'), bytesField(16, JSON.stringify('x'.repeat(pad)))])));
  return bytesField(7, Buffer.concat([intField(1, 0), bytesField(2, ts), ...items]));
}

export function exitRecord(code: number): Buffer {
  return bytesField(18, intField(1, code));
}

export class WandbWriter {
  /** Bytes framed but not yet on disk (the open block, while `wholeBlocks`). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Where the next chunk goes: offset in the file. */
  private at = 7;
  private written = 0;

  constructor(
    readonly file: string,
    /** Write only whole blocks until `finish`, as wandb-core does while a run goes on. */
    private readonly wholeBlocks = true,
  ) {
    mkdirSync(path.dirname(file), { recursive: true });
    const header = Buffer.from([0x3a, 0x57, 0x26, 0x42, 0xe1, 0xbe, 0x00]);
    writeFileSync(file, header);
    this.written = header.length;
  }

  /** Frames one record into chunks, splitting it across blocks. */
  append(record: Buffer): void {
    let data = record;
    let first = true;
    for (;;) {
      const left = BLOCK - (this.at % BLOCK);
      if (left < 7) {
        this.emit(Buffer.alloc(left));
        continue;
      }
      const room = left - 7;
      const take = Math.min(room, data.length);
      const last = take === data.length;
      const type = first && last ? 1 : first ? 2 : last ? 4 : 3;
      const chunk = Buffer.alloc(7 + take);
      data.copy(chunk, 7, 0, take);
      chunk.writeUInt16LE(take, 4);
      chunk[6] = type;
      chunk.writeUInt32LE(crc32(chunk.subarray(7), crc32(chunk.subarray(6, 7))) >>> 0, 0);
      this.emit(chunk);
      data = data.subarray(take);
      first = false;
      if (last) return;
    }
  }

  private emit(b: Buffer): void {
    this.pending.push(b);
    this.pendingBytes += b.length;
    this.at += b.length;
    if (!this.wholeBlocks) this.flush(Infinity);
    else this.flushBlocks();
  }

  /** Writes what fills whole blocks. */
  flushBlocks(): void {
    const end = Math.floor(this.at / BLOCK) * BLOCK;
    if (end > this.written) this.flush(end - this.written);
  }

  private flush(bytes: number): void {
    const all = Buffer.concat(this.pending);
    const n = Math.min(bytes, all.length);
    appendFileSync(this.file, all.subarray(0, n));
    this.written += n;
    this.pending = n < all.length ? [all.subarray(n)] : [];
    this.pendingBytes = all.length - n;
  }

  /** The end of the run: everything held back is written. */
  finish(): void {
    this.flush(Infinity);
  }
}
