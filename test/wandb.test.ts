/**
 * The W&B run-file decoder (parsers/wandb-log.ts) on files the real wandb SDK wrote
 * (../shared/writer-samples/wandb/, see its README): framing, records, rows, the cut record at
 * the end of a live file, a bad CRC.
 */
import assert from 'node:assert/strict';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DecodedRows,
  decodeRows,
  decodeWandbRecord,
  jsonNumberAt,
  KeyCache,
  NOT_TRIED,
  WANDB_FRAMING,
  WandbParser,
  wandbRecords,
  wandbRow,
  type WandbRecord,
  type WandbRow,
} from '../src/parsers/wandb-log.js';
import type { ParsedRecord } from '../src/parsers/types.js';
import { AHEAD_FRAMINGS } from '../src/parsers/ahead.js';
import { INPUTS } from '../src/parsers/index.js';
import { readDecoded } from '../src/sources/decode-ahead.js';
import { nextShare, RecordTailer } from '../src/sources/record-tailer.js';
import { DEFAULTS } from './helpers/defaults.js';
import { Pipeline } from '../src/pipeline/pipeline.js';
import { silentLogger } from '../src/util/log.js';
import { placeWandbRuns } from '../src/sources/runs.js';
import { RunState, type RunJSON } from '../src/runs/run.js';
import type { StatsOptions } from '../src/runs/series.js';
import type { DaemonState } from '../src/daemon/state.js';
import { analyzeJson, barwatch } from './helpers/cli.js';
import { DaemonProcess, quickWatchConfig } from './helpers/daemon.js';
import { REAL_LOGS, tempDir } from './helpers/fs.js';
import { exitRecord, historyRecord, metricRecord, runRecord, statsRecord, WandbWriter } from './helpers/wandb-writer.js';

const SAMPLES = path.join(REAL_LOGS, '..', 'writer-samples', 'wandb');
const SKIP = existsSync(SAMPLES) ? false : `${SAMPLES} is absent`;

/** The run files of a sample folder, by run folder name (oldest first). */
function runFiles(sample: string): string[] {
  const wandb = path.join(SAMPLES, sample, 'wandb');
  return readdirSync(wandb, { withFileTypes: true })
    .filter((d) => d.isDirectory() && /^(offline-)?run-/.test(d.name))
    .map((d) => d.name)
    .sort()
    .map((d) => {
      const dir = path.join(wandb, d);
      return path.join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.wandb'))!,
      );
    });
}

function decode(buf: Uint8Array, at = 0): { records: WandbRecord[]; consumed: number; bad: number } {
  const r = wandbRecords(buf, at);
  return { records: r.records.map((x) => decodeWandbRecord(x)), consumed: r.consumed, bad: r.bad };
}

function rows(records: WandbRecord[]): WandbRow[] {
  const metric = records.find((r) => r.kind === 'metric' && r.stepMetric !== '');
  const stepKey = metric?.kind === 'metric' ? metric.stepMetric : null;
  return records.flatMap((r) => (r.kind === 'history' ? [wandbRow(r.items, stepKey)] : []));
}

