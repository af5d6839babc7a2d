/**
 * entropy-blowup: the policy's token entropy rises several-fold above where it started and past an
 * absolute level: the model is sampling close to noise (gibberish, mixed languages), which usually
 * comes before a reward collapse. Seen in real runs as 0.47 -> 4.70.
 */
import { seriesFor } from '../runs/quantities.js';
import { againstEarly, r4 } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  early_points: number;
  window: number;
  /** Fires when the current level is at least factor x the early level... */
  factor: number;
  /** ...and at least this many nats per token. */
  level: number;
}

export const entropyBlowup: Detector<P> = {
  id: 'entropy-blowup',
  cleared: 'the entropy is back below its blow-up level',
  scope: 'round',
  description: "The policy's entropy rises several-fold above its early level and past an absolute level.",
  defaults: { enabled: true, severity: 'warning', early_points: 5, window: 10, factor: 4, level: 1 },
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
      if (!(now.median >= p.factor * early.mean && now.median >= p.level)) continue;
      const ratio = now.median / early.mean;
      out.push({
        round: r.round,
        step: now.lastStep,
        severity: p.severity,
        message: `${s.name} rose from ${early.mean.toPrecision(3)} (its first ${early.n} steps) to ${now.median.toPrecision(3)} (median of the last ${p.window}), ${ratio.toFixed(1)}x higher: the policy is sampling close to noise.`,
        evidence: {
          series: s.name,
          early_level: r4(early.mean),
          early_points: early.n,
          recent_median: r4(now.median),
          window: p.window,
          ratio: Math.round(ratio * 10) / 10,
          factor: p.factor,
          level: p.level,
        },
        recommendation:
          'Lower the learning rate or the entropy coefficient, tighten gradient clipping, check a sample of completions for gibberish, and resume from a checkpoint before the rise.',
        series: { role: r.role, round: r.round, name: s.name },
      });
    }
    return out;
  },
};
