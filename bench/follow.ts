/**
 * Following growing files: CPU of `barwatch watch` over 200 runs x 4 files while one line is
 * appended to each run's reward_history.jsonl every second (200 lines/s, a training-like pace)
 * and then every 50 ms (4,000 lines/s, a stress), against a bare follower of the same files
 * measured in the same run (fs.watch on each file, read the new bytes, split lines, JSON.parse
 * each: the least any follower must do). CPU is the time of all threads from /proc/<pid>/task/*
 * /schedstat, after a warm-up (WARM_STEPS lines per run at the busy pace, then WARM_S seconds at
 * the training pace: see WARM_STEPS). In each of `rounds` rounds the
 * builds follow at once, each its own tree (twin trees, written alike at the same moments), then
 * the bare follower alone; the median of the rounds is reported (the mean of the middle two when
 * even). Issue 20's target: barwatch <= 3x the bare follower at both paces.
 *
 *   node dist/bench/follow.js [--runs N] [--seconds S] [--rounds R] [--base DIR] [--fresh]
 *
 * A build's daemon resumes the state its daemon of the round before saved, on the same tree, so
 * after the first round the runs are hundreds to thousands of steps old: a run's detectors then
 * judge full histories, as they do on a run followed for hours. `--fresh`: every round gets new
 * trees and states, made just before it starts, so every daemon follows young runs (tens of
 * steps, where several detectors wait for enough points); the title says which.
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
  cpuWhileEach,
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

interface Tree {
  dir: string;
  all: string[];
  writers: string[];
  cfg: string;
}

/** After the catch-up, before measuring: the daemon's start-up work is done. */
const SETTLE_MS = QUICK ? 3_000 : 10_000;

/**
 * Then, every follower alike, lines until V8 has compiled what following runs: it optimises a
 * function once it has run often enough, and a detector judged every 16th or 64th step gets there
 * only after hundreds of a run's steps. At the training pace that took minutes: traced with
 * --trace-opt on a resumed daemon, 29 functions (114 ms of compiler time) were optimised in the
 * 30 s after 10 s of lines, still 19 (98 ms) three minutes later and 2-13 a window after six;
 * 1.7 s of compiler time in the first nine and a half minutes, paid once per start, not while
 * following for days. The bare follower, too, was measured before V8 had optimised its few
 * functions: 0.36% of a core then, 0.27% after this warm-up (session 35). So the warm-up first
 * writes WARM_STEPS lines per run at the busy pace (a run's steps, not time, are what makes its
 * detectors' code hot: after 400 of them, the compiler's time in a 30 s window fell to 27-35 ms),
 * then WARM_S seconds at the training pace, so that the busy lines' garbage is collected before
 * the measurement starts.
 */
const WARM_STEPS = QUICK ? 20 : 400;
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
    const list = kinds();
    const builds = list.filter((k) => k.start !== undefined);
    // Twin trees: each build follows a tree of its own, and every tree gets the same lines at the
    // same moments, so the builds of an A/B are measured over the same windows: whatever else
    // loads the machine then, and the work that comes with a run's age (a finding that starts to
    // hold at step 129 and costs every build alike), falls on both. Measured one after the other,
    // two rounds favoured the --base build by some 30% (BENCHMARKS.md, session 32).
    let made = 0;
    const plant = (): Tree[] =>
      builds.map(() => {
        const own = path.join(dir, `tree${++made}`);
        mkdirSync(own);
        // The default status interval: until(0) waits only for the first status line.
        return { dir: own, ...runTree(own, runs, null) };
      });
    let trees = plant();
    // samples[kind][pace] = CPU % of each round
    const samples: Record<string, Record<number, number[]>> = {};
    for (const k of list) samples[k.name] = Object.fromEntries(PACES.map((ms) => [ms, [] as number[]]));
    let step = 2;
    /** Lines at each pace, CPU of `pids` over each; every tree is written, followed or not. */
    const measure = async (names: string[], pids: number[]): Promise<void> => {
      const groups = trees.map((t) => t.writers);
      step = await appendEvery(groups, PACES[1]!, (WARM_STEPS * PACES[1]!) / 1000, step);
      step = await appendEvery(groups, PACES[0]!, WARM_S, step);
      for (const ms of PACES) {
        const lines = appendEvery(groups, ms, seconds, step);
        const pct = await cpuWhileEach(pids, lines);
        names.forEach((name, i) => samples[name]![ms]!.push(pct[i]!));
        step = await lines;
      }
    };
    for (let round = 0; round < rounds; round++) {
      if (fresh && round > 0) {
        // Trees of their own, written just now: young runs (see --fresh).
        trees = plant();
        step = 2;
      }
      const ws = builds.map((k, i) => k.start!(trees[i]!.dir, trees[i]!.cfg));
      await Promise.all(ws.map((w) => w.until(0)));
      await sleep(SETTLE_MS);
      await measure(
        builds.map((k) => k.name),
        ws.map((w) => w.child.pid!),
      );
      await Promise.all(ws.map((w) => w.stop()));
      // The bare follower alone, on the first tree.
      const bare = await startBareFollower(trees[0]!.all);
      await sleep(2000);
      await measure(['bare follower'], [bare.pid!]);
      bare.kill();
    }
    const bare = (ms: number): number => median(samples['bare follower']![ms]!);
    report(
      'follow',
      `Following ${runs} runs x ${RUN_FILES.length} files (${fresh ? 'young runs: new trees for every round' : 'runs hundreds to thousands of steps old after the first round: each build on a tree of its own, resuming the state it saved'}) while each run's reward_history.jsonl grows one line per interval (${seconds} s a pace, the median of ${rounds} interleaved rounds; CPU in % of one core; ratio to the bare follower, target <= 3)`,
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