describe('W&B run files written by wandb 0.30.0', { skip: SKIP }, () => {
  test("BAR-RAG's official scripts: four runs, told apart by project, each with its rows, steps 1..N, verl's rollout.n in the config", () => {
    const got = runFiles('barrag-official').map((f) => {
      const { records, consumed, bad } = decode(readFileSync(f));
      assert.equal(consumed, readFileSync(f).length, 'a finished run file is read to its end');
      assert.equal(bad, 0);
      const run = records.find((r) => r.kind === 'run');
      assert.ok(run?.kind === 'run');
      const rollout = JSON.parse(run.config.find((c) => c.key === 'actor_rollout_ref')!.json) as { rollout: { n: number } };
      const rs = rows(records);
      assert.ok(records.some((r) => r.kind === 'exit'));
      return [run.project, rs.length, rs[0]!.step, rs.at(-1)!.step, rollout.rollout.n];
    });
    assert.deepEqual(got, [
      ['verl-selector-training', 60, 1, 60, 8],
      ['verl-generator-training', 30, 1, 30, 5],
      ['verl-selector-training', 60, 1, 60, 8],
      ['verl-generator-training', 30, 1, 30, 5],
    ]);
  });

  test("TRL: define_metric makes train/global_step the step (5..200), not _step (0..39); the trainer's time from _timestamp", () => {
    const { records } = decode(readFileSync(runFiles('trl-grpo')[0]!));
    const rs = rows(records);
    assert.equal(rs.length, 40);
    assert.deepEqual(
      rs.map((r) => r.step),
      Array.from({ length: 40 }, (_, i) => (i + 1) * 5),
    );
    assert.ok(rs.every((r) => r.time !== null && r.time > 1.7e12));
    assert.ok('train/reward' in rs[0]!.values && !('train/global_step' in rs[0]!.values));
  });

  test('split logging, NaN, a histogram, a string and a nested dict: one row a step, NaN kept, the rest unfolded or skipped and counted', () => {
    const rs = rows(decode(readFileSync(runFiles('split-and-special')[0]!)).records);
    assert.equal(rs.length, 40);
    const at30 = rs.find((r) => r.step === 30)!;
    assert.ok(Number.isNaN(at30.values['critic/score/mean']));
    assert.ok(Number.isNaN(at30.values['critic/rewards/mean']));
    const tenth = rs.filter((r) => r.step! % 10 === 0);
    assert.ok(
      tenth.every(
        (r) => r.skipped === 2 && !('rollout/scores' in r.values) && 'reward/boundary' in r.values && 'reward/format' in r.values,
      ),
    );
    assert.ok(rs.filter((r) => r.step! % 10 !== 0).every((r) => r.skipped === 0));
  });

  test('a live file ends inside a record: it waits; the snapshots grow into each other, no row read twice or lost', () => {
    const dir = path.join(SAMPLES, 'in-progress', 'snapshots');
    const a = readFileSync(path.join(dir, 'at-step-120.wandb'));
    const b = readFileSync(path.join(dir, 'at-step-250.wandb'));
    const end = readFileSync(runFiles('in-progress')[0]!);
    const first = decode(a);
    assert.ok(first.consumed < a.length, 'the cut record at the end is left for later');
    const r1 = rows(first.records);
    assert.deepEqual([r1.length, r1[0]!.step, r1.at(-1)!.step], [109, 1, 109]);
    // The bigger snapshot read on from where the smaller one stopped, as a tailer does.
    const second = decode(b.subarray(first.consumed), first.consumed);
    const r2 = rows(second.records);
    assert.deepEqual([r2[0]!.step, r2.at(-1)!.step, second.bad], [110, 244, 0]);
    const third = decode(end.subarray(first.consumed + second.consumed), first.consumed + second.consumed);
    const r3 = rows(third.records);
    assert.deepEqual([r3[0]!.step, r3.at(-1)!.step], [245, 293]);
    assert.ok(!third.records.some((r) => r.kind === 'exit'), 'a killed run has no exit record');
  });

  test('a long run (1,500 rows across 158 blocks) reads whole; a chunk with a bad CRC drops its record only', () => {
    const file = readFileSync(runFiles('verl-grpo-long')[0]!);
    const all = rows(decode(file).records);
    assert.deepEqual([all.length, all[0]!.step, all.at(-1)!.step], [1500, 1, 1500]);
    const broken = Buffer.from(file);
    // A byte inside the data of a chunk in the middle of the file.
    const at = Math.floor(file.length / 2);
    broken.writeUInt8(broken.readUInt8(at) ^ 0xff, at);
    const whole = decode(file).records.length;
    const got = decode(broken);
    assert.equal(got.bad, 1);
    assert.equal(got.records.length, whole - 1, 'one record lost, every other read');
    assert.equal(rows(got.records).at(-1)?.step, 1500);
  });

  test("a run file's records count the same whether it is read whole or as it grows (how far it reaches is no record)", async () => {
    const bytes = readFileSync(runFiles('verl-grpo-long')[0]!);
    const counted = async (parts: number): Promise<number> => {
      const file = path.join(tempDir(), 'run-x.wandb');
      const p = new Pipeline({
        parser: DEFAULTS.parser,
        tail: DEFAULTS.tail,
        stats: DEFAULTS.stats,
        now: () => 1_000_000,
        log: silentLogger(),
      });
      p.track(file, 'wandb', { run: path.dirname(file), role: 'unknown', round: null });
      writeFileSync(file, '');
      for (let k = 1; k <= parts; k++) {
        // Whole 32 KiB blocks at a time, as wandb writes, and the rest at the end.
        const upTo = k === parts ? bytes.length : Math.min(bytes.length, 7 + Math.round((k / parts) * (bytes.length / 32768)) * 32768);
        appendFileSync(file, bytes.subarray(statSync(file).size, upTo));
        while ((await p.poll(file)) === 'more');
      }
      return p.sources.get(file)!.counters.records;
    };
    // Every record the parser makes of the file in one go, once (1,500 rows and the others).
    const held = new WandbParser(DEFAULTS.parser).records(wandbRecords(bytes, 0).records).filter((r) => r.kind !== 'reach').length;
    assert.ok(held > 1500, `${held} records`);
    assert.equal(await counted(1), held);
    assert.equal(await counted(20), held);
  });

  test('bytes that are not a run file give no records, not an exception', () => {
    const junk = Buffer.from(':W&B\xbe\xe1\x00' + 'x'.repeat(70_000), 'latin1');
    const got = wandbRecords(junk, 0);
    assert.equal(got.records.length, 0);
    assert.ok(got.bad >= 1);
  });
});

