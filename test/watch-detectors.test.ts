/**
 * `barwatch watch` on runs being written live: it raises the same findings as `analyze` of the
 * finished files, in the same rounds, and no other alert along the way, not even for a moment.
 * Four ways of writing: every scenario of the generator at a steady pace, the same in large
 * bursts (a burst spans files and rounds, so the daemon reads them in whatever order its events
 * come), every simulator scenario written by `barwatch simulate` processes at a training pace,
 * and the same simulated runs replayed from their finished files in bursts.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test, type TestContext } from 'node:test';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { loadConfig } from '../src/config/load.js';
import { silentLogger } from '../src/util/log.js';
import { DETECTORS } from '../src/detectors/index.js';
import type { Finding } from '../src/detectors/types.js';
import { SIM_SCENARIO_NAMES } from '../src/sim/scenarios.js';
import { barwatchAsync } from './helpers/cli.js';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { asExpectedScenario, SCENARIO_NAMES, scenarioWrites } from './helpers/scenarios.js';
import { asExpected } from './helpers/sim-confusion.js';
import { asExpectedGrpo, GRPO_SCENARIO_NAMES, grpoWrites } from './helpers/grpo-scenarios.js';

const SCOPE = new Map(DETECTORS.map((d) => [d.id, d.scope]));
const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'replay.js');

interface AlertLine {
  status: 'firing' | 'resolved' | 'escalated';
  detector: string;
  run: string;
  round: number | null;
  step: number | null;
}

/** Lines in the files a daemon reads (every file but the YAML configs) under `dir`. */
function linesUnder(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) n += linesUnder(p);
    else if (!e.name.endsWith('.yaml') && statSync(p).size > 0) n += readFileSync(p, 'utf8').match(/\n/g)?.length ?? 0;
  }
  return n;
}

/**
 * Watches `root/runs` while `write` writes it, until every line is read (and `settled` holds),
 * then analyses the finished files. Returns the alerts the daemon wrote and analyze's findings.
 */
