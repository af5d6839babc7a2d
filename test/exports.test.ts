/**
 * Files trainers and their users leave besides logs: a bare JSON list of log dicts (a callback's
 * dump of `state.log_history`), W&B CSV exports, verl JSONL with nulls, and TRL consoles whose
 * entries carry no step.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parsePythonLiteral } from '../src/parsers/pydict.js';
import { analyzeJson, barwatch } from './helpers/cli.js';
import { DaemonProcess, quickWatchConfig } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { grpoWrites, type GrpoScenarioName } from './helpers/grpo-scenarios.js';

/** A TRL scenario's console log (odd seeds are TRL's), and its log dicts with the trainer's step (logging every 5). */
function trlDicts(name: GrpoScenarioName, seed: number): Record<string, unknown>[] {
  const text = grpoWrites(name, seed)
    .map((w) => w.text)
    .join('');
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    const last = line.split('\r').pop()!;
    if (!last.startsWith("{'")) continue;
    const d = parsePythonLiteral(last) as Record<string, unknown>;
    if ('train_runtime' in d) out.push({ ...d, step: out.length * 5 });
    else if (!('eval_reward' in d)) out.push({ ...d, step: (out.length + 1) * 5 });
  }
  return out;
}

function folder(dir: string, name: string, files: Record<string, string>): string {
  const run = path.join(dir, name);
  mkdirSync(run, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(path.join(run, f), text);
  return run;
}

describe('a bare JSON list of log dicts (step_logs.json)', () => {
  test('is read as a run: the collapse in it is found, its summary entry is the finish line (before: "no training records found", exit 0)', () => {
    const dir = tempDir();
    const sick = folder(dir, 'sick', { 'step_logs.json': JSON.stringify(trlDicts('grpo-entropy-collapse', 3), null, 2) });
    const well = folder(dir, 'well', { 'log_history.json': JSON.stringify(trlDicts('grpo-healthy', 1)) });
    const { status, doc } = analyzeJson([dir]);
    assert.equal(status, 1);
    const byRun = Object.fromEntries(doc.runs.map((r) => [r.run, r]));
    assert.deepEqual(
      byRun[sick]!.findings.map((f) => f.detector),
      ['entropy-collapse'],
    );
    assert.deepEqual(byRun[well]!.findings, []);
    assert.equal(byRun[sick]!.format, 'log-history');
    assert.deepEqual([byRun[sick]!.rounds[0]!.first_step, byRun[sick]!.rounds[0]!.last_step], [5, 300]);
    assert.equal((byRun[well] as unknown as { finished: boolean }).finished, true);
  });

  test('a JSON file named like a log that is not a list says why it was not read; a results file is no log at all', () => {
    const dir = tempDir();
    const run = folder(dir, 'r', {
      'metrics.json': '{"train_loss": 0.5}',
      'train_results.json': '{"train_loss": 0.5}',
      'train_logs.json': JSON.stringify(trlDicts('grpo-healthy', 1)),
    });
    const { doc } = analyzeJson([dir], ['--strict']);
    const problems = (
      doc as unknown as { runs: { problems: { path: string; reason: string }[] }[]; problems: { path: string; reason: string }[] }
    ).runs[0]!.problems;
    assert.deepEqual(problems, [
      { path: path.join(run, 'metrics.json'), reason: 'not read (a JSON object, not a list of log dicts with a "step" each)' },
    ]);
    const r = barwatch(['analyze', dir, '--strict']);
    assert.equal(r.status, 3);
    assert.match(r.stdout, /train_results\.json: not a format barwatch reads/);
  });
});

/** A W&B panel export: `Step`, then per run `<run> - <metric>` with `__MIN` and `__MAX`; empty cells where a metric was not logged. */
function wandbExport(runs: string[], steps: number, value: (run: string, step: number, metric: string) => number | null): string {
  const metrics = ['train/reward', 'train/reward_std', 'train/frac_reward_zero_std', 'train/completions/mean_length'];
  const header = ['Step', ...runs.flatMap((r) => metrics.flatMap((m) => [`${r} - ${m}`, `${r} - ${m}__MIN`, `${r} - ${m}__MAX`]))];
  const rows = [header.map((h) => `"${h}"`).join(',')];
  for (let s = 1; s <= steps; s++) {
    const cells = [String(s)];
    for (const r of runs)
      for (const m of metrics) {
        const v = value(r, s, m);
        cells.push(...(v === null ? ['', '', ''] : [String(v), String(v - 0.05), String(v + 0.05)]));
      }
    rows.push(cells.map((c) => `"${c}"`).join(','));
  }
  return rows.join('\n') + '\n';
}

/** A GRPO run whose reward collapses to 0 with no spread from step 100 on (the `sick` run), or stays healthy. */
function grpoValue(run: string, s: number, m: string): number | null {
  if (s % 9 === 0) return null;
  const sick = run.includes('sick') && s >= 100;
  const wobble = 0.03 * Math.sin(s * 1.7);
  switch (m) {
    case 'train/reward':
      return sick ? 0 : 0.4 + s / 1000 + wobble;
    case 'train/reward_std':
      return sick ? 0 : 0.3 + wobble;
    case 'train/frac_reward_zero_std':
      return sick ? 1 : 0.4 + wobble;
    default:
      return 300 + 20 * Math.sin(s);
  }
}

describe('W&B CSV exports', () => {
  test('a one-run panel export is read: the trainer prefix dropped, __MIN/__MAX not series, empty cells not values', () => {
    const dir = tempDir();
    const run = folder(dir, 'r', { 'wandb_export_2026-04-05T10_07_23.233-04_00.csv': wandbExport(['sick-sun-5'], 200, grpoValue) });
    const { status, doc } = analyzeJson([run]);
    assert.equal(status, 1);
    const r = doc.runs[0]!;
    assert.equal(r.format, 'metrics-csv');
    assert.deepEqual(
      r.findings.map((f) => f.detector),
      ['reward-collapse'],
    );
    const series = r.rounds[0]!.series;
    assert.deepEqual(Object.keys(series).sort(), ['completions/mean_length', 'frac_reward_zero_std', 'reward', 'reward_std']);
    assert.equal(series['reward']!.n, 200 - Math.floor(200 / 9));
  });

  test('an export of several runs reads the first and says which it left; one with no step column is not read, with why', () => {
    const dir = tempDir();
    const run = folder(dir, 'r', {
      'wandb_export_sweep.csv': wandbExport(['well-a', 'sick-b'], 150, grpoValue),
    });
    folder(dir, 'table', { 'wandb_export_runs.csv': '"Name","State","reward"\n"well-a","finished","0.6"\n' });
    const r = barwatch(['analyze', dir]);
    assert.match(
      r.stdout,
      /wandb_export_sweep\.csv: holds 2 runs \("well-a", "sick-b"\): only "well-a" is read; export one run per file to read each/,
    );
    assert.match(r.stdout, /wandb_export_runs\.csv: not read \(no step column \(Step, _step, global_step\): a runs table/);
    const { doc } = analyzeJson([run]);
    assert.deepEqual(doc.runs[0]!.findings, [], 'the first run, the healthy one, is what was read');
  });

  test("a W&B API history saved by pandas (metrics.csv: index, _step, _runtime, _timestamp) is read with the trainer's times", () => {
    const dir = tempDir();
    const rows = [',_step,_runtime,_timestamp,train/reward,train/loss'];
    for (let s = 0; s < 50; s++) rows.push(`${s},${s},${s * 10},${1775000000 + s * 10},${0.5 + s / 200},0.1`);
    const run = folder(dir, 'r', { 'metrics.csv': rows.join('\n') + '\n' });
    const { doc } = analyzeJson([run]);
    const round = doc.runs[0]!.rounds[0]!;
    assert.deepEqual(Object.keys(round.series).sort(), ['loss', 'reward']);
    assert.deepEqual([round.first_step, round.last_step, round.series['reward']!.n], [0, 49, 50]);
  });
});

/** verl's file logger from 0.8 writes NaN and Inf as null (orjson). */
function verlLine(step: number, score: number | null, kl: number | null): string {
  return JSON.stringify({ step, data: { 'critic/score/mean': score, 'actor/kl_loss': kl, 'actor/entropy': 0.5 } }) + '\n';
}

describe('null values in a verl JSONL', () => {
  test('are counted per file and series and reported once, with their steps; --strict exits 3', () => {
    const dir = tempDir();
    let text = '';
    for (let s = 1; s <= 60; s++) text += verlLine(s, s >= 40 && s <= 42 ? null : 0.5 + s / 1000, s === 41 ? null : 0.01);
    const run = folder(dir, 'r', { 'train_metrics.jsonl': text });
    const { status, doc } = analyzeJson([run]);
    assert.equal(status, 0);
    const runDoc = doc.runs[0] as unknown as { problems: { reason: string }[]; rounds: { series: Record<string, { n: number }> }[] };
    assert.equal(runDoc.problems.length, 1);
    assert.match(
      runDoc.problems[0]!.reason,
      /^null values, read as missing \(orjson.*\): critic\/score\/mean 3 at steps 40-42, actor\/kl_loss 1 at step 41$/,
    );
    assert.equal(runDoc.rounds[0]!.series['critic/score/mean']!.n, 57);
    assert.equal(barwatch(['analyze', run, '--strict']).status, 3);
  });

  test('watch: one warning per series however many nulls follow, and none again after a restart', async () => {
    const dir = tempDir();
    const run = path.join(dir, 'runs', 'ppo');
    mkdirSync(run, { recursive: true });
    const file = path.join(run, 'train_metrics.jsonl');
    writeFileSync(file, verlLine(1, 0.5, 0.01));
    const cfg = quickWatchConfig(dir);
    const warned: string[] = [];
    const watchOnce = async (from: number, to: number): Promise<void> => {
      const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
      await d.waitFor((l) => l.msg === 'watching');
      for (let s = from; s <= to; s++) appendFileSync(file, verlLine(s, s % 2 === 0 ? null : 0.5, 0.01));
      await d.waitFor((l) => l.msg.startsWith('status:') && (l['records'] as number) >= to);
      assert.equal(await d.stop(), 0);
      warned.push(...d.logs.filter((l) => l.msg.startsWith('null values')).map((l) => (l['series'] as string[]).join(',')));
    };
    await watchOnce(2, 20);
    await watchOnce(21, 40);
    assert.deepEqual(warned, ['critic/score/mean']);
  });
});

describe('TRL console steps', () => {
  test("the trainer's step from the training bar's count at each tqdm clear; with no bar, entry numbers, and the report says so", () => {
    const dir = tempDir();
    const text = grpoWrites('grpo-healthy', 1)
      .map((w) => w.text)
      .join('');
    const withBar = folder(dir, 'bar', { 'console.log': text });
    const bare = text
      .split('\n')
      .map((l) => l.split('\r').pop()!)
      .join('\n');
    const noBar = folder(dir, 'nobar', { 'console.log': bare });
    const a = analyzeJson([withBar]).doc.runs[0]!.rounds[0]!;
    assert.deepEqual([a.steps, a.first_step, a.last_step, (a as { steps_are?: string }).steps_are], [60, 5, 300, undefined]);
    const b = analyzeJson([noBar]).doc.runs[0]!.rounds[0]!;
    assert.deepEqual([b.steps, b.first_step, b.last_step, (b as { steps_are?: string }).steps_are], [60, 1, 60, 'entries']);
    assert.match(barwatch(['analyze', noBar]).stdout, /\(steps are entry numbers: the log gives no step\)/);
  });

  test('a TRL console appended by the run resumed from its checkpoint: the bar goes back, its steps are written again, each counted once', () => {
    const dir = tempDir();
    const lines = grpoWrites('grpo-healthy', 1)
      .map((w) => w.text)
      .join('')
      .split('\n');
    const at = (done: number): number => lines.findIndex((l) => l.includes(`| ${done}/300 [`));
    const resumed = [...lines.slice(0, at(155)), ...lines.slice(at(105))].join('\n');
    const run = folder(dir, 'r', { 'console.log': resumed });
    const round = analyzeJson([run]).doc.runs[0]!.rounds[0]!;
    assert.deepEqual([round.steps, round.first_step, round.last_step], [60, 5, 300]);
    assert.equal(round.series['reward']!.n, 60);
    assert.deepEqual(round.resumed && [round.resumed.last_to, round.resumed.last_from], [105, 150]);
  });
});
