/**
 * `actions` (alerting/actions.ts): a command run once per firing alert, with the alert in its
 * environment and on its stdin, a timeout, its end recorded; never run twice, also after the
 * daemon is killed -9 while it runs; dry runs run nothing; the daemon's secrets stay out of it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Actions, type ActionRecord, type ActionSpec } from '../src/alerting/actions.js';
import type { AlertBook } from '../src/alerting/lifecycle.js';
import type { SilenceStore } from '../src/alerting/silences.js';
import type { Alert } from '../src/alerting/types.js';
import { silentLogger } from '../src/util/log.js';
import { plainText } from '../src/notifiers/render.js';
import { barwatch } from './helpers/cli.js';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { CaptureServer } from './helpers/servers.js';

function alert(fingerprint: string, detector = 'frozen-generator', severity: Alert['finding']['severity'] = 'critical'): Alert {
  return {
    key: fingerprint,
    fingerprint,
    state: 'firing',
    finding: {
      detector,
      severity,
      run: '/runs/bar rag',
      round: 2,
      step: 64,
      message: 'The generator looks frozen.',
      evidence: { x: 1 },
      recommendation: 'Check it.',
    },
    activeSince: 0,
    firingSince: 0,
    lastHeld: 0,
    resolvedAt: null,
  };
}

const book = (...alerts: Alert[]): AlertBook => ({ alerts: new Map(alerts.map((a) => [a.key, a])) }) as unknown as AlertBook;
const open = { matcher: () => () => null } as unknown as SilenceStore;
const node = (code: string): string[] => [process.execPath, '-e', code];
const spec = (over: Partial<ActionSpec>): ActionSpec => ({
  name: 'a',
  detector: 'frozen-generator',
  severity: 'warning',
  command: node(''),
  shell: false,
  timeoutMs: 10_000,
  dryRun: false,
  ...over,
});

describe('actions', () => {
  test('a command that succeeds, one that fails, one that hangs past its timeout; the alert in env and on stdin; no BARWATCH_ secret; once per alert', async () => {
    const dir = tempDir();
    process.env['BARWATCH_SLACK_WEBHOOK_URL'] = 'https://hooks.slack.com/services/SECRET';
    try {
      const acts = new Actions(
        [
          spec({
            name: 'ok',
            command: node(
              "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const a=JSON.parse(s);console.log(a.detector, a.round, process.env.BARWATCH_ALERT_RUN, process.argv[1], 'slack=' + (process.env.BARWATCH_SLACK_WEBHOOK_URL ?? 'none'))})",
            ).concat(['{{run}}']),
          }),
          spec({ name: 'fails', command: node("console.error('no such job'); process.exit(3)") }),
          spec({ name: 'hangs', command: node('setInterval(() => {}, 1000)'), timeoutMs: 1000 }),
          spec({ name: 'other', detector: 'stale-run' }),
          spec({ name: 'too-mild', severity: 'critical' }),
        ],
        path.join(dir, 'actions.jsonl'),
        silentLogger(),
        Date.now,
      );
      acts.init();
      const b = book(alert('f1'), alert('f2', 'frozen-generator', 'warning'));
      acts.consider(b, open, Date.now());
      acts.consider(b, open, Date.now());
      await acts.settled();
      const by = (name: string, fp = 'f1'): ActionRecord => acts.all().find((r) => r.action === name && r.fingerprint === fp)!;
      assert.equal(by('ok').state, 'ok');
      assert.equal(by('ok').output, 'frozen-generator 2 /runs/bar rag /runs/bar rag slack=none\n');
      assert.ok(by('ok').command.startsWith(`${process.execPath} -e `) && by('ok').command.endsWith(' "/runs/bar rag"'), by('ok').command);
      assert.deepEqual([by('fails').state, by('fails').exitCode, by('fails').output], ['failed', 3, 'no such job\n']);
      assert.deepEqual([by('hangs').state, by('hangs').signal], ['timed-out', 'SIGTERM']);
      assert.equal(acts.all().filter((r) => r.action === 'other').length, 0, 'another detector');
      assert.equal(by('too-mild', 'f2'), undefined, 'a warning is below critical');
      assert.equal(by('too-mild', 'f1').state, 'ok');
      // Once per alert: each action ran once for each alert (2 records each at most: started, ended).
      const lines = readFileSync(path.join(dir, 'actions.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as ActionRecord);
      assert.equal(lines.filter((r) => r.action === 'ok' && r.fingerprint === 'f1' && r.state === 'running').length, 1);
    } finally {
      delete process.env['BARWATCH_SLACK_WEBHOOK_URL'];
    }
  });

  test('dry_run logs what would run and runs nothing; a command that cannot start is a failure with the reason', async () => {
    const dir = tempDir();
    const marker = path.join(dir, 'ran');
    const acts = new Actions(
      [
        spec({ name: 'dry', command: ['/bin/sh', '-c', `echo x > ${marker}`], dryRun: true }),
        spec({ name: 'missing', command: ['/no/such/program'] }),
      ],
      path.join(dir, 'actions.jsonl'),
      silentLogger(),
      Date.now,
    );
    acts.init();
    acts.consider(book(alert('f1')), open, Date.now());
    await acts.settled();
    assert.equal(existsSync(marker), false);
    assert.equal(acts.all().find((r) => r.action === 'dry')!.state, 'dry-run');
    const m = acts.all().find((r) => r.action === 'missing')!;
    assert.equal(m.state, 'failed');
    assert.match(m.error ?? '', /could not start: .*ENOENT/);
  });

  test('watch: the action runs when the alert fires, its notification says so, and it is not run again after a kill -9 while it ran', async () => {
    const dir = tempDir();
    const run = path.join(dir, 'runs', 'r1', 'outputs', 'selector_round1');
    mkdirSync(run, { recursive: true });
    const marker = path.join(dir, 'ran.log');
    const script = path.join(dir, 'act.js');
    writeFileSync(
      script,
      `require('fs').appendFileSync(${JSON.stringify(marker)}, process.env.BARWATCH_ALERT_DETECTOR + '\\n'); setTimeout(() => {}, 60000);\n`,
    );
    const server = await new CaptureServer().start();
    after(() => server.stop());
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${path.join(dir, 'state')}\nwatch: {status_interval: 200ms, sweep_interval: 300ms, checkpoint_interval: 200ms}\nlog: {format: json}\nalerting: {group_wait: 0s}\nnotify:\n  webhook:\n    - {preset: json, url: "${server.url}/hook"}\nactions:\n  - {name: stop, detector: nonfinite-reward, severity: warning, command: [${JSON.stringify(process.execPath)}, ${JSON.stringify(script)}], timeout: 5m}\n`,
    );
    writeFileSync(path.join(run, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n{"step": 2, "boundary": NaN}\n');
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg.startsWith('action stop: running'));
    for (let i = 0; i < 100 && !existsSync(marker); i++) await sleep(50);
    assert.equal(readFileSync(marker, 'utf8'), 'nonfinite-reward\n');
    // The alert's notification says what is being done about it.
    for (let i = 0; i < 100 && server.requests.length === 0; i++) await sleep(50);
    const told = server.requests[0]!.json as { alerts: { detector: string; actions?: { action: string; state: string }[] }[] };
    assert.deepEqual(
      told.alerts[0]!.actions?.map((x) => [x.action, x.state]),
      [['stop', 'running']],
    );
    d.child.kill('SIGKILL');
    await d.exited;
    // The command it started goes on by itself: end it as the test's own cleanup.
    spawnSync('pkill', ['-f', script]);
    const started = readFileSync(path.join(dir, 'state', 'actions.jsonl'), 'utf8')
      .trim()
      .split('\n');
    assert.equal(started.length, 1);
    assert.equal((JSON.parse(started[0]!) as ActionRecord).state, 'running');
    const again = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg], { listen: '127.0.0.1:0' });
    const page = await again.pageUrl();
    await again.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= 1);
    await sleep(1500);
    // The page's alerts view lists what the action did.
    const api = (await (await fetch(`${page}api/v1/alerts`)).json()) as { actions: { action: string; state: string; detector: string }[] };
    assert.deepEqual(
      api.actions.map((x) => [x.action, x.detector, x.state]),
      [['stop', 'nonfinite-reward', 'interrupted']],
    );
    // The webhook is a channel like the others: its delivery is in the record of what was sent.
    const sent = readFileSync(path.join(dir, 'state', 'notifications.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { channel: string });
    assert.ok(
      sent.some((x) => x.channel === 'webhook:json'),
      JSON.stringify(sent),
    );
    assert.equal(await again.stop(), 0);
    assert.equal(readFileSync(marker, 'utf8'), 'nonfinite-reward\n', 'not run a second time');
    const records = readFileSync(path.join(dir, 'state', 'actions.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ActionRecord);
    assert.deepEqual(
      records.map((r) => r.state),
      ['running', 'interrupted'],
    );
    assert.match(records[1]!.error!, /barwatch stopped while it ran; not run again/);
  });

  test('a notification tells what was done about its alert', () => {
    const n = {
      id: 'n',
      dedupeKey: 'd',
      channel: 'c',
      group: 'g',
      reason: 'first notification of the group' as const,
      createdAt: '',
      alerts: [
        {
          ...alert('f1').finding,
          key: 'f1',
          fingerprint: 'f1',
          status: 'firing' as const,
          sparkline: null,
          startsAt: '',
          endsAt: null,
          actions: [{ action: 'stop', state: 'failed', command: 'scancel 42', exitCode: 1 }],
        },
      ],
    };
    assert.match(plainText(n), /Action stop: scancel 42 \(failed, exit 1\)/);
  });
});

test('validate prints exactly what each action runs, for which detector and severity, and refuses a line without shell or an unknown detector', () => {
  const dir = tempDir();
  const ok = path.join(dir, 'ok.yaml');
  writeFileSync(
    ok,
    'actions:\n  - {name: stop-job, detector: no-learning-signal, severity: critical, command: [scancel, "{{run}}"], timeout: 30s}\n  - {detector: "*", command: \'kill -TERM "$(cat /tmp/train.pid)"\', shell: true, dry_run: true}\n',
  );
  const r = barwatch(['validate', '--config', ok]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(
    r.stdout,
    /action stop-job: when no-learning-signal fires at critical or above \(after alerting\.for, not silenced\), runs "scancel" "\{\{run\}\}" \(no shell, timeout 30 s, once per alert\)/,
  );
  assert.match(
    r.stdout,
    /action action-2: when any detector fires at warning or above .*logs that it would run \/bin\/sh -c "kill -TERM \\"\$\(cat \/tmp\/train\.pid\)\\"" \(in a shell/,
  );
  const bad = path.join(dir, 'bad.yaml');
  writeFileSync(bad, 'actions:\n  - {detector: nope, command: "scancel 1"}\n');
  const no = barwatch(['validate', '--config', bad]);
  assert.equal(no.status, 2);
  assert.match(no.stderr, /actions\[0\]\.detector: must be a detector id/);
  assert.match(no.stderr, /actions\[0\]\.command: is one line: give it as a list of words \(run without a shell\), or set shell: true/);
});
