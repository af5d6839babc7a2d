/**
 * Idle cost: CPU and RSS of `barwatch watch` over 200 runs x 4 files with nothing written, then
 * with every run appending 20 lines/s; the same for a bare fs.watch reader of the same files
 * (it reads and splits what is new, nothing more), measured in the same run.
 *
 * barwatch idles for S seconds (60, as the issue asks), from 70 s after its catch-up; its busy
 * phase lasts S/2 and the bare reader's phases S/3 (its costs are steady, and the benchmark suite
 * has to fit 10 minutes on 2 cores).
 *
 *   node dist/bench/idle.js [--runs N] [--seconds S]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { arg, followNewBytes, jsonlLine, report, RUN_FILES, runTree, usage, Watcher } from './common.js';

function bareReader(files: string[]): void {
  let lines = 0;
  followNewBytes(files, (_f, text) => (lines += text.split('\n').length - 1));
  process.send!('ready');
}

/** Appends `perSecond` lines a second to each run's selector jsonl, for `seconds`. */
async function write(files: string[], perSecond: number, seconds: number, from: number): Promise<number> {
  const ticks = seconds * 10;
  let step = from;
  for (let t = 0; t < ticks; t++) {
    const start = Date.now();
    for (const f of files) {
      let text = '';
      for (let i = 0; i < perSecond / 10; i++) text += jsonlLine(step + i);
      appendFileSync(f, text);
    }
    step += perSecond / 10;
    await sleep(Math.max(0, 100 - (Date.now() - start)));
  }
  return step;
}

async function sample(
  pid: number,
  seconds: number,
  during?: Promise<unknown>,
): Promise<{ cpuPct: number; rssStart: number; rssEnd: number }> {
  const a = usage(pid);
  const t0 = Date.now();
  if (during !== undefined) await during;
  else await sleep(seconds * 1000);
  const b = usage(pid);
  return { cpuPct: (100 * (b.cpu - a.cpu)) / ((Date.now() - t0) / 1000), rssStart: a.rss, rssEnd: b.rss };
}

/** Wait after the catch-up before the idle phase (see main). */
const SETTLE_MS = 70_000;

export async function main(): Promise<void> {
  const runs = arg('runs', 200);
  const seconds = arg('seconds', 60);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-idle-'));
  try {
    const { all, writers, cfg } = runTree(dir, runs);
    const w = new Watcher([path.join(dir, 'runs'), '--config', cfg]);
    await w.until(all.length);
    // The start-up settles: about a minute after start V8 shrinks the heap grown while starting
    // (RSS 179 -> 116 MB; 3% of a core for 20 s, main thread and GC workers), once: not idle cost.
    await sleep(SETTLE_MS);
    const half = Math.max(1, Math.round(seconds / 2));
    const idle = await sample(w.child.pid!, seconds);
    const busy = await sample(w.child.pid!, half, write(writers, 20, half, 2));
    await w.until(all.length + runs * 20 * half, 60_000);
    await w.stop();

    const bare: ChildProcess = fork(fileURLToPath(import.meta.url), ['--bare-reader', ...all]);
    await new Promise((resolve) => bare.once('message', resolve));
    await sleep(3000);
    const third = Math.max(1, Math.round(seconds / 3));
    const bareIdle = await sample(bare.pid!, third);
    const bareBusy = await sample(bare.pid!, third, write(writers, 20, third, 2 + 20 * half));
    bare.kill();

    const mb = (x: number): string => (x / 1e6).toFixed(0);
    const row = (name: string, s: { cpuPct: number; rssStart: number; rssEnd: number }): string[] => [
      name,
      s.cpuPct.toFixed(2),
      `${mb(s.rssStart)} -> ${mb(s.rssEnd)}`,
    ];
    report(
      'idle',
      `Cost of watching ${runs} runs x ${RUN_FILES.length} files (${all.length} files): barwatch idle ${seconds} s from ${SETTLE_MS / 1000} s after its catch-up, busy ${half} s; bare reader ${third} s each (CPU in % of one core, RSS in MB)`,
      ['process, phase', 'CPU %', 'RSS MB'],
      [
        row('barwatch watch, nothing written', idle),
        row(`barwatch watch, ${runs} runs appending 20 lines/s (${runs * 20} lines/s)`, busy),
        row('bare fs.watch reader, nothing written', bareIdle),
        row(`bare fs.watch reader, ${runs * 20} lines/s`, bareBusy),
      ],
      {
        runs,
        files: all.length,
        seconds,
        settleSeconds: SETTLE_MS / 1000,
        busySeconds: half,
        bareSeconds: third,
        idle,
        busy,
        bareIdle,
        bareBusy,
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--bare-reader') bareReader(process.argv.slice(3));
else if (process.argv[1]?.endsWith('idle.js')) await main();