describe('W&B run files through analyze and watch', () => {
  test(
    "analyze the samples: the official layout's four W&B runs are the rounds of one training, in start order; latest-run and W&B's own files not read",
    { skip: SKIP },
    () => {
      const { doc } = analyzeJson([path.join(SAMPLES, 'barrag-official')]);
      assert.deepEqual(
        doc.runs.map((r) => [r.run, r.format]),
        [[path.join(SAMPLES, 'barrag-official'), 'wandb']],
      );
      assert.deepEqual(
        doc.runs[0]!.rounds.map((r) => [r.role, r.round, r.steps]),
        [
          ['selector', 1, 60],
          ['generator', 1, 30],
          ['selector', 2, 60],
          ['generator', 2, 30],
        ],
      );
      assert.deepEqual(doc.runs[0]!.files.map((f) => path.basename(f.path)).sort(), [
        'run-apr4b14e.wandb',
        'run-mbp5pqvm.wandb',
        'run-vj3falol.wandb',
        'run-y8ksv8cb.wandb',
      ]);
      // A run named with its round (`selector_round1`, project bar-rag-repro): that round.
      const named = analyzeJson([path.join(SAMPLES, 'components')]).doc.runs[0]!;
      assert.deepEqual([named.run, named.rounds[0]!.role, named.rounds[0]!.round], [path.join(SAMPLES, 'components'), 'selector', 1]);
      const trl = analyzeJson([path.join(SAMPLES, 'trl-grpo')]).doc.runs[0]!.rounds[0]!;
      assert.deepEqual([trl.steps, trl.first_step, trl.last_step], [40, 5, 200]);
      assert.ok('reward' in trl.series && !('train/reward' in trl.series), 'the trainer prefix dropped');
      const special = analyzeJson([path.join(SAMPLES, 'split-and-special')]);
      assert.deepEqual(
        special.doc.runs[0]!.findings.map((f) => [f.detector, f.step]),
        [['nonfinite-reward', 30]],
      );
    },
  );

  test('watch: a run file growing in whole 32 KiB blocks is read as it grows, its collapse found, its exit the finish; a restart reads no row twice', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'runs');
    const file = path.join(root, 'ppo', 'wandb', 'run-20261202_101500-live1', 'run-live1.wandb');
    const w = new WandbWriter(file);
    const t0 = 1_790_000_000;
    w.append(
      runRecord({
        project: 'verl-grpo',
        name: 'qwen-grpo',
        id: 'live1',
        start: t0 * 1000,
        config: { actor_rollout_ref: { rollout: { n: 8 } } },
      }),
    );
    // Healthy, then the entropy collapses from step 120 on; ~1 KB a row, so a block holds ~30 rows.
    const row = (s: number): Buffer =>
      historyRecord(
        s,
        {
          'critic/score/mean': 0.4 + s / 1000,
          'actor/entropy': s < 120 ? 0.6 + 0.02 * Math.sin(s) : 0.6 * Math.exp(-(s - 120) / 8),
          'response_length/mean': 300 + (s % 7),
          padding: 'x'.repeat(900),
        },
        t0 + s * 10,
      );
    for (let s = 1; s <= 100; s++) w.append(row(s));
    const cfg = quickWatchConfig(dir);
    const d = new DaemonProcess([root, '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    const onDisk = (): number => Math.floor(statSync(file).size / 1024);
    await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) > 0);
    const firstRecords = d.logs.filter((l) => l.msg.startsWith('status:')).at(-1)!['records'] as number;
    assert.ok(firstRecords < 100, `only rows of whole blocks are on disk (${onDisk()} KiB): ${firstRecords} records`);
    for (let s = 101; s <= 200; s++) w.append(row(s));
    await d.waitFor((l) => l.msg.startsWith('firing: entropy-collapse'));
    assert.equal(await d.stop(), 0);
    // The rest of the run after a restart: the file's end, its exit record.
    for (let s = 201; s <= 220; s++) w.append(row(s));
    w.append(exitRecord(0));
    w.finish();
    const again = new DaemonProcess([root, '--config', cfg]);
    // Every frame of the file read: the run record, 220 rows, the exit.
    await again.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= 222);
    assert.equal(await again.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    const run = state.runs.find((r) => r.id === path.dirname(file))!;
    assert.equal(run.finished, true, 'the exit record is the finish line');
    assert.equal(run.rounds[0]!.series['critic/score/mean']!.summary.n, 220, 'each row once across the restart');
  });

  test('a file cut inside a record waits for its rest; a chunk with a bad CRC is counted as malformed, the records around it read', () => {
    const dir = tempDir();
    const file = path.join(dir, 'r', 'wandb', 'offline-run-20261202_101500-cut1', 'run-cut1.wandb');
    const w = new WandbWriter(file, false);
    for (let s = 1; s <= 60; s++) w.append(historyRecord(s, { 'critic/score/mean': 0.5, note: 'x'.repeat(2000) }, 1_790_000_000 + s));
    const whole = readFileSync(file);
    // Cut inside the last record: 59 rows, the 60th waits.
    writeFileSync(file, whole.subarray(0, whole.length - 100));
    assert.equal(analyzeJson([path.join(dir, 'r')]).doc.runs[0]!.rounds[0]!.steps, 59);
    // One byte inside the data of the 30th row (its note of x's): that row is lost, no other.
    const bad = Buffer.from(whole);
    let at = 0;
    for (let i = 0; i < 30; i++) at = whole.indexOf('x'.repeat(100), at + (i === 0 ? 0 : 1900));
    bad.writeUInt8(bad.readUInt8(at + 50) ^ 0xff, at + 50);
    writeFileSync(file, bad);
    const { doc } = analyzeJson([path.join(dir, 'r')]);
    assert.equal(doc.runs[0]!.rounds[0]!.steps, 59);
    assert.equal(doc.runs[0]!.files[0]!.malformed, 1);
  });

  test('placeWandbRuns: role from project or name, round from the name or the start order; a run that names no role stays its own', () => {
    const c = (folder: string, project: string, name: string, start: number | null) => ({
      file: `/t/wandb/${folder}/run-x.wandb`,
      place: { run: `/t/wandb/${folder}`, role: 'unknown' as const, round: null },
      head: { project, name, start },
    });
    const placed = placeWandbRuns([
      c('run-20261201_100500-b', 'verl-generator-training', 'generator-training', 2000),
      c('run-20261201_100000-a', 'verl-selector-training', 'selector-training', 1000),
      c('run-20261201_101000-c', 'verl-selector-training', 'selector-training', 3000),
      c('run-20261201_101500-d', 'my-project', 'baseline', 4000),
      { ...c('run-20261201_102000-e', '', '', null), head: null },
    ]);
    assert.deepEqual(
      [...placed.values()].map((p) => [p.run, p.role, p.round]),
      [
        ['/t', 'generator', 1],
        ['/t', 'selector', 1],
        ['/t', 'selector', 2],
        ['/t/wandb/run-20261201_101500-d', 'unknown', null],
        ['/t/wandb/run-20261201_102000-e', 'unknown', null],
      ],
    );
  });

  test("watch: BAR-RAG's scripts run live: each new W&B run becomes the next round of the training, placed once its first block holds the run record", async () => {
    const dir = tempDir();
    const root = path.join(dir, 'bar-rag');
    const cfg = quickWatchConfig(dir);
    const t0 = 1_790_000_000;
    const invocation = (role: 'selector' | 'generator', folder: string, start: number, steps: number): WandbWriter => {
      const w = new WandbWriter(path.join(root, 'wandb', folder, `run-${folder.slice(-5)}.wandb`));
      w.append(
        runRecord({ project: `verl-${role}-training`, name: `${role}-training`, id: folder.slice(-5), start: start * 1000, config: {} }),
      );
      for (let s = 1; s <= steps; s++)
        w.append(historyRecord(s, { 'critic/score/mean': 0.4 + s / 500, padding: 'x'.repeat(1500) }, start + s));
      return w;
    };
    mkdirSync(root, { recursive: true });
    const d = new DaemonProcess([root, '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    const sel = invocation('selector', 'run-20261201_100000-sel01', t0, 60);
    await d.waitFor((l) => l.msg.includes('is selector round 1 of'));
    sel.append(exitRecord(0));
    sel.finish();
    const gen = invocation('generator', 'run-20261201_101000-gen01', t0 + 600, 40);
    await d.waitFor((l) => l.msg.includes('is generator round 1 of'));
    gen.append(exitRecord(0));
    gen.finish();
    await d.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= 60 + 40 + 4);
    assert.equal(await d.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    assert.deepEqual(
      state.runs.map((r) => r.id),
      [root],
    );
    assert.deepEqual(
      state.runs[0]!.rounds.map((r) => [r.role, r.round, r.series['critic/score/mean']!.summary.n]),
      [
        ['selector', 1, 60],
        ['generator', 1, 40],
      ],
    );
  });
});

