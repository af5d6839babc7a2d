/**
 * nonfinite-metric: NaN or Infinity in a training metric that is not a reward (those are
 * nonfinite-reward's): the loss, a gradient norm, the value loss, the KL, the entropy. Once a NaN
 * reaches the weights every later step is lost. Left out: series that are NaN by definition in a
 * healthy run (TRL's terminated-length statistics when every completion was cut, the std of a
 * single value), and a gradient norm whose only non-finite values are a few +Infinity (fp16 loss
 * scaling skips those steps and lowers its scale).
 */
import { isRewardSeries, nonfiniteDrafts } from './nonfinite-reward.js';
import type { Detector, Params } from './types.js';

const BENIGN = /terminated_length|(^|[/_])std($|@)|_std$/;

interface P extends Params {
  /** A gradient norm with only +Infinity, at most this fraction of its values, is fp16 loss scaling. */
  overflow_fraction: number;
}

export const nonfiniteMetric: Detector<P> = {
  id: 'nonfinite-metric',
  cleared: 'no training metric is NaN or Infinity any more',
  scope: 'round',
  immediate: true,
  description: 'NaN or Infinity in a training metric other than a reward: loss, gradient norm, value loss, KL, entropy.',
  defaults: { enabled: true, severity: 'critical', overflow_fraction: 0.02 },
  every: () => 1,
  detect(run, p) {
    return nonfiniteDrafts(
      run,
      (name, s) => {
        if (isRewardSeries(name) || BENIGN.test(name)) return false;
        const nf = s.nonfinite;
        const overflow =
          /grad_norm/.test(name) && nf.lastValue === 'Infinity' && nf.count <= p.overflow_fraction * (nf.count + s.summary.n);
        return !overflow;
      },
      p.severity,
      'the training has diverged numerically',
      'Resume from the last checkpoint before that step with gradient clipping on, a lower learning rate, and bf16 (or fp32) instead of fp16; check the batch at that step for empty or overlong sequences.',
    );
  },
};
