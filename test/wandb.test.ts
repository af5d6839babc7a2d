/**
 * The W&B run-file decoder (parsers/wandb-log.ts) on files the real wandb SDK wrote
 * (../shared/writer-samples/wandb/, see its README): framing, records, rows, the cut record at
 * the end of a live file, a bad CRC.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { decodeWandbRecord, wandbRecords, wandbRow, type WandbRecord, type WandbRow } from '../src/parsers/wandb-log.js';
import { REAL_LOGS } from './helpers/fs.js';

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

  test('bytes that are not a run file give no records, not an exception', () => {
    const junk = Buffer.from(':W&B\xbe\xe1\x00' + 'x'.repeat(70_000), 'latin1');
    const got = wandbRecords(junk, 0);
    assert.equal(got.records.length, 0);
    assert.ok(got.bad >= 1);
  });
});
