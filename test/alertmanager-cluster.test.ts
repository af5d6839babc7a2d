/**
 * Many machines, one Alertmanager cluster, against the real binary (Debian
 * prometheus-alertmanager; .ci/run installs it): two peers clustered on loopback, two barwatch
 * daemons as two machines with their own roots and state, each posting every alert to both
 * peers. Either peer shows each alert once with its labels; a silence made with amtool on one
 * peer suppresses the alert on both; a stopped peer loses nothing (the other has the alert,
 * barwatch retries the stopped one until it is back); a resolved finding ends the alert.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { freePort } from './helpers/servers.js';

const HAVE_AM = spawnSync('prometheus-alertmanager', ['--version']).status === 0 && spawnSync('amtool', ['--version']).status === 0;
const AM_SKIP = HAVE_AM
  ? false
  : 'prometheus-alertmanager and amtool not installed (Debian package prometheus-alertmanager; .ci/run installs it)';

interface Peer {
  api: string;
  cluster: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** One Alertmanager of the cluster; `start` waits for its API to answer. */
function peer(dir: string, api: number, cluster: number, others: () => string[]): Peer {
  const cfg = path.join(dir, 'am.yml');
  writeFileSync(cfg, 'route: {receiver: blackhole, group_wait: 1s, group_interval: 1s}\nreceivers: [{name: blackhole}]\n');
  let child: ChildProcess | null = null;
  const p: Peer = {
    api: `http://127.0.0.1:${api}`,
    cluster: `127.0.0.1:${cluster}`,
    async start() {
      child = spawn(
        'prometheus-alertmanager',
        [
          `--config.file=${cfg}`,
          `--storage.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${api}`,
          `--cluster.listen-address=127.0.0.1:${cluster}`,
          `--cluster.advertise-address=127.0.0.1:${cluster}`,
          ...others().map((o) => `--cluster.peer=${o}`),
          '--cluster.settle-timeout=2s',
          '--cluster.pushpull-interval=1s',
          '--cluster.reconnect-interval=1s',
          '--log.level=warn',
        ],
        { stdio: 'ignore' },
      );
      after(() => child?.kill('SIGKILL'));
      const end = Date.now() + 30_000;
      for (;;) {
        const up = await fetch(`${p.api}/-/ready`).then(
          (r) => r.ok,
          () => false,
        );
        if (up) return;
        if (Date.now() > end) assert.fail(`Alertmanager on ${p.api} did not start`);
        await sleep(100);
      }
    },
    async stop() {
      const c = child;
      if (c === null) return;
      child = null;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    },
  };
  return p;
}

interface AmAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  endsAt: string;
  status: { state: string; silencedBy: string[] };
}

async function alertsOn(p: Peer): Promise<AmAlert[]> {
  const r = await fetch(`${p.api}/api/v2/alerts`);
  return (await r.json()) as AmAlert[];
}

/** Waits until `pred` holds for the alerts of `p`; returns them and how long it took. */
async function until(
  p: Peer,
  pred: (a: AmAlert[]) => boolean,
  what: string,
  timeoutMs = 30_000,
): Promise<{ alerts: AmAlert[]; ms: number }> {
  const t0 = Date.now();
  let last: AmAlert[] = [];
  while (Date.now() - t0 < timeoutMs) {
    last = await alertsOn(p).catch(() => []);
    if (pred(last)) return { alerts: last, ms: Date.now() - t0 };
    await sleep(100);
  }
  assert.fail(`${p.api}: ${what} not seen in ${timeoutMs} ms; alerts: ${JSON.stringify(last.map((a) => [a.labels, a.status.state]))}`);
}

const of = (alerts: AmAlert[], run: string, name: string): AmAlert[] =>
  alerts.filter((a) => a.labels['run'] === run && a.labels['alertname'] === name);

/** A machine: its own root and state, a run, a config posting to every peer. */
function machine(name: string, peers: Peer[]): { root: string; run: string; cfg: string; start: () => DaemonProcess } {
  const dir = tempDir(`barwatch-${name}-`);
  const root = path.join(dir, 'runs');
  const run = path.join(root, `${name}-run1`);
  const sel = path.join(run, 'outputs', 'selector_round1');
  mkdirSync(sel, { recursive: true });
  writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5, "rollouts": 2}\n');
  const cfg = path.join(dir, 'barwatch.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${dir}/state\nwatch: {status_interval: 300ms}\nalerting: {group_wait: 0s, group_interval: 1s}\nnotify:\n  timeout: 2s\n  alertmanager:\n    url: [${peers.map((p) => `"${p.api}"`).join(', ')}]\n    resend_interval: 2s\nlog: {format: json}\n`,
  );
  return { root, run, cfg, start: () => new DaemonProcess([root, '--config', cfg]) };
}

