/**
 * Watching runs while they are written, and comparing what the daemon raised with what analyze
 * finds in the finished files (the live tests: watch-detectors, watch-speeds).
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';
import { analyzePaths } from '../../src/pipeline/analyze.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/util/log.js';
import { DETECTORS } from '../../src/detectors/index.js';
import type { Finding } from '../../src/detectors/types.js';
import { SIM_SCENARIO_NAMES } from '../../src/sim/scenarios.js';
import { DaemonProcess } from './daemon.js';
import { asExpected } from './sim-confusion.js';

const SCOPE = new Map(DETECTORS.map((d) => [d.id, d.scope]));
const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'replay.js');

export interface AlertLine {
  time: string;
  status: 'firing' | 'resolved' | 'escalated';
  /** On a resolved alert of a run-wide finding that moved on: the round it fires in now. */
  moved_to?: number | null;
  detector: string;
  run: string;
  round: number | null;
  step: number | null;
}

/** Lines in the files a daemon reads (every file but the YAML configs) under `dir`. */
export function linesUnder(dir: string): number {
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
export async function watchWhileWriting(
  root: string,
  /** Writes the runs; gets the daemon, to wait for what it says between writes. */
  write: (d: DaemonProcess) => Promise<void>,
  settled?: (d: DaemonProcess) => Promise<unknown>,
  /**
   * stale-run's min_silence: where a scenario stops writing on purpose, long enough that a writer
   * paused by a busy machine (two CPU-bound jobs beside the suite paused it for over 4 s) is not
   * taken for a stale run; long where no scenario stops.
   */
  staleAfter = '15s',
  /** More detector settings, YAML lines under `detectors:`. */
  detectors = '',
): Promise<{ alerts: AlertLine[]; offline: Finding[]; quiet: Set<string> }> {
  const state = path.join(root, 'state');
  const cfg = path.join(root, 'barwatch.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${state}\nwatch:\n  status_interval: 300ms\n  sweep_interval: 300ms\n  settle_after: 1s\nlog: {format: json, level: debug}\ndetectors:\n  stale-run: {min_silence: ${staleAfter}}\n${detectors}`,
  );
  const runs = path.join(root, 'runs');
  const d = new DaemonProcess([runs, '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  await write(d);
  const lines = linesUnder(runs);
  // Everything read, and every run judged once with everything read (quiet for settle_after).
  await d.waitFor((l) => l.msg.startsWith('status:') && (l['lines'] as number) >= lines && l['unsettled'] === 0, 60_000);
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
  // Findings that first held when a run paused (a writer held up by a busy machine for settle_after).
  const quiet = new Set<string>();
  for (const l of d.logs.filter((x) => x.msg === 'a quiet run judged with everything read'))
    for (const h of l['held'] as { detector: string; round: number | null; step: number | null }[])
      quiet.add(quietKey(l['run'] as string, h.detector, h.round, h.step));
  return { alerts, offline, quiet };
}

/** A finding's key in watchWhileWriting's `quiet`. */
export function quietKey(run: string, detector: string, round: number | null, step: number | null): string {
  return `${run}|${detector}|${round}|${step}`;
}

/**
 * How closely the steps live must match analyze's (see liveEqualsAnalyze): 'none', or the same
 * step, but for a finding that first held when its run paused (the keys watchWhileWriting returns
 * as `quiet`), an earlier one.
 */
export type StepCheck = 'none' | { quiet: Set<string> };

/**
 * For one run: what holds live at the end equals what analyze reports, every alert raised on the
 * way (firing or escalated, even if resolved since) is one analyze reports, in the same round for
 * a round-scoped detector, and no alert resolved on the way except a run-wide one that moved on
 * to another round (none came and went). With `steps` given, every firing alert that analyze
 * reports in the same round names the step analyze names, but for one that first held when its
 * run paused: a daemon judges a run quiet for settle_after with everything it has read, a moment
 * analyze's schedule may not look at, so that one names an earlier step. Returns the table rows.
 */
export function liveEqualsAnalyze(name: string, run: string, alerts: AlertLine[], offline: Finding[], steps: StepCheck = 'none'): string[] {
  const mine = alerts.filter((a) => a.run === run);
  const theirs = offline.filter((f) => f.run === run);
  for (const a of mine.filter((x) => x.status === 'resolved'))
    assert.ok(
      a.moved_to !== undefined,
      `${name}: ${a.detector} round ${a.round} (step ${a.step}) fired and resolved at ${a.time} without moving to another round`,
    );
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
    if (steps !== 'none' && a.status === 'firing' && f.round === a.round && a.step !== null && f.step !== null && a.step !== f.step) {
      const what = `${name}: ${a.detector} round ${a.round} first held at step ${a.step} live, ${f.step} in analyze`;
      assert.ok(steps.quiet.has(quietKey(run, a.detector, a.round, a.step)), `${what}, not when the run paused`);
      assert.ok(a.step < f.step, `${what}: held when the run paused, after analyze's step`);
    }
    if (a.status === 'firing')
      rows.push(`| ${name} | ${a.detector} | ${a.round ?? '-'} | ${a.step ?? '-'} | ${f.round ?? '-'} | ${f.step ?? '-'} |`);
  }
  return rows;
}

/**
 * The writes of a finished simulated run, in the order training made them: configs, then round by
 * round the selector's files and then the generator's, their lines interleaved, then the rest.
 */
export function writesOfFinishedRun(dir: string, into: string): { file: string; text: string }[] {
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

export const HEADER = [
  '| run | detector | live: round | live: first held at step | analyze: round | analyze: step |',
  '|---|---|---|---|---|---|',
];

/** Runs the writer process on a plan until it has written everything. */
export async function replay(planFile: string): Promise<void> {
  const writer = fork(REPLAY, [planFile], { stdio: 'inherit' });
  await new Promise<void>((resolve, reject) =>
    writer.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`writer exit ${code}`)))),
  );
}

/** Every simulated run: analyze gives what its scenario expects, and live equals analyze. */
export function checkSimulated(
  t: TestContext,
  root: string,
  seed: number,
  alerts: AlertLine[],
  offline: Finding[],
  steps: StepCheck = 'none',
): void {
  const rows = [...HEADER];
  for (const name of SIM_SCENARIO_NAMES) {
    const run = path.join(root, 'runs', name);
    const findings = offline.filter((f) => f.run === run);
    const ids = [...new Set(findings.map((f) => f.detector))].sort();
    assert.ok(asExpected({ scenario: name, seed, ids, findings }), `${name}: analyze gives ${ids.join(', ') || 'nothing'}`);
    rows.push(...liveEqualsAnalyze(name, run, alerts, offline, steps));
  }
  for (const row of rows) t.diagnostic(row);
}
