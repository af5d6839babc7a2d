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
import { fork } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { arg, cpuTime, followNewBytes, jsonlLine, report, RUN_FILES, runTree, usage, Watcher } from './common.js';

function bareFollower(files: string[]): void {
  let lines = 0;
  followNewBytes(files, (_f, text) => {
    for (const line of text.split('\n')) if (line !== '') lines += (JSON.parse(line) as { step: number }).step > 0 ? 1 : 0;
  });
  process.send!('ready');
  process.on('SIGTERM', () => process.exit(lines > 0 ? 0 : 1));
}

/** One line a second to each file, for `seconds`, from step `from`. */
async function write(files: string[], seconds: number, from: number): Promise<void> {
  let next = Date.now();
  for (let s = 0; s < seconds; s++) {
    for (const f of files) appendFileSync(f, jsonlLine(from + s));
    next += 1000;
    await sleep(Math.max(0, next - Date.now()));
  }
}

async function cpuWhile(pid: number, during: Promise<unknown>): Promise<number> {
  const a = cpuTime(pid);
  const t0 = Date.now();
  await during;
  return (100 * (cpuTime(pid) - a)) / ((Date.now() - t0) / 1000);
}

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
    await sleep(70_000);
    const idle = await cpuWhile(w.child.pid!, sleep(seconds * 1000));
    const rssIdle = usage(w.child.pid!).rss;
    const busy = await cpuWhile(w.child.pid!, write(writers, seconds, 2));
    const rssBusy = usage(w.child.pid!).rss;
    await w.until(all.length + runs * seconds, 60_000);
    await w.stop();

    const bare = fork(fileURLToPath(import.meta.url), ['--bare-follower', ...all]);
    await new Promise((resolve) => bare.once('message', resolve));
    await sleep(3000);
    const bareIdle = await cpuWhile(bare.pid!, sleep(Math.min(seconds, 20) * 1000));
    const bareBusy = await cpuWhile(bare.pid!, write(writers, seconds, 2 + seconds));
    const bareRss = usage(bare.pid!).rss;
    bare.kill();

    const mb = (x: number): string => (x / 1e6).toFixed(0);
    report(
      'scale',
      `${runs} runs x ${RUN_FILES.length} files (${all.length} files): start-up, memory, idle (${seconds} s from 70 s after the catch-up) and ${runs} lines/s (one line a second per run, ${seconds} s); CPU in % of one core`,
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

if (process.argv[2] === '--bare-follower') bareFollower(process.argv.slice(3));
else if (process.argv[1]?.endsWith('scale.js')) await main();
