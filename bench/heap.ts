/**
 * Retained memory: the daemon's read path (Pipeline with every detector, as in `watch`) in this
 * process, 100 runs appended to and read in turns; the V8 heap in use after a full garbage
 * collection at 1M and at 5M records. RSS (bench/memory.ts) also counts heap V8 keeps after a
 * burst; this counts what barwatch actually holds. Needs --expose-gc (run.ts re-runs itself so).
 *
 *   node --expose-gc dist/bench/heap.js [--runs N] [--records M]
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/load.js';
import { DetectorEngine } from '../src/detectors/engine.js';
import { silentLogger } from '../src/util/log.js';
import { Pipeline } from '../src/pipeline/pipeline.js';
import { placeFile } from '../src/sources/place.js';
import { arg, noiseLine, report } from './common.js';

async function measure(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  const runs = arg('runs', 100, 20);
  const records = arg('records', 5_000_000, 500_000);
  const chunk = 1000;
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-heap-'));
  try {
    const cfg = loadConfig(null);
    const engine = new DetectorEngine(cfg.detectors);
    const p = new Pipeline({
      parser: cfg.parser,
      tail: cfg.tail,
      stats: cfg.stats,
      now: Date.now,
      log: silentLogger(),
      engine,
      live: true,
    });
    const files = Array.from({ length: runs }, (_, r) => {
      const f = path.join(dir, `run${r}`, 'outputs', 'selector_round1', 'reward_history.jsonl');
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(f, '');
      p.track(f, 'jsonl', placeFile(f, 'jsonl'));
      return f;
    });
    const heap = (): number => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    const points: { records: number; heap: number }[] = [];
    let step = 1;
    let done = 0;
    for (const target of [records / 5, records]) {
      while (done < target) {
        for (const f of files) {
          let b = '';
          for (let i = 0; i < chunk; i++) b += noiseLine(step + i);
          appendFileSync(f, b);
          await p.drain(f);
        }
        step += chunk;
        done += chunk * runs;
        // Keep the disk small: the files restart empty, the statistics keep growing.
        if (step % 20_000 === 1) for (const f of files) writeFileSync(f, '');
      }
      points.push({ records: done, heap: heap() });
    }
    const [a, b] = points as [{ records: number; heap: number }, { records: number; heap: number }];
    const mb = (x: number): string => (x / 1e6).toFixed(1);
    report(
      'heap',
      `Retained V8 heap of the read path (every detector on) over ${runs} runs, after a full GC`,
      ['records', 'heap in use'],
      [
        [`${a.records / 1e6}M`, `${mb(a.heap)} MB`],
        [`${b.records / 1e6}M`, `${mb(b.heap)} MB (${((100 * (b.heap - a.heap)) / a.heap).toFixed(1)}% growth)`],
      ],
      { runs, points },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function main(): Promise<void> {
  if ((globalThis as { gc?: unknown }).gc !== undefined) return measure();
  const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error('heap benchmark failed');
}

if (process.argv[1]?.endsWith('heap.js')) await main();
