/**
 * What a run is: separate logs side by side in a folder are separate runs, a log continued by a
 * resumed run in a new file is one run, and watch and analyze agree on it (sources/runs.ts).
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { DaemonState } from '../src/daemon/state.js';
import { placeRuns, type Candidate } from '../src/sources/runs.js';
import { analyzeJson, barwatch } from './helpers/cli.js';
import { DaemonProcess, quickWatchConfig } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { grpoWrites, type GrpoScenarioName } from './helpers/grpo-scenarios.js';

/** One GRPO run's console log (odd seeds are TRL's console, even seeds verl's), as one text. */
function logOf(name: GrpoScenarioName, seed: number): string {
  return grpoWrites(name, seed)
    .map((w) => w.text)
    .join('');
}

function candidate(file: string, format: string, first: number, last: number | null, run = '/r'): Candidate {
  return { file, place: { run, role: 'unknown', round: null }, opening: { format: format as 'verl-console', first, last } };
}

function runsOf(placed: Map<string, { run: string }>): Record<string, string> {
  return Object.fromEntries([...placed].map(([f, p]) => [path.basename(f), p.run === '/r' ? 'folder' : path.basename(p.run)]));
}

const NO_STEP: Candidate = { file: '/r/stderr.log', place: { run: '/r', role: 'unknown', round: null }, opening: null };

/** Cases of the rule: what the folder holds, and the run of each file ('folder': the folder's). */
const CASES: [string, Candidate[], Record<string, string>][] = [
  [
    'a sweep: three logs, each from step 1',
    [
      candidate('/r/a.log', 'verl-console', 1, 50),
      candidate('/r/b.log', 'verl-console', 1, 60),
      candidate('/r/c.log', 'verl-console', 1, 55),
    ],
    { 'a.log': 'a.log', 'b.log': 'b.log', 'c.log': 'c.log' },
  ],
  [
    'a run resumed from its checkpoint at step 40 into a new file: one run, the folder',
    [candidate('/r/a.log', 'verl-console', 1, 50), candidate('/r/a-resumed.log', 'verl-console', 41, 90)],
    { 'a.log': 'folder', 'a-resumed.log': 'folder' },
  ],
  [
    'a sweep in which one run was resumed: the continuation goes with the run it continues',
    [
      candidate('/r/seed1.log', 'verl-console', 1, 30),
      candidate('/r/seed1-resume.log', 'verl-console', 21, 80),
      candidate('/r/seed2.log', 'verl-console', 1, 80),
    ],
    { 'seed1.log': 'seed1.log', 'seed1-resume.log': 'seed1.log', 'seed2.log': 'seed2.log' },
  ],
  [
    'a log that starts past the end of every other continues none: two runs',
    [candidate('/r/short.log', 'verl-console', 1, 2), candidate('/r/other.log', 'verl-console', 101, 435)],
    { 'short.log': 'short.log', 'other.log': 'other.log' },
  ],
  [
    'a console log beside its metrics JSONL (two formats): the folder',
    [candidate('/r/train.log', 'train-log', 1, 50), candidate('/r/reward_history.jsonl', 'reward-history', 1, 50)],
    { 'train.log': 'folder', 'reward_history.jsonl': 'folder' },
  ],
  [
    'a log beside one with no step line: the folder',
    [candidate('/r/train.log', 'verl-console', 1, 50), NO_STEP],
    { 'train.log': 'folder', 'stderr.log': 'folder' },
  ],
  [
    'entries numbered by the reader (TRL console dicts, no last step): each log from entry 1 is a run',
    [candidate('/r/s1.log', 'trl-console', 1, null), candidate('/r/s2.log', 'trl-console', 1, null)],
    { 's1.log': 's1.log', 's2.log': 's2.log' },
  ],
];

describe('what a run is: the rule', () => {
  for (const [name, candidates, expected] of CASES) test(name, () => assert.deepEqual(runsOf(placeRuns(candidates)), expected));
});

/** A folder `name` under `dir` holding one file; returns the folder. */
function writeRun(dir: string, name: string, file: string, text: string): string {
  const run = path.join(dir, name);
  mkdirSync(run, { recursive: true });
  writeFileSync(path.join(run, file), text);
  return run;
}

/** verl's file logger: a line per step, the metrics under `data`. */
function verlJsonl(from: number, to: number, score: (step: number) => number): string {
  let out = '';
  for (let s = from; s <= to; s++)
    out +=
      JSON.stringify({
        step: s,
        data: { 'critic/score/mean': score(s), 'actor/entropy': 0.6 - s / 2000, 'response_length/mean': 300 + (s % 7) },
      }) + '\n';
  return out;
}

