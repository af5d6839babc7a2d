/**
 * The npm package installs and runs: a copy of the repository is packed (its prepack
 * builds), the tarball is installed into a fresh prefix as a user would install it, and the
 * installed binary answers --version and analyzes a run. The tarball carries what runs and its
 * documents, none of the tests, benches or TypeScript sources.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, symlinkSync, utimesSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { REPO, tempDir } from './helpers/fs.js';
import { writeRun } from './helpers/run.js';

const TOP_LEVEL_SKIPPED = new Set(['node_modules', 'dist', '.git', '.barwatch', 'bench/results']);

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): { stdout: string; stderr: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: { ...process.env, ...env }, timeout: 240_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('the npm package', () => {
  test('packs with its build, installs into a fresh prefix, and the installed barwatch runs', () => {
    const work = tempDir();
    const copy = path.join(work, 'barwatch');
    cpSync(REPO, copy, {
      recursive: true,
      filter: (src) => !TOP_LEVEL_SKIPPED.has(path.relative(REPO, src)),
    });
    // The build needs the dev tools (typescript); they are the repository's own.
    symlinkSync(path.join(REPO, 'node_modules'), path.join(copy, 'node_modules'));
    const packed = run('npm', ['pack', '--json', '--pack-destination', work], copy);
    const info = (JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[])[0]!;
    const files = info.files.map((f) => f.path);
    assert.ok(files.includes('dist/src/cli.js'), 'the build is in the package');
    for (const must of [
      'bin/barwatch.js',
      'bin/package.json',
      'dist/bundle/barwatch.cjs',
      'dist/bundle/barwatch.cjs.cache',
      'web/app.js',
      'config/barwatch.example.yaml',
      'systemd/barwatch.service',
      'README.md',
      'LICENSE',
    ])
      assert.ok(files.includes(must), `${must} is in the package`);
    const stray = files.filter((f) => /^(test|bench|scripts|src)\//.test(f) || f.startsWith('dist/test/') || f.endsWith('.ts'));
    assert.deepEqual(stray, [], 'no tests, benches or TypeScript sources');

    const prefix = path.join(work, 'prefix');
    const installed = run(
      'npm',
      ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', path.join(work, info.filename)],
      work,
    );
    // The package carries its build: nothing to run at install, so npm has nothing to warn about.
    assert.doesNotMatch(installed.stdout + installed.stderr, /install-scripts|prepare/, 'npm warns at install');
    const bin = path.join(prefix, 'bin', 'barwatch');
    assert.ok(existsSync(bin), 'the barwatch command is installed');
    // npm unpacks with the time of unpacking, in the tarball's order (dist/bundle before
    // dist/src): an installed bundle may look older than the modules and is used all the same.
    const installedRoot = path.join(prefix, 'lib', 'node_modules', 'barwatch');
    const past = new Date(Date.now() - 60_000);
    utimesSync(path.join(installedRoot, 'dist', 'bundle', 'barwatch.cjs'), past, past);
    const version = (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    const started = run(bin, ['--version'], work, { BARWATCH_START_INFO: '1' });
    assert.equal(started.stdout.trim(), version);
    // The package carries the bundle and the code cache its build wrote, for this Node.
    assert.match(started.stderr, /started from \S+dist\/bundle\/barwatch\.cjs \(code cache used\)/);

    const runDir = path.join(work, 'runs', 'bar-rag-seed1');
    writeRun(runDir, 2, 40);
    const r = spawnSync(bin, ['analyze', runDir, '--format', 'json'], { cwd: work, encoding: 'utf8' });
    assert.ok(r.status === 0 || r.status === 1, `analyze exited ${r.status}: ${r.stderr}`);
    const doc = JSON.parse(r.stdout) as { runs: { run: string; rounds: unknown[] }[] };
    assert.deepEqual(
      doc.runs.map((x) => [x.run, x.rounds.length]),
      [[runDir, 4]],
    );
  });
});
