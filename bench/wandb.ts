/**
 * Reading W&B run files: `barwatch analyze` of one run file against a bare loop in the same run
 * that walks the LevelDB-log framing and checks each chunk's CRC32 (no record assembly, no
 * protobuf; issue 30's reference reads the whole file into one buffer, a second reads it in parts
 * into one buffer), against a bare loop that also reads the rows (what JSON.parse is to the JSONL
 * loop of bench/ingest.ts: issue 32 asks the new readers to keep within the ingest ratios), and
 * against barwatch's framing and decoding into metric records in process (no start-up, no
 * statistics). On the 1,500-row sample wandb 0.30.0 wrote (when present) and on a
 * long run written by the test writer. `node dist/bench/wandb.js [--rows 100000]`.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { WandbParser, wandbRecords } from '../src/parsers/wandb-log.js';
import { normal, rng } from '../src/sim/random.js';
import { DEFAULTS } from '../test/helpers/defaults.js';
import { REAL_LOGS } from '../test/helpers/fs.js';
import { exitRecord, historyRecord, runRecord, WandbWriter } from '../test/helpers/wandb-writer.js';
import { arg, BIN, median, report } from './common.js';

const BLOCK = 32 * 1024;

/**
 * The chunks of buf[0, end) walked from `at` and each one's CRC checked (`base`: the file offset of
 * buf[0], for the 32 KiB block boundaries); the offset of the first chunk not wholly in buf (or
 * `end`), and the chunks checked.
 */
function walkChunks(buf: Buffer, base: number, at: number, end: number): { at: number; chunks: number } {
  let chunks = 0;
  while (at + 7 <= base + end) {
    const left = BLOCK - (at % BLOCK);
    if (left < 7) {
      at += left;
      continue;
    }
    const o = at - base;
    const len = buf.readUInt16LE(o + 4);
    if (len === 0 && buf[o + 6] === 0) {
      at += left;
      continue;
    }
    if (o + 7 + len > end) break;
    if (crc32(buf.subarray(o + 7, o + 7 + len), crc32(buf.subarray(o + 6, o + 7))) >>> 0 !== buf.readUInt32LE(o))
      throw new Error('bad CRC');
    chunks++;
    at += 7 + len;
  }
  return { at, chunks };
}

/** The framing walked and every chunk's CRC checked: the least a reader that trusts nothing does (the whole file read into one buffer). */
export function bareLoop(file: string): number {
  const buf = readFileSync(file);
  return walkChunks(buf, 0, 7, buf.length).chunks;
}

/**
 * The same walk over the file read in 2 MiB parts into one buffer, as barwatch reads it: no new
 * memory for each part, so none of the page faults that reading 131 MB into a new buffer costs
 * (on a virtual machine, most of bareLoop's time: see Machine.freshMsPerMiB).
 */
export function barePartsLoop(file: string): number {
  const PART = 2 << 20;
  const buf = Buffer.allocUnsafeSlow(PART + (1 << 16));
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    let base = 0;
    let have = readSync(fd, buf, 0, PART, 0);
    let at = 7;
    let chunks = 0;
    for (;;) {
      const w = walkChunks(buf, base, at, have);
      chunks += w.chunks;
      at = w.at;
      if (base + have >= size) return chunks;
      // The part's unread end (a chunk cut by the part) moves to the front, and the next part
      // follows it (a skip past a block's end may have left nothing to keep).
      const keep = Math.max(0, base + have - at);
      if (keep > 0) buf.copy(buf, 0, at - base, have);
      base = at;
      have = keep + readSync(fd, buf, keep, PART, base + keep);
    }
  } finally {
    closeSync(fd);
  }
}

/** The value of the varint varintEnd last read. */
let varintValue = 0;

/** Reads the varint of `b` at `pos` into varintValue; the position after it. */
function varintEnd(b: Buffer, pos: number): number {
  let v = 0;
  let mul = 1;
  for (;;) {
    const byte = b[pos++]!;
    v += (byte & 0x7f) * mul;
    if (byte < 0x80) break;
    mul *= 128;
  }
  varintValue = v;
  return pos;
}

