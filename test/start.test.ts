/**
 * How the command starts (bin/barwatch.js, issue 32): from the bundle the build writes, with
 * V8's code cache, when the bundle is as new as the compiled modules; from the modules
 * otherwise. Either way the same program: `analyze` gives the same report, and a code cache
 * V8 refuses (another Node's, or a damaged one) costs time, never a result.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BIN, REPO, tempDir } from './helpers/fs.js';
import { writeRun } from './helpers/run.js';

function start(bin: string, args: string[]): { status: number | null; stdout: string; how: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, BARWATCH_START_INFO: '1' } });
  const how = /^barwatch: (started from .*)$/m.exec(r.stderr)?.[1] ?? `(not said) ${r.stderr}`;
  return { status: r.status, stdout: r.stdout, how };
}

/** A copy of the checkout's program (bin/, dist/, src/, package.json; node_modules linked), to change its files. */
function copyProgram(): string {
  const dir = path.join(tempDir(), 'barwatch');
  for (const part of ['bin', 'dist', 'src', 'package.json'])
    cpSync(path.join(REPO, part), path.join(dir, part), { recursive: true, preserveTimestamps: true });
  symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

describe('start-up', () => {
  const run = path.join(tempDir(), 'runs', 'bar-rag-seed1');
  writeRun(run, 2, 40);

  test('the checkout starts from its bundle with the code cache (run `npm run build` after `tsc`)', () => {
    const r = start(BIN, ['--version']);
    assert.equal(r.status, 0);
    assert.equal(r.how, `started from ${path.join(REPO, 'dist', 'bundle', 'barwatch.cjs')} (code cache used)`);
  });

  test('in a checkout, an older bundle is not used: the compiled modules are, and analyze reports the same', () => {
    const fromBundle = start(BIN, ['analyze', run, '--format', 'json']);
    assert.match(fromBundle.how, /barwatch\.cjs \(code cache used\)$/);
    const dir = copyProgram();
    const old = new Date(Date.now() - 3600_000);
    utimesSync(path.join(dir, 'dist', 'bundle', 'barwatch.cjs'), old, old);
    const fromModules = start(path.join(dir, 'bin', 'barwatch.js'), ['analyze', run, '--format', 'json']);
    assert.equal(fromModules.how, `started from ${path.join(dir, 'dist', 'src', 'cli.js')} (the bundle is older)`);
    assert.equal(fromModules.status, fromBundle.status);
    assert.ok(fromBundle.stdout.length > 1000, 'a report');
    assert.equal(fromModules.stdout, fromBundle.stdout);
  });

  test('a code cache V8 refuses is compiled past: the same report', () => {
    const dir = copyProgram();
    const cache = path.join(dir, 'dist', 'bundle', 'barwatch.cjs.cache');
    writeFileSync(cache, Buffer.alloc(4096, 7));
    const r = start(path.join(dir, 'bin', 'barwatch.js'), ['analyze', run, '--format', 'json']);
    assert.match(r.how, /barwatch\.cjs \(code cache refused\)$/);
    assert.equal(r.stdout, start(BIN, ['analyze', run, '--format', 'json']).stdout);
  });
});
