/**
 * `barwatch watch` on runs being written live: it raises the same findings as `analyze` of the
 * finished files, in the same rounds, and no other alert along the way, not even for a moment.
 * Four ways of writing: every scenario of the generator at a steady pace, the same in large
 * bursts (a burst spans files and rounds, so the daemon reads them in whatever order its events
 * come), every simulator scenario written by `barwatch simulate` processes at a training pace
 * (watch-speeds.test.ts, at several paces), and the same simulated runs replayed from their
 * finished files in bursts.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { SIM_SCENARIO_NAMES } from '../src/sim/scenarios.js';
import { barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { asExpectedScenario, SCENARIO_NAMES, scenarioWrites } from './helpers/scenarios.js';
import { asExpectedGrpo, GRPO_SCENARIO_NAMES, grpoWrites } from './helpers/grpo-scenarios.js';
import { checkSimulated, HEADER, liveEqualsAnalyze, replay, watchWhileWriting, writesOfFinishedRun } from './helpers/live.js';

/** Every scenario of the generator, interleaved in trainer time, replayed by a writer process. */
async function scenariosLive(t: TestContext, seed: number, every: number, pauseMs: number): Promise<void> {
  const root = tempDir();
  const now = Date.now();
  const writes = SCENARIO_NAMES.flatMap((name) =>
    scenarioWrites(name, seed, now).map((w) => ({ ...w, file: path.join(root, 'runs', name, w.file) })),
  );
  writes.sort((a, b) => a.time - b.time);
  const planFile = path.join(root, 'plan.json');
  writeFileSync(planFile, JSON.stringify({ writes: writes.map(({ file, text }) => ({ file, text })), every, pauseMs }));
  const { alerts, offline } = await watchWhileWriting(
    root,
    () => replay(planFile),
    // The stale run stopped writing early in the replay: the daemon must say so by itself.
    (d) => d.waitFor((l) => l.msg.startsWith('firing: stale-run'), 60_000),
  );
  const rows = [...HEADER];
  for (const name of SCENARIO_NAMES) {
    const run = path.join(root, 'runs', name);
    const ids = [...new Set(offline.filter((f) => f.run === run).map((f) => f.detector))].sort();
    assert.ok(asExpectedScenario({ scenario: name, ids }), `${name}: analyze gives ${ids.join(', ') || 'nothing'}`);
    rows.push(...liveEqualsAnalyze(name, run, alerts, offline));
  }
  for (const row of rows) t.diagnostic(row);
}

describe('watch equals analyze, written live', () => {
  test('every scenario at a steady pace (25 writes, then 1 ms)', (t) => scenariosLive(t, 4, 25, 1));

  test('every scenario in bursts (1,500 writes across files and rounds, then 200 ms)', (t) => scenariosLive(t, 5, 1500, 200));

  test('every training-health scenario, verl and TRL consoles side by side, at a steady pace', async (t) => {
    const root = tempDir();
    const now = Date.now();
    const seeds = [5, 6];
    const runOf = (name: string, seed: number): string => path.join(root, 'runs', `${name}-s${seed}`);
    const writes = seeds.flatMap((seed) =>
      GRPO_SCENARIO_NAMES.flatMap((name) => grpoWrites(name, seed, now).map((w) => ({ ...w, file: path.join(runOf(name, seed), w.file) }))),
    );
    writes.sort((a, b) => a.time - b.time);
    const planFile = path.join(root, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ writes: writes.map(({ file, text }) => ({ file, text })), every: 25, pauseMs: 1 }));
    // A crash and a run that stops short say so only after a silence: short ones here, and long
    // enough that a writer paused by a busy machine is not taken for either.
    const { alerts, offline } = await watchWhileWriting(
      root,
      () => replay(planFile),
      (d) =>
        d.waitFor(
          () =>
            d.logs.filter((l) => l.msg.startsWith('firing: run-crashed')).length >= seeds.length &&
            d.logs.filter((l) => l.msg.startsWith('firing: run-stopped-short')).length >= seeds.length,
          60_000,
        ),
      '10m',
      '  run-crashed: {grace: 3s}\n  run-stopped-short: {min_silence: 15s}\n',
    );
    const rows = [...HEADER];
    for (const seed of seeds)
      for (const name of GRPO_SCENARIO_NAMES) {
        const run = runOf(name, seed);
        const ids = [...new Set(offline.filter((f) => f.run === run).map((f) => f.detector))].sort();
        assert.ok(asExpectedGrpo({ scenario: name, ids }), `${name} seed ${seed}: analyze gives ${ids.join(', ') || 'nothing'}`);
        rows.push(...liveEqualsAnalyze(`${name}-s${seed}`, run, alerts, offline));
      }
    for (const row of rows) t.diagnostic(row);
  });

  test('every simulator scenario in bursts (its finished files replayed, 1,500 writes across files and rounds, then 200 ms)', async (t) => {
    const root = tempDir();
    const seed = 3;
    const finished = path.join(root, 'finished');
    for (const name of SIM_SCENARIO_NAMES) {
      const r = await barwatchAsync(['simulate', path.join(finished, name), '--scenario', name, '--seed', String(seed)]);
      assert.equal(r.status, 0, r.stderr);
    }
    // The runs grow side by side: their write lists are dealt out one write at a time.
    const lists = SIM_SCENARIO_NAMES.map((name) => writesOfFinishedRun(path.join(finished, name), path.join(root, 'runs', name)));
    const writes: { file: string; text: string }[] = [];
    for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) writes.push(l[i]!);
    const planFile = path.join(root, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ writes, every: 1500, pauseMs: 200 }));
    const { alerts, offline } = await watchWhileWriting(root, () => replay(planFile), undefined, '10m');
    checkSimulated(t, root, seed, alerts, offline);
  });
});
