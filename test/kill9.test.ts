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
import { CaptureServer, SmtpCapture } from './helpers/servers.js';

const KILLS = 20;
const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'replay.js');

/** The scenarios' writes under root/runs in trainer time, and a replay plan for them that lasts about `seconds`. */
function writePlan(
  root: string,
  names: ScenarioName[],
  seed: number,
  seconds = 40,
  gated = false,
): { writes: { file: string; text: string }[]; plan: string } {
  const now = Date.now();
  const writes = names.flatMap((n) => scenarioWrites(n, seed, now).map((w) => ({ ...w, file: path.join(root, 'runs', n, w.file) })));
  writes.sort((a, b) => a.time - b.time);
  const plan = path.join(root, 'plan.json');
  writeFileSync(
    plan,
    JSON.stringify({
      writes: writes.map(({ file, text }) => ({ file, text })),
      every: 3,
      pauseMs: Math.ceil((seconds * 1000) / (writes.length / 3)),
      gated,
    }),
  );
  return { writes, plan };
}

/** kill -9 of a daemon, and a new one on the same arguments once it watches. */
async function killAndRestart(d: DaemonProcess, args: string[]): Promise<DaemonProcess> {
  d.child.kill('SIGKILL');
  await d.exited;
  const next = new DaemonProcess(args);
  await next.waitFor((l) => l.msg === 'watching');
  return next;
}

