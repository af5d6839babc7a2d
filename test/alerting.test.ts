/**
 * Alerting with a simulated clock: lifecycle, grouping, repeat and resolve timing, silences,
 * and the outbox against real loopback servers (outage, 429, 4xx, restart mid-outbox).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { Alerting, type AlertingOptions } from '../src/alerting/service.js';
import type { Notification, SendResult } from '../src/alerting/types.js';
import type { Finding } from '../src/detectors/types.js';
import { createAlertmanagerNotifier } from '../src/notifiers/alertmanager/index.js';
import type { Notifier } from '../src/notifiers/types.js';
import type { Logger } from '../src/util/log.js';
import { tempDir } from './helpers/fs.js';
import { CaptureServer, FakeClock } from './helpers/servers.js';
import { stateLayout } from '../src/state/layout.js';
import { globMatcher, MAX_GLOB, SilenceStore, type Silence } from '../src/alerting/silences.js';
import { viaJson } from './helpers/json.js';
import { AlertBook } from '../src/alerting/lifecycle.js';
import { Dispatcher, type DispatchResult } from '../src/alerting/dispatch.js';
import type { Alert } from '../src/alerting/types.js';
import { rng } from '../src/sim/random.js';
import { rmSync, writeFileSync } from 'node:fs';

const S = 1000;
const M = 60 * S;

function finding(
  run: string,
  detector: string,
  round: number | null = 2,
  step: number | null = 100,
  severity: Finding['severity'] = 'warning',
): Finding {
  return { detector, severity, run, round, step, message: `${detector} holds`, evidence: { x: 1 }, recommendation: 'do something' };
}

class Recorder implements Notifier {
  readonly sent: Notification[] = [];
  constructor(readonly name = 'rec') {}
  send(n: Notification): Promise<SendResult> {
    this.sent.push(n);
    return Promise.resolve({ ok: true });
  }
}

function logCapture(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: pino({ level: 'debug' }, { write: (s: string) => void lines.push(s) }), lines };
}

async function setup(
  clock: FakeClock,
  notifiers: Notifier[],
  over: Partial<AlertingOptions['dispatch'] & AlertingOptions['lifecycle']> = {},
  dir = tempDir(),
) {
  const { log, lines } = logCapture();
  const a = new Alerting({
    layout: stateLayout(dir),
    lifecycle: { forMs: over.forMs ?? 0, keepFiringForMs: over.keepFiringForMs ?? 0 },
    dispatch: { groupWaitMs: 10 * S, groupIntervalMs: 1 * M, repeatIntervalMs: 4 * 60 * M, resolveNotify: true, ...over },
    notifiers,
    log,
    now: clock.now,
    outbox: { baseBackoffMs: 1 * S, maxBackoffMs: 1 * M, random: () => 0.5 },
  });
  await a.init();
  return { a, lines, dir };
}

describe('grouping, repeat and resolve timing', () => {
  test('group_wait, then group_interval for a new alert, repeat_interval, then the resolved message', async () => {
    const clock = new FakeClock();
    const rec = new Recorder();
    const { a, lines } = await setup(clock, [rec]);
    const osc = finding('/runs/a', 'boundary-oscillation');
    await a.tick([osc]);
    clock.advance(9 * S);
    await a.tick([osc]);
    assert.equal(rec.sent.length, 0, 'held for group_wait');
    clock.advance(1 * S);
    await a.tick([osc]);
    assert.equal(rec.sent.length, 1);
    assert.equal(rec.sent[0]!.reason, 'first notification of the group');
    // A second finding of the same run 20 s later waits for group_interval after the first send.
    clock.advance(20 * S);
    const stall = finding('/runs/a', 'generator-stall', 2, 120);
    await a.tick([osc, stall]);
    clock.advance(39 * S);
    await a.tick([osc, stall]);
    assert.equal(rec.sent.length, 1);
    clock.advance(1 * S);
    await a.tick([osc, stall]);
    assert.equal(rec.sent.length, 2);
    assert.equal(rec.sent[1]!.reason, 'new alerts in group');
    assert.deepEqual(rec.sent[1]!.alerts.map((x) => `${x.status}:${x.detector}`).sort(), [
      'firing:boundary-oscillation',
      'firing:generator-stall',
    ]);
    // Nothing changes for 4 h: one repeat, not more.
    for (let i = 0; i < 4 * 60; i++) {
      clock.advance(1 * M);
      await a.tick([osc, stall]);
    }
    assert.equal(rec.sent.length, 3);
    assert.equal(rec.sent[2]!.reason, 'repeat interval elapsed');
    // The oscillation heals: a resolved message after group_interval.
    await a.tick([stall]);
    clock.advance(1 * M);
    await a.tick([stall]);
    const last = rec.sent[rec.sent.length - 1]!;
    assert.equal(last.reason, 'alerts resolved');
    assert.deepEqual(last.alerts.map((x) => `${x.status}:${x.detector}`).sort(), [
      'firing:generator-stall',
      'resolved:boundary-oscillation',
    ]);
    assert.ok(
      lines.some((l) => l.includes('hold: first notification of the group: waiting until')),
      'the hold is logged with its reason',
    );
    // Another run is another group.
    await a.tick([stall, finding('/runs/b', 'low-rollouts', null, null)]);
    clock.advance(10 * S);
    await a.tick([stall, finding('/runs/b', 'low-rollouts', null, null)]);
    assert.equal(rec.sent[rec.sent.length - 1]!.group, '/runs/b');
  });

  test('for: a finding that goes away before `for` never fires; keep_firing_for delays the resolve', async () => {
    const clock = new FakeClock();
    const rec = new Recorder();
    const { a } = await setup(clock, [rec], { forMs: 30 * S, keepFiringForMs: 2 * M, groupWaitMs: 0 });
    const f = finding('/runs/a', 'reward-collapse');
    await a.tick([f]);
    clock.advance(20 * S);
    await a.tick([]);
    clock.advance(1 * M);
    await a.tick([]);
    assert.equal(rec.sent.length, 0);
    await a.tick([f]);
    clock.advance(30 * S);
    await a.tick([f]);
    assert.equal(rec.sent.length, 1);
    clock.advance(1 * M);
    await a.tick([]);
    clock.advance(59 * S);
    await a.tick([]);
    assert.equal(rec.sent.length, 1, 'still firing within keep_firing_for');
    clock.advance(1 * S);
    await a.tick([]);
    assert.equal(rec.sent.length, 2);
    assert.equal(rec.sent[1]!.alerts[0]!.status, 'resolved');
  });

  test("the book's revision moves when an alert's state changes, and only then (what tells open pages to look again)", async () => {
    const clock = new FakeClock();
    const { a } = await setup(clock, [], { forMs: 30 * S, groupWaitMs: 0 });
    const f = finding('/runs/a', 'reward-collapse');
    const seen: number[] = [a.book.revision];
    const tick = async (fs: Finding[], after = 10 * S): Promise<void> => {
      clock.advance(after);
      await a.tick(fs);
      seen.push(a.book.revision);
    };
    await tick([f]); // pending
    await tick([{ ...f, step: 120, message: 'still holds' }]); // the same pending alert: no change of state
    await tick([f], 30 * S); // firing
    await tick([f]); // still firing
    await tick([]); // resolved (keep_firing_for 0), told and forgotten in the same tick
    await tick([]);
    const moved = seen.slice(1).map((r, i) => r !== seen[i]);
    assert.deepEqual(moved, [true, false, true, false, true, false]);
  });

  test('silences: a silenced alert is not sent, the skip is logged once, and it resolves quietly', async () => {
    const clock = new FakeClock();
    const rec = new Recorder();
    const { a, lines } = await setup(clock, [rec]);
    await a.silences.add(
      {
        run: '/runs/team-*/**',
        detector: 'stale-run',
        endsAt: new Date(clock.now() + 2 * 60 * M).toISOString(),
        comment: 'cluster maintenance',
      },
      clock.now(),
    );
    const stale = finding('/runs/team-a/r1', 'stale-run');
    const other = finding('/runs/team-a/r1', 'nonfinite-reward');
    for (let i = 0; i < 5; i++) {
      await a.tick([stale]);
      clock.advance(30 * S);
    }
    assert.equal(rec.sent.length, 0);
    assert.equal(lines.filter((l) => l.includes('silenced by')).length, 1);
    await a.tick([stale, other]);
    clock.advance(10 * S);
    await a.tick([stale, other]);
    assert.deepEqual(
      rec.sent.map((n) => n.alerts.map((x) => x.detector)),
      [['nonfinite-reward']],
    );
    await a.tick([other]);
    clock.advance(2 * M);
    await a.tick([other]);
    assert.equal(rec.sent.length, 1, 'the silenced alert resolved without a message');
  });

  test('a restart (state saved and restored) sends nothing twice', async () => {
    const clock = new FakeClock();
    const rec = new Recorder();
    const dir = tempDir();
    const first = await setup(clock, [rec], {}, dir);
    const f = finding('/runs/a', 'frozen-generator', 3, 64, 'critical');
    await first.a.tick([f]);
    clock.advance(10 * S);
    await first.a.tick([f]);
    assert.equal(rec.sent.length, 1);
    const saved = viaJson(first.a.toJSON());
    const second = await setup(clock, [rec], {}, dir);
    await second.a.init(saved);
    for (let i = 0; i < 10; i++) {
      clock.advance(30 * S);
      await second.a.tick([f]);
    }
    assert.equal(rec.sent.length, 1);
  });

  test('a restart from a checkpoint older than the send: the record of deliveries says what was told, even of a finding judged again at another step', async () => {
    const clock = new FakeClock();
    const rec = new Recorder();
    const dir = tempDir();
    const first = await setup(clock, [rec], {}, dir);
    // The checkpoint is taken before the finding fires; the send comes after it.
    const saved = viaJson(first.a.toJSON());
    const f = finding('/runs/a', 'generator-stall', 1, 398);
    await first.a.tick([f]);
    clock.advance(10 * S);
    await first.a.tick([f]);
    assert.equal(rec.sent.length, 1);
    // Killed here. The restarted daemon has the old checkpoint, and its catch-up judges the
    // finding again at another step (other evidence): the same alert, not a new group.
    const second = await setup(clock, [rec], {}, dir);
    await second.a.init(saved);
    const again = { ...f, step: 753, evidence: { x: 2 } };
    for (let i = 0; i < 10; i++) {
      clock.advance(30 * S);
      await second.a.tick([again]);
    }
    assert.equal(rec.sent.length, 1, rec.sent.map((n) => n.reason).join(', '));
    // A new alert in the group is news: it goes out, group_interval after the send before the kill.
    await second.a.tick([again, finding('/runs/a', 'boundary-oscillation', 1)]);
    clock.advance(1 * M);
    await second.a.tick([again, finding('/runs/a', 'boundary-oscillation', 1)]);
    assert.equal(rec.sent.length, 2);
    assert.equal(rec.sent[1]!.reason, 'new alerts in group');
  });
});