describe('Alertmanager cluster: two peers, two machines', { skip: AM_SKIP }, () => {
  test('each alert once on either peer; an amtool silence holds on both; a stopped peer loses nothing; resolved ends it', async (t) => {
    const [api1, api2, c1, c2] = [await freePort(), await freePort(), await freePort(), await freePort()];
    const p1 = peer(tempDir('am1-'), api1, c1, () => [`127.0.0.1:${c2}`]);
    const p2 = peer(tempDir('am2-'), api2, c2, () => [`127.0.0.1:${c1}`]);
    await Promise.all([p1.start(), p2.start()]);
    const peers = [p1, p2];

    const a = machine('a', peers);
    const b = machine('b', peers);
    const t0 = Date.now();
    const da = a.start();
    const db = b.start();
    after(() => Promise.all([da.stop(), db.stop()]));

    // Each machine's low-rollouts alert reaches both peers, once each, with its labels.
    for (const p of peers) {
      const { alerts } = await until(
        p,
        (x) => of(x, a.run, 'low-rollouts').length === 1 && of(x, b.run, 'low-rollouts').length === 1,
        'both alerts',
      );
      for (const m of [a, b]) {
        const [al] = of(alerts, m.run, 'low-rollouts');
        // low-rollouts is judged over the run: no round, and Alertmanager drops the empty label.
        assert.deepEqual(al!.labels, { alertname: 'low-rollouts', run: m.run, severity: 'warning' });
        assert.match(al!.annotations['summary'] ?? '', /rollouts/);
        assert.ok(al!.annotations['recommendation'] !== undefined);
      }
    }
    const appeared = Date.now() - t0;

    // Firing alerts are sent again: their endsAt moves on (resend_interval 2s, valid for 4 of them).
    const ends1 = Date.parse(of(await alertsOn(p1), a.run, 'low-rollouts')[0]!.endsAt);
    await until(p1, (x) => Date.parse(of(x, a.run, 'low-rollouts')[0]?.endsAt ?? '0') > ends1, 'a later endsAt', 10_000);

    // A silence made with amtool on peer 1 suppresses machine a's alert on peer 2 too.
    const sil = spawnSync(
      'amtool',
      [
        'silence',
        'add',
        `--alertmanager.url=${p1.api}`,
        '--author=ops',
        '--comment=known',
        '--duration=1h',
        'alertname=low-rollouts',
        `run=${a.run}`,
      ],
      { encoding: 'utf8' },
    );
    assert.equal(sil.status, 0, sil.stderr);
    await until(
      p2,
      (x) => of(x, a.run, 'low-rollouts')[0]?.status.state === 'suppressed' && of(x, b.run, 'low-rollouts')[0]?.status.state === 'active',
      'the silence gossiped to peer 2',
    );

    // Peer 1 stops; a new alert on machine b reaches peer 2 at once, and peer 1 once it is back.
    await p1.stop();
    const sel = path.join(b.run, 'outputs', 'selector_round1', 'reward_history.jsonl');
    writeFileSync(sel, '{"step": 1, "boundary": 0.5, "rollouts": 2}\n{"step": 2, "boundary": NaN, "rollouts": 2}\n');
    await until(p2, (x) => of(x, b.run, 'nonfinite-reward').length === 1, 'the new alert on the peer that stayed');
    await db.waitFor((l) => /cannot send to alertmanager@127\.0\.0\.1:\d+: .*connection refused/.test(l.msg));
    await sleep(3000);
    await p1.start();
    await until(p1, (x) => of(x, b.run, 'nonfinite-reward').length === 1, 'the new alert on the restarted peer', 60_000);
    // A restarted Alertmanager forgets alerts (it keeps silences): machine a's firing alert comes
    // back with its next resend, once its backoff towards the stopped peer has run out.
    await until(p1, (x) => of(x, a.run, 'low-rollouts').length === 1, "machine a's alert sent again to the restarted peer", 90_000);

    // Machine a's finding resolves (the detector switched off by SIGHUP): the alert ends on both peers.
    writeFileSync(a.cfg, `${readFileSync(a.cfg, 'utf8')}detectors:\n  low-rollouts: {enabled: false}\n`);
    da.child.kill('SIGHUP');
    await da.waitFor((l) => l.msg.startsWith('resolved: low-rollouts'));
    for (const p of peers) await until(p, (x) => of(x, a.run, 'low-rollouts').length === 0, 'the resolved alert gone');
    assert.equal(of(await alertsOn(p2), b.run, 'low-rollouts').length, 1, "machine b's alert still holds");
    t.diagnostic(`alerts on both peers ${appeared} ms after the daemons started`);
  });
});
