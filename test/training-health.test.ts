/**
 * The training-health detectors: how GRPO / PPO training of a language model fails in general.
 * Generated runs in verl's and TRL's console formats at four noise levels, the real logs of
 * ../shared/real-logs (silent on the healthy ones, speaking on the failed ones), and the parts
 * they rest on: fatal errors and planned lengths read from console logs, a collapse's onset.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { DetectorEngine } from '../src/detectors/engine.js';
import { DETECTORS } from '../src/detectors/index.js';
import { nonfiniteDrafts } from '../src/detectors/nonfinite-reward.js';
import { collapsedFrom } from '../src/detectors/reward-collapse.js';
import { FatalReader, parsePlan } from '../src/parsers/fatal.js';
import { TextLogParser } from '../src/parsers/train-log.js';
import type { ParsedRecord } from '../src/parsers/types.js';
import { RunState } from '../src/runs/run.js';
import { History } from '../src/stats/rolling.js';
import { analyzeJson } from './helpers/cli.js';
import { grpoConfusion } from './helpers/confusion.js';
import { REAL_LOGS, REAL_LOGS_SKIP, tempDir } from './helpers/fs.js';
import { asExpectedGrpo, GRPO_EXPECTED, GRPO_SCENARIO_NAMES } from './helpers/grpo-scenarios.js';

const OPTS = { window: 64, history: 256, ewmaHalfLife: 16, curveBuckets: 128, maxSeries: 500 };
const PARSER = { keyMap: {}, debugSamplesPerStep: 0, debugStepGapMs: 2000 };
const CTX = { role: 'unknown' as const, round: null, format: 'train-log' as const, file: 'train.log' };

/** The findings of a run built from records read at time 0, judged at `now` by every detector with its defaults. */
function judge(records: ParsedRecord[], live = false, now = 0): string[] {
  const run = new RunState('run', OPTS);
  for (const r of records) run.apply(r, CTX, 0);
  const params = Object.fromEntries(DETECTORS.map((d) => [d.id, d.defaults]));
  const engine = new DetectorEngine(params);
  engine.evaluate(run, { now, live, final: !live });
  return engine.findings().map((f) => f.detector);
}

const metrics = (step: number, values: Record<string, number>): ParsedRecord => ({ kind: 'metrics', step, values });

describe('training-health scenarios: exactly the expected findings, verl and TRL consoles, noise x0.5 to x2', () => {
  test('16 scenarios x 8 seeds', async (t) => {
    const { outcomes, table } = await grpoConfusion([1, 2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16]);
    t.diagnostic(`\n${table}`);
    for (const o of outcomes) {
      assert.ok(
        asExpectedGrpo(o),
        `${o.scenario} seed ${o.seed}: ${o.ids.join(', ') || 'nothing'}; expected ${GRPO_EXPECTED[o.scenario].join(', ') || 'nothing'}`,
      );
    }
    assert.equal(outcomes.length, GRPO_SCENARIO_NAMES.length * 13);
  });
});

/** What each real log must give (warning and critical), with why. */
const REAL: [string, string[], string][] = [
  ['verl-console-ppo-gsm8k-healthy.log', [], 'healthy PPO: flat reward, entropy 0.02-0.04, KL ~0.001, clip <= 0.023'],
  ['trl-console-grpo-healthy.log', [], 'healthy GRPO; grad_norm 0.0 in 31 of 40 entries is no frozen signal'],
  ['trl-grpo-text2sql-trainer_state-healthy.json', [], 'healthy, noisy plateau'],
  [
    'grpo-dynamics/trl-console-exp1a-rho0.70_seed42.log',
    [],
    'healthy control: entropy 0.18 -> 0.10, frac_reward_zero_std up to 0.93 over 15 entries',
  ],
  [
    'grpo-dynamics/trl-console-exp1a-rho1.50_seed44.log',
    ['entropy-collapse', 'length-at-limit'],
    'entropy 0.153 -> 0.006 and truncation while the reward looks fine',
  ],
  ['grpo-dynamics/trl-console-exp1a-rho1.50_seed42.log', ['length-at-limit'], 'truncation: clipped ratio 1.0, length pinned at 512'],
  ['grpo-dynamics/trl-console-exp1a-rho5.00_seed42.log', ['length-collapse', 'reward-drop'], 'length 453 -> 60, reward 0.9 -> 0.55'],
  ['trl-console-grpo-collapse.log', ['length-at-limit', 'reward-collapse'], 'reward to 0 with completions pinned at 512'],
  ['trl-grpo-5-components-trainer_state-erratic.json', ['length-at-limit'], 'clipped ratio 0.95-1.0'],
];

