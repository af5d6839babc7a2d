/**
 * Ordinary GRPO / PPO training runs with known failures, for the training-health detectors. Each
 * scenario is one console log, written as verl writes it (`step:N - key:value - ...` behind a Ray
 * prefix) for even seeds and as TRL's Trainer prints it (dict reprs after tqdm's carriage returns)
 * for odd seeds, with the noise scaled by seed (x0.5, x1, x1.5, x2 for seeds 1-4, 5-8, ...).
 * The curves come from formulas plus noise; each scenario changes one thing from `healthy`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { normal, rng } from '../../src/sim/random.js';

export type GrpoScenarioName =
  | 'grpo-healthy'
  | 'grpo-slow-learner'
  | 'grpo-no-signal'
  | 'grpo-reward-drop'
  | 'grpo-entropy-collapse'
  | 'grpo-entropy-blowup'
  | 'grpo-kl-blowup'
  | 'grpo-length-collapse'
  | 'grpo-length-at-limit'
  | 'grpo-grad-spikes'
  | 'grpo-nan-loss'
  | 'grpo-validation-decline'
  | 'grpo-crash'
  | 'grpo-stopped-short'
  | 'grpo-rollout-mismatch'
  | 'grpo-reward-hacking';

/** The detector ids each scenario must produce. */
export const GRPO_EXPECTED: Record<GrpoScenarioName, string[]> = {
  'grpo-healthy': [],
  // Entropy falls 2.5x and the reward barely moves: a slow run, not a broken one.
  'grpo-slow-learner': [],
  'grpo-no-signal': ['no-learning-signal'],
  'grpo-reward-drop': ['reward-drop'],
  'grpo-entropy-collapse': ['entropy-collapse'],
  'grpo-entropy-blowup': ['entropy-blowup'],
  'grpo-kl-blowup': ['kl-blowup'],
  'grpo-length-collapse': ['length-collapse'],
  'grpo-length-at-limit': ['length-at-limit'],
  'grpo-grad-spikes': ['grad-spike'],
  'grpo-nan-loss': ['nonfinite-metric'],
  'grpo-validation-decline': ['validation-decline'],
  'grpo-crash': ['run-crashed'],
  'grpo-stopped-short': ['run-stopped-short'],
  'grpo-rollout-mismatch': ['rollout-mismatch'],
  'grpo-reward-hacking': ['reward-hacking'],
};

/** Findings a scenario may give besides its expected ones, as consequences (nothing else may appear). */
export const GRPO_ALSO: Partial<Record<GrpoScenarioName, { ids: string[]; why: string }>> = {
  'grpo-length-collapse': { ids: ['reward-drop'], why: 'the reward falls with the length, as in the real run it is modelled on' },
};

export const GRPO_SCENARIO_NAMES = Object.keys(GRPO_EXPECTED) as GrpoScenarioName[];

export function asExpectedGrpo(o: { scenario: GrpoScenarioName; ids: string[] }): boolean {
  const may = new Set([...GRPO_EXPECTED[o.scenario], ...(GRPO_ALSO[o.scenario]?.ids ?? [])]);
  return GRPO_EXPECTED[o.scenario].every((id) => o.ids.includes(id)) && o.ids.every((id) => may.has(id));
}

export interface GrpoWrite {
  file: string;
  text: string;
  time: number;
}

/** verl and TRL spell the same quantities differently. */
const VERL: Record<string, string> = {
  reward: 'critic/score/mean',
  max: 'critic/score/max',
  min: 'critic/score/min',
  entropy: 'actor/entropy',
  kl: 'actor/kl_loss',
  length: 'response_length/mean',
  lengthMax: 'response_length/max',
  clip: 'response_length/clip_ratio',
  grad: 'actor/grad_norm',
  loss: 'actor/pg_loss',
  vf: 'critic/vf_loss',
  probs: 'training/rollout_probs_diff_mean',
};
const TRL: Record<string, string> = {
  reward: 'reward',
  std: 'reward_std',
  zero: 'frac_reward_zero_std',
  entropy: 'entropy',
  kl: 'kl',
  length: 'completions/mean_length',
  lengthMax: 'completions/max_length',
  clip: 'completions/clipped_ratio',
  grad: 'grad_norm',
  loss: 'loss',
};

