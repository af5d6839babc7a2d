/**
 * no-learning-signal: every group of completions gets the same reward, so the group-normalised
 * advantage of GRPO is zero and nothing is learned: the reward is too sparse (or too easy) for
 * the group size. Read, in this order, from TRL's `frac_reward_zero_std` (the fraction of groups
 * with no spread: healthy GSM8K runs with small groups sit near 0.85-0.9, a dead one at
 * 0.95-1.0), from the within-step reward std, from verl's `critic/score/max` equal to its min, or
 * from a grad norm and a loss that are exactly 0 on every step.
 */
import { seriesFor } from '../runs/quantities.js';
import type { RoundState } from '../runs/round.js';
import { mean, r4 } from './levels.js';
import { rewardAtZero } from './reward-collapse.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Recent steps judged together. */
  window: number;
  /** Mean frac_reward_zero_std over the window at or above this fires. */
  zero_std_frac: number;
  /** Mean within-step reward std over the window at or below this fires. */
  max_std: number;
}

interface Sign {
  why: string;
  evidence: Record<string, unknown>;
  series: string;
  steps: readonly number[];
}

/** The first sign of no signal over the last `w` steps, or null. */
function sign(r: RoundState, p: P): Sign | null {
  const w = p.window;
  const zs = seriesFor(r, 'zero_std_fraction');
  if (zs !== null && zs.stats.history.length >= w) {
    const pts = zs.stats.history.points(w);
    const m = mean(pts.values);
    // frac_reward_zero_std speaks for itself; no other sign is read where it is logged.
    if (!(m >= p.zero_std_frac)) return null;
    return {
      why: `${Math.round(m * 100)}% of the groups had no reward spread over the last ${w} steps (${zs.name})`,
      evidence: { series: zs.name, mean_zero_std_fraction: r4(m), threshold: p.zero_std_frac },
      series: zs.name,
      steps: pts.steps,
    };
  }
  const sd = seriesFor(r, 'reward_std');
  if (sd !== null && sd.stats.history.length >= w) {
    const pts = sd.stats.history.points(w);
    const m = mean(pts.values);
    if (!(m <= p.max_std)) return null;
    return {
      why: `the within-step reward spread (${sd.name}) averaged ${r4(m)} over the last ${w} steps`,
      evidence: { series: sd.name, mean_within_step_std: r4(m), threshold: p.max_std },
      series: sd.name,
      steps: pts.steps,
    };
  }
  const hi = seriesFor(r, 'score_max');
  const lo = seriesFor(r, 'score_min');
  if (hi !== null && lo !== null && hi.stats.history.length >= w && lo.stats.history.length >= w) {
    const a = hi.stats.history.points(w);
    const b = lo.stats.history.points(w);
    if (!a.values.every((v, i) => v === b.values[i] && a.steps[i] === b.steps[i])) return null;
    return {
      why: `every sample scored the same (${hi.name} = ${lo.name} = ${a.values[w - 1]}) on each of the last ${w} steps`,
      evidence: { series: hi.name, score: a.values[w - 1] },
      series: hi.name,
      steps: a.steps,
    };
  }
  const g = seriesFor(r, 'grad_norm');
  const l = seriesFor(r, 'loss');
  if (g !== null && l !== null && g.stats.history.length >= w && l.stats.history.length >= w) {
    const a = g.stats.history.points(w);
    const b = l.stats.history.points(w);
    if (!a.values.every((v) => v === 0) || !b.values.every((v) => v === 0)) return null;
    return {
      why: `${g.name} and ${l.name} were exactly 0 on each of the last ${w} steps`,
      evidence: { series: g.name, loss_series: l.name },
      series: g.name,
      steps: a.steps,
    };
  }
  return null;
}

export const noLearningSignal: Detector<P> = {
  id: 'no-learning-signal',
  cleared: 'the groups differ again: there is a learning signal',
  scope: 'round',
  description: 'Every group of completions gets the same reward (zero advantage): nothing is learned.',
  defaults: { enabled: true, severity: 'critical', window: 15, zero_std_frac: 0.95, max_std: 0.01 },
  counts: ['window'],
  every: () => 1,
  // A sign needs one of these: frac_reward_zero_std, a within-step std, score max (with its min),
  // or a grad norm (with a loss).
  reads: ['zero_std_fraction', 'reward_std', 'score_max', 'grad_norm'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const s = sign(r, p);
      // A reward that collapsed to ~0 has no spread either: reward-collapse tells that story.
      if (s === null || rewardAtZero(r)) continue;
      const fromStart = r.firstStep !== null && s.steps[0] === r.firstStep;
      out.push({
        round: r.round,
        step: s.steps[s.steps.length - 1]!,
        severity: p.severity,
        message: `No learning signal${fromStart ? ' since the first step' : ''}: ${s.why}, so GRPO's advantages are zero and the policy is not updated.`,
        evidence: { ...s.evidence, window: p.window, since_first_step: fromStart },
        recommendation:
          'The reward is too sparse (or too easy) for the group size: check the reward function on a sample of completions (does any get a different score?), raise the group size (verl rollout.n, TRL num_generations), or filter prompts whose groups all score alike (DAPO dynamic sampling).',
        series: { role: r.role, round: r.round, name: s.series },
      });
    }
    return out;
  },
};
