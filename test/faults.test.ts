/**
 * The fault and bad-input suite: a real daemon, a real writer process doing to the files what
 * trainers, logrotate and operators do, and real servers. Each case asserts that the daemon
 * stays up, that the problem is reported once with its file named, and that the good records
 * around the bad ones are all counted. (Symlink loops: test/watch.test.ts; kill -9:
 * test/kill9.test.ts; broken configs and alias bombs: test/config.test.ts.)
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { request, type ClientRequest } from 'node:http';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import type { DaemonState } from '../src/daemon/state.js';
import { Journal } from '../src/state/journal.js';
import { Actor } from './helpers/actor.js';
import { DaemonProcess, type LogLine } from './helpers/daemon.js';
import { REPO, tempDir } from './helpers/fs.js';
import { rng } from '../src/sim/random.js';
import { CaptureServer, rawRequest } from './helpers/servers.js';
import { IS_ROOT, NOBODY, SECOND_USER_SKIP, type User } from './helpers/users.js';

/** Root reads everything: running as root, the daemon runs as `nobody` so permissions apply to it. */
const AS: User | undefined = NOBODY ?? undefined;

function good(step: number): string {
  return JSON.stringify({ step, boundary: Math.round(((step * 37) % 100) / 10) / 10, relevance: 0.3, format: 1, count: 0 }) + '\n';
}
function goods(from: number, to: number, eol = '\n'): string {
  let s = '';
  for (let i = from; i <= to; i++) s += good(i).replace('\n', eol);
  return s;
}

/** A folder the `nobody` daemon can read, with a state folder it owns. */
function workspace(): { dir: string; runs: string; state: string } {
  const dir = tempDir();
  const runs = path.join(dir, 'runs');
  const state = path.join(dir, 'state');
  mkdirSync(runs);
  mkdirSync(state);
  if (AS !== undefined) {
    chmodSync(dir, 0o755);
    chownSync(state, AS.uid, AS.gid);
  }
  return { dir, runs, state };
}

/** A config that saves often, reports every 200 ms and sends every alert to the Alertmanager stand-in at `url`. */
function alertmanagerConfig(state: string, url: string): string {
  return `state_dir: ${state}\nwatch: {status_interval: 200ms, checkpoint_interval: 100ms}\nalerting: {group_wait: 0s}\nnotify:\n  alertmanager: {url: "${url}"}\nlog: {format: json}\n`;
}

/** An Alertmanager stand-in on loopback (stopped when the test ends) and a config in `dir` sending to it. */
async function alertmanagerFor(dir: string, state: string): Promise<{ am: CaptureServer; cfg: string }> {
  const am = await new CaptureServer().start();
  after(() => am.stop());
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(cfg, alertmanagerConfig(state, am.url));
  return { am, cfg };
}

function readState(stateDir: string): DaemonState | null {
  try {
    return JSON.parse(readFileSync(path.join(stateDir, 'state.json'), 'utf8')) as DaemonState;
  } catch {
    return null;
  }
}

