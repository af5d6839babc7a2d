/**
 * `barwatch watch` on a terminal (a real pty from util-linux `script`): one line per log entry,
 * each alert printed once as a block, no word about channels when there are none, a banner
 * saying what is watched and how to stop, alerts counted in the status line, colours only when
 * neither NO_COLOR nor --no-color says otherwise.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BIN, tempDir } from './helpers/fs.js';

const SCRIPT = spawnSync('script', ['--version']).status === 0;

/** Runs `barwatch watch` in a pty until its banner is out; what the terminal showed. */
function onTerminal(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const cmd = [process.execPath, BIN, 'watch', ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    const child = spawn('script', ['-q', '-e', '-c', cmd, '/dev/null'], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdin.on('error', () => undefined);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no banner in 20 s:\n${out}`));
    }, 20_000);
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s;
      if (out.includes('Ctrl-C to stop.') && /status: .*active/.test(out)) {
        clearTimeout(timer);
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

describe('barwatch watch on a terminal', { skip: SCRIPT ? false : 'util-linux script is not installed (no pty to test with)' }, () => {
  const dir = tempDir();
  const sel = path.join(dir, 'runs', 'r1', 'outputs', 'selector_round1');
  mkdirSync(sel, { recursive: true });
  writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": NaN}\n');
  const args = [path.join(dir, 'runs'), '--listen', '127.0.0.1:0'];

  test('readable, once, with a banner; NO_COLOR means no colour', async () => {
    const out = await onTerminal(args, { NO_COLOR: '1', XDG_STATE_HOME: path.join(dir, 'xdg1') });
    assert.ok(!out.includes('\x1b['), 'no ANSI colour with NO_COLOR');
    assert.equal(out.match(/FIRING \[critical\] nonfinite-reward/g)?.length, 1, out);
    assert.ok(!/firing: nonfinite-reward/.test(out), 'the alert is not logged a second time');
    assert.ok(!/hold: /.test(out), 'no word about holding for channels that do not exist');
    assert.match(out, /^\[\d\d:\d\d:\d\d\] INFO: discovered run \{"run":".*r1"\}\r?$/m, 'one line per entry, fields after the message');
    assert.match(out, /status: .*; active: 1 critical, 0 warning, 0 info/);
    assert.match(
      out,
      /barwatch is watching .*runs\r?\n {2}config: {7}built-in defaults\r?\n {2}state folder: .*xdg1\/barwatch\/runs-[0-9a-f]{12} \(the user's state folder for these paths\)\r?\n {2}web page: {5}http:\/\/127\.0\.0\.1:\d+\/\r?\n {2}Ctrl-C to stop\./,
    );
  });

  test('colours on a terminal by default, none with --no-color', async () => {
    const coloured = await onTerminal(args, { NO_COLOR: '', XDG_STATE_HOME: path.join(dir, 'xdg2') });
    assert.ok(coloured.includes('\x1b['), 'colours on a terminal');
    const plain = await onTerminal([...args, '--no-color'], { NO_COLOR: '', XDG_STATE_HOME: path.join(dir, 'xdg3') });
    assert.ok(!plain.includes('\x1b['), 'no colour with --no-color');
  });
});

describe('barwatch analyze on a terminal', { skip: SCRIPT ? false : 'util-linux script is not installed (no pty to test with)' }, () => {
  /** What `barwatch analyze ARGS` shows on a pty. */
  const analyzeOnTerminal = (args: string[], env: NodeJS.ProcessEnv = {}): string => {
    const cmd = [process.execPath, BIN, 'analyze', ...args].map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' ');
    const r = spawnSync('script', ['-q', '-e', '-c', cmd, '/dev/null'], {
      env: { ...process.env, NO_COLOR: '', ...env },
      encoding: 'utf8',
    });
    return r.stdout;
  };

  test('severities in colour (critical red, warning yellow); NO_COLOR and --no-color turn it off', async () => {
    const { writeScenario } = await import('./helpers/scenarios.js');
    const root = tempDir();
    writeScenario(path.join(root, 'filter'), 'aggressive-filter', 2);
    writeScenario(path.join(root, 'format'), 'format-heavy', 2);
    const shown = analyzeOnTerminal([root]);
    const esc = String.fromCharCode(27);
    assert.ok(shown.includes(`${esc}[1;31m[critical]${esc}[0m boundary-share-low`), shown);
    assert.ok(shown.includes(`${esc}[33m[warning]${esc}[0m format-dominance`), shown);
    // Colour codes (SGR) only: a busy machine may also draw the progress line, which is no colour.
    const sgr = new RegExp(`${esc}\\[[\\d;]*m`);
    assert.doesNotMatch(analyzeOnTerminal([root], { NO_COLOR: '1' }), sgr);
    assert.doesNotMatch(analyzeOnTerminal([root, '--no-color']), sgr);
  });
});
