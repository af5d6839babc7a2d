/**
 * The simulator's runs written by `barwatch simulate` processes while a daemon watches, at paces
 * from a slow trainer's to as fast as the machine goes: no alert comes and goes, and each alert
 * names the step analyze names.
 * Beside watch-detectors.test.ts so the slow paces, mostly waiting, overlap the other tests.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { SIM_SCENARIO_NAMES } from '../src/sim/scenarios.js';
import { barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { checkSimulated, linesUnder, liveEqualsAnalyze, quietKey, replay, watchWhileWriting, writesOfFinishedRun } from './helpers/live.js';

describe('watch equals analyze at every writing speed', () => {
  // A round's files are read merged by step, a file's steps past its sibling's wait for it, and
  // detectors judge whole steps: from 10 steps a second (ten times a fast trainer) to as fast as the
  // machine writes, the daemon judges the states analyze judges. A writer held up for
  // settle_after by a busy machine is a paused run, which the daemon also judges with everything
  // it has read: what first holds then is placed at the step the run paused at.
  for (const speed of ['10', '50', '400', 'max']) {
    test(`every simulator scenario, written by barwatch simulate at --speed ${speed}: no alert comes and goes, each names the step analyze names`, async (t) => {
      const root = tempDir();
      const seed = 2;
      const { alerts, offline, quiet } = await watchWhileWriting(
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
      checkSimulated(t, root, seed, alerts, offline, { quiet });
    });
  }

  test('a run that pauses is judged with what it has written: a finding that first holds then names the step it paused at, earlier than analyze', async () => {
    // high-lr, seed 2: selector round 1's boundary reward swings in its last 128 steps (1-160).
    // Analyze's schedule judges the round after 144 and at its end, 160; a run paused after step
    // 159 already swings enough.
    const root = tempDir();
    const finished = path.join(root, 'finished');
    const r = await barwatchAsync(['simulate', finished, '--scenario', 'high-lr', '--seed', '2']);
    assert.equal(r.status, 0, r.stderr);
    const run = path.join(root, 'runs', 'high-lr');
    const writes = writesOfFinishedRun(finished, run);
    // Every line of steps 1-159 of the round is in before its train.log says step=160.
    const cut = writes.findIndex((w) => w.file.endsWith(path.join('selector_round1', 'train.log')) && / step=160 /.test(w.text));
    assert.ok(cut > 0);
    const plan = (name: string, part: typeof writes): string => {
      const file = path.join(root, name);
      writeFileSync(file, JSON.stringify({ writes: part, every: 200, pauseMs: 20 }));
      return file;
    };
    const [before, after] = [plan('before.json', writes.slice(0, cut)), plan('after.json', writes.slice(cut))];
    const { alerts, offline, quiet } = await watchWhileWriting(
      root,
      async (d) => {
        await replay(before);
        // Judged once all of it is read (a machine busy enough may have paused the writer earlier too).
        const lines = linesUnder(path.join(root, 'runs'));
        const read = d.logs.indexOf(await d.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= lines, 30_000));
        await d.waitFor((l) => l.msg === 'a quiet run judged with everything read' && l['run'] === run && d.logs.indexOf(l) > read, 30_000);
        await replay(after);
      },
      undefined,
      '10m',
    );
    const live = alerts.find((a) => a.detector === 'boundary-oscillation' && a.round === 1 && a.status === 'firing');
    const offlineStep = offline.find((f) => f.detector === 'boundary-oscillation' && f.round === 1)?.step;
    assert.deepEqual([live?.step, offlineStep], [159, 160], 'boundary-oscillation round 1: live, analyze');
    assert.ok(quiet.has(quietKey(run, 'boundary-oscillation', 1, 159)), 'the daemon says it held when the run paused');
    // The rest of the run, and every other alert, as analyze has them.
    liveEqualsAnalyze('high-lr', run, alerts, offline, { quiet });
  });
});
