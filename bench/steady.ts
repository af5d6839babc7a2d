/**
 * Memory under a steady load: `barwatch watch` over 200 runs x 4 files while each run's
 * reward_history.jsonl grows one line every 50 ms (4,000 lines/s) for 10 minutes; RSS sampled
 * every 10 s. Issue 20's target: RSS flat after the first minute (at most 10% above its value at
 * one minute). Not part of `npm run bench` (10 minutes by itself); reported in BENCHMARKS.md.
 *
 *   node dist/bench/steady.js [--runs N] [--minutes M]
 */
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { arg, cpuTime, jsonlLine, report, runTree, usage, Watcher } from './common.js';

export async function main(): Promise<void> {
  const runs = arg('runs', 200, 50);
  const minutes = arg('minutes', 10, 2);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-steady-'));
  try {
    const { writers, cfg } = runTree(dir, runs);
    const w = new Watcher([path.join(dir, 'runs'), '--config', cfg, '--listen', 'off']);
    await w.until(0);
    const pid = w.child.pid!;
    const samples: { s: number; rss: number; cpu: number }[] = [];
    const t0 = Date.now();
    const cpu0 = cpuTime(pid);
    let next = t0;
    let nextSample = t0 + 10_000;
    for (let step = 2; Date.now() - t0 < minutes * 60_000; step++) {
      for (const f of writers) appendFileSync(f, jsonlLine(step));
      next += 50;
      if (Date.now() >= nextSample) {
        samples.push({ s: Math.round((Date.now() - t0) / 1000), rss: usage(pid).rss, cpu: cpuTime(pid) - cpu0 });
        nextSample += 10_000;
      }
      await sleep(Math.max(0, next - Date.now()));
    }
    await w.stop();
    const atMinute = samples.find((x) => x.s >= 60)!;
    const after = samples.filter((x) => x.s > atMinute.s);
    const max = Math.max(...after.map((x) => x.rss));
    const min = Math.min(...after.map((x) => x.rss));
    const last = samples[samples.length - 1]!;
    const mb = (x: number): string => (x / 1e6).toFixed(0);
    const pct = (x: number): string => `${((100 * (x - atMinute.rss)) / atMinute.rss).toFixed(1)}%`;
    report(
      'steady',
      `RSS of barwatch watch over ${runs} runs, each appending a line every 50 ms (${runs * 20} lines/s), for ${minutes} minutes; sampled every 10 s`,
      ['measure', 'value'],
      [
        ['RSS at 1 minute', `${mb(atMinute.rss)} MB`],
        ['RSS after the first minute: min / max', `${mb(min)} / ${mb(max)} MB (max ${pct(max)} of the 1-minute value)`],
        [`RSS at the end (${last.s} s)`, `${mb(last.rss)} MB (${pct(last.rss)})`],
        ['CPU over the whole run', `${((100 * last.cpu) / last.s).toFixed(1)}% of one core`],
        ['every sample (s: MB)', samples.map((x) => `${x.s}: ${mb(x.rss)}`).join(', ')],
      ],
      { runs, minutes, samples },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('steady.js')) await main();