describe('training health on real logs', { skip: REAL_LOGS_SKIP }, () => {
  for (const [name, want, why] of REAL) {
    test(`${name}: ${want.join(', ') || 'nothing'} (${why})`, () => {
      const { status, doc } = analyzeJson([path.join(REAL_LOGS, name)]);
      const got = [
        ...new Set(
          doc.runs
            .flatMap((r) => r.findings)
            .filter((f) => f.severity !== 'info')
            .map((f) => f.detector),
        ),
      ].sort();
      assert.deepEqual(got, [...want].sort());
      assert.equal(status, want.length > 0 ? 1 : 0);
    });
  }

  test('each finding carries its numbers and what to do', () => {
    const { doc } = analyzeJson([path.join(REAL_LOGS, 'grpo-dynamics/trl-console-exp1a-rho1.50_seed44.log')]);
    const f = doc.runs[0]!.findings.find((x) => x.detector === 'entropy-collapse')!;
    assert.equal(f.evidence['series'], 'entropy');
    assert.ok((f.evidence['early_level'] as number) > 0.13 && (f.evidence['early_level'] as number) < 0.16);
    assert.ok((f.evidence['recent_median'] as number) < 0.012);
    assert.match(f.message, /0\.141.*0\.00950/);
    assert.match(f.recommendation!, /temperature|entropy/);
  });
});

describe('fatal errors and planned lengths in console logs', () => {
  test("a traceback's exception line is the error; Ray's wrapped errors, NCCL timeouts and OOM kills too; an indented line is not", () => {
    const r = new FatalReader();
    assert.equal(r.line('Traceback (most recent call last):'), null);
    assert.equal(r.line('  File "x.py", line 3, in f'), null);
    assert.equal(r.line('    raise ValueError("no")'), null);
    assert.deepEqual(r.line('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'), {
      kind: 'fatal',
      message: 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
    });
    // Outside a traceback an exception-looking line is not fatal (a logged, handled error).
    assert.equal(r.line('ValueError: retrying'), null);
    r.line('Traceback (most recent call last):');
    assert.equal(
      r.line('ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.generate() (pid=1)')?.message.startsWith('ray.'),
      true,
    );
    for (const l of [
      '[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.',
      'The actor died unexpectedly before finishing this task.',
      'slurmstepd: error: *** JOB 123 ON node1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***',
      'Segmentation fault (core dumped)',
    ])
      assert.equal(r.line(l)?.kind, 'fatal', l);
    r.line('Traceback (most recent call last):');
    assert.equal(r.line('StopIteration'), null, 'a harmless end of a traceback');
  });

  test("verl's stated plan and its Training Progress bar, Hugging Face's unnamed bar; other named bars are not plans", () => {
    assert.deepEqual(parsePlan('Total training steps: 300'), { kind: 'plan', total: 300, source: 'stated' });
    assert.deepEqual(parsePlan('Training Progress:  64%|######4   | 192/300 [1:00:00<30:00, 10.0s/it]'), {
      kind: 'plan',
      total: 300,
      done: 192,
      source: 'stated',
    });
    assert.deepEqual(parsePlan(' 20%|##        | 40/200 [02:27<09:47,  3.67s/it]'), { kind: 'plan', total: 200, done: 40, source: 'bar' });
    assert.equal(parsePlan('Processed prompts: 100%|##########| 512/512 [00:05<00:00, 99.1it/s]'), null);
  });

  test('the most drawn unnamed bar is the plan (evaluation bars are drawn less); a stated plan wins', () => {
    const run = new RunState('run', OPTS);
    const bar = (done: number, total: number): ParsedRecord => ({ kind: 'plan', total, done, source: 'bar' });
    for (let i = 1; i <= 30; i++) run.apply(bar(i, 200), CTX, 0);
    for (let i = 1; i <= 5; i++) run.apply(bar(i, 5), CTX, 0);
    assert.deepEqual(run.planOf('unknown', null), { total: 200, done: 30, source: 'bar' });
    run.apply({ kind: 'plan', total: 400, source: 'stated' }, CTX, 0);
    assert.equal(run.planOf('unknown', null)?.total, 400);
  });

  test('a log that crashes before its first step is a critical run-crashed finding, exit 1, quoting the error', () => {
    const dir = tempDir();
    const log = path.join(dir, 'train.log');
    writeFileSync(
      log,
      [
        '(TaskRunner pid=7) Total training steps: 300',
        '(TaskRunner pid=7) Traceback (most recent call last):',
        '(TaskRunner pid=7)   File "main_ppo.py", line 10, in <module>',
        '(TaskRunner pid=7) RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error',
        '',
      ].join('\n'),
    );
    const { status, doc } = analyzeJson([log]);
    assert.equal(status, 1);
    const f = doc.runs[0]!.findings;
    assert.deepEqual(
      f.map((x) => x.detector),
      ['run-crashed'],
    );
    assert.equal(f[0]!.severity, 'critical');
    assert.match(f[0]!.message, /before its first step: RuntimeError: NCCL error/);
    assert.match(f[0]!.recommendation!, /collective|NCCL/);
  });

  test('a traceback followed by more steps of the same file is no crash; in watch an error must stand for the grace', () => {
    const p = new TextLogParser(PARSER);
    const lines = ['step:1 - critic/score/mean:0.5', 'Traceback (most recent call last):', '  File "a.py", line 1', 'KeyError: 3'];
    const recs = lines.flatMap((l) => p.line(l) as ParsedRecord[]);
    assert.deepEqual(judge(recs), ['run-crashed']);
    assert.deepEqual(judge(recs, true, 10_000), [], 'within the grace (1m) in watch');
    assert.deepEqual(judge(recs, true, 120_000), ['run-crashed']);
    assert.deepEqual(judge([...recs, ...(p.line('step:2 - critic/score/mean:0.5') as ParsedRecord[])]), []);
  });
});