describe('W&B runs watched live are judged by their own clock', () => {
  test('stale-run: blocks a few seconds apart are no silence; system stats going on without a step are a stuck run; the report says how far behind', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'runs', 'ppo');
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${path.join(dir, 'state')}\nwatch: {status_interval: 200ms, sweep_interval: 300ms}\nlog: {format: json}\ndetectors:\n  stale-run: {min_silence: 2s, factor: 4, min_intervals: 5}\n`,
    );
    const w = new WandbWriter(path.join(root, 'wandb', 'run-20261203_070000-live2', 'run-live2.wandb'));
    w.append(runRecord({ project: 'ppo', name: 'ppo', id: 'live2', start: Date.now(), config: {} }));
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    // Training at a step every 375 ms; a block holds 8 rows: it reaches the disk every 3 s.
    for (let s = 1; s <= 40; s++) {
      w.append(historyRecord(s, { 'critic/score/mean': 0.5, padding: 'x'.repeat(4000) }, Date.now() / 1000));
      await sleep(375);
    }
    assert.deepEqual(
      d.logs.filter((l) => l.msg.startsWith('firing: stale-run')).map((l) => l.msg),
      [],
      'a block arriving every 3 s while the trainer logs every 375 ms is no silence',
    );
    // The trainer hangs: W&B's system monitor goes on (its records fill blocks too), no step comes.
    const stuck = (async (): Promise<void> => {
      for (let i = 0; i < 60 && !d.logs.some((l) => l.msg.startsWith('firing: stale-run')); i++) {
        w.append(statsRecord(Date.now(), 4000));
        await sleep(250);
      }
    })();
    const fired = await d.waitFor((l) => l.msg.startsWith('firing: stale-run'));
    await stuck;
    assert.match(fired.msg, /the process is alive but training does not move/);
    assert.equal(await d.stop(), 0);
    const text = barwatch(['analyze', root]).stdout;
    assert.match(
      text,
      /W&B writes its log in 32 KiB blocks: rows after step \d+ appear when the block fills, here about \d+ step\(s\) \([\d.]+m?s of training\)/,
    );
  });
});

test("each W&B run of the official layout exits: a round's exit finishes the training only until the next round writes", () => {
  const opts: StatsOptions = { window: 20, history: 64, ewmaHalfLife: 10, curveBuckets: 32, maxSeries: 100 };
  const run = new RunState('/r', opts);
  const ctx = (role: 'selector' | 'generator', round: number) => ({
    role,
    round,
    format: 'wandb' as const,
    file: `/r/wandb/${role}${round}/run.wandb`,
  });
  run.apply({ kind: 'metrics', step: 1, values: { x: 1 } }, ctx('selector', 1), 0);
  run.apply({ kind: 'finished' }, ctx('selector', 1), 0);
  assert.equal(run.finished, true);
  run.apply({ kind: 'metrics', step: 2, values: { x: 1 } }, ctx('selector', 1), 0);
  assert.equal(run.finished, true, 'a late record of the round that finished changes nothing');
  run.apply({ kind: 'metrics', step: 1, values: { x: 1 } }, ctx('generator', 1), 0);
  assert.equal(run.finished, false, 'the next round goes on');
  run.apply({ kind: 'finished' }, ctx('generator', 1), 0);
  assert.equal(RunState.from(JSON.parse(JSON.stringify(run.toJSON())) as RunJSON, opts).finished, true);
});

test("W&B's console copy (files/output.log) read with its run file: ahead of the file's blocks live, each step counted once, the same as analyze", async () => {
  const dir = tempDir();
  const root = path.join(dir, 'bar-rag');
  const run = path.join(root, 'wandb', 'run-20261203_080000-sel0cop1');
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${path.join(dir, 'state')}\nwatch: {status_interval: 200ms, sweep_interval: 300ms, checkpoint_interval: 200ms}\nlog: {format: json}\n`,
  );
  const w = new WandbWriter(path.join(run, 'run-sel0cop1.wandb'));
  w.append(runRecord({ project: 'verl-selector-training', name: 'selector-training', id: 'sel0cop1', start: Date.now(), config: {} }));
  mkdirSync(path.join(run, 'files'), { recursive: true });
  const console = path.join(run, 'files', 'output.log');
  writeFileSync(console, 'wandb: Tracking run with wandb version 0.30.0\n');
  const value = (s: number): number => Math.round((0.3 + s / 1000) * 1000) / 1000;
  const step = (s: number): void => {
    w.append(historyRecord(s, { 'critic/score/mean': value(s), padding: 'x'.repeat(3000) }, Date.now() / 1000));
    appendFileSync(console, `(TaskRunner pid=7) step:${s} - critic/score/mean:${value(s).toFixed(3)}\n`);
  };
  const d = new DaemonProcess([root, '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  for (let s = 1; s <= 45; s++) step(s);
  // The run file holds whole blocks only: about ten rows each, so at most 40 of the 45 are on disk.
  const rowsOnDisk = wandbRecords(readFileSync(path.join(run, 'run-sel0cop1.wandb')), 0).records.length - 1;
  assert.ok(rowsOnDisk < 45, `${rowsOnDisk} rows on disk`);
  const stateFile = path.join(dir, 'state', 'state.json');
  const lastStep = (): number | null => {
    try {
      const st = JSON.parse(readFileSync(stateFile, 'utf8')) as DaemonState;
      return st.runs.find((r) => r.id === root)?.rounds.find((r) => r.role === 'selector' && r.round === 1)?.lastStep ?? null;
    } catch {
      return null;
    }
  };
  for (let i = 0; i < 300 && lastStep() !== 45; i++) await sleep(100);
  assert.equal(
    lastStep(),
    45,
    `the console copy brings the steps the run file does not hold yet, in selector round 1; the daemon said: ${d.logs.map((l) => l.msg).join(' | ')}`,
  );
  for (let s = 46; s <= 80; s++) step(s);
  w.append(exitRecord(0));
  w.finish();
  await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= 80 + 80 + 1);
  assert.equal(await d.stop(), 0);
  const live = (JSON.parse(readFileSync(stateFile, 'utf8')) as DaemonState).runs.find((r) => r.id === root)!;
  const round = live.rounds.find((r) => r.role === 'selector' && r.round === 1)!;
  const offline = analyzeJson([root]).doc.runs.find((r) => r.run === root)!;
  const series = offline.rounds.find((r) => r.role === 'selector' && r.round === 1)!.series['critic/score/mean']!;
  assert.deepEqual([round.series['critic/score/mean']!.summary.n, round.steps], [80, 80], 'each step once');
  assert.deepEqual([series.n, series.last_step], [80, 80]);
  assert.ok(Math.abs(series.mean! - round.series['critic/score/mean']!.summary.mean) < 1e-12);
});

