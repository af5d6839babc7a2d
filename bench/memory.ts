/**
 * Memory growth and catch-up. 100 runs; `barwatch watch` reads 1M records (10k per run), then
 * 9M more are appended while it runs: RSS after 1M and after 10M records (bounded statistics
 * should keep it flat). Then a fresh start on the whole backlog (10M lines, ~1.5 GB): time to be
 * current, against the bare loop (read, split, JSON.parse) over the same files in the same run.
 *
 *   node dist/bench/memory.js [--runs N] [--first LINES_PER_RUN] [--total LINES_PER_RUN]
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { appendLines, arg, bareLoop, noiseLine, report, seconds, usage, Watcher } from './common.js';

export async function main(): Promise<void> {
  const runs = arg('runs', 100, 20);
  const first = arg('first', 10_000);
  const total = arg('total', 100_000, 50_000);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-memory-'));
  try {
    const files = Array.from({ length: runs }, (_, r) => {
      const f = path.join(dir, 'runs', `run${r}`, 'outputs', 'selector_round1', 'reward_history.jsonl');
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(f, '');
      appendLines(f, 1, first, noiseLine);
      return f;
    });
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {status_interval: 1s}\nhttp: {listen: "127.0.0.1:0"}\nlog: {format: json}\n`);
    let w = new Watcher([path.join(dir, 'runs'), '--config', cfg]);
    await w.until(runs * first);
    await sleep(3000);
    const after1 = usage(w.child.pid!);
    const heap1 = await w.heapUsed();
    for (const f of files) appendLines(f, first + 1, total, noiseLine);
    await w.until(runs * total);
    await sleep(3000);
    const after10 = usage(w.child.pid!);
    const heap10 = await w.heapUsed();
    await w.stop();

    const bytes = files.reduce((a, f) => a + statSync(f).size, 0);
    rmSync(path.join(dir, 'state'), { recursive: true, force: true });
    let t = process.hrtime.bigint();
    w = new Watcher([path.join(dir, 'runs'), '--config', cfg]);
    await w.until(runs * total);
    const catchUp = seconds(t);
    const peak = usage(w.child.pid!);
    await w.stop();
    t = process.hrtime.bigint();
    let n = 0;
    for (const f of files) n += await bareLoop(f);
    const bare = seconds(t);
    if (n !== runs * total) throw new Error(`bare loop read ${n} lines`);

    const mb = (x: number): string => (x / 1e6).toFixed(0);
    report(
      'memory',
      `Memory of barwatch watch over ${runs} runs, and a catch-up on ${(runs * total) / 1e6}M lines (${(bytes / 1e9).toFixed(2)} GB)`,
      ['measure', 'value'],
      [
        [`RSS after ${(runs * first) / 1e6}M records`, `${mb(after1.rss)} MB (V8 heap in use ${mb(heap1)} MB)`],
        [
          `RSS after ${(runs * total) / 1e6}M records`,
          `${mb(after10.rss)} MB, ${((100 * (after10.rss - after1.rss)) / after1.rss).toFixed(1)}% growth (V8 heap in use ${mb(heap10)} MB, ${((100 * (heap10 - heap1)) / heap1).toFixed(1)}% growth)`,
        ],
        [
          'catch-up: barwatch watch, start to current (status seen)',
          `${catchUp.toFixed(1)} s (${((runs * total) / catchUp).toFixed(0)} lines/s), RSS then ${mb(peak.rss)} MB`,
        ],
        [
          'catch-up: bare loop over the same files',
          `${bare.toFixed(1)} s (${((runs * total) / bare).toFixed(0)} lines/s); ratio ${(bare / catchUp).toFixed(2)}`,
        ],
      ],
      { runs, first, total, bytes, rss1: after1.rss, rss10: after10.rss, heap1, heap10, catchUp, bare, peakRss: peak.rss },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('memory.js')) await main();
