/**
 * round-regression: from selector round k to k+1 the boundary reward's mean falls and its
 * within-round noise rises, both beyond noise: Welch's t-test on segment means for the mean, an
 * F-test on the first-difference noise variance for the spread. Healthy alternation does the
 * opposite: the mean rises and the variance falls from round to round.
 */
import { recent, roundsOf, segmentMeans, seriesSpan } from './queries.js';
import { fUpper, moments, noiseSd, welch } from '../stats/inference.js';
import type { Detector, Draft, Params } from './types.js';
import { round3 } from '../util/format.js';

interface P extends Params {
  min_steps: number;
  alpha: number;
  /** Smallest fall of the mean that matters (reward units). */
  min_drop: number;
  /** Smallest rise of the noise variance that matters (ratio). */
  min_ratio: number;
  segments: number;
}

export const roundRegression: Detector<P> = {
  id: 'round-regression',
  cleared: 'the later selector round no longer earns less boundary reward with more noise',
  scope: 'round',
  description: 'Boundary reward mean falls and its variance rises from one selector round to the next.',
  defaults: { enabled: true, severity: 'warning', min_steps: 64, alpha: 0.01, min_drop: 0.02, min_ratio: 1.7, segments: 8 },
  counts: ['min_steps', 'segments'],
  every: () => 8,
  detect(run, p) {
    const out: Draft[] = [];
    const rounds = roundsOf(run, 'selector').filter((r) => r.series.has('boundary') && r.steps >= p.min_steps);
    for (let i = 1; i < rounds.length; i++) {
      const a = rounds[i - 1]!;
      const b = rounds[i]!;
      const spanA = seriesSpan(a, 'boundary');
      const spanB = seriesSpan(b, 'boundary');
      if (spanA === null || spanB === null || spanA.steps < p.min_steps || spanB.steps < p.min_steps) continue;
      const sa = segmentMeans(a, 'boundary', spanA.steps, p.segments);
      const sb = segmentMeans(b, 'boundary', spanB.steps, p.segments);
      if (sa === null || sb === null) continue;
      const ma = moments(sa);
      const mb = moments(sb);
      const t = welch(ma, mb);
      const drop = ma.mean - mb.mean;
      const va = recent(a, 'boundary').values;
      const vb = recent(b, 'boundary').values;
      const na = noiseSd(va);
      const nb = noiseSd(vb);
      const ratio = (nb * nb) / (na * na);
      const pF = fUpper(ratio, vb.length - 2, va.length - 2);
      if (!(drop >= p.min_drop && t.pLower < p.alpha && ratio >= p.min_ratio && pF < p.alpha)) continue;
      out.push({
        round: b.round,
        step: spanB.last,
        severity: p.severity,
        message: `Selector round ${b.round} is worse than round ${a.round}: the boundary reward fell from ${ma.mean.toFixed(3)} to ${mb.mean.toFixed(3)} and its noise grew ${ratio.toFixed(1)}x.`,
        evidence: {
          rounds: [a.round, b.round],
          mean_before: round3(ma.mean),
          mean_after: round3(mb.mean),
          welch_t: round3(t.t),
          p_mean: +t.pLower.toPrecision(3),
          noise_sd_before: round3(na),
          noise_sd_after: round3(nb),
          variance_ratio: round3(ratio),
          p_variance: +pF.toPrecision(3),
        },
        recommendation: `Compare what changed between rounds ${a.round} and ${b.round}: the generator checkpoint the selector aims at, the filtered data, the learning rate schedule. Healthy alternation raises the mean and lowers the variance each round; consider resuming round ${b.round} from round ${a.round}'s selector.`,
        series: { role: 'selector', round: b.round, name: 'boundary' },
      });
    }
    return out;
  },
};
