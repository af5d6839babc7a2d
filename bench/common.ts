/** What every benchmark shares: arguments, repetitions, medians, tables and the results folder. */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  createReadStream,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { cpus } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { spawnWatch } from '../test/helpers/watch-child.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(REPO, 'bin', 'barwatch.js');

/**
 * What BIN starts from. A checkout whose bundle is older than its compiled modules (`npx tsc`
 * without `node dist/scripts/bundle.js`) runs the ~300 modules, which start about 0.2 s later and
 * fault in more memory: session 30 timed that for an hour and took it for the machine. Every
 * benchmark refuses to time it (`--any-build` to time it all the same).
 */
export function startsFrom(): string {
  const out = spawnSync(process.execPath, [BIN, '--version'], { env: { ...process.env, BARWATCH_START_INFO: '1' }, encoding: 'utf8' });
  return /^barwatch: started from (.*)$/m.exec(out.stderr)?.[1] ?? `no start line (exit ${out.status}): ${out.stderr.trim()}`;
}

// Checked once per benchmark: the processes a benchmark starts (ingest's loops in children)
// inherit the answer and neither ask again nor need --any-build passed on.
if (process.env['BARWATCH_BENCH_BUILD'] === undefined) {
  const from = startsFrom();
  if (!/barwatch\.cjs \(code cache used\)$/.test(from) && !process.argv.includes('--any-build'))
    throw new Error(`barwatch starts from ${from}, not from its bundle with its code cache: run \`npm run build\` first`);
  process.env['BARWATCH_BENCH_BUILD'] = from;
}

/** `--quick` (also `npm run bench -- --quick`): every benchmark at a small size (about 100 s in all on 2 cores). */
export const QUICK = process.argv.includes('--quick');

/** The number after `--name`, else `fallback` (or `quick` under --quick). */
export function arg(name: string, fallback: number, quick = fallback): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? (QUICK ? quick : fallback) : Number(process.argv[i + 1]);
}

/** Whether `--name` was given. */
export function flag(name: string): boolean {
  return process.argv.includes(`--${name}`);
}

/** The text after `--name`, or null. */
export function textArg(name: string): string | null {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? null : (process.argv[i + 1] ?? null);
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

/** The median; the mean of the middle two when `xs` has an even length. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, min: s[0]!, max: s[s.length - 1]! };
}

/** The q-quantile (0..1) of xs, nearest rank. */
export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function seconds(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e9;
}

/** The machine a result came from (issue 32: ratios move with the machine, so each says where it was measured). */
export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  /**
   * Milliseconds of a fixed reference loop (JSON.parse, number formatting and string work on a
   * fixed line, 200,000 times; the median of 5), measured where the benchmark runs: a machine
   * that runs it in 2x the time runs plain Node code at half the speed. A bare loop's time over
   * this one says how the machine does on the bare loop's own work (its disk, its caches).
   */
  referenceMs: number;
  /**
   * Milliseconds per MiB to fill memory the process has not touched yet (a fresh 64 MiB buffer),
   * and to fill it again once touched (the median of 3 each). The difference is the page faults'
   * cost, which moves more between virtual machines than plain code does: a bare loop that reads a
   * whole file into one new buffer pays it for every byte, a reader that reuses its buffers does not.
   */
  freshMsPerMiB: number;
  touchedMsPerMiB: number;
  /**
   * Microseconds of one small system call from Node (fstatSync of an open file; the median of 5
   * runs of 20,000): a bare follower is mostly system calls, barwatch mostly its own code, so the
   * cost of a call moves their ratio from one machine to the next.
   */
  syscallUs: number;
  /**
   * Nanoseconds of one load from memory that is in no cache: a chain of loads, each depending on
   * the one before, over the lines of a 64 MiB array in a random order (the median of 5 runs of
   * 300,000). A daemon following 200 runs reads each run's statistics once a second, long after
   * the other 199 have pushed them out of the caches, so its time per line moves with this cost
   * (BENCHMARKS.md, session 23); a bare follower keeps nothing of a run between lines.
   */
  missNs: number;
}

let measured: Machine | null = null;

