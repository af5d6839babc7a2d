/**
 * Reading W&B run files: `barwatch analyze` of one run file against a bare loop in the same run
 * that walks the LevelDB-log framing and checks each chunk's CRC32 (no record assembly, no
 * protobuf), and against barwatch's framing and decoding into metric records in process (no
 * start-up, no statistics). On the 1,500-row sample wandb 0.30.0 wrote (when present) and on a
 * long run written by the test writer. `node dist/bench/wandb.js [--rows 100000]`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { WandbParser, wandbRecords } from '../src/parsers/wandb-log.js';
import { DEFAULTS } from '../test/helpers/defaults.js';
import { REAL_LOGS } from '../test/helpers/fs.js';
import { exitRecord, historyRecord, runRecord, WandbWriter } from '../test/helpers/wandb-writer.js';
import { arg, BIN, median, report } from './common.js';

const BLOCK = 32 * 1024;

/** The framing walked and every chunk's CRC checked: the least a reader that trusts nothing does. */
export function bareLoop(file: string): number {
  const buf = readFileSync(file);
  let chunks = 0;
  let at = 7;
  while (at + 7 <= buf.length) {
    const left = BLOCK - (at % BLOCK);
    if (left < 7) {
      at += left;
      continue;
    }
    const len = buf.readUInt16LE(at + 4);
    if (len === 0 && buf[at + 6] === 0) {
      at += left;
      continue;
    }
    if (at + 7 + len > buf.length) break;
    if (crc32(buf.subarray(at + 7, at + 7 + len), crc32(buf.subarray(at + 6, at + 7))) >>> 0 !== buf.readUInt32LE(at))
      throw new Error('bad CRC');
    chunks++;
    at += 7 + len;
  }
  return chunks;
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

function measure(label: string, file: string, dir: string, rows: number): { rows: string[][]; data: Record<string, unknown> } {
  const bare: number[] = [];
  const decoded: number[] = [];
  const analyze: number[] = [];
  for (let k = 0; k < 3; k++) {
    let t = performance.now();
    bareLoop(file);
    bare.push((performance.now() - t) / 1000);
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
  const mb = readFileSync(file).length / 1e6;
  const row = (what: string, xs: number[]): string[] => [
    `${label}: ${what}`,
    `${median(xs).toFixed(3)} s`,
    `${Math.round(rows / median(xs)).toLocaleString('en')} rows/s, ${(mb / median(xs)).toFixed(0)} MB/s`,
    `${(b / median(xs)).toFixed(2)}x`,
  ];
  return {
    rows: [
      row('bare loop (framing walked, every CRC checked)', bare),
      row('framing and decoding into metric records, in process', decoded),
      row('barwatch analyze (start-up, reading, statistics, detectors)', analyze),
    ],
    data: { [label]: { rows, megabytes: mb, bare, decoded, analyze } },
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
    report('wandb', `## W&B run files (median of 3)`, ['reader', 'time', 'throughput', 'vs bare loop'], all, data);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return Promise.resolve();
}

if (process.argv[1]?.endsWith('wandb.js')) await main();
