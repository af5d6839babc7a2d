/** `barwatch watch` as a real process, with a real writer process appending while it runs. */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { DaemonState } from '../src/daemon/state.js';
import { DaemonProcess, type LogLine } from './helpers/daemon.js';
import { barwatch } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

/** A writer process: appends `n` selector lines to `file`, `perSecond` a second, then exits. */
function writer(file: string, first: number, n: number, perSecond: number): Promise<void> {
  const script = `
    const fs = require('node:fs');
    const [file, first, n, rate] = process.argv.slice(1);
    let i = Number(first);
    const end = i + Number(n);
    const t = setInterval(() => {
      const line = JSON.stringify({ step: i, boundary: 0.5 + 0.01 * Math.sin(i), accuracy: 0.45, format: 1 }) + '\\n';
      fs.appendFileSync(file, line.slice(0, 20));
      fs.appendFileSync(file, line.slice(20));
      if (++i >= end) { clearInterval(t); }
    }, 1000 / Number(rate));`;
  const child = spawn(process.execPath, ['-e', script, file, String(first), String(n), String(perSecond)], { stdio: 'inherit' });
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exit ${code}`)))));
}

const status =
  (records: number) =>
  (l: LogLine): boolean =>
    typeof l['records'] === 'number' && l['records'] >= records && l.msg.startsWith('status:');

function config(dir: string): string {
  const file = path.join(dir, 'barwatch.yaml');
  writeFileSync(
    file,
    `state_dir: ${path.join(dir, 'state')}\nwatch:\n  status_interval: 200ms\n  checkpoint_interval: 200ms\nlog:\n  format: json\n  level: debug\n`,
  );
  return file;
}

describe('barwatch watch', () => {
  test('records arrive while a writer appends; a new round is discovered; SIGTERM saves state; a restart resumes without repeats', async () => {
    const dir = tempDir();
    const run = path.join(dir, 'runs', 'run1');
    const r1 = path.join(run, 'outputs', 'selector_round1');
    mkdirSync(r1, { recursive: true });
    writeFileSync(path.join(r1, 'reward_history.jsonl'), '');
    const cfg = config(dir);

    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    await d.waitFor((l) => l.msg.startsWith('status:'));
    await writer(path.join(r1, 'reward_history.jsonl'), 1, 60, 200);
    await d.waitFor(status(60));
    const round = await d.waitFor((l) => l.msg === 'discovered round');
    assert.equal(round['run'], run);
    assert.equal(round['role'], 'selector');
    assert.equal(round['round'], 1);
    const series = await d.waitFor((l) => l.msg.startsWith('discovered') && Array.isArray(l['series']));
    assert.deepEqual(series['series'], ['boundary', 'accuracy', 'format']);

    // A round that appears while the daemon runs.
    const r2 = path.join(run, 'outputs', 'selector_round2');
    mkdirSync(r2, { recursive: true });
    await writer(path.join(r2, 'reward_history.jsonl'), 1, 20, 200);
    const r2log = await d.waitFor((l) => l.msg === 'discovered round' && l['round'] === 2);
    assert.equal(r2log['run'], run);
    await d.waitFor(status(80));
    assert.equal(await d.stop(), 0);
    assert.ok(d.logs.some((l) => l.msg === 'stopped; state saved'));

    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    const steps = Object.fromEntries(state.runs[0]!.rounds.map((r) => [`${r.role}${r.round}`, r.steps]));
    assert.deepEqual(steps, { selector1: 60, selector2: 20 });

    // Restart: nothing is read twice; new lines continue the count.
    const again = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await again.waitFor((l) => l.msg === 'resuming from saved state');
    await again.waitFor(status(80));
    await writer(path.join(r1, 'reward_history.jsonl'), 61, 10, 200);
    await again.waitFor(status(90));
    assert.equal(await again.stop(), 0);
    const after = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    const r1state = after.runs[0]!.rounds.find((r) => r.round === 1)!;
    assert.equal(r1state.steps, 70);
    assert.equal(r1state.series['boundary']!.summary.n, 70);
    assert.deepEqual(
      again.logs.filter((l) => l.level >= 50),
      [],
      'no error was logged',
    );
  });

  test('with no config and no path: the current folder is the run, only its run folders are read', async () => {
    const run = tempDir();
    mkdirSync(path.join(run, 'outputs', 'generator_round1'), { recursive: true });
    writeFileSync(path.join(run, 'outputs', 'generator_round1', 'reward_history.jsonl'), '{"step": 1, "reward": 0.5, "accuracy": 0.4}\n');
    writeFileSync(path.join(run, 'unrelated.log'), 'step=1 reward=9\n');
    const d = new DaemonProcess([], { cwd: run });
    await d.waitFor((l) => l.msg === 'discovered round' && l['role'] === 'generator');
    await d.waitFor(status(1));
    assert.equal(await d.stop(), 0);
    assert.ok(existsSync(path.join(run, '.barwatch', 'state.json')));
    const state = JSON.parse(readFileSync(path.join(run, '.barwatch', 'state.json'), 'utf8')) as DaemonState;
    assert.deepEqual(Object.keys(state.files), [path.join(run, 'outputs', 'generator_round1', 'reward_history.jsonl')]);
    assert.equal(state.runs[0]!.id, run);
  });

  test('a symlink loop under a watched root is reported once and not followed; the run is read once', async () => {
    const dir = tempDir();
    const sel = path.join(dir, 'runs', 'run1', 'outputs', 'selector_round1');
    mkdirSync(sel, { recursive: true });
    writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n{"step": 2, "boundary": 0.6}\n');
    symlinkSync('..', path.join(dir, 'runs', 'run1', 'outputs', 'loop'));
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', config(dir)]);
    await d.waitFor(status(2));
    assert.equal(await d.stop(), 0);
    const loops = d.logs.filter((l) => l['code'] === 'ELOOP');
    assert.equal(loops.length, 1, JSON.stringify(loops));
    assert.equal(loops[0]!['path'], path.join(dir, 'runs', 'run1', 'outputs', 'loop'));
    const runs = d.logs.filter((l) => l.msg === 'discovered run');
    assert.deepEqual(
      runs.map((l) => l['run']),
      [path.join(dir, 'runs', 'run1')],
    );
  });
});

/**
 * Symlinks under a root: `inside` (the default) follows `run2` (a link to a folder inside the
 * root) and refuses `run3` (a link out of the roots) and `run4` (a link into the state folder,
 * which sits inside the root and is never read).
 */
function linkedRoots(): { dir: string; runs: string; state: string; outside: string } {
  const dir = tempDir();
  const runs = path.join(dir, 'runs');
  const state = path.join(runs, 'state');
  const outside = path.join(dir, 'outside');
  const rh = (run: string): string => {
    const d = path.join(run, 'outputs', 'selector_round1');
    mkdirSync(d, { recursive: true });
    const f = path.join(d, 'reward_history.jsonl');
    writeFileSync(f, '{"step": 1, "boundary": 0.5}\n{"step": 2, "boundary": 0.6}\n');
    return f;
  };
  rh(path.join(runs, 'run1'));
  rh(path.join(runs, '.store', 'run2'));
  rh(path.join(outside, 'run3'));
  rh(state);
  symlinkSync(path.join(runs, '.store', 'run2'), path.join(runs, 'run2'));
  symlinkSync(path.join(outside, 'run3'), path.join(runs, 'run3'));
  symlinkSync(state, path.join(runs, 'run4'));
  return { dir, runs, state, outside };
}

function reachConfig(dir: string, state: string, watch = ''): string {
  const file = path.join(dir, 'reach.yaml');
  writeFileSync(
    file,
    `state_dir: ${state}\nwatch: {status_interval: 200ms, checkpoint_interval: 200ms, sweep_interval: 300ms${watch}}\nlog: {format: json}\n`,
  );
  return file;
}

describe('barwatch watch: how far it reaches', () => {
  test('a link out of the roots is reported once and not followed, a link inside is; the state folder is never read', async () => {
    const { dir, runs, state, outside } = linkedRoots();
    const d = new DaemonProcess([runs, '--config', reachConfig(dir, state)]);
    await d.waitFor(status(4));
    // Sweeps walk the roots again: nothing more is read and nothing is reported twice.
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(await d.stop(), 0);
    const out = d.logs.filter((l) => l['code'] === 'ELINKOUT');
    assert.equal(out.length, 1, JSON.stringify(out));
    assert.equal(out[0]!['path'], path.join(runs, 'run3'));
    assert.match(
      out[0]!.msg,
      new RegExp(`leads to ${outside}/run3, outside the watched roots; not followed \\(watch.follow_symlinks: inside`),
    );
    assert.deepEqual(
      d.logs.filter((l) => l.msg === 'discovered run').map((l) => path.basename(l['run'] as string)),
      ['run1', 'run2'],
    );
    const last = d.logs.filter((l) => l.msg.startsWith('status:')).at(-1)!;
    assert.equal(last['records'], 4, 'run1 and run2, two records each');
  });

  test('analyze reaches as watch does; follow_symlinks all and none change it; max_files caps a root with a message', () => {
    const { dir, runs, state } = linkedRoots();
    type Problem = { path: string; reason: string };
    const read = (watch: string): { runs: string[]; problems: string } => {
      const r = barwatch(['analyze', runs, '--config', reachConfig(dir, state, watch), '--format', 'json']);
      const doc = JSON.parse(r.stdout) as { runs: { run: string; problems: Problem[] }[]; problems: Problem[] };
      const problems = [...doc.problems, ...doc.runs.flatMap((x) => x.problems)].map((p) => `${p.path}: ${p.reason}`);
      return { runs: doc.runs.map((x) => path.basename(x.run)).sort(), problems: problems.join('\n') };
    };
    const inside = read('');
    assert.deepEqual(inside.runs, ['run1', 'run2']);
    assert.match(inside.problems, /run3: leads to .*outside the watched roots/);
    assert.deepEqual(read(', follow_symlinks: all').runs, ['run1', 'run2', 'run3'], 'all: the state folder is still never read');
    const none = read(', follow_symlinks: none');
    assert.deepEqual(none.runs, ['run1']);
    assert.match(none.problems, /run2: a symlink to .*not followed \(watch.follow_symlinks: none\)/);
    const capped = read(', follow_symlinks: all, max_files: 2');
    assert.equal(capped.runs.length, 2);
    const caps = capped.problems.match(/holds more than 2 files to follow/g) ?? [];
    assert.equal(caps.length, 1, 'the cap is reported once');
  });
});

describe('barwatch watch: SIGHUP', () => {
  test('an invalid config is refused with its problems and the old one kept; a valid one applies without re-sending', async () => {
    const dir = tempDir();
    const sel = path.join(dir, 'runs', 'r1', 'outputs', 'selector_round1');
    mkdirSync(sel, { recursive: true });
    writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": NaN}\n{"step": 2, "boundary": 0.5, "rollouts": 2}\n');
    const cfg = config(dir);
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg.startsWith('firing: nonfinite-reward'));
    await d.waitFor((l) => l.msg.startsWith('firing: low-rollouts'));
    writeFileSync(cfg, readFileSync(cfg, 'utf8') + 'detectors:\n  low-rollouts: {min_k: "five"}\n');
    d.child.kill('SIGHUP');
    await d.waitFor((l) => l.msg === 'SIGHUP: new configuration refused; the running one stays');
    assert.ok(d.logs.some((l) => l.msg.endsWith('detectors.low-rollouts.min_k: must be a number, not a string')));
    // What applies at once is applied and named; what a running daemon cannot change is named too.
    writeFileSync(
      cfg,
      readFileSync(cfg, 'utf8').replace('{min_k: "five"}', '{enabled: false}') +
        'parse: {max_line_bytes: 4096}\nsummary: {cron: "0 6 * * *"}\n',
    );
    d.child.kill('SIGHUP');
    const reloaded = await d.waitFor((l) => l.msg.startsWith('configuration reloaded'));
    assert.equal(
      reloaded.msg,
      'configuration reloaded: detectors.low-rollouts.enabled applied; parse.max_line_bytes, summary.cron take effect at the next restart',
    );
    await d.waitFor((l) => l.msg.startsWith('resolved: low-rollouts'));
    assert.equal(await d.stop(), 0);
    const alerts = readFileSync(path.join(dir, 'state', 'alerts.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { status: string; detector: string });
    assert.deepEqual(alerts.map((a) => `${a.status}:${a.detector}`).sort(), [
      'firing:low-rollouts',
      'firing:nonfinite-reward',
      'resolved:low-rollouts',
    ]);
  });
});

describe('barwatch watch: SIGHUP with a FIFO as the config', () => {
  test('the FIFO is refused at once as not a regular file; the daemon does not wait for a writer', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'runs'));
    const cfg = config(dir);
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    rmSync(cfg);
    assert.equal(spawnSync('mkfifo', [cfg]).status, 0);
    d.child.kill('SIGHUP');
    await d.waitFor((l) => l.msg === 'SIGHUP: new configuration refused; the running one stays');
    assert.ok(
      d.logs.some((l) => l.msg.includes('not a regular file')),
      JSON.stringify(d.logs.map((l) => l.msg)),
    );
    // Still at work: status lines go on.
    const from = d.logs.length;
    await d.waitFor((l) => d.logs.indexOf(l) >= from && l.msg.startsWith('status:'));
    assert.equal(await d.stop(), 0);
  });
});

describe('barwatch watch and simulate: paths as users type them', () => {
  test('a root with a space, #, % and non-ASCII in its name is watched, relative or absolute; simulate writes there', async () => {
    const base = tempDir();
    const name = 'my runs #1 100% données';
    const root = path.join(base, name);
    mkdirSync(root);
    const sim = barwatch(['simulate', path.join(name, 'sim run'), '--scenario', 'healthy', '--rounds', '1'], { cwd: base });
    assert.equal(sim.status, 0, sim.stderr);
    assert.ok(existsSync(path.join(root, 'sim run', 'outputs', 'selector_round1', 'reward_history.jsonl')));
    const d = new DaemonProcess([name], { cwd: base, env: { XDG_STATE_HOME: path.join(base, 'state-home') } });
    const found = await d.waitFor((l) => l.msg === 'discovered run');
    assert.equal(found['run'], path.join(root, 'sim run'));
    const watching = await d.waitFor((l) => l.msg === 'watching');
    assert.deepEqual(watching['roots'], [root]);
    assert.equal(await d.stop(), 0);
  });
});

describe('barwatch watch: one daemon per state folder', () => {
  test('a second daemon on the same state folder refuses to start, naming the PID; the first loses nothing', async () => {
    const dir = tempDir();
    const run = path.join(dir, 'runs', 'r1', 'outputs', 'selector_round1');
    mkdirSync(run, { recursive: true });
    writeFileSync(path.join(run, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n');
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {checkpoint_interval: 100ms}\nlog: {format: json}\n`);
    const first = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await first.waitFor((l) => l.msg === 'watching');
    const second = barwatch(['watch', path.join(dir, 'other'), '--config', cfg, '--listen', 'off']);
    assert.equal(second.status, 2);
    assert.match(second.stderr, new RegExp(`state folder .*/state is in use by barwatch PID ${first.child.pid}`));
    assert.equal(await first.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    assert.deepEqual(
      state.runs.map((r) => r.id),
      [path.join(dir, 'runs', 'r1')],
    );
    assert.ok(!existsSync(path.join(dir, 'state', 'lock')), 'the lock is released on stop');
  });

  test('a lock left by a killed daemon is taken over; watch PATH without a config keeps state per set of roots', async () => {
    const dir = tempDir();
    const env = { XDG_STATE_HOME: path.join(dir, 'xdg') };
    mkdirSync(path.join(dir, 'a'));
    mkdirSync(path.join(dir, 'b'));
    const a = new DaemonProcess([path.join(dir, 'a')], { env });
    const watching = await a.waitFor((l) => l.msg === 'watching');
    const stateA = watching['stateDir'] as string;
    assert.ok(stateA.startsWith(path.join(dir, 'xdg', 'barwatch', 'a-')), stateA);
    a.child.kill('SIGKILL');
    await a.exited;
    assert.ok(existsSync(path.join(stateA, 'lock')), 'kill -9 leaves the lock');
    const again = new DaemonProcess([path.join(dir, 'a')], { env });
    const took = await again.waitFor((l) => l.msg.startsWith('took over the state folder'));
    assert.equal(took['pid'], a.child.pid);
    // Another root, another state folder: both run side by side.
    const b = new DaemonProcess([path.join(dir, 'b')], { env });
    const wb = await b.waitFor((l) => l.msg === 'watching');
    assert.notEqual(wb['stateDir'], stateA);
    assert.equal(await b.stop(), 0);
    assert.equal(await again.stop(), 0);
  });
});
