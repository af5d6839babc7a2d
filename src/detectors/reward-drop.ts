/**
 * reward-drop: the main reward falls well beyond its noise and stays lower: a change point where
 * the mean of the `min_after` steps after it sits at least `drop` (25%) below the mean of the
 * `before_points` steps before it (a Welch test says they differ), and the last `min_after`
 * steps are still that low. A slow slide is no change point (generator-regression reads trends). A fall to about zero is reward-collapse's
 * (that detector also asks that the spread is gone); this one speaks for falls that stop short of
 * zero (a real run: 0.31 -> 0.06; another 0.90 -> 0.55).
 */
import { rewardSeries } from './queries.js';
import { r4 } from './levels.js';
import { median, welch, welchTOf } from '../stats/inference.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Steps the lower level must have held (the change point is at least this far back). */
  min_after: number;
  /** Steps before the change point its level is taken from (at most). */
  before_points: number;
  /** The fraction of its level before the change the reward must lose. */
  drop: number;
  /** A reward whose level after the fall is within this of zero is reward-collapse's. */
  zero_level: number;
  /** Significance of the Welch test (one-sided, the later mean lower). */
  alpha: number;
}

/** Prefix sums' arrays, kept from one evaluation to the next (`which`: 0 the values', 1 their squares'). */
const sums = [new Float64Array(512), new Float64Array(512)];
function prefix(which: 0 | 1, n: number): Float64Array {
  if (sums[which]!.length < n) sums[which] = new Float64Array(n * 2);
  return sums[which]!;
}

export const rewardDrop: Detector<P> = {
  id: 'reward-drop',
  cleared: 'the reward has come back from its fall',
  scope: 'round',
  description: 'The main reward falls well beyond its noise and stays at least 25% below its level before the fall.',
  defaults: { enabled: true, severity: 'warning', min_after: 10, before_points: 20, drop: 0.25, zero_level: 0.05, alpha: 0.001 },
  counts: ['min_after', 'before_points'],
  every: () => 2,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const rs = rewardSeries(r);
      if (rs === null) continue;
      const { steps, values } = rs.stats.history.points();
      const n = values.length;
      const minBefore = Math.max(5, p.min_after);
      if (n < minBefore + p.min_after) continue;
      // Prefix sums: each candidate change point costs O(1).
      const s1 = prefix(0, n + 1);
      const s2 = prefix(1, n + 1);
      s1[0] = 0;
      s2[0] = 0;
      for (let i = 0; i < n; i++) {
        const v = values[i]!;
        s1[i + 1] = s1[i]! + v;
        s2[i + 1] = s2[i]! + v * v;
      }
      const segMean = (a: number, b: number): number => (s1[b]! - s1[a]!) / (b - a);
      const segVariance = (a: number, b: number, mean: number): number => {
        const m = b - a;
        return Math.max(0, (s2[b]! - s2[a]! - m * mean * mean) / (m - 1));
      };
      const seg = (a: number, b: number): { n: number; mean: number; variance: number } => {
        const mean = segMean(a, b);
        return { n: b - a, mean, variance: segVariance(a, b, mean) };
      };
      const tail = seg(n - p.min_after, n);
      // A reward that sits at about zero now, or is on its way there (half the last steps at ~0
      // already), is reward-collapse's.
      if (Math.abs(median(values.slice(n - p.min_after))) <= p.zero_level) continue;
      let best: { k: number; before: ReturnType<typeof seg>; after: ReturnType<typeof seg>; t: number; p: number } | null = null;
      for (let k = minBefore; k <= n - p.min_after; k++) {
        // A fall, not a slide: the steps just after k against the steps just before it (their
        // means first, as seg() computes them; the segments themselves only for a fall).
        const from = Math.max(0, k - p.before_points);
        const beforeMean = segMean(from, k);
        const afterMean = segMean(k, k + p.min_after);
        const lower = beforeMean - p.drop * Math.abs(beforeMean);
        if (!(afterMean <= lower && tail.mean <= lower)) continue;
        // Only a candidate stronger than the best so far can take its place: its segments are made
        // and its p-value read then (the t as welch() computes it from seg()'s numbers).
        if (best !== null) {
          const t = welchTOf(
            k - from,
            beforeMean,
            segVariance(from, k, beforeMean),
            p.min_after,
            afterMean,
            segVariance(k, k + p.min_after, afterMean),
          );
          if (!(t < best.t)) continue;
        }
        const before = seg(from, k);
        const after = seg(k, k + p.min_after);
        const w = welch(before, after);
        if (!(w.pLower < p.alpha)) continue;
        if (best === null || w.t < best.t) best = { k, before, after: seg(k, n), t: w.t, p: w.pLower };
      }
      if (best === null) continue;
      const fell = 1 - best.after.mean / best.before.mean;
      out.push({
        round: r.round,
        step: steps[best.k]!,
        severity: p.severity,
        message: `${rs.name} fell from ${best.before.mean.toFixed(3)} to ${best.after.mean.toFixed(3)} at step ${steps[best.k]} (${Math.round(fell * 100)}% lower over the ${best.after.n} steps since; Welch t=${best.t.toFixed(1)}) and has not come back.`,
        evidence: {
          series: rs.name,
          change_step: steps[best.k],
          before_mean: r4(best.before.mean),
          before_steps: best.before.n,
          after_mean: r4(best.after.mean),
          after_steps: best.after.n,
          recent_mean: r4(tail.mean),
          fell_by: r4(fell),
          welch_t: Math.round(best.t * 100) / 100,
          p: Number(best.p.toPrecision(2)),
        },
        recommendation:
          'Look at what changed at that step (entropy, response length, KL, the learning-rate schedule, a data shard); lower the learning rate and resume from the checkpoint before the fall.',
        series: { role: r.role, round: r.round, name: rs.name },
      });
    }
    return out;
  },
};
