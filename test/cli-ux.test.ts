/**
 * Small traps of the command line: simulate into a folder that holds a run, a relative run path
 * for a silence, removing a silence by the beginning of its id, hints that name the command as
 * it was run.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { barwatch } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

describe('command line', () => {
  test('simulate refuses a folder that already holds files unless --force; its hint names the command as run', () => {
    const dir = path.join(tempDir(), 'sim');
    const first = barwatch(['simulate', dir, '--rounds', '1']);
    assert.equal(first.status, 0, first.stderr);
    assert.match(first.stdout, /check with: node .*bin\/barwatch\.js analyze ".*\/sim"/);
    const again = barwatch(['simulate', dir, '--rounds', '1']);
    assert.equal(again.status, 2);
    assert.match(
      again.stderr,
      /already holds 2 entries: a second run would be appended to the same logs; choose an empty folder, or add --force/,
    );
    assert.equal(barwatch(['simulate', dir, '--rounds', '1', '--force']).status, 0);
  });

  test('silence add takes a relative run from here and warns when it matches no known run; remove takes a unique prefix', () => {
    const dir = tempDir();
    const state = path.join(dir, 'state');
    mkdirSync(state);
    const runA = path.join(dir, 'runs', 'a');
    writeFileSync(path.join(state, 'state.json'), JSON.stringify({ version: 1, savedAt: 'x', files: {}, runs: [{ id: runA }] }));
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${state}\n`);
    const ok = barwatch(['silence', 'add', '--run', 'runs/a', '--for', '1h', '--config', cfg], { cwd: dir });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`on ${runA.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} until`));
    // It says which config and state folder it used, and warns of nothing.
    assert.match(ok.stderr, /^barwatch: config .*; state folder .*\n$/);
    const typo = barwatch(['silence', 'add', '--run', 'runs/b', '--for', '1h', '--config', cfg], { cwd: dir });
    assert.equal(typo.status, 0);
    assert.match(typo.stderr, /warning: .*runs\/b matches none of the 1 run\(s\)/);
    const ids = [...barwatch(['silence', 'list', '--config', cfg]).stdout.matchAll(/^(\w+)\s/gm)].map((m) => m[1]!);
    assert.equal(ids.length, 2);
    const gone = barwatch(['silence', 'remove', ids[0]!.slice(0, 5), '--config', cfg]);
    assert.equal(gone.status, 0, gone.stderr);
    assert.match(gone.stdout, new RegExp(`silence ${ids[0]} removed`));
    assert.equal(barwatch(['silence', 'remove', 'zzzz', '--config', cfg]).status, 2);
    assert.equal(barwatch(['silence', 'remove', '', '--config', cfg]).status, 2, 'an empty id is refused');
  });
});