/** Waits until the saved state shows `records` records read from `file`. */
async function waitRecords(d: DaemonProcess, stateDir: string, file: string, records: number, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    assert.equal(d.child.exitCode, null, 'the daemon exited');
    const got = readState(stateDir)?.files[file]?.counters.records ?? 0;
    if (got >= records) return;
    if (Date.now() > end) assert.fail(`${file}: ${got} of ${records} records after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** Log lines about `file` at warn level or above. */
function complaints(logs: LogLine[], file: string): LogLine[] {
  return logs.filter((l) => l.level >= 40 && l['file'] === file);
}

describe('faults: bad input, written while the daemon runs', () => {
  test('each problem is reported once with its file named; the good records around it all count', async () => {
    const { dir, runs, state } = workspace();
    const file = (name: string): string => path.join(runs, name, 'outputs', 'selector_round1', 'reward_history.jsonl');
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${state}\nwatch: {status_interval: 1s, checkpoint_interval: 100ms}\nlog: {format: json}\n`);
    // Present before the start: a file nobody may read (when permissions apply), CRLF lines.
    const denied = file('denied');
    mkdirSync(path.dirname(denied), { recursive: true });
    writeFileSync(denied, goods(1, 5));
    // Permissions apply to the daemon unless it runs as root (there is no user to run it as instead).
    const canDeny = process.getuid !== undefined && (!IS_ROOT || AS !== undefined);
    if (canDeny) chmodSync(denied, 0o000);
    writeFileSync((mkdirSync(path.dirname(file('crlf')), { recursive: true }), file('crlf')), goods(1, 10, '\r\n'));

    const d = new DaemonProcess([runs, '--config', cfg], AS !== undefined ? { user: AS } : {});
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());

    // Malformed JSON between good lines.
    await w.do({
      op: 'append',
      file: file('malformed'),
      text: goods(1, 10) + '{"step": 11, "boundary": 0.\nnot json at all\n{"step": 12, "boundary": [1,2}\n' + goods(13, 22),
    });
    // NaN, infinities, -0 and numbers as strings.
    await w.do({
      op: 'append',
      file: file('numbers'),
      text:
        '{"step": 1, "boundary": NaN}\n{"step": 2, "boundary": Infinity}\n{"step": 3, "boundary": -Infinity}\n{"step": 4, "boundary": -0}\n{"step": 5, "boundary": "0.25"}\n{"step": 6, "boundary": "nan"}\n' +
        goods(7, 16),
    });
    // A 50 MiB line, never held whole.
    await w.do({ op: 'append', file: file('long'), text: goods(1, 5) });
    await w.do({ op: 'long-line', file: file('long'), bytes: 50 << 20 });
    await w.do({ op: 'append', file: file('long'), text: goods(6, 10) });
    // Binary garbage: five lines of random bytes (each starts with NUL, none is blank).
    const r = rng(7);
    const garbage = Buffer.concat(
      Array.from({ length: 5 }, () => {
        const b = Buffer.from(Array.from({ length: 200 + Math.floor(r() * 800) }, () => 14 + Math.floor(r() * 242)));
        b[0] = 0;
        return Buffer.concat([b, Buffer.from('\n')]);
      }),
    );
    await w.do({ op: 'append', file: file('binary'), text: goods(1, 5) });
    await w.do({ op: 'bytes', file: file('binary'), base64: garbage.toString('base64') });
    await w.do({ op: 'append', file: file('binary'), text: goods(6, 10) });
    // Invalid UTF-8 inside strings.
    const utf8 = Buffer.concat(
      Array.from({ length: 10 }, (_, i) =>
        Buffer.concat([Buffer.from(`{"step": ${i + 1}, "boundary": 0.5, "note": "`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}\n')]),
      ),
    );
    await w.do({ op: 'bytes', file: file('utf8'), base64: utf8.toString('base64') });
    // A line cut short by a writer that died; the restarted writer appends after it.
    await w.do({ op: 'append', file: file('cut'), text: goods(1, 5) + '{"step": 6, "boundary": 0.4' });
    await waitRecords(d, state, file('cut'), 5);
    await w.do({ op: 'append', file: file('cut'), text: goods(6, 10) });
    // copytruncate rotation (logrotate's copy, then truncate in place).
    await w.do({ op: 'append', file: file('copytruncate'), text: goods(1, 10) });
    await waitRecords(d, state, file('copytruncate'), 10);
    await w.do({ op: 'copytruncate', file: file('copytruncate') });
    await w.do({ op: 'append', file: file('copytruncate'), text: goods(11, 20) });
    // Rename rotation: the old file moves to .1 and a new one starts.
    await w.do({ op: 'append', file: file('renamed'), text: goods(1, 10) });
    await waitRecords(d, state, file('renamed'), 10);
    await w.do({ op: 'rename', from: file('renamed'), to: `${file('renamed')}.1` });
    await w.do({ op: 'append', file: file('renamed'), text: goods(11, 20) });
    // Replaced whole: the next file written under another name, then renamed over this one (no
    // change event ever comes for the new file under this name).
    await w.do({ op: 'append', file: file('replaced'), text: goods(1, 10) });
    await waitRecords(d, state, file('replaced'), 10);
    await w.do({ op: 'append', file: `${file('replaced')}.tmp`, text: goods(11, 20) });
    await w.do({ op: 'rename', from: `${file('replaced')}.tmp`, to: file('replaced') });
    // Deleted and recreated.
    await w.do({ op: 'append', file: file('recreated'), text: goods(1, 10) });
    await waitRecords(d, state, file('recreated'), 10);
    await w.do({ op: 'rm', path: file('recreated') });
    await d.waitFor((l) => l.msg === 'file removed; stopped following it' && l['file'] === file('recreated'));
    await w.do({ op: 'append', file: file('recreated'), text: goods(11, 15) });
    // A run folder removed under the watched root after it was read.
    await w.do({ op: 'append', file: file('removed'), text: goods(1, 10) });
    await waitRecords(d, state, file('removed'), 10);
    await w.do({ op: 'rm', path: path.join(runs, 'removed') });
    // Permission denied, then granted.
    if (canDeny) {
      await d.waitFor((l) => l['file'] === denied && l['code'] === 'EACCES');
      await w.do({ op: 'chmod', path: denied, mode: 0o644 });
    }
    await w.do({ op: 'append', file: denied, text: goods(6, 10) });

    const expected: Record<string, { records: number; malformed?: number; longLines?: number }> = {
      malformed: { records: 20, malformed: 3 },
      numbers: { records: 16 },
      long: { records: 10, longLines: 1 },
      binary: { records: 10, malformed: 5 },
      utf8: { records: 10 },
      crlf: { records: 10 },
      cut: { records: 9, malformed: 1 },
      copytruncate: { records: 20 },
      renamed: { records: 20 },
      replaced: { records: 20 },
      recreated: { records: 15 },
      denied: { records: 10 },
    };
    for (const [name, want] of Object.entries(expected)) await waitRecords(d, state, file(name), want.records);
    assert.equal(d.child.exitCode, null, 'the daemon stays up');
    assert.equal(await d.stop(), 0);

    const s = readState(state)!;
    for (const [name, want] of Object.entries(expected)) {
      const c = s.files[file(name)]!.counters;
      assert.deepEqual(
        { records: c.records, malformed: c.malformed, longLines: c.longLines },
        { malformed: 0, longLines: 0, ...want },
        name,
      );
    }
    // Each problem once, with the file named, and nothing else said about the good files.
    const once = (name: string, problem: string): void => {
      const said = complaints(d.logs, file(name));
      assert.deepEqual(
        said.map((l) => l['problem'] ?? l['code']),
        [problem],
        `${name}: ${JSON.stringify(said)}`,
      );
    };
    once('malformed', 'malformed');
    once('long', 'long-line');
    once('binary', 'malformed');
    once('cut', 'malformed');
    if (canDeny) once('denied', 'EACCES');
    for (const name of ['numbers', 'utf8', 'crlf', 'copytruncate', 'renamed', 'replaced', 'recreated'])
      assert.deepEqual(complaints(d.logs, file(name)), [], name);
    const said = (name: string): string[] =>
      d.logs.filter((l) => l['file'] === file(name) && l['problem'] !== undefined).map((l) => l['problem'] as string);
    assert.deepEqual(said('copytruncate'), ['truncated']);
    // Seen either as a rotation, or (when the new file comes after the daemon looked) as removed, then new.
    assert.ok(said('renamed').length <= 1 && said('renamed').every((p) => p === 'rotated'), said('renamed').join());
    assert.deepEqual(said('replaced'), ['rotated']);
    if (canDeny) assert.equal(d.logs.filter((l) => l['file'] === denied && l.msg === 'file readable again').length, 1);
    // Nonfinite values are counted, not averaged; -0 and "0.25" are numbers.
    const series = (name: string) => s.runs.find((x) => x.id === path.join(runs, name))!.rounds[0]!.series;
    const b = series('numbers')['boundary']!;
    assert.equal(b.nonfinite.count, 4);
    assert.equal(b.summary.n, 12);
    // The removed run keeps what was read from it.
    assert.equal(series('removed')['boundary']!.summary.n, 10);
    // The rotated copies are not read as new files.
    assert.ok(!(`${file('copytruncate')}.1` in s.files) && !(`${file('renamed')}.1` in s.files));
  });
});

