/**
 * Ingest throughput: `barwatch analyze` on a generated reward_history.jsonl against the physical
 * limit in Node (a bare loop that reads the file in chunks, splits lines and JSON.parses each),
 * measured in the same run, several repetitions, median and spread.
 *
 *   npm run bench -- [--lines N] [--reps R]
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync, closeSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(REPO, 'bin', 'barwatch.js');

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

/** ~150-byte canonical selector lines. */
function generate(file: string, lines: number): void {
  const fd = openSync(file, 'w');
  let buf = '';
  for (let i = 1; i <= lines; i++) {
    const x = Math.sin(i * 0.37);
    buf += `{"step": ${i}, "boundary": ${(0.5 + 0.2 * x).toFixed(4)}, "relevance": 0.31, "format": 1.0, "count": -0.5, "total": ${(0.52 + 0.1 * x).toFixed(4)}, "accuracy": 0.47, "boundary_share": 0.28, "rollouts": 10}\n`;
    if (buf.length > 1 << 20) {
      writeSync(fd, buf);
      buf = '';
    }
  }
  writeSync(fd, buf);
  closeSync(fd);
}

/** The baseline: chunks, line split, JSON.parse; nothing else. */
async function bareLoop(file: string): Promise<number> {
  let rest = '';
  let n = 0;
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 18 })) {
    const text = rest + (chunk as string);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      JSON.parse(text.slice(start, nl));
      n++;
      start = nl + 1;
    }
    rest = text.slice(start);
  }
  return n;
}

function stats(xs: number[]): { median: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, min: s[0]!, max: s[s.length - 1]! };
}

async function main(): Promise<void> {
  const lines = arg('lines', 1_000_000);
  const reps = arg('reps', 3);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-'));
  try {
    const run = path.join(dir, 'run', 'outputs', 'selector_round1');
    mkdirSync(run, { recursive: true });
    const file = path.join(run, 'reward_history.jsonl');
    generate(file, lines);
    const bytes = statSync(file).size;
    const bare: number[] = [];
    const barwatch: number[] = [];
    for (let r = 0; r < reps; r++) {
      let t = process.hrtime.bigint();
      const n = await bareLoop(file);
      bare.push(Number(process.hrtime.bigint() - t) / 1e9);
      if (n !== lines) throw new Error(`bare loop read ${n} lines`);
      t = process.hrtime.bigint();
      const out = spawnSync(process.execPath, [BIN, 'analyze', path.join(dir, 'run'), '--format', 'json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
      barwatch.push(Number(process.hrtime.bigint() - t) / 1e9);
      if (out.status !== 0 && out.status !== 1) throw new Error(`analyze failed: ${out.stderr}`);
      const steps = (JSON.parse(out.stdout) as { runs: { rounds: { steps: number }[] }[] }).runs[0]!.rounds[0]!.steps;
      if (steps !== lines) throw new Error(`analyze read ${steps} steps`);
    }
    const b = stats(bare);
    const w = stats(barwatch);
    const row = (name: string, s: { median: number; min: number; max: number }): string =>
      `| ${name} | ${(lines / s.median).toFixed(0)} | ${(bytes / 1e6 / s.median).toFixed(1)} | ${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)}) |`;
    const table = [
      `ingest of a ${lines}-line reward_history.jsonl (${(bytes / 1e6).toFixed(0)} MB), ${reps} repetitions, median (min-max)`,
      '| reader | lines/s | MB/s | seconds |',
      '|---|---|---|---|',
      row('bare loop (read, split, JSON.parse)', b),
      row('barwatch analyze (whole process)', w),
      `ratio barwatch / bare loop: ${(b.median / w.median).toFixed(2)}`,
    ].join('\n');
    console.log(table);
    const outDir = path.join(REPO, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, 'ingest.json'), JSON.stringify({ lines, bytes, reps, bare, barwatch, node: process.version }, null, 2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