/** This machine, with its reference loop timed once per benchmark process. */
export function machine(): Machine {
  if (measured !== null) return measured;
  const line = jsonlLine(12345);
  const runs: number[] = [];
  let keep = 0;
  for (let r = 0; r < 5; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < 200_000; i++) {
      const o = JSON.parse(line) as { boundary: number };
      keep += (o.boundary * i).toFixed(3).length + line.indexOf('"total"', i & 63);
    }
    runs.push(seconds(t) * 1000);
  }
  if (keep === 0) throw new Error('reference loop did nothing');
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  measured = {
    cpu: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? 'unknown CPU',
    cores: cpus().length,
    node: process.version,
    referenceMs: median(runs),
    ...memoryTouch(),
    syscallUs: syscallCost(),
    missNs: missCost(),
  };
  return measured;
}

/** Machine.syscallUs. */
function syscallCost(): number {
  const fd = openSync(fileURLToPath(import.meta.url), 'r');
  try {
    const runs: number[] = [];
    let size = 0;
    for (let r = 0; r < 5; r++) {
      const t = process.hrtime.bigint();
      for (let i = 0; i < 20_000; i++) size += fstatSync(fd).size;
      runs.push((seconds(t) * 1e6) / 20_000);
    }
    if (size === 0) throw new Error('fstat read nothing');
    return median(runs);
  } finally {
    closeSync(fd);
  }
}

/** Machine.missNs. */
function missCost(): number {
  // One link per 64-byte line of a 64 MiB array (more than a server's last-level cache holds),
  // the lines in a random order (Fisher-Yates with a fixed LCG: the same order on every machine)
  // linked into one cycle: each load waits for the one before and finds neither its line in a
  // cache nor, mostly, its page in the translation cache.
  const lines = 1 << 20;
  const perLine = 16; // Int32s in 64 bytes
  const order = Int32Array.from({ length: lines }, (_, i) => i);
  let seed = 2463534242;
  for (let i = lines - 1; i > 0; i--) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const j = seed % (i + 1);
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  const chain = new Int32Array(lines * perLine);
  for (let i = 0; i < lines; i++) chain[order[i]! * perLine] = order[(i + 1) % lines]! * perLine;
  const loads = 300_000;
  const runs: number[] = [];
  let x = order[0]! * perLine;
  for (let r = 0; r < 5; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < loads; i++) x = chain[x]!;
    runs.push((seconds(t) * 1e9) / loads);
  }
  if (x < 0) throw new Error('the chain led nowhere');
  return median(runs);
}

/** Machine.freshMsPerMiB and touchedMsPerMiB, measured on 64 MiB. */
function memoryTouch(): { freshMsPerMiB: number; touchedMsPerMiB: number } {
  const mib = 64;
  const fresh: number[] = [];
  const touched: number[] = [];
  for (let r = 0; r < 3; r++) {
    // allocUnsafeSlow: memory of its own, never touched (the pool is 8 KiB).
    const buf = Buffer.allocUnsafeSlow(mib << 20);
    let t = process.hrtime.bigint();
    buf.fill(r + 1);
    fresh.push((seconds(t) * 1000) / mib);
    t = process.hrtime.bigint();
    buf.fill(r + 2);
    touched.push((seconds(t) * 1000) / mib);
    if (buf[buf.length - 1] !== r + 2) throw new Error('memory touch did nothing');
  }
  return { freshMsPerMiB: median(fresh), touchedMsPerMiB: median(touched) };
}

/** One line naming the machine, printed under each table. */
export function machineLine(m: Machine = machine()): string {
  return (
    `machine: ${m.cpu}, ${m.cores} cores, Node ${m.node}, reference loop ${m.referenceMs.toFixed(0)} ms, ` +
    `fresh memory ${m.freshMsPerMiB.toFixed(2)} ms/MiB (touched ${m.touchedMsPerMiB.toFixed(2)}), system call ${m.syscallUs.toFixed(2)} µs, ` +
    `memory miss ${m.missNs.toFixed(0)} ns`
  );
}