/** Waits for a status line counting at least `records` records; returns it. */
function statusAt(d: DaemonProcess, records: number, timeoutMs = 20_000): Promise<LogLine> {
  return d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= records, timeoutMs);
}

/** A run whose boundary reward turns NaN at step 21: nonfinite-reward fires at once. */
function nanRun(): string {
  return goods(1, 20) + '{"step": 21, "boundary": NaN}\n' + goods(22, 40);
}

/** Each distinct message logged at most once. */
function noRepeats(logs: LogLine[]): void {
  const seen = new Map<string, number>();
  for (const l of logs) if (l.level >= 40) seen.set(l.msg, (seen.get(l.msg) ?? 0) + 1);
  const repeated = [...seen].filter(([, n]) => n > 1);
  assert.deepEqual(repeated, [], 'a problem was logged more than once');
}

describe('faults: special files named like whole-file formats', () => {
  test('a FIFO config and a trainer_state.json linked to /dev/zero are refused; the rest is read; SIGTERM stops the daemon at once', async () => {
    const { dir, runs, state } = workspace();
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      // follow_symlinks: all, so the link to /dev/zero reaches the regular-file check (by default a link out of the roots is not followed at all).
      `state_dir: ${state}\nwatch: {status_interval: 300ms, checkpoint_interval: 100ms, sweep_interval: 300ms, follow_symlinks: all}\nlog: {format: json}\n`,
    );
    const d = new DaemonProcess([runs, '--config', cfg], AS !== undefined ? { user: AS } : {});
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());
    const run = path.join(runs, 'r1');
    mkdirSync(path.join(run, 'configs'), { recursive: true });
    mkdirSync(path.join(run, 'outputs'), { recursive: true });
    assert.equal(spawnSync('mkfifo', [path.join(run, 'configs', 'evil.yaml')]).status, 0);
    symlinkSync('/dev/zero', path.join(run, 'outputs', 'trainer_state.json'));
    const jsonl = path.join(run, 'outputs', 'selector_round1', 'reward_history.jsonl');
    await w.do({ op: 'append', file: jsonl, text: goods(1, 20) });
    // Lines written after the special files are still read: nothing hangs.
    await statusAt(d, 20);
    await w.do({ op: 'append', file: jsonl, text: goods(21, 30) });
    const st = await statusAt(d, 30);
    assert.ok((st['records'] as number) >= 30);
    const refused = d.logs.filter((l) => /ENOTFILE/.test(JSON.stringify(l)));
    assert.ok(
      refused.some((l) => JSON.stringify(l).includes('evil.yaml')),
      'the FIFO is named as not a regular file',
    );
    assert.ok(
      refused.some((l) => JSON.stringify(l).includes('trainer_state.json')),
      'the link to a device is named',
    );
    const t0 = Date.now();
    assert.equal(await d.stop(), 0);
    assert.ok(Date.now() - t0 < 10_000, `stopped in ${Date.now() - t0} ms`);
    assert.ok(d.logs.some((l) => l.msg === 'stopped' || /state saved|stopped/.test(l.msg)));
  });
});

describe('faults: the state folder is private and written through no symlink', () => {
  test('under umask 000 the folder is 0700 and its files 0600; symlinks planted in place of its files leave their targets untouched', async () => {
    const { dir, runs, state } = workspace();
    const { am, cfg } = await alertmanagerFor(dir, state);
    // Files another user planted: writable by anyone, so following a link would change them.
    const victims = ['tmp-victim', 'alerts-victim', 'notifications-victim'].map((n) => path.join(dir, n));
    for (const v of victims) {
      writeFileSync(v, 'untouched\n');
      chmodSync(v, 0o666);
    }
    symlinkSync(victims[0]!, path.join(state, 'state.json.tmp'));
    symlinkSync(victims[1]!, path.join(state, 'alerts.jsonl'));
    symlinkSync(victims[2]!, path.join(state, 'notifications.jsonl'));
    chmodSync(state, 0o777);
    const old = process.umask(0);
    let d: DaemonProcess;
    try {
      d = new DaemonProcess([runs, '--config', cfg], AS !== undefined ? { user: AS } : {});
    } finally {
      process.umask(old);
    }
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());
    const file = path.join(runs, 'r1', 'outputs', 'selector_round1', 'reward_history.jsonl');
    await w.do({ op: 'append', file, text: nanRun() });
    await statusAt(d, 40);
    const end = Date.now() + 10_000;
    while (am.requests.length === 0 && Date.now() < end) await sleep(50);
    assert.equal(am.requests.length, 1, 'the alert is delivered');
    await d.waitFor((l) => /notifications\.jsonl/.test(l.msg) && /ELOOP/.test(l.msg));
    assert.equal(await d.stop(), 0);
    for (const v of victims) assert.equal(readFileSync(v, 'utf8'), 'untouched\n', `${path.basename(v)} was written through a link`);
    const mode = (p: string): string => (statSync(p).mode & 0o777).toString(8);
    assert.equal(mode(state), '700');
    assert.equal(mode(path.join(state, 'outbox')), '700');
    assert.equal(mode(path.join(state, 'outbox', 'failed')), '700');
    assert.equal(mode(path.join(state, 'state.json')), '600');
    assert.ok(lstatSync(path.join(state, 'alerts.jsonl')).isSymbolicLink(), 'the planted link is left for a person to look at');
    assert.ok(
      d.logs.some((l) => l.level >= 40 && /alerts\.jsonl|ELOOP/.test(JSON.stringify(l))),
      'the refused alert log is reported',
    );
  });
});