const before = (s: number): number => 0.3 + s / 1000 + 0.05 * Math.sin(s);
const after = (s: number): number => 0.31 + s / 1000 + 0.05 * Math.cos(s);

describe('resumed runs: a step written again counts once, the newest value', () => {
  test('a train_metrics.jsonl appended by the run resumed at step 251 after a crash at 279: 400 steps, 400 values', () => {
    const dir = tempDir();
    const resumed = writeRun(dir, 'resumed', 'train_metrics.jsonl', verlJsonl(1, 279, before) + verlJsonl(251, 400, after));
    const once = writeRun(dir, 'once', 'train_metrics.jsonl', verlJsonl(1, 250, before) + verlJsonl(251, 400, after));
    const got = analyzeJson([resumed]).doc.runs[0]!.rounds[0]!;
    const want = analyzeJson([once]).doc.runs[0]!.rounds[0]!;
    assert.equal(got.steps, 400);
    for (const name of Object.keys(want.series)) {
      assert.equal(got.series[name]!.n, 400, name);
      assert.ok(Math.abs(got.series[name]!.mean! - want.series[name]!.mean!) < 1e-12, name);
      assert.ok(Math.abs(got.series[name]!.sd! - want.series[name]!.sd!) < 1e-12, name);
      assert.equal(got.series[name]!.window.n, want.series[name]!.window.n, name);
      assert.ok(Math.abs(got.series[name]!.window.sd! - want.series[name]!.window.sd!) < 1e-12, name);
    }
    assert.deepEqual(got.resumed, { times: 1, replaced: 29, last_to: 251, last_from: 279, exact: true });
    const text = barwatch(['analyze', resumed]).stdout;
    assert.match(text, /resumed at step 251 \(steps 251-279 written again: the later values count\)/);
  });

  test('a verl console log appended by the resumed run: the same', () => {
    const lines = logOf('grpo-healthy', 2).split('\n');
    const at = (step: number): number => lines.findIndex((l) => l.includes(`step:${step} -`));
    const dir = tempDir();
    const run = writeRun(
      dir,
      'r',
      'train.log',
      [...lines.slice(0, at(81)), 'resuming from global_step_60', ...lines.slice(at(61))].join('\n'),
    );
    const got = analyzeJson([run]).doc.runs[0]!.rounds[0]!;
    const want = analyzeJson([writeRun(dir, 'w', 'train.log', lines.join('\n'))]).doc.runs[0]!.rounds[0]!;
    assert.equal(got.series['critic/score/mean']!.n, want.series['critic/score/mean']!.n);
    assert.equal(got.series['critic/score/mean']!.mean, want.series['critic/score/mean']!.mean);
    assert.equal(got.resumed?.last_to, 61);
  });

  test('watch: the restarted run truncates its train_metrics.jsonl and writes it again from the checkpoint; the run goes on, each step once', async () => {
    const dir = tempDir();
    const run = path.join(dir, 'runs', 'ppo');
    mkdirSync(run, { recursive: true });
    const file = path.join(run, 'train_metrics.jsonl');
    writeFileSync(file, verlJsonl(1, 279, before));
    const cfg = quickWatchConfig(dir);
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= 279);
    // verl opens the file with "wb": the restart empties it, then the resumed run appends from step 251.
    writeFileSync(file, '');
    await d.waitFor((l) => l['problem'] === 'truncated');
    for (const [from, to] of [
      [251, 300],
      [301, 400],
    ] as const) {
      appendFileSync(file, verlJsonl(from, to, after));
      await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= 279 + to - 250);
    }
    assert.equal(await d.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    assert.deepEqual(
      state.runs.map((r) => r.id),
      [run],
      'the same run, not a new one',
    );
    const once = analyzeJson([writeRun(dir, 'once', 'train_metrics.jsonl', verlJsonl(1, 250, before) + verlJsonl(251, 400, after))]).doc
      .runs[0]!.rounds[0]!;
    const score = state.runs[0]!.rounds[0]!.series['critic/score/mean']!;
    assert.equal(score.summary.n, 400);
    assert.ok(Math.abs(score.summary.mean - once.series['critic/score/mean']!.mean!) < 1e-12);
    assert.equal(score.lastStep, 400);
  });
});

