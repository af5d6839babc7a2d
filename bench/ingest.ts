/**
 * Ingest throughput: `barwatch analyze` (the whole process) on a generated 1,000,000-line
 * reward_history.jsonl (~150 bytes a line), on a 200,000-step verl console log (67 metrics a
 * step, ~2,000 bytes a line, in verl's console format under Ray, with every series the
 * training-health detectors read: entropy, KL, grad norms, lengths, validation scores) and on a
 * W&B run file of 30,000 rows twice (28 verl metrics a row, the test writer's; bench/wandb.ts
 * reads 100,000): sine waves through zero, the detectors' worst case, and rows with a healthy
 * verl run's dynamics (bench/wandb.ts writeVerlLike). Each against the physical limit in Node
 * measured in the same run: a bare loop that reads the file in chunks, splits lines and
 * JSON.parses each; for the text log, every `key:value` of a step line into names and numbers;
 * for the run file, its framing walked and every chunk's CRC checked. Each bare loop also runs
 * reading into one buffer used again (bareLoopInPlace, barePartsLoop): the first pays for
 * touching new memory at every chunk, which costs more on some machines than on others (the
 * machine line gives the cost here), the second does not. The run file's bare loop reads no
 * values, where the JSONL loop's JSON.parse does: a third loop reads them too (records put
 * together, each row's keys and values decoded: bench/wandb.ts bareRowsLoop), the last ratio
 * column's reference for it (for the other two, their bare loop). Every bare loop runs in a
 * process of its own (loopInChild), timed there without Node's start, so none meets the heap an
 * earlier one left. And against `jq -c .` where present. Several repetitions, interleaved,
 * median and spread.
 *
 *   node dist/bench/ingest.js [--lines N] [--steps N] [--rows N] [--reps R]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { appendLines, arg, bareLoop, bareLoopInPlace, BIN, jsonlLine, report, seconds, spread, verlLine, type Spread } from './common.js';
import { bareLoop as bareFraming, barePartsLoop, bareRowsLoop, writeLong, writeVerlLike } from './wandb.js';

function analyzeSteps(dir: string): number {
  const out = spawnSync(process.execPath, [BIN, 'analyze', dir, '--format', 'json'], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (out.status !== 0 && out.status !== 1) throw new Error(`analyze failed: ${out.stderr}`);
  return (JSON.parse(out.stdout) as { runs: { rounds: { steps: number }[] }[] }).runs[0]!.rounds[0]!.steps;
}

const HAVE_JQ = spawnSync('jq', ['--version']).status === 0;

interface Input {
  what: string;
  bareWhat: string;
  /** The file, relative to the run folder. */
  file: string;
  write: (file: string, n: number) => void;
  /** The bare loop over the file: how many lines (rows) it read. */
  bare: (file: string, n: number) => Promise<number> | number;
  /** The same loop reading into one buffer used again (no new memory per chunk: see bareLoopInPlace). */
  bareInPlace: (file: string, n: number) => number;
  /**
   * Where the bare loop reads no values (the run file's walks the framing only), a bare loop that
   * reads them, as JSON.parse does in the JSONL loop: what it did, and how many rows it read.
   */
  bareReading?: { what: string; run: (file: string) => number };
  jq: boolean;
}

/** A line-per-record input: lines made by `line(i)`, the bare loop over them of its `kind`. */
function lines(kind: 'jsonl' | 'text', what: string, bareWhat: string, file: string, line: (i: number) => string): Input {
  return {
    what,
    bareWhat,
    file,
    write: (f, n) => appendLines(f, 1, n, line),
    bare: (f) => bareLoop(f, kind),
    bareInPlace: (f) => bareLoopInPlace(f, kind),
    jq: kind === 'jsonl',
  };
}

const INPUTS: Record<'jsonl' | 'text' | 'wandb' | 'wandbVerl', Input> = {
  jsonl: lines('jsonl', 'reward_history.jsonl', 'JSON.parse per line', 'outputs/selector_round1/reward_history.jsonl', jsonlLine),
  text: lines('text', 'verl console log', 'every key:value of a step', 'outputs/selector_round1/train.log', verlLine),
  wandb: runFile('W&B run file (sine rows)', 'bench1', writeLong),
  wandbVerl: runFile('W&B run file (verl-like rows)', 'bench2', writeVerlLike),
};

/** A W&B run file written by `write`, against the framing walk and the loop that reads its rows. */
function runFile(what: string, id: string, write: (file: string, n: number) => void): Input {
  return {
    what,
    bareWhat: 'framing walked, every CRC checked',
    file: `wandb/run-20261202_120000-${id}/run-${id}.wandb`,
    write,
    // The bare loop counts chunks: one a row at least, besides the run and exit records.
    bare: (file, n) => (bareFraming(file) >= n + 2 ? n : -1),
    bareInPlace: (file, n) => (barePartsLoop(file) >= n + 2 ? n : -1),
    bareReading: { what: "records put together, each row's keys and values decoded", run: bareRowsLoop },
    jq: false,
  };
}

type Loop = 'bare' | 'inPlace' | 'reading';

/**
 * Runs one bare loop in a process of its own and returns its time (the loop alone, timed in that
 * process) and what it read. Each loop meets a fresh heap, as `analyze` does: run one after another
 * in this process, a loop ran after the 1M-line JSONL loops with the heap they left, and the W&B
 * rows loop took 1.26-1.34 s there against 0.67-0.72 s with small inputs before it.
 */