test('value_json numbers read in place equal Number() of their text, bit for bit; what is not a number is left to the JSON reader', () => {
  let seed = 12345;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const texts: string[] = [
    '0',
    '-0',
    '1',
    '-1',
    '0.5',
    '1e5',
    '1E-7',
    '-2.5e+3',
    '123456789012345',
    '0.000123',
    '1e22',
    '1e23',
    '9007199254740993',
    'NaN',
    'Infinity',
    '-Infinity',
  ];
  for (let k = 0; k < 20_000; k++) {
    const x = (rand() - 0.5) * 10 ** Math.floor(rand() * 16 - 8);
    texts.push(
      String(x),
      x.toFixed(Math.floor(rand() * 10)),
      x.toExponential(Math.floor(rand() * 15)),
      String(Math.fround(x)),
      String(Math.round(x * 1e4) / 1e4),
    );
  }
  for (const t of texts) {
    const got = jsonNumberAt(Buffer.from(t, 'latin1'), 0, t.length);
    assert.ok(Object.is(got, Number(t)), `${t}: ${got} vs ${Number(t)}`);
  }
  for (const t of ['"a"', 'true', '{"a": 1}', '[1]', 'null', '', '-', '1e', '.5x'])
    assert.equal(jsonNumberAt(Buffer.from(t, 'latin1'), 0, t.length), undefined, t);
});