/** Where the value of a field of wire type `wire` starts at `pos`: its end (a length-delimited one's value starts at valueStart). */
let valueStart = 0;
function fieldEnd(b: Buffer, pos: number, wire: number): number {
  valueStart = pos;
  if (wire === 0) return varintEnd(b, pos);
  if (wire === 1) return pos + 8;
  if (wire === 5) return pos + 4;
  if (wire !== 2) throw new Error(`protobuf: wire type ${wire}`);
  valueStart = varintEnd(b, pos);
  return valueStart + varintValue;
}

/**
 * The values of one history row (a Record whose field 2 is a HistoryRecord): each item's key
 * (field 1, or its nested_key parts, field 2, joined with '/') as a string and its value_json
 * (field 16) as Number() reads it; null for a record that holds no row.
 */
function rowValues(b: Buffer): Map<string, number> | null {
  let row: Map<string, number> | null = null;
  for (let pos = 0; pos < b.length;) {
    const at = varintEnd(b, pos);
    const tag = varintValue;
    pos = fieldEnd(b, at, tag & 7);
    if (tag !== 18) continue;
    row = new Map();
    const hEnd = pos;
    for (let h = valueStart; h < hEnd;) {
      const iat = varintEnd(b, h);
      const itag = varintValue;
      h = fieldEnd(b, iat, itag & 7);
      if (itag !== 10) continue;
      let key = '';
      let nested: string[] | null = null;
      let value = NaN;
      for (let f = valueStart, iEnd = h; f < iEnd;) {
        const fat = varintEnd(b, f);
        const ftag = varintValue;
        f = fieldEnd(b, fat, ftag & 7);
        if (ftag === 10) key = b.toString('utf8', valueStart, f);
        else if (ftag === 18) (nested ??= []).push(b.toString('utf8', valueStart, f));
        else if (ftag === 130) value = Number(b.toString('latin1', valueStart, f));
      }
      row.set(nested !== null ? nested.join('/') : key, value);
    }
  }
  return row;
}

/**
 * The bare loop that also reads what it walks, as the JSONL loop's JSON.parse does: the framing
 * walked and every CRC checked (the file read into one buffer), each record put together from its
 * chunks, and each history row's keys and values decoded (protobuf walked by hand, a string per
 * key, Number() per value: no schema, no key map, no statistics). The rows read.
 */
export function bareRowsLoop(file: string): number {
  const buf = readFileSync(file);
  let at = 7;
  let rows = 0;
  let parts: Buffer[] = [];
  while (at + 7 <= buf.length) {
    const left = BLOCK - (at % BLOCK);
    if (left < 7) {
      at += left;
      continue;
    }
    const len = buf.readUInt16LE(at + 4);
    const type = buf[at + 6]!;
    if (len === 0 && type === 0) {
      at += left;
      continue;
    }
    if (at + 7 + len > buf.length) break;
    const data = buf.subarray(at + 7, at + 7 + len);
    if (crc32(data, crc32(buf.subarray(at + 6, at + 7))) >>> 0 !== buf.readUInt32LE(at)) throw new Error('bad CRC');
    at += 7 + len;
    // FULL (1) is a record; FIRST (2), MIDDLE (3)... LAST (4) one in parts.
    if (type === 2 || type === 3) {
      parts.push(data);
      continue;
    }
    const record = type === 4 ? Buffer.concat([...parts, data]) : data;
    parts = [];
    if (rowValues(record) !== null) rows++;
  }
  return rows;
}

/** verl's metric names, as a long GRPO run logs them each step. */
export const KEYS = [
  'critic/score/mean',
  'critic/score/max',
  'critic/score/min',
  'critic/rewards/mean',
  'critic/advantages/mean',
  'critic/advantages/max',
  'critic/advantages/min',
  'critic/returns/mean',
  'actor/entropy',
  'actor/kl_loss',
  'actor/pg_loss',
  'actor/pg_clipfrac',
  'actor/ppo_kl',
  'actor/grad_norm',
  'actor/lr',
  'response_length/mean',
  'response_length/max',
  'response_length/min',
  'response_length/clip_ratio',
  'prompt_length/mean',
  'timing_s/gen',
  'timing_s/update_actor',
  'timing_s/step',
  'perf/throughput',
  'perf/max_memory_allocated_gb',
  'training/global_step',
  'training/epoch',
  'val-core/gsm8k/reward/mean@1',
];