function loopInChild(kind: keyof typeof INPUTS, loop: Loop, file: string, n: number): { seconds: number; read: number } {
  const out = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--loop', kind, loop, file, String(n)], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`${kind}: the ${loop} loop failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as { seconds: number; read: number };
}

/** In the child loopInChild starts: the loop, timed, and a line of JSON. */
async function runLoop(kind: keyof typeof INPUTS, loop: Loop, file: string, n: number): Promise<void> {
  const input = INPUTS[kind];
  const t = process.hrtime.bigint();
  const read =
    loop === 'bare' ? await input.bare(file, n) : loop === 'inPlace' ? input.bareInPlace(file, n) : (input.bareReading?.run(file) ?? -1);
  process.stdout.write(`${JSON.stringify({ seconds: seconds(t), read })}\n`);
}

function measure(kind: keyof typeof INPUTS, n: number, reps: number, dir: string): { rows: string[][]; data: Record<string, unknown> } {
  const input = INPUTS[kind];
  const run = path.join(dir, kind);
  const file = path.join(run, input.file);
  input.write(file, n);
  const bytes = statSync(file).size;
  const times: Record<string, number[]> = { bare: [], inPlace: [], reading: [], barwatch: [], jq: [] };
  for (let r = 0; r < reps; r++) {
    const bare = loopInChild(kind, 'bare', file, n);
    times['bare']!.push(bare.seconds);
    if (bare.read !== n) throw new Error(`${kind}: the bare loop read ${bare.read} of ${n}`);
    const inPlace = loopInChild(kind, 'inPlace', file, n);
    times['inPlace']!.push(inPlace.seconds);
    if (inPlace.read !== n) throw new Error(`${kind}: the bare loop in one buffer read ${inPlace.read} of ${n}`);
    if (input.bareReading !== undefined) {
      const reading = loopInChild(kind, 'reading', file, n);
      times['reading']!.push(reading.seconds);
      if (reading.read !== n) throw new Error(`${kind}: the bare loop reading values read ${reading.read} of ${n}`);
    }
    let t = process.hrtime.bigint();
    const steps = analyzeSteps(run);
    times['barwatch']!.push(seconds(t));
    if (steps !== n) throw new Error(`${kind}: analyze read ${steps} steps of ${n}`);
    // jq is a reference, not the baseline: once (7.6 s a run of 1M lines here).
    if (HAVE_JQ && input.jq && r === 0) {
      t = process.hrtime.bigint();
      const jq = spawnSync('sh', ['-c', `jq -c . "${file}" > /dev/null`]);
      times['jq']!.push(seconds(t));
      if (jq.status !== 0) throw new Error('jq failed');
    }
  }
  const b = spread(times['bare']!);
  const bp = spread(times['inPlace']!);
  // The loop that reads the values: the bare loop itself where it does (JSON.parse, key:value).
  const br = input.bareReading === undefined ? b : spread(times['reading']!);
  const row = (name: string, s: Spread): string[] => [
    name,
    (n / s.median).toFixed(0),
    (bytes / 1e6 / s.median).toFixed(1),
    `${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})`,
    (b.median / s.median).toFixed(2),
    (bp.median / s.median).toFixed(2),
    (br.median / s.median).toFixed(2),
  ];
  const rows = [
    row(`${input.what}: bare loop (${input.bareWhat})`, b),
    row(`${input.what}: the same bare loop, one buffer used again`, bp),
    ...(input.bareReading === undefined ? [] : [row(`${input.what}: bare loop reading the values (${input.bareReading.what})`, br)]),
    row(`${input.what}: barwatch analyze (whole process)`, spread(times['barwatch']!)),
  ];
  if (times['jq']!.length > 0) rows.push(row(`${input.what}: jq -c . (one run)`, spread(times['jq']!)));
  return { rows, data: { kind, lines: n, bytes, reps, seconds: times } };
}

export function main(): void {
  const lines = arg('lines', 1_000_000, 100_000);
  const steps = arg('steps', 200_000, 20_000);
  const rows = arg('rows', 30_000, 10_000);
  const reps = arg('reps', 3, 1);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-'));
  try {
    const a = measure('jsonl', lines, reps, dir);
    const b = measure('text', steps, reps, dir);
    const c = measure('wandb', rows, reps, dir);
    const d = measure('wandbVerl', rows, reps, dir);
    report(
      'ingest',
      `Ingest of ${lines} JSONL lines, ${steps} verl steps and ${rows} W&B rows (two files), ${reps} repetitions, median (min-max); ratio = bare loop time / reader time`,
      [
        'reader',
        'lines/s',
        'MB/s',
        'seconds',
        'ratio to bare loop',
        'ratio to bare loop in one buffer',
        'ratio to bare loop reading the values',
      ],
      [...a.rows, ...b.rows, ...c.rows, ...d.rows],
      [a.data, b.data, c.data, d.data],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('ingest.js')) {
  const at = process.argv.indexOf('--loop');
  if (at === -1) main();
  else {
    const [kind, loop, file, n] = process.argv.slice(at + 1);
    await runLoop(kind as keyof typeof INPUTS, loop as Loop, file!, Number(n));
  }
}
