/**
 * Following growing files: CPU of `barwatch watch` over 200 runs x 4 files while one line is
 * appended to each run's reward_history.jsonl every second (200 lines/s, a training-like pace)
 * and then every 50 ms (4,000 lines/s, a stress), against a bare follower of the same files
 * measured in the same run (fs.watch on each file, read the new bytes, split lines, JSON.parse
 * each: the least any follower must do). CPU is the time of all threads from /proc/<pid>/task/*
 * /schedstat, after WARM_S seconds of lines at the training pace. Kinds interleave, `rounds`
 * times, the builds in turn first (so use an even number of rounds for an A/B); the median of the
 * rounds is reported (the mean of the middle two when even). Issue 20's target: barwatch <= 3x
 * the bare follower at both paces.
 *
 *   node dist/bench/follow.js [--runs N] [--seconds S] [--rounds R] [--base DIR] [--fresh]
 *
 * Every daemon follows the same tree and resumes the state the one before it saved, so after the
 * first the runs are hundreds to thousands of steps old: a run's detectors then judge full
 * histories, as they do on a run followed for hours. `--fresh`: each follower gets a tree and a
 * state of its own, made just before it starts, so every one follows young runs (tens of steps,
 * where several detectors wait for enough points); the title says which.
 *
 * `--base DIR`: also a build in DIR (a git worktree of another commit with `npm run build` done),
 * for an A/B of a change: a way of following is compared by building the commit that has it.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  appendEvery,
  arg,
  cpuWhile,
  flag,
  median,
  QUICK,
  report,
  RUN_FILES,
  runTree,
  startBareFollower,
  textArg,
  Watcher,
} from './common.js';

/** After the catch-up, before measuring: the daemon's start-up work is done. */
const SETTLE_MS = QUICK ? 3_000 : 10_000;

/**
 * Then, every follower alike, lines at the training pace before measuring: V8 compiles a function
 * once it has run often enough, so the first seconds of lines carry the compiler's work (on its
 * own threads, about a third of barwatch's CPU in its first 12 s at 200 lines/s: 61 functions
 * optimised there, 17 after 10 s of lines), a cost paid once per start, not while following for days.
 */
const WARM_S = QUICK ? 3 : 10;

interface Kind {
  name: string;
  start?: (dir: string, cfg: string) => Watcher;
}

function kinds(): Kind[] {
  const args = (dir: string, cfg: string): string[] => [path.join(dir, 'runs'), '--config', cfg, '--listen', 'off'];
  const out: Kind[] = [{ name: 'barwatch', start: (dir, cfg) => new Watcher(args(dir, cfg)) }];
  const base = textArg('base');
  if (base !== null)
    out.push({ name: `base (${base})`, start: (dir, cfg) => new Watcher(args(dir, cfg), {}, path.join(base, 'bin', 'barwatch.js')) });
  out.push({ name: 'bare follower' });
  return out;
}

/** The training-like pace first: measured after the busy one, it carried the busy phase's garbage collections. */
const PACES = [1000, 50];

export async function main(): Promise<void> {
  const runs = arg('runs', 200, 100);
  // 30 s: the daemon saves its state and sweeps every 30 s (the defaults), so a window holds that
  // work as often as it comes. A 12 s window at a fixed time from the start held the first save
  // and the first sweep in every round: 2.5 times their share.
  const seconds = arg('seconds', 30, 4);
  const rounds = arg('rounds', 2, 1);
  const fresh = flag('fresh');
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-follow-'));
  try {
    let tree = { dir, ...runTree(dir, runs) };
    let trees = 0;
    const list = kinds();
    // samples[kind][pace] = CPU % of each round
    const samples: Record<string, Record<number, number[]>> = {};
    for (const k of list) samples[k.name] = Object.fromEntries(PACES.map((ms) => [ms, [] as number[]]));
    let step = 2;
    for (let round = 0; round < rounds; round++) {
      // The builds swap places each round: a daemon started later catches up a longer backlog
      // (the lines written while the others were measured), and carried its garbage into the
      // measurement (with a fixed order, the second build measured higher at 200 lines/s).
      const builds = list.filter((k) => k.start !== undefined);
      const order = [...(round % 2 === 0 ? builds : [...builds].reverse()), ...list.filter((k) => k.start === undefined)];
      for (const k of order) {
        if (fresh) {
          // A tree and a state of its own, written just now: young runs (see --fresh).
          const own = path.join(dir, `fresh${++trees}`);
          mkdirSync(own);
          tree = { dir: own, ...runTree(own, runs) };
          step = 2;
        }
        const { all, writers, cfg } = tree;
        let pid: number;
        let stop: () => Promise<void>;
        if (k.start === undefined) {
          const bare = await startBareFollower(all);
          await sleep(2000);
          pid = bare.pid!;
          stop = () => Promise.resolve(void bare.kill());
        } else {
          const w = k.start(tree.dir, cfg);
          await w.until(0);
          await sleep(SETTLE_MS);
          pid = w.child.pid!;
          stop = () => w.stop();
        }
        step = await appendEvery(writers, PACES[0]!, WARM_S, step);
        for (const ms of PACES) {
          samples[k.name]![ms]!.push(await cpuWhile(pid, appendEvery(writers, ms, seconds, step)));
          step += Math.ceil((seconds * 1000) / ms) + 1;
        }
        await stop();
      }
    }
    const bare = (ms: number): number => median(samples['bare follower']![ms]!);
    report(
      'follow',
      `Following ${runs} runs x ${RUN_FILES.length} files (${fresh ? 'young runs: a tree of its own for each follower' : 'runs hundreds to thousands of steps old after the first daemon: one tree, each daemon resuming the state before'}) while each run's reward_history.jsonl grows one line per interval (${seconds} s a pace, the median of ${rounds} interleaved rounds; CPU in % of one core; ratio to the bare follower, target <= 3)`,
      [
        'follower',
        ...PACES.map((ms) => `${Math.round((runs * 1000) / ms)} lines/s: CPU %`),
        ...PACES.map((ms) => `ratio at ${Math.round((runs * 1000) / ms)} lines/s`),
      ],
      list.map((k) => [
        k.name,
        ...PACES.map((ms) => `${median(samples[k.name]![ms]!).toFixed(2)} (${samples[k.name]![ms]!.map((x) => x.toFixed(2)).join(', ')})`),
        ...PACES.map((ms) => (median(samples[k.name]![ms]!) / bare(ms)).toFixed(2)),
      ]),
      { runs, seconds, rounds, fresh, samples },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('follow.js')) await main();
