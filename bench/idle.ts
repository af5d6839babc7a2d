/**
 * Idle cost: CPU and RSS of `barwatch watch` over 200 runs x 4 files with nothing written, and the
 * same for the bare follower of the same files (bench/common.ts: it reads, splits and parses what
 * is new, nothing more), measured in the same run. CPU is the time of all threads
 * (/proc/<pid>/task/<tid>/schedstat). Growing files are bench/follow.ts's.
 *
 * barwatch idles for S seconds (60, as the issue asks), from 70 s after its catch-up; the bare
 * follower S/3 (its cost is steady, and the benchmark suite has to fit 10 minutes on 2 cores).
 *
 *   node dist/bench/idle.js [--runs N] [--seconds S] [--base DIR]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { arg, cpuWhile, QUICK, report, RUN_FILES, runTree, startBareFollower, textArg, usage, Watcher } from './common.js';

async function sample(pid: number, seconds: number): Promise<{ cpuPct: number; rssStart: number; rssEnd: number }> {
  const rssStart = usage(pid).rss;
  const cpuPct = await cpuWhile(pid, sleep(seconds * 1000));
  return { cpuPct, rssStart, rssEnd: usage(pid).rss };
}

/** Wait after the catch-up before the idle phase (see main). */
const SETTLE_MS = QUICK ? 8_000 : 70_000;

export async function main(): Promise<void> {
  const runs = arg('runs', 200, 100);
  const seconds = arg('seconds', 60, 6);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-idle-'));
  try {
    // The default status interval: the first status line, once the catch-up is done, counts every file's line.
    const { all, cfg } = runTree(dir, runs, null);
    const idleOf = async (bin?: string): Promise<{ cpuPct: number; rssStart: number; rssEnd: number }> => {
      rmSync(path.join(dir, 'state'), { recursive: true, force: true });
      const w = new Watcher([path.join(dir, 'runs'), '--config', cfg], {}, bin);
      await w.until(all.length);
      // The start-up settles: about a minute after start V8 shrinks the heap grown while starting
      // (RSS 179 -> 116 MB; 3% of a core for 20 s, main thread and GC workers), once: not idle cost.
      await sleep(SETTLE_MS);
      const s = await sample(w.child.pid!, seconds);
      await w.stop();
      return s;
    };
    const idle = await idleOf();
    // --base DIR: the same for another build (an A/B of a change).
    const base = textArg('base');
    const baseIdle = base === null ? null : await idleOf(path.join(base, 'bin', 'barwatch.js'));

    const bare = await startBareFollower(all);
    await sleep(3000);
    const third = Math.max(1, Math.round(seconds / 3));
    const bareIdle = await sample(bare.pid!, third);
    bare.kill();

    const mb = (x: number): string => (x / 1e6).toFixed(0);
    const row = (name: string, s: { cpuPct: number; rssStart: number; rssEnd: number }): string[] => [
      name,
      s.cpuPct.toFixed(2),
      `${mb(s.rssStart)} -> ${mb(s.rssEnd)}`,
    ];
    report(
      'idle',
      `Cost of watching ${runs} runs x ${RUN_FILES.length} files (${all.length} files) with nothing written: barwatch ${seconds} s from ${SETTLE_MS / 1000} s after its catch-up; bare reader ${third} s (CPU in % of one core, RSS in MB)`,
      ['process', 'CPU %', 'RSS MB'],
      [row('barwatch watch', idle), ...(baseIdle === null ? [] : [row(`base (${base})`, baseIdle)]), row('bare follower', bareIdle)],
      { runs, files: all.length, seconds, settleSeconds: SETTLE_MS / 1000, bareSeconds: third, idle, baseIdle, bareIdle },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('idle.js')) await main();
