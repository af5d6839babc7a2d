/**
 * The simulator's runs written by `barwatch simulate` processes while a daemon watches, at paces
 * from a slow trainer's to as fast as the machine goes: no alert comes and goes, and each alert
 * names the step analyze names.
 * Beside watch-detectors.test.ts so the slow paces, mostly waiting, overlap the other tests.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { SIM_SCENARIO_NAMES } from '../src/sim/scenarios.js';
import { barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { checkSimulated, watchWhileWriting } from './helpers/live.js';

describe('watch equals analyze at every writing speed', () => {
  // A round's files are read merged by step, a file's steps past its sibling's wait for it, and
  // detectors judge whole steps: from 10 steps a second (ten times a fast trainer) to as fast as the
  // machine writes, the daemon judges the states analyze judges.
  for (const speed of ['10', '50', '400', 'max']) {
    test(`every simulator scenario, written by barwatch simulate at --speed ${speed}: no alert comes and goes, each names the step analyze names`, async (t) => {
      const root = tempDir();
      const seed = 2;
      const { alerts, offline } = await watchWhileWriting(
        root,
        async () => {
          const done = await Promise.all(
            SIM_SCENARIO_NAMES.map((name) =>
              barwatchAsync(['simulate', path.join(root, 'runs', name), '--scenario', name, '--seed', String(seed), '--speed', speed]),
            ),
          );
          for (const r of done) assert.equal(r.status, 0, r.stderr);
        },
        undefined,
        '10m',
      );
      checkSimulated(t, root, seed, alerts, offline, 'same');
    });
  }
});