test('a backlog decoded ahead on the decode thread gives what the reading thread gives alone: every record once, in order, over files read in turn', async () => {
  const dir = tempDir();
  // Two runs with other keys: flat and nested keys, strings, a histogram, a row of
  // several blocks, a step declared midway, system stats, a chunk with a bad CRC.
  const write = (file: string, keys: string[], seed: number): void => {
    mkdirSync(path.dirname(file), { recursive: true });
    const w = new WandbWriter(file);
    w.append(
      runRecord({
        project: 'p',
        name: `r${seed}`,
        id: `id${seed}`,
        start: 1_790_000_000_000,
        config: { actor_rollout_ref: { rollout: { n: 8 } } },
      }),
    );
    for (let s = 1; s <= 16_000; s++) {
      const values: Record<string, number | string | object> = {};
      keys.forEach((k, i) => (values[k] = Math.sin(s * 0.01 + i + seed) * (i + 1)));
      if (s % 97 === 0) values['note'] = 'a string';
      if (s % 389 === 0) values['hist'] = { _type: 'histogram', values: [1, 2], bins: [0, 1, 2] };
      if (s === 1234) values['long'] = 'x'.repeat(70_000);
      if (s === 12_000) w.append(metricRecord('*', 'train/global_step'));
      if (s >= 12_000) values['train/global_step'] = s * 2;
      w.append(historyRecord(s, values, 1_790_000_000 + s * 12.5));
      // System stats padded to ~9 KB each: ~37 MB a file, past the backlog from which the decode thread reads.
      if (s % 4 === 0) w.append(statsRecord(1_790_000_000_000 + s * 12_500, 9000));
    }
    w.append(exitRecord(0));
    w.finish();
    const b = readFileSync(file);
    const at = Math.floor(b.length / 3);
    b.writeUInt8(b.readUInt8(at) ^ 0xff, at);
    writeFileSync(file, b);
  };
  const files = [path.join(dir, 'a', 'run-a.wandb'), path.join(dir, 'b', 'run-b.wandb')];
  write(files[0]!, ['critic/score/mean', 'actor/entropy', 'actor/kl_loss', 'response_length/mean', 'loss', 'a/b/c/d'], 1);
  write(files[1]!, ['reward', 'kl', 'entropy', 'x/y/z'], 2);
  for (const f of files) assert.ok(statSync(f).size > 32 << 20, `a backlog read ahead: ${statSync(f).size} bytes`);
  const plain = (r: ParsedRecord): unknown => (r.kind === 'metrics' ? { step: r.step, time: r.time, values: r.values } : r);
  type Read = { records: string[]; last: unknown; bad: number; decoded: number };
  const read = async (ahead: boolean): Promise<Read[]> => {
    const got = files.map((): Read => ({ records: [], last: null, bad: 0, decoded: 0 }));
    const parsers = files.map(() => new WandbParser(DEFAULTS.parser));
    const tailers = files.map((f) => new RecordTailer(f, null, WANDB_FRAMING, {}, ahead ? 'wandb' : null));
    let open = [0, 1];
    while (open.length > 0) {
      for (const k of [...open]) {
        const g = got[k]!;
        const out = await tailers[k]!.read((records, bad, decoded) => {
          g.bad += bad;
          if (decoded !== undefined) g.decoded++;
          for (const r of parsers[k]!.records(records, decoded)) {
            if (r.kind === 'reach') g.last = r;
            else g.records.push(JSON.stringify(plain(r)));
          }
        });
        if (out !== 'more') open = open.filter((x) => x !== k);
      }
    }
    return got;
  };
  const alone = await read(false);
  const ahead = await read(true);
  for (const k of [0, 1]) {
    assert.ok(ahead[k]!.decoded >= 10, `file ${k}: parts decoded ahead (${ahead[k]!.decoded})`);
    assert.equal(alone[k]!.decoded, 0);
    assert.equal(ahead[k]!.bad, 1, `file ${k}: the bad chunk`);
    assert.equal(alone[k]!.bad, 1);
    assert.equal(ahead[k]!.records.length, alone[k]!.records.length, `file ${k}: records`);
    assert.deepEqual(ahead[k]!.records, alone[k]!.records, `file ${k}`);
    assert.deepEqual(ahead[k]!.last, alone[k]!.last, `file ${k}: how far the file reaches`);
  }
  const steps = alone[0]!.records.map((r) => (JSON.parse(r) as { step?: number }).step).filter((s) => s !== undefined);
  assert.ok(steps.length > 15_900 && steps.includes(31_998), 'rows after define_metric are at the declared step');
  // A part the decode thread cannot read (no such file open) is the caller's to read: null, not an error.
  assert.equal(await readDecoded('wandb', WANDB_FRAMING.ahead!, 2 ** 30, 1 << 20, 0).result, null);
});

