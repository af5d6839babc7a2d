/**
 * BAR-RAG's selector debug blocks matched to the W&B rows of the official layout by time
 * (runs/debug-steps.ts): each block goes to the round whose run was live and to the step logged
 * next after it; samples of several workers' files are one step's together. Analyze and a daemon
 * watching the files grow (the W&B file in whole blocks, late) find the same.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { DebugSteps, type DebugStepsJSON } from '../src/runs/debug-steps.js';
import type { DaemonState } from '../src/daemon/state.js';
import { analyzeJson, barwatch } from './helpers/cli.js';
import { DaemonProcess, quickWatchConfig } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { exitRecord, historyRecord, runRecord, WandbWriter } from './helpers/wandb-writer.js';

/** `[YYYY-MM-DD HH:MM:SS]` in this machine's zone, as selector.py writes datetime.now(). */
function stamp(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `[${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}]`;
}

/** One selector debug block as verl/utils/reward_score/selector.py writes it. */
function block(ms: number, accuracy: number, unc: number): string {
  const t = stamp(ms);
  const right = Math.round(accuracy * 4);
  return [
    '='.repeat(100),
    `${t} REWARD COMPUTATION`,
    `${t} question=q`,
    `${t} selected_docs=[1, 2] (num=2, target=5)`,
    `${t} format_valid=True has_duplicate=False`,
    `${t} GENERATOR ROLLOUTS (K=4):`,
    `${t}   num_correct=${right}/4 accuracy=${accuracy.toFixed(3)}`,
    `${t} SELECTOR REWARD COMPONENTS:`,
    `${t}   unc_reward=${unc.toFixed(4)} (center=0.5, max=1.0)`,
    `${t}   rel_reward=0.5000 (max=1.0)`,
    `${t}   format_bonus=0.0000`,
    `${t}   count_penalty=0.0000`,
    `${t} >>> FINAL REWARD: ${unc.toFixed(4)} <<<`,
    '='.repeat(100),
    '',
  ].join('\n');
}

const T0 = Date.UTC(2026, 11, 1, 10, 0, 0);
const STEP_MS = 60_000;
const STEPS = 12;

/** The accuracy of worker w's j-th sample at step s of round r: a known share in the boundary zone. */
function accuracyOf(r: number, s: number, w: number, j: number): number {
  return (r * 7 + s * 3 + w * 5 + j) % 4 === 0 ? 0.5 : j % 2 === 0 ? 1 : 0;
}

interface Layout {
  root: string;
  /** Per round and step: samples and boundary share expected. */
  expected: Map<string, { samples: number; share: number }>;
  /** Writes everything, or (live) a step at a time: the debug blocks at once, the W&B rows in whole blocks. */
  step(r: number, s: number): void;
  startRound(r: number): void;
  endRound(r: number): void;
}

/**
 * Two selector rounds and a generator round between them, as the official scripts leave them:
 * one W&B run each, and two workers' debug logs, each opened for append across both rounds.
 * Step s of selector round r: samples written 40 s and 20 s before its row (row at start + s min).
 */
