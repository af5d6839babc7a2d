/** Every file in ../shared/real-logs/ through `barwatch analyze --format json`. */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { analyzeJson } from './helpers/cli.js';
import { REAL_LOGS, REAL_LOGS_SKIP } from './helpers/fs.js';

const real = (name: string): string => path.join(REAL_LOGS, name);

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** What the BAR-RAG selector debug sample in ../shared says, read with plain regexes. */
function debugLog() {
  const text = readFileSync(real('barrag-debug/selector_reward_debug_7595.log'), 'utf8');
  const num = (re: RegExp): number => Number(re.exec(text)![1]);
  const weights = /total = ([\d.]+)\*[\d.]+ \+ ([\d.]+)\*/.exec(text)!;
  return {
    first: (key: string): number => num(new RegExp(`\\b${key}=([-\\d.]+)`)),
    finals: [...text.matchAll(/FINAL REWARD: ([-\d.]+)/g)].map((m) => Number(m[1])),
    formatValid: [...text.matchAll(/format_valid=(True|False)/g)].map((m) => (m[1] === 'True' ? 1 : 0)),
    k: num(/ROLLOUTS \(K=(\d+)\)/),
    center: num(/center=([\d.]+)/),
    weights: [Number(weights[1]), Number(weights[2])],
  };
}

const HEALTHY = ['verl-console-ppo-gsm8k-healthy.log', 'trl-grpo-text2sql-trainer_state-healthy.json', 'trl-console-grpo-healthy.log'];

function one(name: string, wantStatus = 0) {
  const { status, doc, stderr } = analyzeJson([real(name)]);
  assert.equal(status, wantStatus, stderr);
  assert.equal(doc.version, 1);
  assert.equal(doc.runs.length, 1);
  const run = doc.runs[0]!;
  assert.equal(run.run, real(name));
  return run;
}