async function watchWhileWriting(
  root: string,
  write: () => Promise<void>,
  settled?: (d: DaemonProcess) => Promise<unknown>,
  /**
   * stale-run's min_silence: where a scenario stops writing on purpose, long enough that a writer
   * paused by a busy machine (two CPU-bound jobs beside the suite paused it for over 4 s) is not
   * taken for a stale run; long where no scenario stops.
   */
  staleAfter = '15s',
  /** More detector settings, YAML lines under `detectors:`. */
  detectors = '',
): Promise<{ alerts: AlertLine[]; offline: Finding[] }> {
  const state = path.join(root, 'state');
  const cfg = path.join(root, 'barwatch.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${state}\nwatch:\n  status_interval: 300ms\n  sweep_interval: 300ms\nlog: {format: json, level: info}\ndetectors:\n  stale-run: {min_silence: ${staleAfter}}\n${detectors}`,
  );
  const runs = path.join(root, 'runs');
  const d = new DaemonProcess([runs, '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  await write();
  const lines = linesUnder(runs);
  await d.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= lines, 60_000);
  await settled?.(d);
  assert.equal(await d.stop(), 0);
  const alerts = readFileSync(path.join(state, 'alerts.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AlertLine);
  const offline = (await analyzePaths([runs], loadConfig(null), silentLogger(), () => Date.now())).findings.filter(
    (f) => f.severity !== 'info',
  );
  return { alerts, offline };
}

/**
 * For one run: what holds live at the end equals what analyze reports, and every alert raised on
 * the way (firing or escalated, even if resolved since) is one analyze reports, in the same round
 * for a round-scoped detector. Returns the table rows.
 */
function liveEqualsAnalyze(name: string, run: string, alerts: AlertLine[], offline: Finding[]): string[] {
  const mine = alerts.filter((a) => a.run === run);
  const theirs = offline.filter((f) => f.run === run);
  const holding = new Map<string, AlertLine>();
  for (const a of mine) {
    const key = `${a.detector}|${SCOPE.get(a.detector) === 'run' ? '*' : a.round}`;
    if (a.status === 'resolved') holding.delete(key);
    else if (!holding.has(key)) holding.set(key, a);
  }
  const ids = (xs: { detector: string }[]): string[] => [...new Set(xs.map((x) => x.detector))].sort();
  assert.deepEqual(ids([...holding.values()]), ids(theirs), `${name}: live findings at the end`);
  const rows: string[] = [];
  for (const a of mine.filter((x) => x.status !== 'resolved')) {
    const f =
      SCOPE.get(a.detector) === 'round'
        ? theirs.find((x) => x.detector === a.detector && x.round === a.round)
        : theirs.find((x) => x.detector === a.detector);
    assert.ok(f !== undefined, `${name}: ${a.status} ${a.detector} round ${a.round} step ${a.step} live, not in analyze`);
    if (a.status === 'firing')
      rows.push(`| ${name} | ${a.detector} | ${a.round ?? '-'} | ${a.step ?? '-'} | ${f.round ?? '-'} | ${f.step ?? '-'} |`);
  }
  return rows;
}

/**
 * The writes of a finished simulated run, in the order training made them: configs, then round by
 * round the selector's files and then the generator's, their lines interleaved, then the rest.
 */
function writesOfFinishedRun(dir: string, into: string): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  const files = (sub: string): string[] =>
    readdirSync(path.join(dir, sub), { withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.join(sub, e.name))
      .sort();
  const interleave = (rel: string[]): void => {
    const lines = rel.map((f) =>
      readFileSync(path.join(dir, f), 'utf8')
        .split(/(?<=\n)/)
        .filter((l) => l !== ''),
    );
    for (let i = 0; lines.some((l) => i < l.length); i++)
      for (const [j, l] of lines.entries()) if (i < l.length) out.push({ file: path.join(into, rel[j]!), text: l[i]! });
  };
  interleave(files('configs'));
  const rounds = readdirSync(path.join(dir, 'outputs'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => /^(selector|generator)_round(\d+)$/.exec(e.name)!)
    .sort((a, b) => Number(a[2]) * 2 + (a[1] === 'generator' ? 1 : 0) - (Number(b[2]) * 2 + (b[1] === 'generator' ? 1 : 0)));
  for (const r of rounds) interleave(files(path.join('outputs', r[0])));
  interleave(files('outputs'));
  return out;
}

const HEADER = [
  '| run | detector | live: round | live: first held at step | analyze: round | analyze: step |',
  '|---|---|---|---|---|---|',
];

/** Runs the writer process on a plan until it has written everything. */
async function replay(planFile: string): Promise<void> {
  const writer = fork(REPLAY, [planFile], { stdio: 'inherit' });
  await new Promise<void>((resolve, reject) =>
    writer.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exit ${code}`)))),
  );
}

/** Every simulated run: analyze gives what its scenario expects, and live equals analyze. */
function checkSimulated(t: TestContext, root: string, seed: number, alerts: AlertLine[], offline: Finding[]): void {
  const rows = [...HEADER];
  for (const name of SIM_SCENARIO_NAMES) {
    const run = path.join(root, 'runs', name);
    const findings = offline.filter((f) => f.run === run);
    const ids = [...new Set(findings.map((f) => f.detector))].sort();
    assert.ok(asExpected({ scenario: name, seed, ids, findings }), `${name}: analyze gives ${ids.join(', ') || 'nothing'}`);
    rows.push(...liveEqualsAnalyze(name, run, alerts, offline));
  }
  for (const row of rows) t.diagnostic(row);
}

/** Every scenario of the generator, interleaved in trainer time, replayed by a writer process. */
async function scenariosLive(t: TestContext, seed: number, every: number, pauseMs: number): Promise<void> {
  const root = tempDir();
  const now = Date.now();
  const writes = SCENARIO_NAMES.flatMap((name) =>
    scenarioWrites(name, seed, now).map((w) => ({ ...w, file: path.join(root, 'runs', name, w.file) })),
  );
  writes.sort((a, b) => a.time - b.time);
  const planFile = path.join(root, 'plan.json');
  writeFileSync(planFile, JSON.stringify({ writes: writes.map(({ file, text }) => ({ file, text })), every, pauseMs }));
  const { alerts, offline } = await watchWhileWriting(
    root,
    () => replay(planFile),
    // The stale run stopped writing early in the replay: the daemon must say so by itself.
    (d) => d.waitFor((l) => l.msg.startsWith('firing: stale-run'), 60_000),
  );
  const rows = [...HEADER];
  for (const name of SCENARIO_NAMES) {
    const run = path.join(root, 'runs', name);
    const ids = [...new Set(offline.filter((f) => f.run === run).map((f) => f.detector))].sort();
    assert.ok(asExpectedScenario({ scenario: name, ids }), `${name}: analyze gives ${ids.join(', ') || 'nothing'}`);
    rows.push(...liveEqualsAnalyze(name, run, alerts, offline));
  }
  for (const row of rows) t.diagnostic(row);
}

describe('watch equals analyze, written live', () => {
  test('every scenario at a steady pace (25 writes, then 1 ms)', (t) => scenariosLive(t, 4, 25, 1));

  test('every scenario in bursts (1,500 writes across files and rounds, then 200 ms)', (t) => scenariosLive(t, 5, 1500, 200));

  test('every training-health scenario, verl and TRL consoles side by side, at a steady pace', async (t) => {
    const root = tempDir();
    const now = Date.now();
    const seeds = [5, 6];
    const runOf = (name: string, seed: number): string => path.join(root, 'runs', `${name}-s${seed}`);
    const writes = seeds.flatMap((seed) =>
      GRPO_SCENARIO_NAMES.flatMap((name) => grpoWrites(name, seed, now).map((w) => ({ ...w, file: path.join(runOf(name, seed), w.file) }))),
    );
    writes.sort((a, b) => a.time - b.time);
    const planFile = path.join(root, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ writes: writes.map(({ file, text }) => ({ file, text })), every: 25, pauseMs: 1 }));
    // A crash and a run that stops short say so only after a silence: short ones here, and long
    // enough that a writer paused by a busy machine is not taken for either.
    const { alerts, offline } = await watchWhileWriting(
      root,
      () => replay(planFile),
      (d) =>
        d.waitFor(
          () =>
            d.logs.filter((l) => l.msg.startsWith('firing: run-crashed')).length >= seeds.length &&
            d.logs.filter((l) => l.msg.startsWith('firing: run-stopped-short')).length >= seeds.length,
          60_000,
        ),
      '10m',
      '  run-crashed: {grace: 3s}\n  run-stopped-short: {min_silence: 15s}\n',
    );
    const rows = [...HEADER];
    for (const seed of seeds)
      for (const name of GRPO_SCENARIO_NAMES) {
        const run = runOf(name, seed);
        const ids = [...new Set(offline.filter((f) => f.run === run).map((f) => f.detector))].sort();
        assert.ok(asExpectedGrpo({ scenario: name, ids }), `${name} seed ${seed}: analyze gives ${ids.join(', ') || 'nothing'}`);
        rows.push(...liveEqualsAnalyze(`${name}-s${seed}`, run, alerts, offline));
      }
    for (const row of rows) t.diagnostic(row);
  });

  test('every simulator scenario, written by barwatch simulate at 400 steps a second', async (t) => {
    const root = tempDir();
    const seed = 2;
    const { alerts, offline } = await watchWhileWriting(
      root,
      async () => {
        const done = await Promise.all(
          SIM_SCENARIO_NAMES.map((name) =>
            barwatchAsync(['simulate', path.join(root, 'runs', name), '--scenario', name, '--seed', String(seed), '--speed', '400']),
          ),
        );
        for (const r of done) assert.equal(r.status, 0, r.stderr);
      },
      undefined,
      '10m',
    );
    checkSimulated(t, root, seed, alerts, offline);
  });

  test('every simulator scenario in bursts (its finished files replayed, 1,500 writes across files and rounds, then 200 ms)', async (t) => {
    const root = tempDir();
    const seed = 3;
    const finished = path.join(root, 'finished');
    for (const name of SIM_SCENARIO_NAMES) {
      const r = await barwatchAsync(['simulate', path.join(finished, name), '--scenario', name, '--seed', String(seed)]);
      assert.equal(r.status, 0, r.stderr);
    }
    // The runs grow side by side: their write lists are dealt out one write at a time.
    const lists = SIM_SCENARIO_NAMES.map((name) => writesOfFinishedRun(path.join(finished, name), path.join(root, 'runs', name)));
    const writes: { file: string; text: string }[] = [];
    for (let i = 0; lists.some((l) => i < l.length); i++) for (const l of lists) if (i < l.length) writes.push(l[i]!);
    const planFile = path.join(root, 'plan.json');
    writeFileSync(planFile, JSON.stringify({ writes, every: 1500, pauseMs: 200 }));
    const { alerts, offline } = await watchWhileWriting(root, () => replay(planFile), undefined, '10m');
    checkSimulated(t, root, seed, alerts, offline);
  });
});