describe('faults: the state folder', () => {
  /**
   * The daemon keeps reading and alerting when its state folder cannot be written: each write
   * failure is logged once with the folder named, the alert still reaches the channel once, and
   * saving resumes when the folder can be written again.
   */
  async function unwritableState(
    break_: (state: string) => void,
    mend: (state: string) => void,
    code: string,
    user?: User,
    cleanup?: (state: string) => void,
  ): Promise<void> {
    const { dir, runs, state } = workspace();
    try {
      await unwritableStateIn(dir, runs, state, break_, mend, code, user);
    } finally {
      cleanup?.(state);
    }
  }

  async function unwritableStateIn(
    dir: string,
    runs: string,
    state: string,
    break_: (state: string) => void,
    mend: (state: string) => void,
    code: string,
    user?: User,
  ): Promise<void> {
    const { am, cfg } = await alertmanagerFor(dir, state);
    break_(state);
    const d = new DaemonProcess([runs, '--config', cfg], user !== undefined ? { user } : {});
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());
    const file = path.join(runs, 'r1', 'outputs', 'selector_round1', 'reward_history.jsonl');
    await w.do({ op: 'append', file, text: nanRun() });
    await statusAt(d, 40);
    const saveError = await d.waitFor((l) => l.msg.startsWith(`cannot save state (${code})`));
    assert.equal(saveError['stateDir'], state);
    // The alert is delivered although it could not be queued on disk.
    const end = Date.now() + 10_000;
    while (am.requests.length === 0 && Date.now() < end) await sleep(50);
    assert.equal(am.requests.length, 1, 'the alert reached Alertmanager');
    assert.match(am.requests[0]!.body, /nonfinite-reward/);
    await d.waitFor((l) => l.msg.includes(`(${code}); notifications and the record of what was sent are kept in memory`));

    mend(state);
    await d.waitFor((l) => l.msg === 'state saved again');
    await w.do({ op: 'append', file, text: goods(41, 50) });
    await statusAt(d, 50);
    assert.equal(d.child.exitCode, null, 'the daemon stays up');
    assert.equal(await d.stop(), 0);
    noRepeats(d.logs);
    assert.equal(am.requests.length, 1, 'sent once');
    const s = readState(state)!;
    assert.equal(s.files[file]!.counters.records, 50);
  }

  const mounted = ((): string | false => {
    if (!IS_ROOT) return 'mounting a small tmpfs needs root';
    if (SECOND_USER_SKIP !== false) return SECOND_USER_SKIP;
    const probe = tempDir();
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe]);
    if (r.status !== 0) return `cannot mount a tmpfs here (${r.stderr.toString().trim()})`;
    spawnSync('umount', [probe]);
    return false;
  })();

  test(
    'a journal line cut short by a full disk is taken back; one left torn by a crash is never merged with the next',
    { skip: mounted },
    () => {
      const disk = tempDir();
      assert.equal(spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', disk]).status, 0);
      try {
        const journal = new Journal(path.join(disk, 'alerts.jsonl'));
        const line = (i: number, pad: number): string =>
          JSON.stringify({ time: new Date(0).toISOString(), i, pad: 'x'.repeat(pad) }) + '\n';
        journal.append(line(1, 3000));
        // The rest of the disk filled: the next line fits only partly in the file's last page.
        spawnSync('dd', ['if=/dev/zero', `of=${path.join(disk, 'filler')}`, 'bs=4k']);
        assert.throws(() => journal.append(line(2, 6000)), { code: 'ENOSPC' });
        rmSync(path.join(disk, 'filler'));
        journal.append(line(3, 10));
        // A crash in the middle of a write leaves a line without its end: the next one starts afresh.
        appendFileSync(journal.file, '{"time": "2026-');
        journal.append(line(4, 10));
        const lines = readFileSync(journal.file, 'utf8')
          .split('\n')
          .filter((l) => l !== '');
        assert.deepEqual(
          lines.map((l) => {
            try {
              return (JSON.parse(l) as { i: number }).i;
            } catch {
              return 'torn';
            }
          }),
          [1, 3, 'torn', 4],
        );
      } finally {
        spawnSync('umount', ['-l', disk]);
      }
    },
  );

  test('a full disk (ENOSPC, a 1 MiB tmpfs filled up)', { skip: mounted }, async () => {
    await unwritableState(
      (state) => {
        assert.equal(spawnSync('mount', ['-t', 'tmpfs', '-o', `size=1m,uid=${AS!.uid},gid=${AS!.gid}`, 'tmpfs', state]).status, 0);
        // Fill it: writes fail with ENOSPC from here on.
        spawnSync('dd', ['if=/dev/zero', `of=${path.join(state, 'filler')}`, 'bs=64k']);
      },
      (state) => rmSync(path.join(state, 'filler')),
      'ENOSPC',
      AS,
      (state) => void spawnSync('umount', ['-l', state]),
    );
  });

  test(
    'a read-only state folder',
    { skip: process.getuid === undefined ? 'permissions do not apply here' : SECOND_USER_SKIP },
    async () => {
      await unwritableState(
        (state) => chmodSync(state, 0o555),
        (state) => chmodSync(state, 0o755),
        'EACCES',
        AS,
      );
    },
  );
});

