/**
 * Every command finds the same configuration and state folder, as a user meets them: commands run
 * in a folder holding a barwatch.yaml, a daemon and the helper commands sharing its state, a
 * daemon started on PATHs and a summary given the same PATHs.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { barwatch } from './helpers/cli.js';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';

const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('one config and one state folder for every command', () => {
  test('in a folder with a barwatch.yaml: validate, watch, silence and test-alert all use it, and say so', async () => {
    const dir = tempDir();
    const cfg = path.join(dir, 'barwatch.yaml');
    writeFileSync(cfg, 'state_dir: ./daemon-state\nlog: {format: json}\nnotify:\n  alertmanager: {url: http://127.0.0.1:9}\n');
    const env = { BARWATCH_CONFIG: '', XDG_CONFIG_HOME: path.join(dir, 'no-xdg') };
    const v = barwatch(['validate'], { cwd: dir, env });
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stdout, new RegExp(`checking ${esc(cfg)} \\(found in this folder`));
    const state = path.join(dir, 'daemon-state');
    const d = new DaemonProcess([], { cwd: dir, env });
    const using = await d.waitFor((l) => l.msg.startsWith('using config'));
    assert.equal(using['config'], cfg);
    assert.equal(using['state_dir'], state);
    await d.waitFor((l) => l.msg === 'watching');
    const add = barwatch(['silence', 'add', '--run', '**', '--for', '1h'], { cwd: dir, env });
    assert.equal(add.status, 0, add.stderr);
    assert.match(add.stderr, new RegExp(`state folder ${esc(state)} \\(state_dir in ${esc(cfg)}\\)`));
    assert.doesNotMatch(add.stderr, /warning/, 'the daemon has saved its state there');
    const list = barwatch(['silence', 'list'], { cwd: dir, env });
    assert.match(list.stdout, /^\w+\s+\*\s+/m);
    assert.ok(existsSync(path.join(state, 'silences.json')));
    assert.ok(!existsSync(path.join(dir, '.barwatch')), 'nothing went to ./.barwatch');
    const t = barwatch(['test-alert'], { cwd: dir, env });
    assert.match(t.stdout, /^alertmanager: /m, 'the configured channel is tried');
    assert.equal(await d.stop(), 0);
  });

  test('$BARWATCH_CONFIG naming a missing file is an error, not a silent fallback to the defaults', () => {
    const dir = tempDir();
    const r = barwatch(['analyze', dir], { cwd: dir, env: { BARWATCH_CONFIG: path.join(dir, 'nope.yaml') } });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /BARWATCH_CONFIG names .*nope\.yaml, which does not exist/);
  });

  test('a daemon on PATHs and a summary on the same PATHs share a state folder; a summary that finds none says where it looked and how to point it', async () => {
    const dir = tempDir();
    const runs = path.join(dir, 'sims');
    assert.equal(barwatch(['simulate', path.join(runs, 'r1'), '--rounds', '1']).status, 0);
    const env = { XDG_STATE_HOME: path.join(dir, 'xdg'), BARWATCH_CONFIG: '', XDG_CONFIG_HOME: path.join(dir, 'no-xdg') };
    // A config without state_dir: the state folder is the PATHs'.
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, 'log: {format: json}\n');
    const d = new DaemonProcess([runs, '--config', cfg], { cwd: dir, env });
    await d.waitFor((l) => l.msg === 'watching');
    assert.equal(await d.stop(), 0);
    const ok = barwatch(['summary', runs, '--config', cfg], { cwd: dir, env });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /1 run\(s\)/);
    assert.match(
      ok.stderr,
      new RegExp(`state folder ${esc(path.join(dir, 'xdg', 'barwatch'))}/sims-\\w+ \\(the user's state folder for these paths\\)`),
    );
    const none = barwatch(['summary'], { cwd: dir, env });
    assert.equal(none.status, 2);
    assert.match(none.stderr, new RegExp(`no daemon state in ${esc(path.join(dir, '.barwatch'))}`));
    assert.match(none.stderr, /--state-dir DIR/);
    const byDir = barwatch(['summary', '--state-dir', ok.stderr.match(/state folder (\S+)/)![1]!], { cwd: dir, env });
    assert.equal(byDir.status, 0, byDir.stderr);
  });
});