/** A silence store that counts the ticks that looked at which alerts the silences cover. */
class CountingSilences extends SilenceStore {
  matchers = 0;
  override matcher(now: number): (a: Alert) => Silence | null {
    this.matchers++;
    return super.matcher(now);
  }
}

describe('a tick that can decide nothing is skipped', () => {
  test('over 3,000 random ticks (alerts coming and going, silences added, ended and deleted, the clock jumping) the dispatcher decides exactly what one that ticks in full decides', () => {
    const random = rng(20261205);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const clock = new FakeClock();
    const dir = tempDir();
    const file = path.join(dir, 'silences.json');
    const opts = { groupWaitMs: 10 * S, groupIntervalMs: 1 * M, repeatIntervalMs: 30 * M, resolveNotify: true };
    const lifecycle = { forMs: 20 * S, keepFiringForMs: 1 * M };
    // Both read one silences file; the reference forgets what its last tick read before each tick
    // (restore() of nothing), so every one of its ticks runs the stages in full.
    const fast = { book: new AlertBook(lifecycle), dispatcher: new Dispatcher(opts), silences: new CountingSilences(file) };
    const full = { book: new AlertBook(lifecycle), dispatcher: new Dispatcher(opts), silences: new SilenceStore(file) };
    const pool: Finding[] = [];
    for (const run of ['/runs/a', '/runs/b', '/runs/c'])
      for (const detector of ['boundary-oscillation', 'stale-run', 'reward-collapse']) pool.push(finding(run, detector, 1, 10));
    let holding = new Set<Finding>();
    let silenceId = 0;
    const silences: Silence[] = [];
    const told = (r: DispatchResult): string => JSON.stringify(r);
    let decided = 0;
    const ticks = 3000;
    for (let i = 0; i < ticks; i++) {
      const u = random();
      if (u < 0.15) {
        const f = pick(pool);
        if (holding.has(f)) holding.delete(f);
        else holding.add(f);
      } else if (u < 0.17) {
        holding = new Set();
      } else if (u < 0.2) {
        silences.push({
          id: `s${++silenceId}`,
          run: pick(['/runs/a', '/runs/*', '/runs/b']),
          detector: pick(['*', 'stale-run']),
          createdAt: new Date(clock.now()).toISOString(),
          endsAt: new Date(clock.now() + pick([5 * S, 2 * M, 40 * M])).toISOString(),
          comment: '',
        });
        writeFileSync(file, JSON.stringify(silences));
      } else if (u < 0.21) {
        silences.length = 0;
        rmSync(file, { force: true });
      }
      // Mostly a second, the daemon's tick; sometimes minutes or an hour (a suspended machine).
      clock.advance(random() < 0.9 ? 1 * S : pick([7 * S, 59 * S, 10 * M, 61 * M]));
      const now = clock.now();
      const findings = [...holding].map((f) => ({ ...f, step: (f.step ?? 0) + i }));
      fast.book.update(findings, now);
      full.book.update(findings, now);
      full.dispatcher.restore(undefined);
      const a = fast.dispatcher.tick(fast.book, fast.silences, now);
      const b = full.dispatcher.tick(full.book, full.silences, now);
      assert.equal(told(a), told(b), `tick ${i}`);
      assert.equal(JSON.stringify(fast.dispatcher.toJSON()), JSON.stringify(full.dispatcher.toJSON()), `groups after tick ${i}`);
      assert.equal(JSON.stringify(fast.book.toJSON()), JSON.stringify(full.book.toJSON()), `alerts after tick ${i}`);
      if (a.notifications.length + a.decisions.length > 0) decided++;
    }
    // The sequence exercised both: ticks that decided something, and many that were skipped.
    assert.ok(decided > 100, `${decided} ticks decided something`);
    assert.ok(fast.silences.matchers < ticks / 2, `${fast.silences.matchers} of ${ticks} ticks ran the stages`);
  });
});

