/**
 * Scale: `barwatch watch` over 2,000 runs x 4 files (8,000 files) on this machine: the start-up
 * (process start to the first status line counting every file caught up), RSS then and per run,
 * idle CPU (a minute, from 70 s after the catch-up), and CPU while every run appends one line a
 * second to its reward_history.jsonl (2,000 lines/s), against a bare follower of the same files
 * in the same run. CPU is the time of all threads (/proc/<pid>/task/<tid>/schedstat). Not part of
 * `npm run bench` (about 4 minutes); reported in BENCHMARKS.md.
 *
 *   node dist/bench/scale.js [--runs N] [--seconds S]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { appendEvery, arg, cpuWhile, QUICK, report, RUN_FILES, runTree, startBareFollower, usage, Watcher } from './common.js';

/** As in bench/idle.ts: V8 shrinks the heap grown while starting about a minute after start. */
const SETTLE_MS = QUICK ? 8_000 : 70_000;

export async function main(): Promise<void> {
  const runs = arg('runs', 2000, 200);
  const seconds = arg('seconds', 60, 10);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-scale-'));
  try {
    const { all, writers, cfg } = runTree(dir, runs);
    const t0 = Date.now();
    const w = new Watcher([path.join(dir, 'runs'), '--config', cfg, '--listen', 'off']);
    await w.until(all.length);
    const startup = (Date.now() - t0) / 1000;
    const rssStarted = usage(w.child.pid!).rss;
    await sleep(SETTLE_MS);
    const idle = await cpuWhile(w.child.pid!, sleep(seconds * 1000));
    const rssIdle = usage(w.child.pid!).rss;
    const busy = await cpuWhile(w.child.pid!, appendEvery(writers, 1000, seconds, 2));
    const rssBusy = usage(w.child.pid!).rss;
    await w.until(all.length + runs * seconds, 60_000);
    await w.stop();

    const bare = await startBareFollower(all);
    await sleep(3000);
    const bareIdle = await cpuWhile(bare.pid!, sleep(Math.min(seconds, 20) * 1000));
    const bareBusy = await cpuWhile(bare.pid!, appendEvery(writers, 1000, seconds, 2 + seconds));
    const bareRss = usage(bare.pid!).rss;
    bare.kill();

    const mb = (x: number): string => (x / 1e6).toFixed(0);
    report(
      'scale',
      `${runs} runs x ${RUN_FILES.length} files (${all.length} files): start-up, memory, idle (${seconds} s from ${SETTLE_MS / 1000} s after the catch-up) and ${runs} lines/s (one line a second per run, ${seconds} s); CPU in % of one core`,
      ['measure', 'barwatch watch', 'bare follower'],
      [
        ['start-up: start to every file caught up', `${startup.toFixed(1)} s`, ''],
        ['RSS after the start-up / idle / busy', `${mb(rssStarted)} / ${mb(rssIdle)} / ${mb(rssBusy)} MB`, `${mb(bareRss)} MB`],
        ['RSS per run (busy)', `${(rssBusy / runs / 1e3).toFixed(0)} KB`, ''],
        ['idle CPU', `${idle.toFixed(2)}%`, `${bareIdle.toFixed(2)}%`],
        [`CPU at ${runs} lines/s`, `${busy.toFixed(2)}%`, `${bareBusy.toFixed(2)}% (ratio ${(busy / bareBusy).toFixed(2)})`],
      ],
      { runs, files: all.length, seconds, startup, rssStarted, rssIdle, rssBusy, idle, busy, bareIdle, bareBusy, bareRss },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('scale.js')) await main();