/** A verl run of `rows` steps as a W&B run file, written by the test writer. */
export function writeLong(file: string, rows: number): void {
  const w = new WandbWriter(file);
  w.append(
    runRecord({
      project: 'verl-grpo',
      name: 'bench',
      id: 'bench1',
      start: 1_790_000_000_000,
      config: { actor_rollout_ref: { rollout: { n: 8 } } },
    }),
  );
  for (let s = 1; s <= rows; s++) {
    const values: Record<string, number> = {};
    KEYS.forEach((k, i) => (values[k] = Math.sin(s * 0.01 + i) * (i + 1)));
    w.append(historyRecord(s, values, 1_790_000_000 + s * 12.5));
  }
  w.append(exitRecord(0));
  w.finish();
}

/**
 * A verl GRPO run of `rows` steps as a W&B run file, with the dynamics of a healthy one: the score
 * rising through noise, entropy and grad norm decaying, lengths positive and shortening a little,
 * the KL loss growing, timings and memory about steady, validation every 10 steps. writeLong's
 * sine waves through zero are the worst case for the detectors (a length that halves and a grad
 * norm that spikes every cycle); these rows are what they meet in a run.
 */
export function writeVerlLike(file: string, rows: number): void {
  const w = new WandbWriter(file);
  w.append(
    runRecord({
      project: 'verl-grpo',
      name: 'bench-verl',
      id: 'bench2',
      start: 1_790_000_000_000,
      config: { actor_rollout_ref: { rollout: { n: 8 } } },
    }),
  );
  const r = rng(32);
  const noise = (sd: number): number => normal(r) * sd;
  for (let s = 1; s <= rows; s++) {
    // How far training has come: 0 at the start, towards 1 over the first ~3,000 steps.
    const done = 1 - Math.exp(-s / 3000);
    const score = Math.min(1, Math.max(0, 0.2 + 0.5 * done + noise(0.05)));
    const length = 420 - 120 * done + noise(25);
    const values: Record<string, number> = {
      'critic/score/mean': score,
      'critic/score/max': 1,
      'critic/score/min': 0,
      'critic/rewards/mean': score,
      'critic/advantages/mean': noise(0.01),
      'critic/advantages/max': 2 + noise(0.2),
      'critic/advantages/min': -2 + noise(0.2),
      'critic/returns/mean': noise(0.01),
      'actor/entropy': 1.2 - 0.6 * done + noise(0.04),
      'actor/kl_loss': 0.02 * done + Math.abs(noise(0.002)),
      'actor/pg_loss': noise(0.05),
      'actor/pg_clipfrac': 0.004 + Math.abs(noise(0.002)),
      'actor/ppo_kl': Math.abs(noise(2e-4)),
      'actor/grad_norm': (0.5 - 0.3 * done) * Math.exp(noise(0.2)),
      'actor/lr': 1e-6,
      'response_length/mean': length,
      'response_length/max': 1024,
      'response_length/min': Math.max(1, 40 + noise(10)),
      'response_length/clip_ratio': 0.02 + Math.abs(noise(0.01)),
      'prompt_length/mean': 120 + noise(5),
      'timing_s/gen': 30 + noise(3),
      'timing_s/update_actor': 20 + noise(2),
      'timing_s/step': 55 + noise(4),
      'perf/throughput': 1500 + noise(100),
      'perf/max_memory_allocated_gb': 60 + noise(0.5),
      'training/global_step': s,
      'training/epoch': Math.floor(s / 1000),
    };
    if (s % 10 === 0) values['val-core/gsm8k/reward/mean@1'] = Math.min(1, Math.max(0, 0.25 + 0.5 * done + noise(0.02)));
    w.append(historyRecord(s, values, 1_790_000_000 + s * 55));
  }
  w.append(exitRecord(0));
  w.finish();
}