describe('the outbox against a real HTTP server (Alertmanager API)', () => {
  test('a 5-minute outage (500s): backoff, then every alert delivered exactly once', async () => {
    const srv = await new CaptureServer().start();
    const clock = new FakeClock();
    const downUntil = clock.now() + 5 * M;
    srv.respond = () => (clock.now() < downUntil ? { status: 500, body: 'down' } : { status: 200, body: '' });
    const { a, lines } = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 });
    const runs = ['/runs/a', '/runs/b', '/runs/c'];
    const fs = runs.map((r) => finding(r, 'boundary-oscillation'));
    for (let i = 0; i < 7 * 60; i++) {
      await a.tick(fs);
      clock.advance(1 * S);
    }
    await srv.stop();
    const ok = srv.requests.slice(-3);
    const delivered = ok.flatMap((r) => (r.json as { labels: { run: string } }[]).map((x) => x.labels.run)).sort();
    assert.deepEqual(delivered, runs);
    // During the outage barwatch backs off instead of hammering the receiver.
    assert.ok(srv.requests.length <= 3 + 15, `${srv.requests.length} requests`);
    assert.equal(a.outbox.depth, 0);
    const log = readFileSync(a.outbox.logFile, 'utf8').trim().split('\n');
    assert.equal(log.length, 3);
    assert.equal(
      lines.filter((l) => l.includes('cannot send to alertmanager')).length,
      1,
      'the failure is logged once, not on every retry',
    );
    assert.equal(lines.filter((l) => l.includes('accepts notifications again')).length, 1);
  });

  test('429 with Retry-After is honoured; a 400 is not retried and is kept in outbox/failed', async () => {
    const srv = await new CaptureServer().start();
    const clock = new FakeClock();
    const times: number[] = [];
    srv.respond = (_r, n) => {
      times.push(clock.now());
      return n === 1 ? { status: 429, body: 'slow down', headers: { 'retry-after': '30' } } : { status: 200 };
    };
    const { a } = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 });
    const f = finding('/runs/a', 'low-rollouts', null, null);
    for (let i = 0; i < 60; i++) {
      await a.tick([f]);
      clock.advance(1 * S);
    }
    assert.equal(srv.requests.length, 2);
    assert.equal(times[1]! - times[0]!, 30 * S);
    srv.respond = () => ({ status: 400, body: 'bad' });
    const g = finding('/runs/z', 'low-rollouts', null, null);
    for (let i = 0; i < 30; i++) {
      await a.tick([f, g]);
      clock.advance(1 * S);
    }
    assert.equal(srv.requests.length, 3, 'the 400 was not retried');
    assert.equal(readdirSync(path.join(a.outbox.dir, 'failed')).length, 1);
    await srv.stop();
  });

  test('a Retry-After of 999,999,999 s is honoured for an hour at most, and the channel is shown waiting', async () => {
    const srv = await new CaptureServer().start();
    const clock = new FakeClock();
    const times: number[] = [];
    srv.respond = (_r, n) => {
      times.push(clock.now());
      return n === 1 ? { status: 429, body: 'slow down', headers: { 'retry-after': '999999999' } } : { status: 200 };
    };
    const { a } = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 });
    const f = finding('/runs/a', 'low-rollouts', null, null);
    for (let i = 0; i < 70; i++) {
      await a.tick([f]);
      // The channel waiting says so (what /healthz shows as channels_waiting), with the error.
      if (i === 1) {
        const waiting = a.outbox.backingOff();
        assert.equal(waiting.length, 1);
        assert.equal(waiting[0]!.channel, 'alertmanager');
        assert.ok(waiting[0]!.retryAt - clock.now() <= 60 * M && waiting[0]!.retryAt > clock.now(), JSON.stringify(waiting));
        assert.match(waiting[0]!.error ?? '', /429/);
      }
      clock.advance(1 * M);
    }
    assert.deepEqual(a.outbox.backingOff(), [], 'delivered: no channel waits');
    assert.equal(srv.requests.length, 2, 'retried within the hour');
    assert.ok(times[1]! - times[0]! <= 61 * M, `retried after ${(times[1]! - times[0]!) / M} min`);
    await srv.stop();
  });

  test('restart mid-outbox: nothing lost, nothing sent twice', async () => {
    const srv = await new CaptureServer().start();
    const clock = new FakeClock();
    const dir = tempDir();
    srv.respond = () => ({ status: 503 });
    const first = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 }, dir);
    const fs = ['/runs/a', '/runs/b'].map((r) => finding(r, 'reward-collapse', 3, 90, 'critical'));
    await first.a.tick(fs);
    assert.equal(first.a.outbox.depth, 2);
    const saved = viaJson(first.a.toJSON());
    // kill -9: the process is gone; only state_dir remains. The receiver recovers.
    srv.respond = () => ({ status: 200 });
    const second = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 }, dir);
    await second.a.init(saved);
    for (let i = 0; i < 20; i++) {
      clock.advance(1 * S);
      await second.a.tick(fs);
    }
    const accepted = srv.requests.slice(1).flatMap((r) => (r.json as { labels: { run: string } }[]).map((x) => x.labels.run));
    assert.deepEqual(accepted.sort(), ['/runs/a', '/runs/b']);
    // A third process: the log says both were accepted; nothing is sent again.
    const before = srv.requests.length;
    const third = await setup(clock, [createAlertmanagerNotifier({ url: srv.url })], { groupWaitMs: 0 }, dir);
    await third.a.init(viaJson(second.a.toJSON()));
    for (let i = 0; i < 5; i++) {
      clock.advance(1 * S);
      await third.a.tick(fs);
    }
    assert.equal(srv.requests.length, before);
    assert.ok(!existsSync(path.join(dir, 'outbox', 'x.json')));
    await srv.stop();
  });
});

