/**
 * Following growing files: CPU of `barwatch watch` over 200 runs x 4 files while one line is
 * appended to each run's reward_history.jsonl every `interval` ms, against a bare follower of the
 * same files measured in the same run (fs.watch on each file, read the new bytes, split lines,
 * JSON.parse each: the least any follower must do). Two paces: 50 ms (4,000 lines/s, a stress)
 * and 1 s (200 lines/s, a training-like pace). Issue 20's target: barwatch <= 3x the bare
 * follower at both.
 *
 *   node dist/bench/follow.js [--runs N] [--seconds S]
 */
import { fork } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { arg, followNewBytes, jsonlLine, report, usage, Watcher } from './common.js';

const FILES = [
  'selector_round1/reward_history.jsonl',
  'selector_round1/train.log',
  'generator_round1/reward_history.jsonl',
  'generator_round1/train.log',
];

function bareFollower(files: string[]): void {
  const parsed = { lines: 0 };
  followNewBytes(files, (_f, text) => {
    for (const line of text.split('\n')) if (line !== '') parsed.lines += (JSON.parse(line) as { step: number }).step > 0 ? 1 : 0;
  });
  process.send!('ready');
  // The count is kept where a reader would use it, so the parse cannot be optimised away.
  process.on('SIGTERM', () => process.exit(parsed.lines > 0 ? 0 : 1));
}

/** Appends one line to each file every `intervalMs`, for `seconds`; returns the next step. */
async function write(files: string[], intervalMs: number, seconds: number, from: number): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let step = from;
  let next = Date.now();
  while (Date.now() < end) {
    for (const f of files) appendFileSync(f, jsonlLine(step));
    step++;
    next += intervalMs;
    await sleep(Math.max(0, next - Date.now()));
  }
  return step;
}

/** CPU (% of a core) of `pid` while `during` runs. */
async function cpuWhile(pid: number, during: Promise<unknown>): Promise<number> {
  const a = usage(pid);
  const t0 = Date.now();
  await during;
  const b = usage(pid);
  return (100 * (b.cpu - a.cpu)) / ((Date.now() - t0) / 1000);
}

export async function main(): Promise<void> {
  const runs = arg('runs', 200);
  const seconds = arg('seconds', 20);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-follow-'));
  try {
    const all: string[] = [];
    const writers: string[] = [];
    for (let r = 0; r < runs; r++) {
      for (const f of FILES) {
        const file = path.join(dir, 'runs', `run${r}`, 'outputs', f);
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, f.endsWith('.jsonl') ? jsonlLine(1) : 'step=1 loss=0.5\n');
        all.push(file);
        if (f === FILES[0]) writers.push(file);
      }
    }
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {status_interval: 1s}\nlog: {format: json}\n`);
    const paces = [50, 1000];
    const result: Record<string, { barwatch: number; bare: number }> = {};
    let step = 2;
    for (const interval of paces) {
      const w = new Watcher([path.join(dir, 'runs'), '--config', cfg, '--listen', 'off']);
      await w.until(0);
      await sleep(10_000);
      const cpuB = await cpuWhile(w.child.pid!, write(writers, interval, seconds, step));
      step += Math.ceil((seconds * 1000) / interval) + 1;
      await w.stop();
      const bare = fork(fileURLToPath(import.meta.url), ['--bare-follower', ...all]);
      await new Promise((resolve) => bare.once('message', resolve));
      await sleep(2000);
      const cpuBare = await cpuWhile(bare.pid!, write(writers, interval, seconds, step));
      step += Math.ceil((seconds * 1000) / interval) + 1;
      bare.kill();
      result[`${interval}ms`] = { barwatch: cpuB, bare: cpuBare };
    }
    report(
      'follow',
      `Following ${runs} runs x ${FILES.length} files while each run's reward_history.jsonl grows one line per interval (${seconds} s each; CPU in % of one core)`,
      ['pace', 'lines/s', 'barwatch watch', 'bare follower', 'ratio (target <= 3)'],
      paces.map((ms) => {
        const r = result[`${ms}ms`]!;
        return [
          `one line / ${ms} ms per run`,
          String(Math.round((runs * 1000) / ms)),
          r.barwatch.toFixed(2),
          r.bare.toFixed(2),
          (r.barwatch / r.bare).toFixed(1),
        ];
      }),
      { runs, seconds, result },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--bare-follower') bareFollower(process.argv.slice(3));
else if (process.argv[1]?.endsWith('follow.js')) await main();