test('kill -9 at 20 random moments while runs are written: statistics and findings equal one pass, alerts sent once', async () => {
  const am = await new CaptureServer().start();
  after(() => am.stop());
  const root = tempDir();
  // The writer writes up to a cut the test moves, so the KILLS kills fall within the writing however
  // slow the machine is (paced, a busy machine's restarts let the writer finish first).
  const { writes, plan } = writePlan(root, ['healthy', 'oscillating', 'nan-rewards', 'format-heavy'], 9, 30, true);
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
  const r = rng(2026);
  // KILLS random cuts through the writes: the writer goes on to the next while a kill comes a
  // random moment later.
  const cuts = Array.from({ length: KILLS }, () => 1 + Math.floor(r() * (writes.length - 1))).sort((a, b) => a - b);
  for (const cut of cuts) {
    writer.send({ upTo: cut });
    await sleep(300 + Math.floor(r() * 700));
    d = await killAndRestart(d, [path.join(root, 'runs'), '--config', cfg]);
  }
  writer.send({ upTo: writes.length });
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

/** What one notification told a channel: `run:detector:round:status` of each alert it carried. */
type Told = string[];

function slackTold(body: unknown): Told {
  const blocks = (body as { blocks?: { type: string; text?: { text: string } }[] }).blocks ?? [];
  const out: Told = [];
  for (let i = 0; i < blocks.length; i++) {
    const m = /(RESOLVED|CRITICAL|WARNING|INFO)\* `([\w-]+)`(?: {2}\*Where\* (.*))?$/.exec(blocks[i]!.text?.text ?? '');
    if (m === null) continue;
    const run = /^Run (.*)$/m.exec(blocks[i + 1]?.text?.text ?? '')?.[1] ?? '';
    const round = /round (\d+)/.exec(m[3] ?? '')?.[1] ?? '-';
    out.push(`${path.basename(run)}:${m[2]}:${round}:${m[1] === 'RESOLVED' ? 'resolved' : 'firing'}`);
  }
  return out;
}

function emailTold(text: string): Told {
  return [...text.matchAll(/^(RESOLVED|CRITICAL|WARNING|INFO) ([\w-]+) - (.+?)(?: \((.*)\))?$/gm)].map(
    (m) => `${path.basename(m[3]!)}:${m[2]}:${/round (\d+)/.exec(m[4] ?? '')?.[1] ?? '-'}:${m[1] === 'RESOLVED' ? 'resolved' : 'firing'}`,
  );
}

function alertmanagerTold(body: unknown, at: number): Told {
  return (body as { labels: { alertname: string; run: string; round?: string }; endsAt?: string }[]).map(
    (a) =>
      `${path.basename(a.labels.run)}:${a.labels.alertname}:${a.labels.round ?? '-'}:${a.endsAt !== undefined && Date.parse(a.endsAt) <= at ? 'resolved' : 'firing'}`,
  );
}

/** Notifications to one channel that told it nothing new (every alert and state told before). */
function repeatsOf(channel: string, notifications: Told[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const [i, n] of notifications.entries()) {
    if (n.length > 0 && n.every((x) => seen.has(x))) out.push(`${channel} #${i + 1}: ${n.join(', ')}`);
    for (const x of n) seen.add(x);
  }
  return out;
}

test('kill -9 right after each delivery, before the next checkpoint: nothing is sent again to Slack, email or Alertmanager', async () => {
  const slack = await new CaptureServer().start();
  const am = await new CaptureServer().start();
  const smtp = await new SmtpCapture().start();
  after(() => Promise.all([slack.stop(), am.stop(), smtp.stop()]));
  const root = tempDir();
  // Gated: the writer goes on only when the daemon has sent everything the writes so far call for,
  // so the deliveries to kill after depend on what is written, not on how fast the machine is.
  const { writes, plan } = writePlan(
    root,
    ['oscillating', 'nan-rewards', 'format-heavy', 'few-rollouts', 'aggressive-filter', 'stalled'],
    4,
    40,
    true,
  );
  const cfg = path.join(root, 'c.yaml');
  // No checkpoint while the test runs (the state on disk is the one written at each start, before
  // any send): what was sent must come from the record of deliveries, not from state.json.
  writeFileSync(
    cfg,
    [
      `state_dir: ${root}/state`,
      'watch: {status_interval: 300ms, checkpoint_interval: 1h, sweep_interval: 300ms, settle_after: 1s}',
      'alerting: {group_wait: 0s, group_interval: 1s, repeat_interval: 1h}',
      'notify:',
      `  slack: {webhook_url: "${slack.url}/services/T0/B0/XXSECRETXX"}`,
      `  email: {smtp: {host: 127.0.0.1, port: ${smtp.port}, secure: false}, from: barwatch@example.org, to: [ml@example.org]}`,
      `  alertmanager: {url: "${am.url}", resend_interval: 1h}`,
      'log: {format: json}',
      '',
    ].join('\n'),
  );
  let d = new DaemonProcess([path.join(root, 'runs'), '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  const writer = fork(REPLAY, [plan], { stdio: 'inherit' });
  const done = new Promise<void>((resolve) => writer.on('exit', () => resolve()));
  let kills = 0;
  const CHUNKS = 12;
  for (let c = 1; c <= CHUNKS; c++) {
    writer.send({ upTo: Math.ceil((writes.length * c) / CHUNKS) });
    // The moment that matters: the daemon has logged a delivery (it logs after recording it) and has
    // not checkpointed since its start. Each such line is answered at once with a kill -9, until
    // the daemon is quiet (nothing queued, nothing more sent) with what was written so far.
    for (;;) {
      const from = d.logs.length;
      const current = d;
      const sent = await Promise.race([
        current.waitFor((l) => l.msg.startsWith('sent to ') && current.logs.indexOf(l) >= from, 60_000).then(() => true),
        current.waitQuiet(4, 60_000).then(() => false),
      ]).catch(() => false);
      if (!sent) break;
      d = await killAndRestart(d, [path.join(root, 'runs'), '--config', cfg]);
      kills++;
    }
  }
  await done;
  await d.waitQuiet();
  await sleep(2500);
  assert.equal(await d.stop(), 0);
  assert.ok(kills >= 10, `only ${kills} deliveries to kill after`);
  const told = {
    slack: slack.requests.map((q) => slackTold(q.json)),
    email: smtp.messages.map((m) => emailTold(m.text ?? '')),
    alertmanager: am.requests.map((q) => alertmanagerTold(q.json, Date.now())),
  };
  // A kill while a post is in flight (the receiver has it, the daemon never got the answer and
  // recorded nothing) is sent again after the restart: at least once, never lost. So a channel may
  // hear a notification again only as often as it received posts the daemon did not record; one
  // it recorded as delivered is never sent again.
  const recorded = new Map<string, number>();
  for (const l of readFileSync(path.join(root, 'state', 'notifications.jsonl'), 'utf8')
    .trim()
    .split('\n')) {
    const c = (JSON.parse(l) as { channel: string }).channel;
    recorded.set(c, (recorded.get(c) ?? 0) + 1);
  }
  const report: string[] = [];
  for (const [channel, list] of Object.entries(told)) {
    assert.ok(list.length > 0, `nothing reached ${channel}`);
    const repeats = repeatsOf(channel, list);
    const unrecorded = list.length - (recorded.get(channel) ?? 0);
    report.push(`${channel}: ${list.length} received, ${recorded.get(channel) ?? 0} recorded, ${repeats.length} told nothing new`);
    assert.ok(
      repeats.length <= unrecorded,
      `${kills} kills: ${channel} heard ${repeats.length} notification(s) again, ${unrecorded} explained by posts in flight:\n${repeats.join('\n')}`,
    );
  }
  // Every kill came right after a delivery was recorded and before any checkpoint.
  assert.ok(report.length === 3, report.join('; '));
});