/** A run whose NaN was alerted to the Alertmanager stand-in by a daemon that then stopped. */
async function nanRunAlerted(): Promise<{ runs: string; state: string; am: CaptureServer; cfg: string; file: string }> {
  const { dir, runs, state } = workspace();
  const { am, cfg } = await alertmanagerFor(dir, state);
  const file = path.join(runs, 'r1', 'outputs', 'selector_round1', 'reward_history.jsonl');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, nanRun());
  const d = new DaemonProcess([runs, '--config', cfg]);
  await statusAt(d, 40);
  await d.waitFor((l) => l.msg.startsWith('sent to alertmanager'));
  assert.equal(await d.stop(), 0);
  return { runs, state, am, cfg, file };
}

/** A restart after the state was broken: ten more steps written, read and alerted on; the daemon must stay up. */
async function restartAndWrite(runs: string, cfg: string, file: string): Promise<DaemonProcess> {
  const d = new DaemonProcess([runs, '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  const w = new Actor();
  after(() => w.close());
  await w.do({ op: 'append', file, text: goods(41, 50) });
  await statusAt(d, 50);
  // Long enough for a repeated warning to show: several status lines, alert ticks and saves.
  await d.waitQuiet();
  assert.equal(d.child.exitCode, null, 'the daemon stays up');
  assert.equal(await d.stop(), 0);
  return d;
}

describe('faults: state files', () => {
  test('truncated or garbage state files are named, moved aside and rebuilt from the logs; nothing is sent twice', async () => {
    const { runs, state, am, cfg, file } = await nanRunAlerted();

    // Break every file the state folder holds.
    const stateJson = path.join(state, 'state.json');
    const text = readFileSync(stateJson, 'utf8');
    writeFileSync(stateJson, text.slice(0, text.length >> 1));
    writeFileSync(`${stateJson}.tmp`, text.slice(0, 100));
    writeFileSync(path.join(state, 'outbox', 'garbage.json'), '{"notification": {"id": ');
    writeFileSync(
      path.join(state, 'notifications.jsonl'),
      readFileSync(path.join(state, 'notifications.jsonl'), 'utf8') + '{"time": "2026-',
    );
    writeFileSync(path.join(state, 'silences.json'), '\u0000\u0001 not json');

    const d = await restartAndWrite(runs, cfg, file);

    const warned = d.logs.filter((l) => l.level >= 40).map((l) => l.msg);
    const one = (re: RegExp): void => assert.equal(warned.filter((m) => re.test(m)).length, 1, `${re}: ${warned.join('\n')}`);
    one(/^incomplete .*state\.json\.tmp ignored \(not valid JSON/);
    one(/^state file .*state\.json is unusable \(not valid JSON .*\); moved to .*state\.json\.corrupt-/);
    one(/^unreadable outbox entry .*; moved to .*failed\/garbage\.json\.unreadable$/);
    one(/^cannot read .*silences\.json \(Unexpected token/);
    noRepeats(d.logs);
    assert.ok(readdirSync(state).some((f) => f.startsWith('state.json.corrupt-')));
    // Rebuilt from the logs: every record, once.
    assert.equal(readState(state)!.files[file]!.counters.records, 50);
    // The alert found again is not sent again: notifications.jsonl remembers it.
    assert.equal(am.requests.length, 1);
  });
});

describe('faults: a state file of the wrong shape', () => {
  test('each part that does not fit is set aside with a message, the daemon starts and reads again what it lost, nothing is counted or sent twice', async () => {
    const { runs, state, am, cfg, file } = await nanRunAlerted();

    // Valid JSON of the wrong shape, part by part: a run that is a number, a negative offset,
    // an engine that is null and alerts that are a string (each crashed a start or killed alerting).
    const stateJson = path.join(state, 'state.json');
    const saved = JSON.parse(readFileSync(stateJson, 'utf8')) as Record<string, unknown> & DaemonState;
    (saved.runs as unknown[]).push(1);
    saved.files[file]!.tail!.offset = -5;
    (saved as Record<string, unknown>).engine = null;
    (saved.alerting as unknown as Record<string, unknown>).alerts = 'x';
    writeFileSync(stateJson, JSON.stringify(saved));

    const d = await restartAndWrite(runs, cfg, file);

    const warned = d.logs.filter((l) => l.level >= 40).map((l) => l.msg);
    const aside = warned.filter((m) => m.includes('did not fit'));
    assert.equal(aside.length, 1, warned.join('\n'));
    for (const part of ['runs[1]', `files[${JSON.stringify(file)}]`, 'engine', 'alerting.alerts'])
      assert.ok(aside[0]!.includes(part), `${part} named: ${aside[0]}`);
    assert.ok(!warned.some((m) => m.includes('alerting tick failed')), warned.join('\n'));
    noRepeats(d.logs);
    const kept = readdirSync(state).find((f) => f.startsWith('state.json.set-aside-'));
    assert.ok(kept !== undefined, 'the parts set aside are kept beside the state file');
    const parts = JSON.parse(readFileSync(path.join(state, kept), 'utf8')) as { part: string; value: unknown }[];
    assert.deepEqual(parts.find((p) => p.part === 'runs[1]')?.value, 1);
    // Only what was broken (and the run whose checkpoint went): the rest of a real state fits.
    assert.deepEqual(
      parts.map((p) => p.part).sort(),
      [
        'alerting.alerts',
        'engine',
        `files[${JSON.stringify(file)}]`,
        'runs[1]',
        `runs[id=${JSON.stringify(path.join(runs, 'r1'))}]`,
      ].sort(),
    );
    // The run whose checkpoint was set aside is read again from the start: every record once.
    const now = readState(state)!;
    assert.equal(now.files[file]!.counters.records, 50);
    assert.equal(now.runs.length, 1);
    assert.equal(now.runs[0]!.rounds[0]!.steps, 50);
    // Alerting works: the finding that holds is a firing alert again.
    assert.ok(
      now.alerting!.alerts.some((a) => a.finding.detector === 'nonfinite-reward' && a.state === 'firing'),
      JSON.stringify(now.alerting!.alerts),
    );
    // The alert found again is not sent again: the notification log remembers it.
    assert.equal(am.requests.length, 1);
  });
});

/** A user id that /etc/passwd does not name: a process of its own, with limits of its own (inotify's are per user). */
function unusedUid(): number {
  const taken = new Set(
    readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .map((l) => Number(l.split(':')[2])),
  );
  let uid = 64_100;
  while (taken.has(uid)) uid++;
  return uid;
}

describe('faults: the inotify watch limit', () => {
  test(
    'a folder that meets the limit is listed at each sweep meanwhile and watched once a watch is free; said once with the sysctl, and in /healthz',
    { skip: IS_ROOT ? false : 'needs root to run the daemon as a user of its own, whose inotify watches can all be taken' },
    async () => {
      const uid = unusedUid();
      const user: User = { name: `uid ${uid}`, uid, gid: NOBODY?.gid ?? 65534 };
      const dir = tempDir();
      chmodSync(dir, 0o755);
      const runs = path.join(dir, 'runs');
      const state = path.join(dir, 'state');
      mkdirSync(runs);
      mkdirSync(state);
      chownSync(state, user.uid, user.gid);
      const cfg = path.join(dir, 'c.yaml');
      writeFileSync(cfg, `state_dir: ${state}\nwatch: {status_interval: 200ms, sweep_interval: 500ms}\nlog: {format: json}\n`);
      const d = new DaemonProcess([runs, '--config', cfg], { user, listen: '127.0.0.1:0' });
      const base = await d.pageUrl();
      await d.waitFor((l) => l.msg === 'watching');

      // Another process of the same user takes every watch the kernel allows it.
      // (A copy it can read: a checkout under /root is out of its reach.)
      const script = path.join(dir, 'inotify-hog.py');
      writeFileSync(script, readFileSync(path.join(REPO, 'test', 'helpers', 'inotify-hog.py')));
      chmodSync(script, 0o644);
      const hog = spawn('/usr/bin/python3', [script], {
        uid: user.uid,
        gid: user.gid,
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      after(() => hog.kill('SIGKILL'));
      await new Promise<void>((resolve, reject) => {
        hog.stdout.setEncoding('utf8');
        hog.stdout.on('data', (t: string) => (t.startsWith('full') ? resolve() : undefined));
        hog.on('exit', (code) => reject(new Error(`the watch hog exited (${code}) before the quota was full`)));
      });

      // A new run folder now cannot be watched: it is read anyway, from the listings of each sweep.
      const file = path.join(runs, 'run-new', 'outputs', 'selector_round1', 'reward_history.jsonl');
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, goods(1, 20));
      const limit = await d.waitFor((l) => l.msg.includes('inotify watch limit'));
      assert.match(limit.msg, /fs\.inotify\.max_user_watches=524288/);
      await statusAt(d, 20);
      const health = async (): Promise<{ last_error: string | null; unwatched_folders: number }> =>
        (await (await fetch(new URL('/healthz', base))).json()) as { last_error: string | null; unwatched_folders: number };
      const during = await health();
      assert.ok(during.unwatched_folders >= 1, JSON.stringify(during));
      assert.match(during.last_error ?? '', /inotify watch limit/);
      assert.match(await (await fetch(new URL('/metrics', base))).text(), /^barwatch_unwatched_folders [1-9]/m);
      appendFileSync(file, goods(21, 30));
      await statusAt(d, 30);

      // The watches are free again: the folders are watched at the next sweep, and an append is seen at once.
      hog.stdin.end();
      await new Promise((resolve) => hog.once('exit', resolve));
      await d.waitFor((l) => l.msg === 'every folder is watched again');
      appendFileSync(file, goods(31, 40));
      await statusAt(d, 40);
      const afterwards = await health();
      assert.equal(afterwards.unwatched_folders, 0);
      assert.equal(afterwards.last_error, null);
      assert.equal(await d.stop(), 0);
      assert.equal(d.logs.filter((l) => l.msg.includes('inotify watch limit')).length, 1, 'said once');
      assert.ok(!d.logs.some((l) => l.msg.startsWith('watch error')), 'not a watch error per folder');
    },
  );
});

describe('faults: huge reads', () => {
  test('a line across a 1 GiB hole is skipped in slices: /healthz answers while it is read, live and in the catch-up at start, and the lines around it count', async () => {
    const dir = tempDir();
    const runs = path.join(dir, 'runs');
    mkdirSync(runs);
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {status_interval: 200ms}\nlog: {format: json}\n`);
    const d = new DaemonProcess([runs, '--config', cfg], { listen: '127.0.0.1:0' });
    const base = await d.pageUrl();
    await d.waitFor((l) => l.msg === 'watching');
    // A sparse file: two good lines, then a 1 GiB hole of zero bytes (a "line" without a newline,
    // next to nothing on disk), then a newline and good lines again.
    const file = path.join(runs, 'r1', 'reward_history.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, goods(1, 2));
    truncateSync(file, statSync(file).size + 2 ** 30);
    appendFileSync(file, '\n' + goods(3, 5));
    // /healthz answers while the read is under way: files followed, the read still queued.
    let during = 0;
    // A bound instead of a hang: a read that never ends fails with what the daemon said.
    const until = Date.now() + 180_000;
    while (!d.logs.some((l) => l.msg.startsWith('status:') && (l['longLines'] as number) >= 1)) {
      if (Date.now() > until) assert.fail(`the hole was not read in 180 s: ${JSON.stringify(d.logs.slice(-5).map((l) => l.msg))}`);
      const h = (await (await fetch(new URL('/healthz', base))).json()) as { files: number; ingest_lag_seconds: number };
      if (h.files >= 1 && h.ingest_lag_seconds > 0) during++;
      await sleep(20);
    }
    assert.ok(during >= 1, 'no /healthz answer came while the hole was read');
    await statusAt(d, 5);
    assert.equal(await d.stop(), 0);
    assert.equal(d.logs.filter((l) => /^skipped a line of \d+ bytes/.test(l.msg)).length, 1, JSON.stringify(d.logs.map((l) => l.msg)));

    // The same file as a backlog found at start (a new state folder): /healthz answers during the
    // catch-up, and says it is one.
    writeFileSync(cfg, `state_dir: ${dir}/state2\nwatch: {status_interval: 200ms}\nlog: {format: json}\n`);
    const again = new DaemonProcess([runs, '--config', cfg], { listen: '127.0.0.1:0' });
    const url = await again.pageUrl();
    let catchingUp = 0;
    const caughtUpBy = Date.now() + 180_000;
    while (!again.logs.some((l) => l.msg === 'watching')) {
      if (Date.now() > caughtUpBy)
        assert.fail(`the catch-up did not end in 180 s: ${JSON.stringify(again.logs.slice(-5).map((l) => l.msg))}`);
      const h = (await (await fetch(new URL('/healthz', url))).json()) as { catching_up: boolean };
      if (h.catching_up) catchingUp++;
      await sleep(20);
    }
    assert.ok(catchingUp >= 1, 'no /healthz answer came during the catch-up');
    await statusAt(again, 5);
    assert.equal(((await (await fetch(new URL('/healthz', url))).json()) as { catching_up: boolean }).catching_up, false);
    assert.equal(await again.stop(), 0);
  });
});

describe('faults: notifiers', () => {
  test('timeouts, a 429 storm, connection refused, then 500s: every notification arrives once, each failure logged once', async () => {
    const { dir, runs, state } = workspace();
    // Slack: three requests that never get an answer (timeouts), then five 429s with Retry-After.
    const slack = await new CaptureServer().start();
    after(() => slack.stop());
    slack.respond = (_req, n) =>
      n <= 3 ? 'hang' : n <= 8 ? { status: 429, body: 'rate_limited', headers: { 'retry-after': '1' } } : { status: 200, body: 'ok' };
    // Alertmanager: nothing listens at first (connection refused); then its first two answers are 500s.
    // Counted, not timed: the retry backoff decides when the next attempt comes.
    const probe = await new CaptureServer().start();
    const amPort = Number(new URL(probe.url).port);
    await probe.stop();
    const am = new CaptureServer();
    after(() => am.stop());
    am.respond = (_req, n) => (n <= 2 ? { status: 500, body: 'internal error' } : { status: 200, body: 'ok' });

    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${state}\nwatch: {status_interval: 1s, checkpoint_interval: 100ms}\nalerting: {group_wait: 0s}\nnotify:\n  timeout: 300ms\n  slack: {webhook_url: "${slack.url}/services/T0/B0/SECRET"}\n  alertmanager: {url: "http://127.0.0.1:${amPort}"}\nlog: {format: json}\n`,
    );
    const d = new DaemonProcess([runs, '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());
    for (const r of ['r1', 'r2'])
      await w.do({ op: 'append', file: path.join(runs, r, 'outputs', 'selector_round1', 'reward_history.jsonl'), text: nanRun() });
    await d.waitFor((l) =>
      l.msg.startsWith(`cannot send to alertmanager: Alertmanager at 127.0.0.1:${amPort} unreachable: connection refused (ECONNREFUSED)`),
    );
    await sleep(2000);
    await am.start(amPort);

    const delivered = (server: CaptureServer, ok: (i: number) => boolean): string[] =>
      server.requests.filter((_r, i) => ok(i)).map((r) => r.body);
    const end = Date.now() + 45_000;
    const slackOk = (i: number): boolean => i >= 8;
    while (
      Date.now() < end &&
      (delivered(slack, slackOk).length < 2 || d.logs.filter((l) => l.msg.startsWith('sent to alertmanager')).length < 2)
    )
      await sleep(100);
    await d.waitQuiet();
    assert.equal(d.child.exitCode, null, 'the daemon stays up');
    assert.equal(await d.stop(), 0);

    // Each run's alert reached each channel exactly once.
    const runsIn = (bodies: string[]): string[] =>
      bodies.map((b) => (b.includes(path.join(runs, 'r1')) ? 'r1' : b.includes(path.join(runs, 'r2')) ? 'r2' : '?')).sort();
    assert.deepEqual(runsIn(delivered(slack, slackOk)), ['r1', 'r2']);
    assert.ok(slack.requests.length >= 10, `${slack.requests.length} Slack requests`);
    const sent = d.logs.filter((l) => l.msg.startsWith('sent to '));
    assert.deepEqual(sent.map((l) => l['notifier']).sort(), ['alertmanager', 'alertmanager', 'slack', 'slack']);
    // Every failure said once, when it started or changed (not at every retry); the recovery once per channel.
    const failures = d.logs.filter((l) => l.msg.startsWith('cannot send to ')).map((l) => l.msg.replace(/; retrying with backoff$/, ''));
    // Each names the channel's host:port and the cause, never the webhook's path.
    const slackAt = `127.0.0.1:${new URL(slack.url).port}`;
    assert.deepEqual(failures.sort(), [
      `cannot send to alertmanager: Alertmanager at 127.0.0.1:${amPort} answered HTTP 500`,
      `cannot send to alertmanager: Alertmanager at 127.0.0.1:${amPort} unreachable: connection refused (ECONNREFUSED)`,
      `cannot send to slack: Slack at ${slackAt} answered HTTP 429 Too Many Requests`,
      `cannot send to slack: Slack webhook at ${slackAt} unreachable: no answer within 0.3 s`,
    ]);
    assert.equal(d.logs.filter((l) => l.msg === 'slack accepts notifications again').length, 1);
    assert.equal(d.logs.filter((l) => l.msg === 'alertmanager accepts notifications again').length, 1);
    // The webhook's secret path never reaches the log.
    assert.ok(!d.logs.some((l) => JSON.stringify(l).includes('SECRET')));
  });
});

describe('faults: one channel never holds up another', () => {
  test('a Slack that never answers does not delay Alertmanager; an endless answer is read to a bound and counts as delivered', async () => {
    const { dir, runs, state } = workspace();
    const slack = await new CaptureServer().start();
    after(() => slack.stop());
    // The first post hangs until the client's timeout; the next gets 200 with a body that never ends.
    slack.respond = (_req, n) => (n === 1 ? 'hang' : { status: 200, endless: true });
    const am = await new CaptureServer().start();
    after(() => am.stop());
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${state}\nwatch: {status_interval: 200ms}\nalerting: {group_wait: 0s}\nnotify:\n  timeout: 5s\n  slack: {webhook_url: "${slack.url}/services/T0/B0/SECRET"}\n  alertmanager: {url: "${am.url}"}\nlog: {format: json}\n`,
    );
    const file = path.join(runs, 'r1', 'outputs', 'selector_round1', 'reward_history.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, nanRun());
    const d = new DaemonProcess([runs, '--config', cfg], AS !== undefined ? { user: AS } : {});
    await d.waitFor((l) => l.msg.startsWith('sent to alertmanager'), 20_000);
    assert.ok(slack.requests.length >= 1, 'Slack was posted to first or alongside');
    assert.ok(
      !d.logs.some((l) => l.msg.startsWith('cannot send to slack')),
      'Alertmanager got its alert while the Slack post still hung (before its timeout)',
    );
    // Slack's retry gets an endless 200: read up to the bound, then delivered.
    await d.waitFor((l) => l.msg.startsWith('sent to slack'), 30_000);
    assert.equal(await d.stop(), 0);
    assert.equal(slack.endlessWritten.length, 1, 'the endless answer was cut off by the client');
    assert.ok(slack.endlessWritten[0]! < 64 << 20, `${slack.endlessWritten[0]} bytes written before the client left`);
    assert.equal(d.logs.filter((l) => l.msg.startsWith('sent to slack')).length, 1);
    assert.equal(am.requests.length, 1);
  });
});

describe('faults: descriptors', () => {
  const HAVE_PRLIMIT = spawnSync('prlimit', ['--version']).status === 0;
  test(
    'under a limit of 120 descriptors, 150 idle event streams get a capped share: /healthz answers and a new run is read while they hold',
    { skip: HAVE_PRLIMIT ? false : 'prlimit (util-linux) is not installed' },
    async () => {
      const dir = tempDir();
      const runs = path.join(dir, 'runs');
      mkdirSync(runs);
      const cfg = path.join(dir, 'c.yaml');
      writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {status_interval: 200ms, sweep_interval: 500ms}\nlog: {format: json}\n`);
      const d = new DaemonProcess([runs, '--config', cfg], { listen: '127.0.0.1:0', under: ['prlimit', '--nofile=120:120'] });
      const base = new URL(await d.pageUrl());
      await d.waitFor((l) => l.msg === 'watching');
      // Idle live pages: each holds a connection open; they are let go at the end.
      const held: ClientRequest[] = [];
      after(() => held.forEach((r) => r.destroy()));
      const statuses: (number | string)[] = [];
      for (let i = 0; i < 150; i++) {
        statuses.push(
          await new Promise<number | string>((resolve) => {
            const req = request({ host: base.hostname, port: base.port, path: '/api/v1/events', agent: false }, (res) => {
              // A page told to wait reads the answer and goes (as EventSource does, to retry later).
              if (res.statusCode !== 200) res.resume();
              resolve(res.statusCode ?? 0);
            });
            req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
            req.end();
            held.push(req);
          }),
        );
      }
      const open = statuses.filter((s) => s === 200).length;
      assert.ok(open >= 1 && open <= 30, `event streams accepted: ${open} (${JSON.stringify(statuses)})`);
      assert.ok(
        statuses.some((s) => s === 503),
        'a stream past the cap is told why',
      );
      // While they hold: /healthz answers, and a new run is found and read.
      const file = path.join(runs, 'r-new', 'reward_history.jsonl');
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, goods(1, 10));
      await statusAt(d, 10);
      assert.equal((await rawRequest(new URL('/healthz', base).href)).status, 200);
      held.forEach((r) => r.destroy());
      assert.equal(await d.stop(), 0);
      assert.ok(!d.logs.some((l) => l.msg.includes('EMFILE')), 'no read or watch ran out of descriptors');
    },
  );
});

describe('faults: many files', () => {
  test('10,000 empty files (2,500 runs of four): followed without complaint; a write to one is read', async () => {
    const { dir, runs, state } = workspace();
    for (let i = 0; i < 2500; i++) {
      for (const role of ['selector_round1', 'generator_round1']) {
        const d = path.join(runs, `run${String(i).padStart(4, '0')}`, 'outputs', role);
        mkdirSync(d, { recursive: true });
        writeFileSync(path.join(d, 'reward_history.jsonl'), '');
        writeFileSync(path.join(d, 'train.log'), '');
      }
    }
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${state}\nwatch: {status_interval: 500ms, checkpoint_interval: 1s}\nlog: {format: json}\n`);
    const d = new DaemonProcess([runs, '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching', 60_000);
    const w = new Actor();
    after(() => w.close());
    const file = path.join(runs, 'run1234', 'outputs', 'selector_round1', 'reward_history.jsonl');
    await w.do({ op: 'append', file, text: goods(1, 10) });
    const st = await statusAt(d, 10, 60_000);
    assert.equal(st['files'], 10_000);
    assert.equal(d.child.exitCode, null, 'the daemon stays up');
    assert.equal(await d.stop(), 0);
    assert.deepEqual(
      d.logs.filter((l) => l.level >= 40),
      [],
    );
  });
});