describe('real logs', { skip: REAL_LOGS_SKIP }, () => {
  test('verl console (PPO, GSM8K): 335 steps of critic/score/mean, steps 101-435', () => {
    const run = one('verl-console-ppo-gsm8k-healthy.log');
    assert.equal(run.format, 'verl-console');
    assert.equal(run.rounds.length, 1);
    const r = run.rounds[0]!;
    assert.equal(r.steps, 335);
    assert.equal(r.first_step, 101);
    assert.equal(r.last_step, 435);
    const s = r.series['critic/score/mean']!;
    assert.equal(s.n, 335);
    assert.ok(s.mean! > 0.9 && s.mean! < 0.99, `mean ${s.mean}`);
    assert.equal(r.series['val-core/openai/gsm8k/reward/mean@1']!.n, 34);
    assert.equal(run.files[0]!.malformed, 0);
  });

  test('verl console with reward_extra_info components (full precision)', () => {
    // Two steps of a planned 563,250 and no finish line: run-stopped-short (exit 1).
    const run = one('verl-console-reward-extra-info-format-sample.log', 1);
    assert.deepEqual(
      run.findings.map((f) => f.detector),
      ['run-stopped-short'],
    );
    const r = run.rounds[0]!;
    assert.equal(r.steps, 2);
    // The expected mean comes from the log itself (read from ../shared, its values not copied here).
    const formats = [
      ...readFileSync(real('verl-console-reward-extra-info-format-sample.log'), 'utf8').matchAll(
        /reward_extra_info\/format:([0-9.eE+-]+)/g,
      ),
    ].map((m) => Number(m[1]));
    assert.equal(formats.length, 2);
    assert.ok(Math.abs(r.series['format']!.mean! - (formats[0]! + formats[1]!) / 2) < 1e-12);
    assert.ok(r.series['reward_extra_info/distance']!.n === 2);
  });

  test('TRL trainer_state (text2sql): 200 entries, steps 5-1000', () => {
    const run = one('trl-grpo-text2sql-trainer_state-healthy.json');
    assert.equal(run.format, 'trainer-state');
    const r = run.rounds[0]!;
    assert.equal(r.steps, 200);
    assert.equal(r.first_step, 5);
    assert.equal(r.last_step, 1000);
    assert.equal(r.series['reward']!.n, 200);
    assert.equal(r.series['rewards/reward_func/mean']!.n, 200);
  });

  test('TRL trainer_state with 5 reward functions: format_reward_fn becomes format', () => {
    // Its completions are cut at the limit (clipped ratio 0.95-1.0): length-at-limit (exit 1).
    const run = one('trl-grpo-5-components-trainer_state-erratic.json', 1);
    const r = run.rounds[0]!;
    assert.equal(r.steps, 40);
    assert.equal(r.series['format']!.n, 40);
    assert.equal(r.series['format_std']!.n, 40);
    assert.equal(r.series['completions/clipped_ratio']!.last, 1);
  });

  test('TRL console, collapse: 40 entries, reward ends at 0 with frac_reward_zero_std 1', () => {
    const run = one('trl-console-grpo-collapse.log', 1);
    assert.equal(run.format, 'trl-console');
    const r = run.rounds[0]!;
    assert.equal(r.steps, 40);
    assert.equal(r.series['reward']!.last, 0);
    assert.equal(r.series['frac_reward_zero_std']!.last, 1);
    assert.equal(r.series['completions/mean_length']!.last, 512);
    assert.equal(run.files[0]!.malformed, 0);
  });

  test('TRL console, healthy: 40 entries', () => {
    const run = one('trl-console-grpo-healthy.log');
    const r = run.rounds[0]!;
    assert.equal(r.steps, 40);
    assert.equal(r.series['reward']!.n, 40);
    assert.equal(r.series['grad_norm']!.n, 40);
  });

  test('BAR-RAG selector debug log: its components, K, c and the weights', () => {
    const run = one('barrag-debug/selector_reward_debug_7595.log', 1);
    assert.equal(run.format, 'barrag-selector-debug');
    const r = run.rounds[0]!;
    assert.equal(r.role, 'selector');
    assert.equal(r.steps, 1);
    // Every expectation comes from the log itself (read from ../shared, its values not copied here).
    const log = debugLog();
    const v = (k: string): number | null => r.series[k]!.mean;
    assert.equal(v('boundary'), log.first('unc_reward'));
    assert.equal(v('relevance'), log.first('rel_reward'));
    assert.equal(v('format'), log.first('format_bonus'));
    assert.equal(v('count'), log.first('count_penalty'));
    assert.equal(v('accuracy'), log.first('accuracy'));
    // Two samples: the computed one and the FORMAT INVALID one.
    assert.equal(log.finals.length, 2);
    assert.equal(v('total'), Number(mean(log.finals).toFixed(4)));
    assert.equal(v('format_valid'), mean(log.formatValid));
    assert.equal(run.rollouts?.k, log.k);
    assert.deepEqual(run.settings, { targetAccuracy: log.center, weights: { boundary: log.weights[0], relevance: log.weights[1] } });
  });

  test('BAR-RAG generator debug log', () => {
    const run = one('barrag-debug/reward_debug_7737.log');
    const r = run.rounds[0]!;
    assert.equal(r.role, 'generator');
    assert.equal(r.series['samples']!.last, 2);
    assert.equal(r.series['accuracy']!.mean, 0.5);
  });

  test('the healthy logs give no finding at all; exit 0', () => {
    for (const name of HEALTHY) {
      const { status, doc } = analyzeJson([real(name)]);
      assert.equal(status, 0, name);
      assert.deepEqual(doc.runs[0]!.findings, [], name);
    }
  });

  test('the collapse log gives reward-collapse (critical), at the step the reward has sat at 0 for most of the window, and its truncation', () => {
    const run = one('trl-console-grpo-collapse.log', 1);
    const f = run.findings as { detector: string; severity: string; step: number; evidence: Record<string, unknown> }[];
    assert.deepEqual(
      f.map((x) => x.detector),
      ['reward-collapse', 'length-at-limit'],
    );
    assert.equal(f[0]!.severity, 'critical');
    assert.ok((f[0]!.evidence['frac_reward_zero_std'] as number) >= 0.9);
    // Entries 20-30 of 40, logged every 5 steps: the trainer's steps 100-150.
    assert.ok(f[0]!.step >= 100 && f[0]!.step <= 150, `step ${f[0]!.step}`);
  });

  test("TRL console entries carry the trainer's step: the training bar's count when tqdm cleared it for each entry (stdout reaches the file in bursts)", () => {
    for (const [name, status] of [
      ['trl-console-grpo-collapse.log', 1],
      ['trl-console-grpo-healthy.log', 0],
    ] as const) {
      const round = (one(name, status).rounds as { steps: number; first_step: number; last_step: number; steps_are?: string }[])[0]!;
      // 40 entries, logging_steps 5 of 200 (before: steps 1-40, the entries' numbers).
      assert.deepEqual([round.steps, round.first_step, round.last_step, round.steps_are], [40, 5, 200, undefined], name);
    }
  });

  test('the BAR-RAG debug sample (K=4) gives low-rollouts with the standard error at its c=0.6', () => {
    const run = one('barrag-debug/selector_reward_debug_7595.log', 1);
    const f = run.findings as { detector: string; evidence: Record<string, unknown> }[];
    assert.deepEqual(
      f.map((x) => x.detector),
      ['low-rollouts'],
    );
    const log = debugLog();
    assert.equal(f[0]!.evidence['standard_error'], Number(Math.sqrt((log.center * (1 - log.center)) / log.k).toFixed(4)));
  });

  test('the whole folder in one call: one document, every file read, nothing malformed', () => {
    const { status, doc } = analyzeJson([REAL_LOGS]);
    assert.equal(status, 1);
    const files = doc.runs.flatMap((r) => r.files);
    // Every log and trainer_state in the folder and its subfolders (SOURCES.md is no log).
    const logs = readdirSync(REAL_LOGS, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(log|json)$/.test(f));
    assert.equal(files.length, logs.length);
    assert.equal(
      files.reduce((a, f) => a + f.malformed, 0),
      0,
    );
  });
});
