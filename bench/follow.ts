/**
 * Following growing files: CPU of `barwatch watch` over 200 runs x 4 files while one line is
 * appended to each run's reward_history.jsonl every `interval` ms, against a bare follower of the
 * same files measured in the same run (fs.watch on each file, read the new bytes, split lines,
 * JSON.parse each: the least any follower must do). Two paces: 50 ms (4,000 lines/s, a stress)
 * and 1 s (200 lines/s, a training-like pace). Issue 20's target: barwatch <= 3x the bare
 * follower at both.
 *
 *   node dist/bench/follow.js [--runs N] [--seconds S]
 */
import { fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { arg, followNewBytes, jsonlLine, report, RUN_FILES, runTree, usage, Watcher } from './common.js';

/** After the catch-up, before measuring: the daemon's start-up work is done. */
const SETTLE_MS = 10_000;

function bareFollower(files: string[]): void {
  const parsed = { lines: 0 };
  followNewBytes(files, (_f, text) => {
    for (const line of text.split('\n')) if (line !== '') parsed.lines += (JSON.parse(line) as { step: number }).step > 0 ? 1 : 0;
  });
  process.send!('ready');
  // The count is kept where a reader would use it, so the parse cannot be optimised away.
  process.on('SIGTERM', () => process.exit(parsed.lines > 0 ? 0 : 1));
}

/** Appends one line to each file every `intervalMs`, for `seconds`; returns the next step. */
async function write(files: string[], intervalMs: number, seconds: number, from: number): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let step = from;
  let next = Date.now();
  while (Date.now() < end) {
    for (const f of files) appendFileSync(f, jsonlLine(step));
    step++;
    next += intervalMs;
    await sleep(Math.max(0, next - Date.now()));
  }
  return step;
}

/** CPU (% of a core) of `pid` while `during` runs. */
async function cpuWhile(pid: number, during: Promise<unknown>): Promise<number> {
  const a = usage(pid);
  const t0 = Date.now();
  await during;
  const b = usage(pid);
  return (100 * (b.cpu - a.cpu)) / ((Date.now() - t0) / 1000);
}

export async function main(): Promise<void> {
  const runs = arg('runs', 200);
  const seconds = arg('seconds', 20);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-follow-'));
  try {
    const { all, writers, cfg } = runTree(dir, runs);
    const paces = [50, 1000];
    const rounds = arg('rounds', 2);
    // Interleaved: barwatch, barwatch with asynchronous reads (BARWATCH_FOLLOW=async), as before
    // issue 20 (BARWATCH_FOLLOW=chokidar), and the bare follower in
    // turn, `rounds` times per pace; medians reported.
    const kinds = ['barwatch', 'barwatch (async reads)', 'barwatch (chokidar)', 'bare'] as const;
    const samples: Record<string, Record<(typeof kinds)[number], number[]>> = {};
    let step = 2;
    for (const interval of paces) {
      const s: Record<(typeof kinds)[number], number[]> = {
        barwatch: [],
        'barwatch (async reads)': [],
        'barwatch (chokidar)': [],
        bare: [],
      };
      samples[`${interval}ms`] = s;
      for (let round = 0; round < rounds; round++) {
        for (const kind of kinds) {
          if (kind === 'bare') {
            const bare = fork(fileURLToPath(import.meta.url), ['--bare-follower', ...all]);
            await new Promise((resolve) => bare.once('message', resolve));
            await sleep(2000);
            s.bare.push(await cpuWhile(bare.pid!, write(writers, interval, seconds, step)));
            bare.kill();
          } else {
            const w = new Watcher(
              [path.join(dir, 'runs'), '--config', cfg, '--listen', 'off'],
              kind === 'barwatch' ? {} : { BARWATCH_FOLLOW: kind === 'barwatch (chokidar)' ? 'chokidar' : 'async' },
            );
            await w.until(0);
            await sleep(SETTLE_MS);
            s[kind].push(await cpuWhile(w.child.pid!, write(writers, interval, seconds, step)));
            await w.stop();
          }
          step += Math.ceil((seconds * 1000) / interval) + 1;
        }
      }
    }
    const med = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    report(
      'follow',
      `Following ${runs} runs x ${RUN_FILES.length} files while each run's reward_history.jsonl grows one line per interval (${seconds} s each, medians of ${rounds} interleaved rounds; CPU in % of one core)`,
      ['pace', 'lines/s', 'barwatch watch', 'async reads', 'chokidar, async (before)', 'bare follower', 'ratio (target <= 3)', 'before'],
      paces.map((ms) => {
        const s = samples[`${ms}ms`]!;
        const [b, a, c, bare] = [med(s.barwatch), med(s['barwatch (async reads)']), med(s['barwatch (chokidar)']), med(s.bare)];
        return [
          `one line / ${ms} ms per run`,
          String(Math.round((runs * 1000) / ms)),
          b.toFixed(2),
          a.toFixed(2),
          c.toFixed(2),
          bare.toFixed(2),
          (b / bare).toFixed(1),
          (c / bare).toFixed(1),
        ];
      }),
      { runs, seconds, rounds, samples },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--bare-follower') bareFollower(process.argv.slice(3));
else if (process.argv[1]?.endsWith('follow.js')) await main();