function measure(label: string, file: string, dir: string, rows: number): { rows: string[][]; data: Record<string, unknown> } {
  const bare: number[] = [];
  const parts: number[] = [];
  const decoded: number[] = [];
  const analyze: number[] = [];
  const rowsLoop: number[] = [];
  for (let k = 0; k < 3; k++) {
    let t = performance.now();
    const chunks = bareLoop(file);
    bare.push((performance.now() - t) / 1000);
    t = performance.now();
    if (barePartsLoop(file) !== chunks) throw new Error(`${label}: the two bare loops walked different chunks`);
    parts.push((performance.now() - t) / 1000);
    t = performance.now();
    const read = bareRowsLoop(file);
    rowsLoop.push((performance.now() - t) / 1000);
    if (read !== rows) throw new Error(`${label}: the bare loop reading rows read ${read}, wanted ${rows}`);
    t = performance.now();
    const parser = new WandbParser(DEFAULTS.parser);
    const out = parser.records(wandbRecords(readFileSync(file), 0).records);
    decoded.push((performance.now() - t) / 1000);
    const metrics = out.filter((r) => r.kind === 'metrics').length;
    if (metrics !== rows) throw new Error(`${label}: decoded ${metrics} rows, wanted ${rows}`);
    t = performance.now();
    const r = spawnSync(process.execPath, [BIN, 'analyze', dir, '--format', 'json'], { maxBuffer: 1 << 26 });
    if (r.status !== 0 && r.status !== 1) throw new Error(`analyze failed: ${r.stderr.toString()}`);
    analyze.push((performance.now() - t) / 1000);
  }
  const b = median(bare);
  const bp = median(parts);
  const br = median(rowsLoop);
  const mb = readFileSync(file).length / 1e6;
  const row = (what: string, xs: number[]): string[] => [
    `${label}: ${what}`,
    `${median(xs).toFixed(3)} s`,
    `${Math.round(rows / median(xs)).toLocaleString('en')} rows/s, ${(mb / median(xs)).toFixed(0)} MB/s`,
    `${(b / median(xs)).toFixed(2)}x`,
    `${(bp / median(xs)).toFixed(2)}x`,
    `${(br / median(xs)).toFixed(2)}x`,
  ];
  return {
    rows: [
      row('bare loop (framing walked, every CRC checked; the file read into one buffer)', bare),
      row('the same bare loop, the file read in 2 MiB parts into one buffer', parts),
      row('the bare loop reading the rows (records put together, keys and values decoded: what JSON.parse is to a JSONL loop)', rowsLoop),
      row('framing and decoding into metric records, in process', decoded),
      row('barwatch analyze (start-up, reading, statistics, detectors)', analyze),
    ],
    data: { [label]: { rows, megabytes: mb, bare, parts, rowsLoop, decoded, analyze } },
  };
}

export function main(): Promise<void> {
  const rows = arg('rows', 100_000, 10_000);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-wandb-'));
  try {
    const all: string[][] = [];
    const data: Record<string, unknown> = {};
    const sample = path.join(REAL_LOGS, '..', 'writer-samples', 'wandb', 'verl-grpo-long', 'wandb');
    if (existsSync(sample)) {
      const run = readdirSync(sample).find((d) => d.startsWith('offline-run-'))!;
      const file = path.join(
        sample,
        run,
        readdirSync(path.join(sample, run)).find((f) => f.endsWith('.wandb'))!,
      );
      const m = measure('the 1,500-row sample (wandb 0.30.0)', file, path.join(sample, run), 1500);
      all.push(...m.rows);
      Object.assign(data, m.data);
    }
    const run = path.join(dir, 'long', 'wandb', 'run-20261202_120000-bench1');
    const file = path.join(run, 'run-bench1.wandb');
    writeLong(file, rows);
    const m = measure(`${rows.toLocaleString('en')} rows of ${KEYS.length} keys (test writer)`, file, run, rows);
    all.push(...m.rows);
    Object.assign(data, m.data);
    report(
      'wandb',
      `## W&B run files (median of 3)`,
      ['reader', 'time', 'throughput', 'vs bare loop', 'vs bare loop in parts', 'vs bare loop reading rows'],
      all,
      data,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return Promise.resolve();
}

if (process.argv[1]?.endsWith('wandb.js')) await main();
