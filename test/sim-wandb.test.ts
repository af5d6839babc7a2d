/**
 * `simulate --logger wandb` and `demo --logger wandb`: the simulated training written as BAR-RAG's
 * official scripts leave it (W&B run files, debug logs, filtered_data/), read end to end to the
 * same findings as the canonical layout of the same training.
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { SIM_SCENARIO_NAMES } from '../src/sim/scenarios.js';
import { simulate } from '../src/sim/simulate.js';
import { analyzeJson, barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

describe('the simulated training in the official layout', () => {
  test('the layout: one W&B run per invocation, latest-run, debug logs per worker, the filter output; no step written elsewhere', async () => {
    const dir = tempDir();
    await simulate(dir, { scenario: 'healthy', seed: 3, rounds: 2, speed: null, logger: 'wandb' });
    const all = files(dir);
    const runs = all.filter((f) => f.endsWith('.wandb'));
    assert.equal(runs.length, 4);
    assert.ok(
      runs.every((f) => /^wandb\/run-\d{8}_\d{6}-\w{8}\/run-\w{8}\.wandb$/.test(f)),
      runs.join(', '),
    );
    assert.ok(lstatSync(path.join(dir, 'wandb', 'latest-run')).isSymbolicLink());
    assert.deepEqual(
      all.filter((f) => f.startsWith('debug_logs/')).map((f) => f.replace(/\d+/, 'N')),
      ['debug_logs/reward_debug_N.log', 'debug_logs/selector_reward_debug_N.log', 'debug_logs/selector_reward_debug_N.log'],
    );
    assert.equal(all.filter((f) => /^filtered_data\/filtered_(ids_)?\d{8}_\d{6}\.jsonl?$/.test(f)).length, 2);
    assert.ok(!all.some((f) => f.endsWith('reward_history.jsonl') || f.startsWith('outputs/') || f.startsWith('configs/')));
    assert.ok(!existsSync(path.join(dir, 'outputs')));
    // The scripts' console logs hold no step: each is a round of its role, and said to be read from W&B.
    const run = analyzeJson([dir]).doc.runs[0]!;
    assert.deepEqual(
      run.problems.map((p) => [path.basename(p.path).replace(/\d{8}_\d{6}/, 'TS'), p.reason]),
      [
        ['generator_training_TS.log', "no step lines: the run's steps were read from its W&B files"],
        ['generator_training_TS.log', "no step lines: the run's steps were read from its W&B files"],
        ['selector_training_TS.log', "no step lines: the run's steps were read from its W&B files"],
        ['selector_training_TS.log', "no step lines: the run's steps were read from its W&B files"],
      ],
    );
    assert.deepEqual(
      run.files.filter((f) => f.path.includes('/logs/')).map((f) => [path.basename(f.path).split('_')[0], f.round]),
      [
        ['generator', 1],
        ['generator', 2],
        ['selector', 1],
        ['selector', 2],
      ],
    );
  });

  test('every scenario: the same findings, at the same rounds and steps, from the W&B layout as from the canonical one', async () => {
    const base = tempDir();
    for (const scenario of SIM_SCENARIO_NAMES) {
      const files = path.join(base, `${scenario}-files`);
      const wandb = path.join(base, `${scenario}-wandb`);
      await simulate(files, { scenario, seed: 1, rounds: 2, speed: null });
      await simulate(wandb, { scenario, seed: 1, rounds: 2, speed: null, logger: 'wandb' });
      const of = (dir: string): string[] => {
        const { doc } = analyzeJson([dir]);
        assert.equal(doc.runs.length, 1, `${scenario}: one run`);
        return doc.runs[0]!.findings.map((f) => `${f.detector} ${f.severity} round ${f.round} step ${f.step}`).sort();
      };
      const w = analyzeJson([wandb]).doc.runs[0]!;
      assert.deepEqual(
        w.rounds.map((r) => [r.role, r.round, r.steps]),
        [
          ['selector', 1, 160],
          ['generator', 1, 80],
          ['selector', 2, 160],
          ['generator', 2, 80],
        ],
        scenario,
      );
      assert.deepEqual(of(wandb), of(files), scenario);
    }
  });

  test('demo --fast --logger wandb: the filter problem found live, the fix healthy', async () => {
    const r = await barwatchAsync(['demo', '--fast', '--logger', 'wandb', '--listen', '127.0.0.1:0']);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /FIRING \[critical\] boundary-share-low/);
    assert.match(r.stdout, /What to do: Set easy_threshold 0\.42 -> /);
    assert.match(r.stdout, /With the recommended thresholds the run is healthy: no finding\./);
    assert.match(r.stdout, /Did the fix work\? barwatch compare run-1 run-2:[\s\S]*verdict: improved/);
  });
});
