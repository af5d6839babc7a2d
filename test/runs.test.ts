/**
 * What a run is: separate logs side by side in a folder are separate runs, a log continued by a
 * resumed run in a new file is one run, and watch and analyze agree on it (sources/runs.ts).
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { DaemonState } from '../src/daemon/state.js';
import { placeRuns, type Candidate } from '../src/sources/runs.js';
import { analyzeJson } from './helpers/cli.js';
import { DaemonProcess } from './helpers/daemon.js';
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
    assert.equal(doc.runs[0]!.rounds[0]!.first_step, 1);
    assert.equal(doc.runs[0]!.rounds[0]!.last_step, 120);
    assert.deepEqual(doc.runs[0]!.findings, []);
  });

  test('watch: a second log of a sweep appears while the first is watched; the folder becomes two runs, as analyze reads them', async () => {
    const dir = tempDir();
    const sweep = path.join(dir, 'runs', 'sweep');
    mkdirSync(sweep, { recursive: true });
    writeFileSync(path.join(sweep, 'seed1.log'), logOf('grpo-healthy', 1));
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${path.join(dir, 'state')}\nwatch: {status_interval: 200ms, sweep_interval: 300ms}\nlog: {format: json}\n`,
    );
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
