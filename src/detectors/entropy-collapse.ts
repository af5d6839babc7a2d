/**
 * entropy-collapse: the policy's token entropy falls an order of magnitude below where it started
 * (or under a floor): the policy has become nearly deterministic, stops exploring, and GRPO's
 * groups stop differing. DAPO (Yu et al., 2025, "clip-higher") and the verl entropy discussions
 * describe it; the reward can look fine while it happens (it did in a real TRL run: 0.153 ->
 * 0.006 with the reward at 0.9).
 */
import { seriesFor } from '../runs/quantities.js';
import { againstEarly, r4 } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Values whose mean is the early level. */
  early_points: number;
  /** Recent values whose median is the current level. */
  window: number;
  /** Fires when the current level is at or below early / factor. */
  factor: number;
  /** ...or at or below this floor (nats per token) after starting at 3x it or more. */
  floor: number;
}

export const entropyCollapse: Detector<P> = {
  id: 'entropy-collapse',
  cleared: 'the entropy is back above its collapse level',
  scope: 'round',
  description: "The policy's entropy falls an order of magnitude below its early level, or under a floor.",
  defaults: { enabled: true, severity: 'warning', early_points: 5, window: 10, factor: 10, floor: 0.005 },
  counts: ['early_points', 'window'],
  every: () => 1,
  reads: ['entropy'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const s = seriesFor(r, 'entropy');
      const levels = s === null ? null : againstEarly(s.stats, p.early_points, p.window);
      if (s === null || levels === null || !(levels.early.mean > 0)) continue;
      const { early, now } = levels;
      const byFactor = now.median <= early.mean / p.factor;
      const byFloor = now.median <= p.floor && early.mean >= 3 * p.floor;
      if (!byFactor && !byFloor) continue;
      const ratio = early.mean / Math.max(now.median, 1e-12);
      out.push({
        round: r.round,
        step: now.lastStep,
        severity: p.severity,
        message: `${s.name} fell from ${early.mean.toPrecision(3)} (its first ${early.n} steps) to ${now.median.toPrecision(3)} (median of the last ${p.window}), ${ratio.toFixed(0)}x lower: the policy has become nearly deterministic and no longer explores.`,
        evidence: {
          series: s.name,
          early_level: r4(early.mean),
          early_points: early.n,
          recent_median: r4(now.median),
          window: p.window,
          ratio: Math.round(ratio * 10) / 10,
          factor: p.factor,
          floor: p.floor,
          rule: byFactor ? 'factor' : 'floor',
        },
        recommendation:
          'Raise the sampling temperature or add an entropy bonus (verl actor.entropy_coeff), raise the upper clip range (DAPO clip-higher), or lower the learning rate; resume from a checkpoint before the fall.',
        series: { role: r.role, round: r.round, name: s.name },
      });
    }
    return out;
  },
};