test("the key cache keeps a copy of a key's bytes: not the read they came from, which Node may hand out again", () => {
  const keys = new KeyCache();
  // A small read comes from Node's shared buffer pool, whose memory later reads use again.
  const read = Buffer.allocUnsafe(64);
  read.write('actor/entropy', 8, 'latin1');
  const id = keys.idAt(0, read, 8, 21);
  assert.equal(keys.strs[id], 'actor/entropy');
  // The same memory, holding another key of the same length at the same place.
  read.write('actor/kl_loss', 8, 'latin1');
  assert.equal(keys.cached(0, read, 8, 21), -1, 'not taken for the key read before');
  assert.equal(keys.strs[keys.idAt(0, read, 8, 21)], 'actor/kl_loss');
  // A key read from a large part holds its own few bytes, not the part's memory.
  const part = Buffer.allocUnsafe(1 << 20);
  part.write('critic/score/mean', 100, 'latin1');
  const score = keys.idAt(1, part, 100, 117);
  part.fill(0);
  assert.equal(keys.cached(1, Buffer.from('critic/score/mean', 'latin1'), 0, 17), score, 'its own bytes, not the part zeroed since');
});

test('the decode thread knows every framing that decodes ahead, and only those', () => {
  const declared = INPUTS.flatMap((i) => {
    const ahead = i.framing?.ahead ?? i.linesAhead;
    return ahead === undefined ? [] : [[i.id, ahead] as const];
  });
  assert.deepEqual(
    declared.map(([id]) => id),
    ['wandb', 'jsonl'],
  );
  assert.deepEqual(Object.entries(AHEAD_FRAMINGS), declared);
});

test('rows the decode thread leaves past its share are decoded by the parser: any share gives what the parser gives alone', () => {
  const dir = tempDir();
  const file = path.join(dir, 'run-share.wandb');
  const w = new WandbWriter(file);
  w.append(runRecord({ project: 'p', name: 'r', id: 'share', start: 1_790_000_000_000, config: {} }));
  for (let s = 1; s <= 400; s++) {
    const values: Record<string, number | string | object> = { 'critic/score/mean': Math.sin(s), 'actor/entropy': 1 / s, 'a/b/c': s };
    if (s % 7 === 0) values['note'] = 'a string';
    if (s % 13 === 0) values['hist'] = { _type: 'histogram', values: [1, 2], bins: [0, 1, 2] };
    if (s === 300) w.append(metricRecord('*', 'train/global_step'));
    if (s >= 300) values['train/global_step'] = s * 2;
    if (s % 50 === 0) w.append(statsRecord(1_790_000_000_000 + s * 1000, 100));
    w.append(historyRecord(s, values, 1_790_000_000 + s));
  }
  w.append(exitRecord(0));
  w.finish();
  const records = wandbRecords(readFileSync(file), 0).records;
  const parse = (share: number | null): string => {
    const parser = new WandbParser(DEFAULTS.parser);
    if (share === null) return JSON.stringify(parser.records(records));
    // What the decode thread would hand over, with a cache of its own (its key ids are its own).
    const keys = new KeyCache();
    const rows = decodeRows(records, keys, share);
    const upTo = Math.ceil(share * records.length);
    assert.ok(
      rows.from.slice(upTo).every((f) => f === NOT_TRIED),
      `share ${share}: the rest is left to the parser`,
    );
    assert.ok(
      rows.from.slice(0, upTo).every((f) => f !== NOT_TRIED),
      `share ${share}: the first ${upTo} records are tried`,
    );
    return JSON.stringify(parser.records(records, new DecodedRows(keys.strs, rows.ids, rows.vals, rows.from, rows.to)));
  };
  const alone = parse(null);
  assert.ok(alone.includes('"step":800') && alone.includes('"kind":"finished"'), 'rows at the declared step, and the exit');
  for (const share of [0, 1 / 16, 0.5, 0.9, 1]) assert.equal(parse(share), alone, `share ${share}`);
  // Hurried (the reading thread waits for the part) after some looks: the decode thread stops at
  // the next look, and the records from there on are the parser's.
  for (const looks of [1, 2, 7, 1000]) {
    let seen = 0;
    const keys = new KeyCache();
    const rows = decodeRows(records, keys, 1, () => ++seen >= looks);
    const stopped = rows.from.findIndex((f) => f === NOT_TRIED);
    if (looks === 1000) assert.equal(stopped, -1, 'never hurried: every record tried');
    else {
      assert.equal(stopped, (looks - 1) * 16, `hurried at look ${looks}: stopped there`);
      assert.ok(
        rows.from.slice(stopped).every((f) => f === NOT_TRIED),
        `hurried at look ${looks}: the rest is left to the parser`,
      );
    }
    const parser = new WandbParser(DEFAULTS.parser);
    const got = JSON.stringify(parser.records(records, new DecodedRows(keys.strs, rows.ids, rows.vals, rows.from, rows.to)));
    assert.equal(got, alone, `hurried at look ${looks}`);
  }
});