describe('what a run is: analyze and watch', () => {
  test('a folder of a sweep: each log is a run named by its file, and the collapse is found in its own run only', () => {
    const dir = tempDir();
    const sweep = path.join(dir, 'logs');
    mkdirSync(sweep);
    writeFileSync(path.join(sweep, 'seed1.log'), logOf('grpo-healthy', 1));
    writeFileSync(path.join(sweep, 'seed3.log'), logOf('grpo-entropy-collapse', 3));
    writeFileSync(path.join(sweep, 'seed5.log'), logOf('grpo-healthy', 5));
    // verl's console too, beside a config folder of the same run folder.
    writeFileSync(path.join(sweep, 'verl-a.log'), logOf('grpo-healthy', 2));
    writeFileSync(path.join(sweep, 'verl-b.log'), logOf('grpo-length-at-limit', 4));
    const { status, doc } = analyzeJson([dir]);
    assert.equal(status, 1, 'exit 1: findings');
    const byRun = Object.fromEntries(doc.runs.map((r) => [path.relative(dir, r.run), r.findings.map((f) => f.detector).sort()]));
    assert.deepEqual(byRun, {
      'logs/seed1.log': [],
      'logs/seed3.log': ['entropy-collapse'],
      'logs/seed5.log': [],
      'logs/verl-a.log': [],
      'logs/verl-b.log': ['length-at-limit'],
    });
    for (const r of doc.runs)
      assert.deepEqual(
        r.files.map((f) => f.path),
        [r.run],
        `${r.run} is read from its own file only`,
      );
  });

  test('a run resumed into a new log is one run, with every step', () => {
    const dir = tempDir();
    const run = path.join(dir, 'run');
    mkdirSync(run);
    const lines = logOf('grpo-healthy', 2).split('\n');
    const at = (step: number): number => lines.findIndex((l) => l.includes(`step:${step} -`));
    // The first log ends at step 80; the resumed run starts again at its checkpoint, step 61.
    writeFileSync(path.join(run, 'train_20250101.log'), lines.slice(0, at(81)).join('\n') + '\n');
    writeFileSync(path.join(run, 'train_20250102.log'), 'resuming from global_step_60\n' + lines.slice(at(61)).join('\n'));
    const { doc } = analyzeJson([dir]);
    assert.deepEqual(
      doc.runs.map((r) => r.run),
      [run],
    );
    const round = doc.runs[0]!.rounds[0]!;
    assert.equal(round.first_step, 1);
    assert.equal(round.last_step, 120);
    // Every series goes on in the resumed log: before, the first log owned them and steps 81-120 were dropped.
    for (const [name, s] of Object.entries(round.series)) if (!name.startsWith('val')) assert.equal(s.n, 120, name);
    const whole = analyzeJson([writeRun(dir, 'whole', 'train.log', lines.join('\n'))]).doc.runs[0]!.rounds[0]!;
    assert.equal(round.series['critic/score/mean']!.mean, whole.series['critic/score/mean']!.mean);
    assert.deepEqual(doc.runs[0]!.findings, []);
  });

  test('watch: a second log of a sweep appears while the first is watched; the folder becomes two runs, as analyze reads them', async () => {
    const dir = tempDir();
    const sweep = path.join(dir, 'runs', 'sweep');
    mkdirSync(sweep, { recursive: true });
    writeFileSync(path.join(sweep, 'seed1.log'), logOf('grpo-healthy', 1));
    const cfg = quickWatchConfig(dir);
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
    await d.waitFor((l) => l.msg === 'watching');
    await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) > 0);
    // The sweep's next run: its log written while the daemon watches.
    writeFileSync(path.join(sweep, 'seed3.log'), logOf('grpo-entropy-collapse', 3));
    await d.waitFor((l) => l.msg.includes('holds 2 separate run(s)'));
    await d.waitFor((l) => l.msg.startsWith('firing: entropy-collapse'));
    await d.waitFor((l) => l.msg.startsWith('status:') && l['runs'] === 2);
    assert.equal(await d.stop(), 0);
    const state = JSON.parse(readFileSync(path.join(dir, 'state', 'state.json'), 'utf8')) as DaemonState;
    const { doc } = analyzeJson([path.join(dir, 'runs')]);
    assert.deepEqual(state.runs.map((r) => r.id).sort(), doc.runs.map((r) => r.run).sort());
    assert.deepEqual(doc.runs.map((r) => r.run).sort(), [path.join(sweep, 'seed1.log'), path.join(sweep, 'seed3.log')]);
    const alerts = readFileSync(path.join(dir, 'state', 'alerts.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { status: string; run: string; detector: string });
    assert.ok(
      alerts.some((a) => a.status === 'firing' && a.detector === 'entropy-collapse' && a.run === path.join(sweep, 'seed3.log')),
      JSON.stringify(alerts),
    );
    assert.ok(!alerts.some((a) => a.status === 'firing' && a.run === sweep), `nothing fires for the folder: ${JSON.stringify(alerts)}`);
  });
});