const STEPS = { verl: 120, trl: 60 };
const LIMIT = 1024;
const INTERVAL = 20_000;

/** One run's log, line by line. */
export function grpoWrites(name: GrpoScenarioName, seed: number, now = Date.now()): GrpoWrite[] {
  const r = rng((seed * 104729 + name.length * 31) >>> 0);
  const z = (): number => normal(r);
  // rollout_probs_diff is verl's own metric: that scenario is verl's in every seed.
  const verl = seed % 2 === 0 || name === 'grpo-rollout-mismatch';
  const k = [0.5, 1, 1.5, 2][Math.floor((seed - 1) / 4) % 4]!;
  const n = verl ? STEPS.verl : STEPS.trl;
  const crashAt = Math.floor(n * 0.6);
  const stopAt = Math.floor(n * 0.6);
  const plan = verl ? n : n * 5;
  const out: GrpoWrite[] = [];
  let t = now - (n + 2) * INTERVAL;
  const file = verl ? 'train.log' : 'console.log';
  const w = (text: string): void => void out.push({ file, text, time: t });
  const ray = verl ? '(TaskRunner pid=4242) ' : '';

  if (verl) {
    w(`${ray}Total training steps: ${plan}\n`);
  }
  for (let s = 1; s <= n; s++) {
    t += INTERVAL;
    const x = (s - 1) / (n - 1);
    const late = (from: number): boolean => x >= from;
    let reward = 0.4 + 0.3 * x + 0.03 * k * z();
    let std = 0.3 + 0.02 * k * z();
    let zero = Math.min(1, Math.max(0, Math.round((0.55 + 0.12 * k * z()) * 10) / 10));
    let entropy = (0.6 - 0.25 * x) * Math.exp(0.05 * k * z());
    let kl = 0.001 + 0.04 * x + 0.003 * k * Math.abs(z());
    let length = 300 + 15 * k * z();
    let clip = Math.max(0, 0.02 + 0.01 * k * z());
    let grad = 0.5 * Math.exp(0.3 * k * z());
    let loss = 0.05 * k * z();
    let vf = 0.05 + 0.01 * k * Math.abs(z());
    let probs = 0.002 + 0.0005 * k * Math.abs(z());
    let max = 1;
    let min = 0;
    const extra: Record<string, number> = {};
    switch (name) {
      case 'grpo-slow-learner':
        reward = 0.4 + 0.05 * x + 0.03 * k * z();
        entropy = (0.6 - 0.36 * x) * Math.exp(0.05 * k * z());
        break;
      case 'grpo-no-signal':
        // Every prompt is solved by every completion: no group differs.
        reward = 1;
        std = 0;
        zero = r() < 0.1 * k ? 0.9 : 1;
        max = 1;
        min = 1;
        grad = 0;
        loss = 0;
        break;
      case 'grpo-reward-drop':
        if (late(0.55)) reward = 0.3 + 0.03 * k * z();
        break;
      case 'grpo-entropy-collapse':
        if (late(0.4)) entropy = 0.02 * Math.exp(-3 * (x - 0.4)) * Math.exp(0.05 * k * z());
        break;
      case 'grpo-entropy-blowup':
        if (late(0.5)) entropy = (0.6 + 8 * (x - 0.5)) * Math.exp(0.05 * k * z());
        break;
      case 'grpo-kl-blowup':
        if (late(0.5)) kl = 1.5 + 0.2 * k * z();
        break;
      case 'grpo-length-collapse':
        if (late(0.55)) {
          length = 70 + 8 * k * z();
          reward = 0.25 + 0.03 * k * z();
        }
        break;
      case 'grpo-length-at-limit':
        if (late(0.4)) {
          clip = Math.min(1, 0.95 + 0.02 * k * Math.abs(z()));
          length = LIMIT - 5 * Math.abs(z());
        }
        break;
      case 'grpo-grad-spikes':
        if ([0.7, 0.78, 0.85, 0.93].some((at) => Math.abs(x - at) < 0.5 / n)) grad *= 40;
        break;
      case 'grpo-nan-loss':
        if (s >= crashAt && s < crashAt + 3) {
          loss = NaN;
          vf = NaN;
        }
        break;
      case 'grpo-rollout-mismatch':
        if (late(0.5)) probs = 0.03 + 0.004 * k * z();
        break;
      case 'grpo-reward-hacking': {
        const fmt = 0.3 + 0.65 * x + 0.02 * k * z();
        const acc = 0.55 - 0.25 * x + 0.02 * k * z();
        extra[verl ? 'reward_extra_info/format_reward' : 'rewards/format_reward_func/mean'] = fmt;
        extra[verl ? 'reward_extra_info/correctness' : 'rewards/correctness_reward_func/mean'] = acc;
        reward = fmt * 0.5 + acc;
        break;
      }
      default:
        break;
    }
    if (name === 'grpo-crash' && s === crashAt) {
      w(
        [
          'Traceback (most recent call last):',
          '  File "/opt/verl/verl/trainer/main_ppo.py", line 64, in main',
          '    run_ppo(config)',
          '  File "/opt/verl/verl/workers/actor/dp_actor.py", line 312, in update_policy',
          '    loss.backward()',
          'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free.',
        ]
          .map((l) => `${ray}${l}\n`)
          .join(''),
      );
      return out;
    }
    if (name === 'grpo-stopped-short' && s > stopAt) return out;
    const m: Record<string, number> = {};
    const put = (key: string, v: number): void => {
      const names = verl ? VERL : TRL;
      if (names[key] !== undefined) m[names[key]] = v;
    };
    put('reward', reward);
    put('std', std);
    put('zero', zero);
    put('max', max);
    put('min', min);
    put('entropy', entropy);
    put('kl', kl);
    put('length', length);
    put('lengthMax', Math.min(LIMIT, length * 1.8));
    put('clip', clip);
    put('grad', grad);
    put('loss', loss);
    put('vf', vf);
    if (name === 'grpo-rollout-mismatch' || verl) put('probs', probs);
    Object.assign(m, extra);
    if (verl && s % 10 === 0) {
      let val = 0.5 + 0.1 * x + 0.005 * k * z();
      if (name === 'grpo-validation-decline' && x > 0.6) val = 0.6 - 0.5 * (x - 0.6) + 0.005 * k * z();
      m['val-core/gsm8k/reward/mean@1'] = val;
    }
    if (verl) {
      const f = (v: number): string => (Number.isNaN(v) ? 'nan' : v.toFixed(4));
      w(`${ray}Training Progress: ${Math.floor((100 * s) / plan)}%|#| ${s}/${plan} [00:10<01:00, 10.0s/it]\n`);
      w(
        `${ray}step:${s} - ${Object.entries(m)
          .map(([key, v]) => `${key}:${f(v)}`)
          .join(' - ')}\n`,
      );
    } else {
      const f = (v: number): string => (Number.isNaN(v) ? "'nan'" : String(Math.round(v * 1e4) / 1e4));
      const dict = `{${Object.entries({ ...m, learning_rate: 1e-6, epoch: Math.round((s / n) * 100) / 100 })
        .map(([key, v]) => `'${key}': ${f(v)}`)
        .join(', ')}}`;
      const done = s * 5;
      w(`\r ${Math.floor((100 * done) / plan)}%|#| ${done}/${plan} [00:10<01:00, 2.0s/it]\r${' '.repeat(20)}\r${dict}\n`);
      if (name === 'grpo-validation-decline' && s % 5 === 0) {
        let val = 0.5 + 0.1 * x + 0.005 * k * z();
        if (x > 0.6) val = 0.6 - 0.5 * (x - 0.6) + 0.005 * k * z();
        w(`{'eval_reward': ${val.toFixed(4)}, 'eval_runtime': 12.5, 'epoch': ${(s / n).toFixed(2)}}\n`);
      }
    }
  }
  t += INTERVAL;
  if (verl) w(`${ray}Final validation metrics: {'val-core/gsm8k/reward/mean@1': 0.6}\n`);
  else w(`{'train_runtime': 1200.5, 'train_samples_per_second': 1.2, 'train_loss': 0.01, 'epoch': 1.0}\n`);
  return out;
}

/** Writes one scenario's log under `dir` (the run folder). */
export function writeGrpoScenario(dir: string, name: GrpoScenarioName, seed: number): void {
  const writes = grpoWrites(name, seed);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, writes[0]!.file), writes.map((w) => w.text).join(''));
}
