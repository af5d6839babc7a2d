/**
 * How the command starts (bin/barwatch.js, issue 32): from the bundle the build writes, with
 * V8's code cache, when the bundle is as new as the compiled modules; from the modules
 * otherwise. Either way the same program: `analyze` gives the same report, and a code cache
 * V8 refuses (another Node's, or a damaged one) costs time, never a result.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BIN, REPO, tempDir } from './helpers/fs.js';
import { writeRun } from './helpers/run.js';
import { historyRecord, runRecord, statsRecord, WandbWriter } from './helpers/wandb-writer.js';

function start(bin: string, args: string[]): { status: number | null; stdout: string; how: string; decoder: string | null } {
  const r = spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { ...process.env, BARWATCH_START_INFO: '1' },
    maxBuffer: 1 << 26,
  });
  const how = /^barwatch: (started from .*)$/m.exec(r.stderr)?.[1] ?? `(not said) ${r.stderr}`;
  return { status: r.status, stdout: r.stdout, how, decoder: /^barwatch: decode thread started from (.*)$/m.exec(r.stderr)?.[1] ?? null };
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

  test('a W&B backlog past 32 MiB is decoded on the decode thread, from the bundle or the compiled modules; without that thread, the same report', () => {
    // ~36 MB: 8,000 rows and system stats padded to ~9 KB every other row.
    const wb = path.join(tempDir(), 'wandb', 'run-20261203_120000-big1');
    const w = new WandbWriter(path.join(wb, 'run-big1.wandb'));
    w.append(runRecord({ project: 'verl-grpo', name: 'big', id: 'big1', start: 1_790_000_000_000, config: {} }));
    for (let s = 1; s <= 8000; s++) {
      w.append(
        historyRecord(
          s,
          { 'critic/score/mean': 0.5 + 0.1 * Math.sin(s / 50), 'actor/entropy': 1 / (1 + s / 2000), 'actor/kl_loss': 0.01 },
          1_790_000_000 + s * 10,
        ),
      );
      if (s % 2 === 0) w.append(statsRecord(1_790_000_000_000 + s * 10_000, 9000));
    }
    w.finish();
    const report = (r: { stdout: string }): string => r.stdout.replace(/"silence_s": ?\d+/g, '');
    const bundled = start(BIN, ['analyze', wb, '--format', 'json']);
    assert.equal(bundled.decoder, path.join(REPO, 'dist', 'bundle', 'decode-worker.cjs'));
    assert.match(bundled.stdout, /"steps": 8000/);
    const dir = copyProgram();
    const old = new Date(Date.now() - 3600_000);
    utimesSync(path.join(dir, 'dist', 'bundle', 'barwatch.cjs'), old, old);
    const modules = start(path.join(dir, 'bin', 'barwatch.js'), ['analyze', wb, '--format', 'json']);
    assert.equal(modules.decoder, path.join(dir, 'dist', 'src', 'sources', 'decode-worker.js'));
    assert.equal(report(modules), report(bundled));
    // No decode thread to start: the reading thread reads every part itself.
    rmSync(path.join(dir, 'dist', 'src', 'sources', 'decode-worker.js'));
    const alone = start(path.join(dir, 'bin', 'barwatch.js'), ['analyze', wb, '--format', 'json']);
    assert.equal(alone.decoder, null);
    assert.equal(alone.status, bundled.status);
    assert.equal(report(alone), report(bundled));
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
