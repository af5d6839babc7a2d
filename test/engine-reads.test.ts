/**
 * Detector.reads: the engine does not ask a detector whose quantities no round of a run carries.
 * It must change nothing: every finding, step, message and piece of evidence is the same as when
 * every detector is asked.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/load.js';
import { DetectorEngine } from '../src/detectors/engine.js';
import { DETECTORS } from '../src/detectors/index.js';
import type { Detector, Finding } from '../src/detectors/types.js';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { RunState } from '../src/runs/run.js';
import { silentLogger } from '../src/util/log.js';
import { DEFAULTS } from './helpers/defaults.js';
import { firstDiff } from './helpers/diff.js';
import { GRPO_SCENARIO_NAMES, writeGrpoScenario } from './helpers/grpo-scenarios.js';
import { SCENARIO_NAMES, writeScenario } from './helpers/scenarios.js';

const REAL_LOGS = path.resolve(import.meta.dirname, '..', '..', '..', 'shared', 'real-logs');

const NOW = Date.UTC(2026, 0, 1);

/** analyze's findings of a folder, every severity. */
async function findingsOf(dir: string): Promise<Finding[]> {
  return (await analyzePaths([dir], loadConfig(null), silentLogger(), () => NOW)).findings;
}

/** The same, with every detector asked at every evaluation (their `reads` taken away meanwhile). */
async function findingsAskingAll(dir: string): Promise<Finding[]> {
  const kept = DETECTORS.map((d) => (d as { reads?: Detector['reads'] }).reads);
  try {
    for (const d of DETECTORS) delete (d as { reads?: Detector['reads'] }).reads;
    return await findingsOf(dir);
  } finally {
    DETECTORS.forEach((d, i) => {
      if (kept[i] !== undefined) (d as { reads?: Detector['reads'] }).reads = kept[i];
    });
  }
}

describe('detectors not asked where a run carries none of their quantities', () => {
  test('eight detectors declare what they read', () => {
    const declared = DETECTORS.filter((d) => d.reads !== undefined).map((d) => d.id);
    assert.deepEqual(declared.sort(), [
      'entropy-blowup',
      'entropy-collapse',
      'grad-spike',
      'kl-blowup',
      'length-at-limit',
      'length-collapse',
      'no-learning-signal',
      'rollout-mismatch',
    ]);
  });

  test('every GRPO and BAR-RAG scenario and the real logs: the same findings, to the last piece of evidence', async () => {
    const cases: [string, ((dir: string) => void) | string][] = [
      ...GRPO_SCENARIO_NAMES.map((name): [string, (dir: string) => void] => [name, (dir) => writeGrpoScenario(dir, name, 1)]),
      ...SCENARIO_NAMES.map((name): [string, (dir: string) => void] => [name, (dir) => writeScenario(dir, name, 1, NOW)]),
      ['real-logs', REAL_LOGS],
    ];
    let findings = 0;
    for (const [name, write] of cases) {
      const dir = typeof write === 'string' ? write : mkdtempSync(path.join(tmpdir(), 'barwatch-reads-'));
      try {
        if (typeof write !== 'string') write(dir);
        const skipping = await findingsOf(dir);
        const asking = await findingsAskingAll(dir);
        assert.equal(firstDiff(skipping, asking), null, name);
        findings += skipping.length;
      } finally {
        if (typeof write !== 'string') rmSync(dir, { recursive: true, force: true });
      }
    }
    // The scenarios hold findings of the declaring detectors, so the comparison covers them.
    assert.ok(findings > 40, `${findings} findings`);
  });

  test('a detector is not asked until a series of its quantity appears, then at its cadence', () => {
    let asked = 0;
    const entropy: Detector = {
      id: 'entropy-collapse',
      description: 'test',
      cleared: 'test',
      defaults: { enabled: true, severity: 'warning' },
      every: () => 1,
      scope: 'round',
      reads: ['entropy'],
      detect: () => {
        asked++;
        return [];
      },
    };
    const engine = new DetectorEngine({}, [entropy]);
    const run = new RunState('/runs/r', DEFAULTS.stats);
    const ctx = { now: 0, live: true, final: false };
    const record = (step: number, values: Record<string, number>): void => {
      engine.onRecord(run, ctx);
      run.apply({ kind: 'metrics', step, values }, { role: 'unknown', round: null, format: 'reward-history', file: 'f' }, 0);
    };
    for (let s = 1; s <= 20; s++) record(s, { reward: 0.5, kl: 0.01 });
    assert.equal(asked, 0);
    // verl's spelling of the entropy appears at step 21: judged from the next step on.
    for (let s = 21; s <= 30; s++) record(s, { reward: 0.5, kl: 0.01, 'actor/entropy': 1.2 });
    assert.equal(asked, 9);
  });
});