function layout(root: string): Layout {
  const expected = new Map<string, { samples: number; share: number }>();
  const writers = new Map<number, WandbWriter>();
  const start = (r: number): number => T0 + (r - 1) * 2 * STEPS * STEP_MS;
  const dbg = (w: number): string => path.join(root, 'debug_logs', `selector_reward_debug_${w}.log`);
  mkdirSync(path.join(root, 'debug_logs'), { recursive: true });
  for (const w of [0, 1]) writeFileSync(dbg(w), '');
  return {
    root,
    expected,
    startRound(r) {
      const id = `sel0${r}`;
      const folder = `run-${new Date(start(r)).toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '_')}-${id}`;
      const w = new WandbWriter(path.join(root, 'wandb', folder, `run-${id}.wandb`));
      w.append(
        runRecord({
          project: 'verl-selector-training',
          name: 'selector-training',
          id,
          start: start(r),
          config: { 'actor_rollout_ref.rollout.n': 4 },
        }),
      );
      writers.set(r, w);
    },
    step(r, s) {
      const row = start(r) + s * STEP_MS;
      let n = 0;
      let hits = 0;
      for (const w of [0, 1]) {
        let text = '';
        for (let j = 0; j < 3; j++) {
          const a = accuracyOf(r, s, w, j);
          n++;
          if (a === 0.5) hits++;
          text += block(row - (j < 2 ? 40_000 : 20_000), a, a === 0.5 ? 1 : 0.2);
        }
        appendFileSync(dbg(w), text);
      }
      expected.set(`${r}:${s}`, { samples: n, share: hits / n });
      writers.get(r)!.append(historyRecord(s, { 'critic/score/mean': 0.3 + s / 100, padding: 'x'.repeat(4000) }, (row + 500) / 1000));
    },
    endRound(r) {
      const w = writers.get(r)!;
      w.append(exitRecord(0));
      w.finish();
      if (r === 1) {
        // The generator's round between the two: a run of its own role, no selector samples.
        const g = new WandbWriter(path.join(root, 'wandb', 'run-20261201_101300-gen01', 'run-gen01.wandb'), false);
        g.append(
          runRecord({
            project: 'verl-generator-training',
            name: 'generator-training',
            id: 'gen01',
            start: start(1) + (STEPS + 1) * STEP_MS,
            config: {},
          }),
        );
        for (let s = 1; s <= 4; s++)
          g.append(historyRecord(s, { 'critic/score/mean': 0.5 }, (start(1) + (STEPS + 1 + s) * STEP_MS) / 1000));
        g.append(exitRecord(0));
        g.finish();
      }
    },
  };
}

function writeAll(root: string): Layout {
  const l = layout(root);
  for (const r of [1, 2]) {
    l.startRound(r);
    for (let s = 1; s <= STEPS; s++) l.step(r, s);
    l.endRound(r);
  }
  return l;
}