test('a row with the keys of the row before is read by place: the same records as rows read each on their own, as keys come, go, move and change kind', () => {
  const dir = tempDir();
  const file = path.join(dir, 'run-layout.wandb');
  const w = new WandbWriter(file);
  w.append(runRecord({ project: 'p', name: 'r', id: 'layout', start: 1_790_000_000_000, config: {} }));
  for (let s = 1; s <= 240; s++) {
    let values: Record<string, number | string | object> = { 'critic/score/mean': Math.sin(s), 'actor/entropy': 1 / s, 'a/b/c': s };
    if (s > 40 && s <= 60) values['actor/kl_loss'] = s / 1000; // a key comes for a while
    if (s > 60 && s <= 80) delete values['actor/entropy']; // one goes
    if (s > 80 && s <= 100) values = { 'a/b/c': s, 'actor/entropy': 1 / s, 'critic/score/mean': Math.sin(s) }; // the same keys, moved
    if (s % 17 === 0) values['hist'] = { _type: 'histogram', values: [1, 2], bins: [0, 1, 2] };
    if (s % 23 === 0) values['actor/entropy'] = 'not a number';
    if (s === 130 || s === 131) values['train_runtime'] = 1234.5; // the end-of-training summary, twice
    if (s === 150) w.append(metricRecord('*', 'train/global_step'));
    // the step key is logged before it is declared the step, so rows 149 and 150 name the same keys
    if (s >= 145 && s !== 170) values['train/global_step'] = s * 2; // one row without its declared step
    if (s > 200) values['critic/score/mean'] = s % 2 === 0 ? NaN : Infinity;
    w.append(historyRecord(s, values, 1_790_000_000 + s));
  }
  w.append(exitRecord(0));
  w.finish();
  const records = wandbRecords(readFileSync(file), 0).records;
  const kept = (out: ParsedRecord[]): string => JSON.stringify(out.filter((r) => r.kind !== 'reach'));
  // Each record read by a parser of its own that has seen every record before it but no row:
  // no row before it to read by place.
  const own: ParsedRecord[] = [];
  records.forEach((rec, i) => {
    const parser = new WandbParser(DEFAULTS.parser);
    parser.records(records.slice(0, i).filter((r) => decodeWandbRecord(r).kind !== 'history'));
    own.push(...parser.records([rec]));
  });
  const expected = kept(own);
  assert.ok(
    expected.includes('"step":480') && expected.includes('"kind":"finished"'),
    'rows at the declared step, the summary and the exit',
  );
  assert.equal(
    kept(new WandbParser(DEFAULTS.parser).records(records)),
    expected,
    'one parser, every row after the first with a row before it',
  );
  // Rows decoded ahead (the decode thread's key ids, not the parser's), all or half of them.
  for (const share of [1, 0.5]) {
    const keys = new KeyCache();
    const rows = decodeRows(records, keys, share);
    const got = new WandbParser(DEFAULTS.parser).records(records, new DecodedRows(keys.strs, rows.ids, rows.vals, rows.from, rows.to));
    assert.equal(kept(got), expected, `share ${share}`);
  }
});

test('a part the reading thread waits for comes back from the decode thread with the records it had not decoded left to the parser', async () => {
  const dir = tempDir();
  const write = (name: string, rows: number): { file: string; whole: Buffer; alone: string } => {
    const file = path.join(dir, name);
    const w = new WandbWriter(file);
    w.append(runRecord({ project: 'p', name: 'r', id: 'hurry', start: 1_790_000_000_000, config: {} }));
    for (let s = 1; s <= rows; s++)
      w.append(historyRecord(s, { 'critic/score/mean': Math.sin(s), 'actor/entropy': 1 / s }, 1_790_000_000 + s));
    w.finish();
    const whole = readFileSync(file);
    return { file, whole, alone: JSON.stringify(new WandbParser(DEFAULTS.parser).records(wandbRecords(whole, 0).records)) };
  };
  // Long enough (tens of ms to decode) that the thread cannot be done with it before the hurry,
  // however late this thread runs on a loaded machine.
  const run = write('run-hurry.wandb', 20_000);
  const fd = openSync(run.file, 'r');
  try {
    // Hurried as soon as it is sent: the thread stops at its next look (every 16 records), so at
    // most a few records are decoded (none when the hurry came before the thread had the part)
    // and every record after them is left to the parser.
    const hurried = readDecoded('wandb', WANDB_FRAMING.ahead!, fd, run.whole.length, 0);
    hurried.hurry();
    const part = await hurried.result;
    assert.ok(part !== null && part.ahead instanceof DecodedRows);
    assert.equal(part.records.length, 20_001);
    const from = [...part.ahead.from];
    const left = from.indexOf(NOT_TRIED);
    assert.ok(left !== -1 && left < from.length / 2, `records left to the parser from record ${left}`);
    assert.ok(
      from.slice(left).every((f) => f === NOT_TRIED),
      'every record after the first left is left',
    );
    assert.equal(JSON.stringify(new WandbParser(DEFAULTS.parser).records(part.records, part.ahead)), run.alone);
    // Not hurried: it decodes the whole part (a later part's hurry says nothing of this one).
    const calm = await readDecoded('wandb', WANDB_FRAMING.ahead!, fd, run.whole.length, 0).result;
    assert.ok(calm !== null && calm.ahead instanceof DecodedRows);
    assert.ok(
      calm.ahead.from.every((f) => f !== NOT_TRIED),
      'every record decoded ahead',
    );
    assert.equal(JSON.stringify(new WandbParser(DEFAULTS.parser).records(calm.records, calm.ahead)), run.alone);
  } finally {
    closeSync(fd);
  }
});

test('the decode thread takes a step less of a part each time the reading thread waited for one, a step more when it did not', () => {
  let share = 1;
  share = nextShare(share, false);
  assert.equal(share, 1, 'never above the whole part');
  for (let i = 0; i < 4; i++) share = nextShare(share, true);
  assert.equal(share, 0.75);
  share = nextShare(share, false);
  assert.equal(share, 0.8125);
  for (let i = 0; i < 40; i++) share = nextShare(share, true);
  assert.equal(share, 0, 'never below none of it');
});
