/**
 * rollout-mismatch: the probabilities the trainer computes for the sampled tokens drift from those
 * the rollout engine (vLLM, SGLang) sampled them with. verl's documentation of
 * `training/rollout_probs_diff_mean`: below 0.005 is healthy, above 0.01 points to a precision or
 * weight-sync problem (mismatched dtypes, stale weights in the engine); the policy gradient is
 * then off-policy without correction.
 */
import { seriesFor } from '../runs/quantities.js';
import { r4, recentMedian } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  window: number;
  /** The median gap over the window above this fires. */
  limit: number;
}

export const rolloutMismatch: Detector<P> = {
  id: 'rollout-mismatch',
  cleared: 'the trainer and the rollout engine agree again',
  scope: 'round',
  description: "The trainer's and the rollout engine's token probabilities differ beyond verl's documented limit, sustained.",
  defaults: { enabled: true, severity: 'warning', window: 5, limit: 0.01 },
  counts: ['window'],
  every: () => 1,
  reads: ['rollout_probs_diff'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const s = seriesFor(r, 'rollout_probs_diff');
      const now = s === null ? null : recentMedian(s.stats, p.window);
      if (s === null || now === null || !(now.median > p.limit)) continue;
      out.push({
        round: r.round,
        step: now.lastStep,
        severity: p.severity,
        message: `${s.name} has been ${now.median.toPrecision(2)} (median of the last ${p.window} steps), above ${p.limit}: the trainer and the rollout engine disagree on the sampled tokens' probabilities.`,
        evidence: { series: s.name, recent_median: r4(now.median), window: p.window, limit: p.limit, healthy_below: 0.005 },
        recommendation:
          "Check that the rollout engine and the trainer use the same dtype and that weights are synced every step (verl actor_rollout_ref.rollout.dtype, the engine's load format); turn on importance-sampling correction for the rollout if your verl has it.",
        series: { role: r.role, round: r.round, name: s.name },
      });
    }
    return out;
  },
};