describe('debug blocks matched to the W&B rows by time', () => {
  test('analyze: each block goes to the round whose run was live and the step logged next; two workers together; the report says how', () => {
    const root = path.join(tempDir(), 'bar-rag');
    const l = writeAll(root);
    const { doc } = analyzeJson([root]);
    assert.equal(doc.runs.length, 1);
    const run = doc.runs[0]!;
    assert.deepEqual(
      run.rounds.map((r) => [r.role, r.round, r.steps]),
      [
        ['selector', 1, STEPS],
        ['generator', 1, 4],
        ['selector', 2, STEPS],
      ],
      'no selector round without a number: every block found its round',
    );
    for (const r of [1, 2]) {
      const round = run.rounds.find((x) => x.role === 'selector' && x.round === r)!;
      const samples = round.series['samples']!;
      const share = round.series['boundary_share']!;
      assert.equal(samples.n, STEPS);
      assert.equal(samples.mean, 6, 'three samples of each of two workers a step');
      let sum = 0;
      for (let s = 1; s <= STEPS; s++) sum += l.expected.get(`${r}:${s}`)!.share;
      assert.ok(Math.abs(share.mean! - sum / STEPS) < 1e-9, `round ${r}: boundary share ${share.mean} vs ${sum / STEPS}`);
      // The last step's own value: exactly the samples written after the row before it.
      assert.equal(share.last, l.expected.get(`${r}:${STEPS}`)!.share);
      assert.equal(share.last_step, STEPS);
    }
    const how = (
      run as unknown as { debug_steps: Record<string, { by: string; samples: number; steps: number; rounds: number[]; waiting: number }> }
    ).debug_steps;
    assert.deepEqual(how['selector'], {
      by: 'time',
      samples: 2 * STEPS * 6,
      steps: 2 * STEPS,
      rounds: [1, 2],
      waiting: 0,
      late: 0,
      offset_ms: -new Date(T0).getTimezoneOffset() * 60_000 || 0,
    });
    const text = barwatch(['analyze', root]).stdout;
    assert.match(text, /selector debug steps by time: 144 sample\(s\) matched to the 24 step\(s\) of rounds 1, 2 logged next after them/);
  });

  test('DebugSteps: samples wait for their row; a late sample is dropped and counted; a clock in another zone is found from the rows', () => {
    const d = new DebugSteps();
    const zone = 5.5 * 3600_000; // the trainer's clock, UTC+05:30, read as UTC
    const row = Date.UTC(2026, 0, 1, 12, 0, 0);
    d.add('selector', 'barrag-selector-debug', '/r/debug_logs', { accuracy: 0.5, boundary: 1 }, row - 30_000 + zone);
    d.add('selector', 'barrag-selector-debug', '/r/debug_logs', { accuracy: 1, boundary: 0 }, row - 10_000 + zone);
    d.add('selector', 'barrag-selector-debug', '/r/debug_logs', { accuracy: 0.4, boundary: 1 }, row + 30_000 + zone);
    assert.equal(d.row('generator', 1, 1, row), null, 'another role takes nothing');
    const first = d.row('selector', 1, 1, row)!;
    assert.equal(first.record.step, 1);
    assert.deepEqual(
      [first.record.values['samples'], first.record.values['boundary_share'], first.record.values['boundary']],
      [2, 0.5, 0.5],
    );
    d.add('selector', 'barrag-selector-debug', '/r/debug_logs', { accuracy: 0.5 }, row - 5_000 + zone);
    const second = d.row('selector', 1, 2, row + 60_000)!;
    assert.deepEqual([second.record.step, second.record.values['samples']], [2, 1]);
    const s = d.summary()['selector'] as { late: number; offset_ms: number };
    assert.equal(s.late, 1);
    if (new Date(row).getTimezoneOffset() !== -330) assert.equal(s.offset_ms, zone);
    assert.match(d.describe().join('\n'), /1 written before a row already read were dropped/);
    // Saved and restored with the run: what waits still waits.
    d.add('selector', 'barrag-selector-debug', '/r/debug_logs', { accuracy: 0.5 }, row + 90_000 + zone);
    const back = DebugSteps.from(JSON.parse(JSON.stringify(d.toJSON())) as DebugStepsJSON);
    assert.equal(back.row('selector', 1, 3, row + 120_000)!.record.values['samples'], 1);
  });

  test('watch: the debug blocks arrive live, the W&B rows in whole blocks later: the same steps as analyze, nothing dropped', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'bar-rag');
    const cfg = quickWatchConfig(dir);
    mkdirSync(path.join(root, 'wandb'), { recursive: true });
    const l = layout(root);
    const d = new DaemonProcess([root, '--config', cfg]);
    await d.waitFor((x) => x.msg === 'watching');
    for (const r of [1, 2]) {
      l.startRound(r);
      for (let s = 1; s <= STEPS; s++) {
        l.step(r, s);
        await new Promise((res) => setTimeout(res, 60));
      }
      l.endRound(r);
      await d.waitFor((x) => x.msg.includes(`is selector round ${r} of`));
    }
    const offline = analyzeJson([root]).doc.runs[0]!;
    // Everything read: as many records as analyze read, then one status more.
    const total = offline.files.reduce((a, f) => a + f.records, 0);
    await d.waitFor((x) => x.msg.startsWith('status:') && (x['records'] as number) >= total);
    assert.equal(await d.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    const live = state.runs[0]!;
    for (const r of [1, 2]) {
      const a = live.rounds.find((x) => x.role === 'selector' && x.round === r)!;
      const b = offline.rounds.find((x) => x.role === 'selector' && x.round === r)!;
      for (const name of ['samples', 'boundary_share', 'boundary', 'accuracy'])
        assert.deepEqual(
          [a.series[name]!.summary.n, a.series[name]!.summary.mean],
          [b.series[name]!.n, b.series[name]!.mean],
          `${name}, selector round ${r}`,
        );
    }
    assert.equal(live.rounds.filter((x) => x.role === 'selector' && x.round === null).length, 0);
  });
});
