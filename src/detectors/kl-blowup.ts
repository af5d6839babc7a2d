/**
 * kl-blowup: the KL divergence rises far above where it started and past an absolute level, and
 * stays there. Two kinds are read (runs/quantities.ts): the KL to the reference policy (TRL `kl`,
 * verl `actor/kl_loss`, `critic/kl`), where a per-token KL past 0.5 nats means the policy has
 * wandered far from what it was initialised from, and the KL between the sampling and the
 * updated policy (verl `actor/ppo_kl`), healthy near 0.001-0.01 (PPO's target_kl is usually
 * 0.01-0.05), past 0.1 an update too large for the clip to hold.
 */
import { allSeriesFor, type Quantity } from '../runs/quantities.js';
import { againstEarly, r4 } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  early_points: number;
  /** Recent values that must sit above the threshold (their median and 80% of them). */
  window: number;
  /** The threshold is at least factor x the early level... */
  factor: number;
  /** ...and at least this, for the KL to the reference... */
  level: number;
  /** ...or this, for the KL between the sampling and the updated policy. */
  update_level: number;
}

const KINDS: readonly [Quantity, 'level' | 'update_level', string][] = [
  ['kl_ref', 'level', 'the KL to the reference policy'],
  ['kl_update', 'update_level', 'the KL between the sampling and the updated policy'],
];

export const klBlowup: Detector<P> = {
  id: 'kl-blowup',
  cleared: 'the KL is back below its limit',
  scope: 'round',
  description: 'The KL divergence rises far above its early level and past an absolute level, and stays.',
  defaults: { enabled: true, severity: 'warning', early_points: 5, window: 5, factor: 20, level: 0.5, update_level: 0.1 },
  counts: ['early_points', 'window'],
  every: () => 1,
  reads: ['kl_ref', 'kl_update'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      for (const [q, levelKey, what] of KINDS) {
        for (const s of allSeriesFor(r, q)) {
          const levels = againstEarly(s.stats, p.early_points, p.window);
          if (levels === null) continue;
          const { early, now } = levels;
          const threshold = Math.max(p[levelKey], p.factor * Math.abs(early.mean));
          if (!(now.median >= threshold)) continue;
          const recent = s.stats.history.points(p.window).values;
          const above = recent.filter((v) => v >= threshold).length;
          if (!(above >= Math.ceil(0.8 * p.window))) continue;
          out.push({
            round: r.round,
            step: now.lastStep,
            severity: p.severity,
            message: `${s.name} (${what}) rose from ${early.mean.toPrecision(2)} (its first ${early.n} steps) to ${now.median.toPrecision(3)} (median of the last ${p.window}), above ${threshold.toPrecision(2)} for ${above} of them: the policy is moving away too fast.`,
            evidence: {
              series: s.name,
              kind: q,
              early_level: r4(early.mean),
              recent_median: r4(now.median),
              recent_max: r4(Math.max(...recent)),
              window: p.window,
              above_threshold: above,
              threshold: r4(threshold),
            },
            recommendation:
              'Lower the learning rate or raise the KL coefficient (verl actor.kl_loss_coef or algorithm.kl_ctrl.kl_coef, TRL beta); check for a reward the policy learned to exploit; resume from a checkpoint before the rise.',
            series: { role: r.role, round: r.round, name: s.name },
          });
          break;
        }
      }
    }
    return out;
  },
};
