/**
 * Start-up: the wall time of `barwatch analyze` on a run of one 50-line file (all of it start-up:
 * reading the file takes well under a millisecond), against `node -e ''` (Node's own start, the
 * floor) and against the same build run from its compiled modules (dist/src/cli.js, no bundle:
 * what the bundle and its code cache save). Kinds interleave, `reps` times; median and spread.
 * Issue 32's target: under 0.3 s.
 *
 *   node dist/bench/startup.js [--reps R] [--base DIR]
 *
 * `--base DIR`: also bin/barwatch.js of a build in DIR (a clone of another commit, built).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, BIN, jsonlLine, REPO, report, seconds, spread, textArg } from './common.js';

interface Kind {
  name: string;
  argv: (run: string) => string[];
}

export function main(): void {
  const reps = arg('reps', 20, 8);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-startup-'));
  try {
    const run = path.join(dir, 'run');
    const file = path.join(run, 'outputs', 'selector_round1', 'reward_history.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, Array.from({ length: 50 }, (_, i) => jsonlLine(i + 1)).join(''));
    const modules = pathToFileURL(path.join(REPO, 'dist', 'src', 'cli.js')).href;
    const kinds: Kind[] = [
      { name: "node -e '' (Node's own start)", argv: () => ['-e', ''] },
      { name: 'barwatch analyze (bin/barwatch.js: the bundle and its code cache)', argv: (r) => [BIN, 'analyze', r] },
      {
        name: 'barwatch analyze from the compiled modules (dist/src, no bundle)',
        argv: (r) => [
          '--input-type=module',
          '-e',
          `const m = await import(${JSON.stringify(modules)}); await m.main(['node', 'barwatch', 'analyze', ${JSON.stringify(r)}]);`,
        ],
      },
    ];
    const base = textArg('base');
    if (base !== null) kinds.push({ name: `base (${base})`, argv: (r) => [path.join(base, 'bin', 'barwatch.js'), 'analyze', r] });
    const times: Record<string, number[]> = Object.fromEntries(kinds.map((k) => [k.name, [] as number[]]));
    for (let r = 0; r < reps; r++) {
      for (const k of kinds) {
        const t = process.hrtime.bigint();
        const out = spawnSync(process.execPath, k.argv(run), { encoding: 'utf8' });
        times[k.name]!.push(seconds(t));
        if (out.status !== 0) throw new Error(`${k.name} failed (exit ${out.status}): ${out.stderr}`);
      }
    }
    report(
      'startup',
      `Start-up: \`analyze\` of a one-file run of 50 lines, ${reps} interleaved repetitions, wall seconds, median (min-max); target under 0.3 s`,
      ['command', 'seconds', "over Node's own start"],
      kinds.map((k) => {
        const s = spread(times[k.name]!);
        return [
          k.name,
          `${s.median.toFixed(3)} (${s.min.toFixed(3)}-${s.max.toFixed(3)})`,
          `+${((s.median - spread(times[kinds[0]!.name]!).median) * 1000).toFixed(0)} ms`,
        ];
      }),
      { reps, seconds: times },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('startup.js')) main();