describe('silence globs', () => {
  test('* stays within a folder, ** crosses folders, ? is one character; a glob of repeated ** matches in linear time', () => {
    const cases: [string, string, boolean][] = [
      ['/runs/a', '/runs/a', true],
      ['/runs/*', '/runs/a', true],
      ['/runs/*', '/runs/a/b', false],
      ['/runs/**', '/runs/a/b', true],
      ['/runs/**/seed?', '/runs/x/y/seed1', true],
      ['/runs/**/seed?', '/runs/x/y/seed12', false],
      ['/runs/?', '/runs//', false],
      ['**', '', true],
      ['*a*b*', '/xaxb', false],
      ['*a*b*', 'xaxb', true],
      ['/r[1].+(x)', '/r[1].+(x)', true],
      ['/r[1].+(x)', '/r1.+x', false],
    ];
    for (const [glob, p, want] of cases) assert.equal(globMatcher(glob)(p), want, `${glob} on ${p}`);
    // The glob an adversarial probe saved: as a RegExp it backtracked for tens of seconds on a path
    // of 26 characters, on every alert tick. Here it answers at once, also on a long path.
    const evil = globMatcher(`${'**'.repeat(12)}Q`);
    assert.equal(evil('/runs/' + 'a'.repeat(20)), false);
    assert.equal(evil('/runs/' + 'a'.repeat(100_000)), false);
    assert.equal(evil('/runs/aQ'), true);
  });

  test('a glob longer than 1,024 characters is refused', async () => {
    const store = new SilenceStore(path.join(tempDir(), 'silences.json'));
    await assert.rejects(
      store.add({ run: '*'.repeat(MAX_GLOB + 1), detector: '*', endsAt: new Date(Date.now() + M).toISOString(), comment: '' }, Date.now()),
      /at most 1024/,
    );
  });
});
