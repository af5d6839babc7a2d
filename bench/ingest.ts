/**
 * Ingest throughput: `barwatch analyze` (the whole process) on a generated 1,000,000-line
 * reward_history.jsonl (~150 bytes a line) and on a 200,000-step verl console log (67 metrics a
 * step, ~2,000 bytes a line, in verl's console format under Ray), against the
 * physical limit in Node measured in the same run (a bare loop that reads the file in chunks,
 * splits lines and JSON.parses each; for the text log, every `key:value` of a step line into
 * names and numbers) and against `jq -c .`
 * where present. Several repetitions, median and spread.
 *
 *   node dist/bench/ingest.js [--lines N] [--steps N] [--reps R]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { appendLines, arg, bareLoop, BIN, jsonlLine, report, seconds, spread, verlLine, type Spread } from './common.js';

function analyzeSteps(dir: string): number {
  const out = spawnSync(process.execPath, [BIN, 'analyze', dir, '--format', 'json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (out.status !== 0 && out.status !== 1) throw new Error(`analyze failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as { runs: { rounds: { steps: number }[] }[] }).runs[0]!.rounds[0]!.steps;
}

const HAVE_JQ = spawnSync('jq', ['--version']).status === 0;

async function measure(
  kind: 'jsonl' | 'text',
  lines: number,
  reps: number,
  dir: string,
): Promise<{ rows: string[][]; data: Record<string, unknown> }> {
  const run = path.join(dir, kind);
  const file = path.join(run, 'outputs', 'selector_round1', kind === 'jsonl' ? 'reward_history.jsonl' : 'train.log');
  appendLines(file, 1, lines, kind === 'jsonl' ? jsonlLine : verlLine);
  const bytes = statSync(file).size;
  const times: Record<string, number[]> = { bare: [], barwatch: [], jq: [] };
  for (let r = 0; r < reps; r++) {
    let t = process.hrtime.bigint();
    const n = await bareLoop(file, kind);
    times['bare']!.push(seconds(t));
    if (n !== lines) throw new Error(`bare loop read ${n} lines`);
    t = process.hrtime.bigint();
    const steps = analyzeSteps(run);
    times['barwatch']!.push(seconds(t));
    if (steps !== lines) throw new Error(`analyze read ${steps} steps of ${lines}`);
    if (HAVE_JQ && kind === 'jsonl') {
      t = process.hrtime.bigint();
      const jq = spawnSync('sh', ['-c', `jq -c . "${file}" > /dev/null`]);
      times['jq']!.push(seconds(t));
      if (jq.status !== 0) throw new Error('jq failed');
    }
  }
  const b = spread(times['bare']!);
  const row = (name: string, s: Spread): string[] => [
    name,
    (lines / s.median).toFixed(0),
    (bytes / 1e6 / s.median).toFixed(1),
    `${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})`,
    (b.median / s.median).toFixed(2),
  ];
  const what = kind === 'jsonl' ? 'reward_history.jsonl' : 'verl console log';
  const rows = [
    row(`${what}: bare loop (${kind === 'jsonl' ? 'JSON.parse per line' : 'every key:value of a step'})`, b),
    row(`${what}: barwatch analyze (whole process)`, spread(times['barwatch']!)),
  ];
  if (times['jq']!.length > 0) rows.push(row(`${what}: jq -c .`, spread(times['jq']!)));
  return { rows, data: { kind, lines, bytes, reps, seconds: times } };
}

export async function main(): Promise<void> {
  const lines = arg('lines', 1_000_000, 100_000);
  const steps = arg('steps', 200_000, 20_000);
  const reps = arg('reps', 3, 1);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-'));
  try {
    const a = await measure('jsonl', lines, reps, dir);
    const b = await measure('text', steps, reps, dir);
    report(
      'ingest',
      `Ingest of ${lines} JSONL lines and ${steps} verl steps, ${reps} repetitions, median (min-max); ratio = bare loop time / reader time`,
      ['reader', 'lines/s', 'MB/s', 'seconds', 'ratio to bare loop'],
      [...a.rows, ...b.rows],
      [a.data, b.data],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('ingest.js')) await main();