describe('single detectors at their edges', () => {
  test('reward-collapse: one non-zero value inside the collapsed stretch does not move its onset', () => {
    const values = [0.8, 0.9, 0.85, 0.9, 0.8, 0.9, 0.85, 0.9, 0.8, 0.85, 0, 0, 0.01, 0, 0.3, 0, 0, 0, 0.02, 0, 0, 0, 0.25, 0, 0, 0];
    const recs = values.map((v, i) => metrics(i + 1, { reward: v, frac_reward_zero_std: 1 }));
    const run = new RunState('run', OPTS);
    for (const r of recs) run.apply(r, CTX, 0);
    const d = DETECTORS.find((x) => x.id === 'reward-collapse')!;
    const drafts = d.detect(run, d.defaults, { now: 0, live: false, final: true });
    assert.equal(drafts.length, 1);
    assert.match(drafts[0]!.message, /since step 11\b/);
  });

  test('reward-collapse: the scan that stops once no earlier start can qualify finds what a scan of every point finds', () => {
    // The scan before the early stop, kept as the reference.
    const full = (values: number[], level: number, window: number): number | null => {
      let from: number | null = null;
      let sum = 0;
      let close = 0;
      for (let j = values.length - 1; j >= 0; j--) {
        const a = Math.abs(values[j]!);
        sum += a;
        if (a <= 2 * level) close++;
        const len = values.length - j;
        if (a <= level && sum <= level * len && close >= 0.75 * len) from = j;
      }
      return from !== null && values.length - from >= window ? from : null;
    };
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let stopped = 0;
    for (let t = 0; t < 3000; t++) {
      const n = 1 + Math.floor(rand() * 300);
      const onset = Math.floor(rand() * n);
      const high = rand() < 0.5 ? 0.6 : 0.08;
      const values = Array.from({ length: n }, (_, i) =>
        i < onset
          ? high * (0.5 + rand()) * (rand() < 0.1 ? -1 : 1)
          : rand() < 0.15
            ? rand() * 0.4
            : rand() * 0.06 * (rand() < 0.5 ? -1 : 1),
      );
      for (const [level, window] of [
        [0.05, 8],
        [0.02, 3],
        [0.1, 32],
      ] as const) {
        const got = collapsedFrom(values, level, window);
        assert.equal(got, full(values, level, window), `values ${JSON.stringify(values)} level ${level} window ${window}`);
        if (got === null) stopped++;
        // Read in place from a history, one that wrapped around its ring included.
        const h = new History(64);
        values.forEach((v, i) => h.push(i, v));
        assert.equal(collapsedFrom(h, level, window), full(values.slice(-64), level, window));
      }
    }
    assert.ok(stopped > 1000 && stopped < 8000, `both outcomes drawn (${stopped} of 9000 without a collapse)`);
  });

  test('nonfinite-metric: a NaN loss fires; a rare +Infinity grad norm (fp16 loss scaling) and a NaN std do not', () => {
    const base = (i: number, extra: Record<string, number>): ParsedRecord => metrics(i, { reward: 0.5, loss: 0.1, grad_norm: 1, ...extra });
    const healthy = Array.from({ length: 100 }, (_, i) =>
      base(i + 1, i === 40 ? { grad_norm: Infinity, 'completions/mean_terminated_length': NaN, reward_std: NaN } : {}),
    );
    assert.deepEqual(judge(healthy), []);
    const nan = Array.from({ length: 100 }, (_, i) => base(i + 1, i === 40 ? { loss: NaN } : {}));
    assert.deepEqual(judge(nan), ['nonfinite-metric']);
  });

  test('nonfinite: a run found without non-finite values is looked through again once any series takes one in, a restored one included', () => {
    const steps = (run: RunState): (number | null)[] => nonfiniteDrafts(run, () => true, 'critical', 'broken', 'fix it').map((d) => d.step);
    const a = new RunState('a', OPTS);
    const b = new RunState('b', OPTS);
    for (const run of [a, b]) run.apply(metrics(1, { reward: 0.5, loss: 0.1 }), CTX, 0);
    assert.deepEqual([steps(a), steps(b)], [[], []]);
    b.apply(metrics(2, { reward: NaN, loss: 0.1 }), CTX, 0);
    assert.deepEqual([steps(a), steps(b)], [[], [2]]);
    a.apply(metrics(3, { reward: 0.5, loss: Infinity }), CTX, 0);
    assert.deepEqual(steps(a), [3]);
    // Found clean first, then replaced by a restored state that holds a NaN.
    const c = new RunState('c', OPTS);
    c.apply(metrics(1, { reward: 0.5 }), CTX, 0);
    assert.deepEqual(steps(c), []);
    assert.deepEqual(steps(RunState.from(JSON.parse(JSON.stringify(a.toJSON())) as ReturnType<RunState['toJSON']>, OPTS)), [3]);
    assert.deepEqual(steps(c), []);
  });

  test('grad-spike: zeros (TRL logs 0.0 for steps without signal) neither make nor hide spikes', () => {
    const g = (i: number): number => (i % 3 === 0 ? 0 : 0.2 + 0.02 * (i % 5));
    assert.deepEqual(judge(Array.from({ length: 80 }, (_, i) => metrics(i + 1, { grad_norm: g(i), reward: 0.5 }))), []);
    const spiky = Array.from({ length: 80 }, (_, i) => metrics(i + 1, { grad_norm: [50, 60, 70].includes(i) ? 9 : g(i), reward: 0.5 }));
    assert.deepEqual(judge(spiky), ['grad-spike']);
  });

  test('length-collapse: a slow shortening (learning to be concise) is no collapse; the same fall within a few steps is', () => {
    const slow = Array.from({ length: 120 }, (_, i) => metrics(i + 1, { 'response_length/mean': 800 - 5 * i, reward: 0.5 }));
    assert.deepEqual(judge(slow), []);
    const fast = Array.from({ length: 60 }, (_, i) => metrics(i + 1, { 'response_length/mean': i < 40 ? 800 : 250, reward: 0.5 }));
    assert.deepEqual(judge(fast), ['length-collapse']);
  });
});