/** Prints a markdown table and the machine, and writes both to bench/results/<name>.json. */
export function report(name: string, title: string, header: string[], rows: string[][], data: unknown): void {
  const m = machine();
  const lines = [title, `| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
  console.log(`${lines.join('\n')}\n\n${machineLine(m)}\n`);
  const dir = path.join(REPO, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, `${name}.json`),
    JSON.stringify({ node: process.version, machine: m, date: new Date().toISOString(), data }, null, 2),
  );
}

/** CPU seconds (user + system) and RSS (bytes) of a process, from /proc (Linux). */
export function usage(pid: number): { cpu: number; rss: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
  return { cpu: ticks / 100, rss };
}

/**
 * CPU time of a process in seconds, all its threads, to the nanosecond (/proc/<pid>/task/<tid>/schedstat):
 * `usage` counts 10 ms ticks, too coarse for a few percent of a core over seconds.
 */
export function cpuTime(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1e9;
}

/** `barwatch watch` as a child, with its JSON status lines. */
export class Watcher {
  readonly child: ChildProcess;
  lastStatus: { records: number; lines: number; files: number } | null = null;
  /** The /metrics port when the config has http.listen. */
  port: number | null = null;

  /** `bin`: another build's bin/barwatch.js, for an A/B against it (bench/follow.ts --base). */
  constructor(args: string[], env: NodeJS.ProcessEnv = {}, bin = BIN) {
    // BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the daemon under the benchmark.
    const nodeArgs = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
    this.child = spawnWatch([process.execPath, ...nodeArgs, bin, 'watch', ...args], { env: { ...process.env, ...env } }, (l) => {
      if (l.msg.startsWith('web page at')) this.port = l['port'] as number;
      if (l.msg.startsWith('status:'))
        this.lastStatus = { records: l['records'] as number, lines: l['lines'] as number, files: l['files'] as number };
    });
  }

  /** Resolves when the status counts at least `lines` lines read; the seconds it took from `since`. */
  async until(lines: number, timeoutMs = 600_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while ((this.lastStatus?.lines ?? -1) < lines) {
      if (Date.now() > end) throw new Error(`barwatch read ${this.lastStatus?.lines ?? 0} of ${lines} lines in time`);
      if (this.child.exitCode !== null) throw new Error('barwatch exited');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** V8 heap in use (bytes), from the daemon's /metrics (prom-client's nodejs_heap_size_used_bytes). */
  async heapUsed(): Promise<number> {
    const text = await (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
    return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)![1]);
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

/** A canonical selector line, about 160 bytes; the boundary reward follows a sine (period 17 steps). */
export function jsonlLine(i: number): string {
  const x = Math.sin(i * 0.37);
  return `{"step": ${i}, "boundary": ${(0.5 + 0.2 * x).toFixed(4)}, "relevance": 0.31, "format": 1.0, "count": -0.5, "total": ${(0.52 + 0.1 * x).toFixed(4)}, "accuracy": 0.47, "boundary_share": 0.28, "rollouts": 10}\n`;
}

/** A selector line with white noise (no pattern for the detectors to find), about 150 bytes. */
export function noiseLine(i: number): string {
  const u = ((i * 2654435761) >>> 0) / 4294967296;
  return `{"step": ${i}, "boundary": ${(0.5 + 0.04 * (u - 0.5)).toFixed(4)}, "relevance": 0.31, "format": 1.0, "count": -0.5, "total": 0.52, "accuracy": 0.49, "boundary_share": 0.28, "rollouts": 10}\n`;
}

/** Appends lines from..to made by `line(i)`, in pieces of about 1 MiB. */
export function appendLines(file: string, from: number, to: number, line: (i: number) => string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  let buf = '';
  for (let i = from; i <= to; i++) {
    buf += line(i);
    if (buf.length > 1 << 20) {
      appendFileSync(file, buf);
      buf = '';
    }
  }
  if (buf !== '') appendFileSync(file, buf);
}

/**
 * 67 metric names in the families verl's PPO trainer logs (critic statistics, lengths, timings,
 * actor and critic losses, throughput, validation), built here: the benchmark needs a step line
 * of verl's size and shape, not any particular run's.
 */
const VERL_KEYS: readonly string[] = [
  ...['score', 'rewards', 'advantages', 'returns', 'values'].flatMap((q) => ['mean', 'max', 'min'].map((s) => `critic/${q}/${s}`)),
  ...['response_length', 'prompt_length'].flatMap((q) => ['mean', 'max', 'min', 'clip_ratio'].map((s) => `${q}/${s}`)),
  ...['gen', 'reward', 'old_log_prob', 'values', 'adv', 'update_critic', 'update_actor', 'step'].map((t) => `timing_s/${t}`),
  ...['gen', 'values', 'adv', 'update_critic', 'update_actor'].map((t) => `timing_per_token_ms/${t}`),
  ...['entropy', 'pg_loss', 'pg_clipfrac', 'ppo_kl', 'grad_norm', 'lr'].map((k) => `actor/${k}`),
  ...['vf_loss', 'vf_clipfrac', 'vpred_mean', 'grad_norm', 'lr', 'vf_explained_var'].map((k) => `critic/${k}`),
  ...[
    'mfu/actor',
    'mfu/critic',
    'max_memory_allocated_gb',
    'max_memory_reserved_gb',
    'cpu_memory_used_gb',
    'total_num_tokens',
    'time_per_step',
    'throughput',
  ].map((k) => `perf/${k}`),
  ...['min', 'max', 'mean', 'minmax_diff'].map((k) => `global_seqlen/${k}`),
  ...['global_step', 'epoch'].map((k) => `training/${k}`),
  ...['nq', 'triviaqa', 'hotpotqa', '2wiki', 'musique'].map((d) => `val-core/${d}/acc/mean@1`),
];
const SCORE = VERL_KEYS.indexOf('critic/score/mean');

/**
 * A verl console step line as verl's logger writes it under Ray: a colour-coded
 * `(TaskRunner pid=N)` prefix, then `step:N - key:value - ...` with 67 metrics at 3 decimals
 * (about 2,200 bytes).
 */
export function verlLine(i: number): string {
  const x = Math.sin(i * 0.37);
  let s = `\x1b[36m(TaskRunner pid=2419)\x1b[0m step:${i}`;
  for (let k = 0; k < VERL_KEYS.length; k++) s += ` - ${VERL_KEYS[k]}:${(k === SCORE ? 0.5 + 0.2 * x : k + x).toFixed(3)}`;
  return s + '\n';
}

/** Every `key:value` of a verl step line, as names and numbers (the step first); null for any other line. */
export function verlValues(line: string): { keys: string[]; values: number[] } | null {
  const at = line.indexOf('step:');
  if (at === -1) return null;
  const keys: string[] = [];
  const values: number[] = [];
  for (const part of line.slice(at).split(' - ')) {
    const colon = part.lastIndexOf(':');
    keys.push(part.slice(0, colon));
    values.push(Number(part.slice(colon + 1)));
  }
  return { keys, values };
}

/** The baseline reader: 256 KiB chunks, line split, and per line JSON.parse (jsonl) or every `key:value` of a step (text). */
export async function bareLoop(file: string, kind: 'jsonl' | 'text' = 'jsonl'): Promise<number> {
  let rest = '';
  let n = 0;
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 18 })) {
    const text = rest + (chunk as string);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      const line = text.slice(start, nl);
      if (kind === 'jsonl') JSON.parse(line);
      else if (verlValues(line) === null) throw new Error(`not a step line: ${line}`);
      n++;
      start = nl + 1;
    }
    rest = text.slice(start);
  }
  return n;
}

/**
 * The same work as bareLoop, read into one 256 KiB buffer used again for every read, each line
 * decoded from its bytes: no new memory for each chunk. bareLoop's chunks and the strings it
 * joins them into are new memory each time (V8 keeps strings over 128 KiB apart, in pages of
 * their own), so on a machine where touching fresh memory is slow (Machine.freshMsPerMiB) most
 * of bareLoop's time is page faults; this loop's time is the work itself.
 */
export function bareLoopInPlace(file: string, kind: 'jsonl' | 'text' = 'jsonl'): number {
  let buf = Buffer.allocUnsafeSlow(1 << 18);
  const fd = openSync(file, 'r');
  let n = 0;
  try {
    let have = 0;
    let pos = 0;
    for (;;) {
      if (have === buf.length) {
        // One line longer than the buffer: a larger one.
        const bigger = Buffer.allocUnsafeSlow(buf.length * 2);
        buf.copy(bigger, 0, 0, have);
        buf = bigger;
      }
      const got = readSync(fd, buf, have, buf.length - have, pos);
      if (got === 0) return n;
      pos += got;
      have += got;
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl !== -1 && nl < have; nl = buf.indexOf(10, start)) {
        const line = buf.toString('utf8', start, nl);
        if (kind === 'jsonl') JSON.parse(line);
        else if (verlValues(line) === null) throw new Error(`not a step line: ${line}`);
        n++;
        start = nl + 1;
      }
      // The cut line moves to the front; the next read follows it.
      buf.copy(buf, 0, start, have);
      have -= start;
    }
  } finally {
    closeSync(fd);
  }
}

/** The baseline follower: fs.watch on every file; on each event, the bytes appended since the last. */
export function followNewBytes(files: string[], onText: (file: string, text: string) => void): void {
  const offsets = new Map(files.map((f) => [f, statSync(f).size]));
  for (const f of files) {
    watch(f, () => {
      const from = offsets.get(f)!;
      const size = statSync(f).size;
      if (size <= from) return;
      const buf = Buffer.alloc(size - from);
      const fd = openSync(f, 'r');
      readSync(fd, buf, 0, buf.length, from);
      closeSync(fd);
      offsets.set(f, size);
      onText(f, buf.toString());
    });
  }
}

/**
 * The bare follower as a child process (follow, idle and scale benchmarks): followNewBytes on
 * every file, each new line JSON.parsed, the least any follower must do. Resolves once it watches.
 */
export async function startBareFollower(files: string[]): Promise<ChildProcess> {
  const child = fork(fileURLToPath(import.meta.url), ['--bare-follower', ...files]);
  await new Promise((resolve) => child.once('message', resolve));
  return child;
}

function bareFollower(files: string[]): void {
  let lines = 0;
  followNewBytes(files, (_f, text) => {
    for (const line of text.split('\n')) if (line !== '') lines += (JSON.parse(line) as { step: number }).step > 0 ? 1 : 0;
  });
  process.send!('ready');
  // The count is kept where a reader would use it, so the parse cannot be optimised away.
  process.on('SIGTERM', () => process.exit(lines > 0 ? 0 : 1));
}

/**
 * Appends one line to each file every `intervalMs`, for `seconds`; returns the next step. Given
 * groups of files (the twin trees of an A/B), the groups take turns going first.
 */
export async function appendEvery(files: string[] | string[][], intervalMs: number, seconds: number, from: number): Promise<number> {
  const groups = files.length > 0 && Array.isArray(files[0]) ? (files as string[][]) : [files as string[]];
  const end = Date.now() + seconds * 1000;
  let step = from;
  let next = Date.now();
  while (Date.now() < end) {
    for (let g = 0; g < groups.length; g++) for (const f of groups[(g + step) % groups.length]!) appendFileSync(f, jsonlLine(step));
    step++;
    next += intervalMs;
    await sleep(Math.max(0, next - Date.now()));
  }
  return step;
}

/** CPU (% of a core, every thread) of `pid` while `during` runs. */
export async function cpuWhile(pid: number, during: Promise<unknown>): Promise<number> {
  return (await cpuWhileEach([pid], during))[0]!;
}

/** CPU (% of a core, every thread) of each of `pids` over the same time, while `during` runs. */
export async function cpuWhileEach(pids: number[], during: Promise<unknown>): Promise<number[]> {
  const a = pids.map(cpuTime);
  const t0 = Date.now();
  await during;
  const s = (Date.now() - t0) / 1000;
  return pids.map((pid, i) => (100 * (cpuTime(pid) - a[i]!)) / s);
}

/** The files of each run in the follow and idle benchmarks; the first is the one that grows. */
export const RUN_FILES = [
  'selector_round1/reward_history.jsonl',
  'selector_round1/train.log',
  'generator_round1/reward_history.jsonl',
  'generator_round1/train.log',
];

/**
 * `runs` runs of RUN_FILES under `dir`/runs, each file holding one line, and a config saving to
 * `dir`/state: every file, the ones that grow (one per run), and the config's path.
 * `statusInterval`: how often the daemon logs its status line, which Watcher.until reads the
 * counts from; null leaves the default (60s), for a benchmark that waits only for the first line
 * (logged once the catch-up is done) and measures the daemon as a user runs it: a status line a
 * second cost 6% of the daemon's CPU following 200 runs at 200 lines/s (BENCHMARKS.md, session 35).
 */
export function runTree(
  dir: string,
  runs: number,
  statusInterval: string | null = '1s',
): { all: string[]; writers: string[]; cfg: string } {
  const all: string[] = [];
  const writers: string[] = [];
  for (let r = 0; r < runs; r++) {
    for (const f of RUN_FILES) {
      const file = path.join(dir, 'runs', `run${r}`, 'outputs', f);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, f.endsWith('.jsonl') ? jsonlLine(1) : 'step=1 loss=0.5\n');
      all.push(file);
      if (f === RUN_FILES[0]) writers.push(file);
    }
  }
  const cfg = path.join(dir, 'c.yaml');
  const watch = statusInterval === null ? '' : `watch: {status_interval: ${statusInterval}}\n`;
  writeFileSync(cfg, `state_dir: ${dir}/state\n${watch}log: {format: json}\n`);
  return { all, writers, cfg };
}

if (process.argv[1]?.endsWith('common.js') && process.argv[2] === '--bare-follower') bareFollower(process.argv.slice(3));
