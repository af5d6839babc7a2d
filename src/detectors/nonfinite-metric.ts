/**
 * nonfinite-metric: NaN or Infinity in a training metric that is not a reward (those are
 * nonfinite-reward's): the loss, a gradient norm, the value loss, the KL, the entropy. Once a NaN
 * reaches the weights every later step is lost. Left out: series that are NaN by definition in a
 * healthy run (TRL's terminated-length statistics when every completion was cut, the std of a
 * single value), and a gradient norm whose only non-finite values are a few +Infinity (fp16 loss
 * scaling skips those steps and lowers its scale).
 */
import { isRewardSeries } from './nonfinite-reward.js';
import type { Detector, Draft, Params } from './types.js';

const BENIGN = /terminated_length|(^|[/_])std($|@)|_std$/;

interface P extends Params {
  /** A gradient norm with only +Infinity, at most this fraction of its values, is fp16 loss scaling. */
  overflow_fraction: number;
}

export const nonfiniteMetric: Detector<P> = {
  id: 'nonfinite-metric',
  scope: 'round',
  description: 'NaN or Infinity in a training metric other than a reward: loss, gradient norm, value loss, KL, entropy.',
  defaults: { enabled: true, severity: 'critical', overflow_fraction: 0.02 },
  every: () => 1,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const bad: { series: string; count: number; firstStep: number | null; value: string | null }[] = [];
      for (const [name, s] of r.series) {
        const nf = s.nonfinite;
        if (nf.count === 0 || isRewardSeries(name) || BENIGN.test(name)) continue;
        const overflow =
          /grad_norm/.test(name) && nf.lastValue === 'Infinity' && nf.count <= p.overflow_fraction * (nf.count + s.summary.n);
        if (overflow) continue;
        bad.push({ series: name, count: nf.count, firstStep: nf.firstStep, value: nf.lastValue });
      }
      if (bad.length === 0) continue;
      bad.sort((a, b) => (a.firstStep ?? 0) - (b.firstStep ?? 0));
      const first = bad[0]!;
      const total = bad.reduce((a, b) => a + b.count, 0);
      out.push({
        round: r.round,
        step: first.firstStep,
        severity: p.severity,
        message: `${first.series} became ${first.value} at step ${first.firstStep} (${total} non-finite value(s) in ${bad.length} series): the training has diverged numerically.`,
        evidence: { series: bad, non_finite_values: total, role: r.role },
        recommendation:
          'Resume from the last checkpoint before that step with gradient clipping on, a lower learning rate, and bf16 (or fp32) instead of fp16; check the batch at that step for empty or overlong sequences.',
        series: { role: r.role, round: r.round, name: first.series },
      });
    }
    return out;
  },
};
