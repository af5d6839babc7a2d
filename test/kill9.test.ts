/**
 * kill -9 while a writer appends to several runs: after each restart barwatch resumes from its
 * saved offsets and statistics, so in the end its statistics and findings equal one uninterrupted
 * `analyze` of the final files, and every alert reached the (loopback) Alertmanager exactly once.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, test } from 'node:test';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { loadConfig } from '../src/config/load.js';
import { silentLogger } from '../src/util/log.js';
import type { DaemonState } from '../src/daemon/state.js';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { rng } from '../src/sim/random.js';
import { scenarioWrites, type ScenarioName } from './helpers/scenarios.js';
import { CaptureServer } from './helpers/servers.js';

const KILLS = 20;
const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'replay.js');

test('kill -9 at 20 random moments while runs are written: statistics and findings equal one pass, alerts sent once', async () => {
  const am = await new CaptureServer().start();
  after(() => am.stop());
  const root = tempDir();
  const now = Date.now();
  const names: ScenarioName[] = ['healthy', 'oscillating', 'nan-rewards', 'format-heavy'];
  const writes = names.flatMap((n) => scenarioWrites(n, 9, now).map((w) => ({ ...w, file: path.join(root, 'runs', n, w.file) })));
  writes.sort((a, b) => a.time - b.time);
  const plan = path.join(root, 'plan.json');
  // Paced to last about 40 s: long enough for KILLS kills at random moments while it writes.
  writeFileSync(
    plan,
    JSON.stringify({
      writes: writes.map(({ file, text }) => ({ file, text })),
      every: 3,
      pauseMs: Math.ceil(40_000 / (writes.length / 3)),
    }),
  );
  const expectedLines = writes.filter((w) => !w.file.endsWith('.yaml')).reduce((a, w) => a + (w.text.match(/\n/g)?.length ?? 0), 0);
  const cfg = path.join(root, 'c.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${root}/state\nwatch: {status_interval: 300ms, checkpoint_interval: 100ms, sweep_interval: 1h}\nalerting: {group_wait: 0s, group_interval: 0s}\nnotify:\n  alertmanager: {url: "${am.url}"}\nlog: {format: json}\n`,
  );

  let d = new DaemonProcess([path.join(root, 'runs'), '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  const writer = fork(REPLAY, [plan], { stdio: 'inherit' });
  const done = new Promise<void>((resolve) => writer.on('exit', () => resolve()));
  let finished = false;
  void done.then(() => (finished = true));
  const r = rng(2026);
  let kills = 0;
  while (!finished && kills < KILLS) {
    await sleep(300 + Math.floor(r() * 700));
    if (finished) break;
    d.child.kill('SIGKILL');
    await d.exited;
    kills++;
    d = new DaemonProcess([path.join(root, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
  }
  await done;
  // Caught up: every file's saved offset is at its end (the watcher's events alone, no sweep).
  const caughtUp = (): boolean => {
    const s = JSON.parse(readFileSync(path.join(root, 'state', 'state.json'), 'utf8')) as DaemonState;
    const files = Object.entries(s.files).filter(([, c]) => c.tail !== null);
    return files.length > 0 && files.every(([f, c]) => c.tail!.offset === statSync(f).size);
  };
  const end = Date.now() + 60_000;
  while (!caughtUp()) {
    if (Date.now() > end) {
      const s = JSON.parse(readFileSync(path.join(root, 'state', 'state.json'), 'utf8')) as DaemonState;
      const behind = Object.entries(s.files)
        .filter(([f, c]) => c.tail !== null && c.tail.offset !== statSync(f).size)
        .map(([f, c]) => `${f}: ${c.tail!.offset} of ${statSync(f).size}`);
      assert.fail(`barwatch did not catch up with the files within 60 s:\n${behind.join('\n')}`);
    }
    await sleep(100);
  }
  await d.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= expectedLines, 10_000);
  await d.waitQuiet();
  assert.equal(await d.stop(), 0);
  assert.equal(kills, KILLS, `only ${kills} kills happened before the writer finished`);

  const state = JSON.parse(readFileSync(path.join(root, 'state', 'state.json'), 'utf8')) as DaemonState;
  const once = await analyzePaths([path.join(root, 'runs')], loadConfig(null), silentLogger(), () => Date.now());
  for (const run of once.runs) {
    const live = state.runs.find((x) => x.id === run.id)!;
    assert.ok(live !== undefined, run.id);
    for (const round of run.rounds.values()) {
      const lr = live.rounds.find((x) => x.role === round.role && x.round === round.round)!;
      assert.equal(lr.steps, round.steps, `${run.id} ${round.key} steps`);
      for (const [name, s] of round.series) {
        const ls = lr.series[name]!;
        assert.equal(ls.summary.n, s.summary.n, `${run.id} ${round.key} ${name} n`);
        assert.ok(
          Math.abs(ls.summary.mean - s.summary.mean) <= 1e-12 * Math.max(1, Math.abs(s.summary.mean)),
          `${run.id} ${round.key} ${name} mean`,
        );
      }
    }
  }
  const liveIds = (state.engine?.findings ?? []).map((f) => `${path.basename(f.run)}:${f.detector}`).sort();
  const onceIds = once.findings
    .filter((f) => f.severity !== 'info')
    .map((f) => `${path.basename(f.run)}:${f.detector}`)
    .sort();
  const nan = state.runs.find((x) => x.id.endsWith('nan-rewards'))?.rounds.find((x) => x.round === 2)?.series['boundary']?.nonfinite;
  assert.deepEqual(
    liveIds,
    onceIds,
    `nan-rewards round 2 boundary nonfinite: ${JSON.stringify(nan)}; alerts: ${readFileSync(
      path.join(root, 'state', 'alerts.jsonl'),
      'utf8',
    )
      .split('\n')
      .filter((l) => l.includes('nonfinite'))
      .map((l) => (JSON.parse(l) as { status: string }).status)
      .join(',')}`,
  );
  // Nothing the daemon knew was delivered is sent again: notifications.jsonl never repeats a
  // notification. A kill while a post is in flight (the receiver has it, the daemon never got the
  // answer) is resent after the restart: at least once, never lost. Each such repeat shows as one
  // post more than the deliveries recorded.
  // A post sent again carries a new endsAt (the time it was sent plus four resend intervals), so
  // posts are the same notification when all but their endsAt is.
  const bodies = am.requests.map((q) =>
    JSON.stringify((JSON.parse(q.body) as Record<string, unknown>[]).map(({ endsAt: _sent, ...rest }) => rest)),
  );
  const repeats = bodies.length - new Set(bodies).size;
  const sent = readFileSync(path.join(root, 'state', 'notifications.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { dedupeKey: string }).dedupeKey);
  assert.equal(new Set(sent).size, sent.length, 'a recorded delivery was sent again');
  assert.equal(
    am.requests.length,
    sent.length + repeats,
    `${am.requests.length} posts, ${sent.length} recorded deliveries, ${repeats} repeated bodies`,
  );
  assert.ok(repeats <= 2, `${repeats} posts repeated: more than kills in flight explain`);
  const firing = new Set(
    am.requests.flatMap((q) =>
      (q.json as { labels: { alertname: string; run: string } }[]).map((a) => `${path.basename(a.labels.run)}:${a.labels.alertname}`),
    ),
  );
  assert.deepEqual([...firing].sort(), [...new Set(onceIds)].sort(), 'every finding reached Alertmanager');
});
