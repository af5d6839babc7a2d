/**
 * reward-drop: the main reward falls well beyond its noise and stays lower: a change point where
 * the mean of the `min_after` steps after it sits at least `drop` (25%) below the mean of the
 * `before_points` steps before it (a Welch test says they differ), and the last `min_after`
 * steps are still that low. A slow slide is no change point (generator-regression reads trends). A fall to about zero is reward-collapse's
 * (that detector also asks that the spread is gone); this one speaks for falls that stop short of
 * zero (a real run: 0.31 -> 0.06; another 0.90 -> 0.55).
 */
import { historyValues, type History, type RunningStats } from '../stats/rolling.js';
import { rewardSeries } from './queries.js';
import { r4 } from './levels.js';
import { median, welch, welchTOf, type Moments } from '../stats/inference.js';
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

/**
 * Prefix sums of the first `n` values of `vs` and of their squares (arrays kept between
 * evaluations: read them before the next call), with the largest value and the largest magnitude.
 */
export function prefixSums(vs: Float64Array, n: number): { s1: Float64Array; s2: Float64Array; max: number; maxAbs: number } {
  const s1 = prefix(0, n + 1);
  const s2 = prefix(1, n + 1);
  s1[0] = 0;
  s2[0] = 0;
  let max = -Infinity;
  let maxAbs = 0;
  for (let i = 0; i < n; i++) {
    const v = vs[i]!;
    s1[i + 1] = s1[i]! + v;
    s2[i + 1] = s2[i]! + v * v;
    if (v > max) max = v;
    const a = Math.abs(v);
    if (a > maxAbs) maxAbs = a;
  }
  return { s1, s2, max, maxAbs };
}

/**
 * Whether any change point can pass the mean tests, from the recent mean and the largest of the
 * `n` values: a candidate's level is a mean of values (at most the largest), its lower bound
 * (level less `drop` of it) grows with the level, and the recent mean must sit at or below it.
 * Where the recent mean is above the bound at the largest value (with room for the prefix sums'
 * rounding: a mean read from them is off by at most 2.3e-16 n^2 of the largest magnitude, the
 * room is 8e-16 n^2), no change point is a fall and the candidates need not be scanned: most
 * evaluations of a reward that holds or rises.
 */
export function mayHaveFall(tailMean: number, max: number, maxAbs: number, n: number, drop: number): boolean {
  if (!(drop >= 0 && drop < 1)) return true;
  const room = (n * n * 8e-16 + 1e-12) * maxAbs;
  return !(tailMean > max - drop * Math.abs(max) + room);
}

/**
 * mayHaveFall before the history is copied: its last `minAfter` values' mean read in place, against
 * the largest value of the whole round (`whole`, at least the history's, so the bound is at least
 * the one mayHaveFall sets from the history itself, and its room covers what the prefix sums'
 * rounding moves either mean). False only where no change point of the history can pass.
 */
export function mayFallWithin(h: History, whole: RunningStats, minAfter: number, drop: number): boolean {
  const n = h.length;
  let sum = 0;
  for (let i = n - minAfter; i < n; i++) sum += h.at(i);
  return mayHaveFall(sum / minAfter, whole.max, Math.max(-whole.min, whole.max), n, drop);
}

/** The mean of values [a, b) from their prefix sums. */
function segMean(s1: Float64Array, a: number, b: number): number {
  return (s1[b]! - s1[a]!) / (b - a);
}

/** The sample variance of values [a, b) about their `mean`, from the prefix sums of their squares. */
function segVariance(s2: Float64Array, a: number, b: number, mean: number): number {
  const m = b - a;
  return Math.max(0, (s2[b]! - s2[a]! - m * mean * mean) / (m - 1));
}

/** Count, mean and variance of values [a, b). */
function seg(s1: Float64Array, s2: Float64Array, a: number, b: number): Moments {
  const mean = segMean(s1, a, b);
  return { n: b - a, mean, variance: segVariance(s2, a, b, mean) };
}

/**
 * The change point k of the strongest fall among the n values (their prefix sums): the mean of the
 * `minAfter` values from k at least `drop` below the mean of the up to `beforePoints` before it,
 * as is the recent mean `tailMean`, and the two segments different by Welch's test at `alpha`;
 * the lowest t wins (the first of equals). -1 for none.
 */
export function strongestFall(
  s1: Float64Array,
  s2: Float64Array,
  n: number,
  minBefore: number,
  minAfter: number,
  beforePoints: number,
  drop: number,
  alpha: number,
  tailMean: number,
): number {
  let bestK = -1;
  let bestT = NaN;
  for (let k = minBefore; k <= n - minAfter; k++) {
    // A fall, not a slide: the steps just after k against the steps just before it (their means
    // first; the segments themselves only for a fall).
    const from = Math.max(0, k - beforePoints);
    // segMean's arithmetic, written out: this loop runs for hundreds of evaluations before the
    // optimising compiler has it, and a call per candidate is most of its cost until then.
    const beforeMean = (s1[k]! - s1[from]!) / (k - from);
    const afterMean = (s1[k + minAfter]! - s1[k]!) / minAfter;
    const lower = beforeMean - drop * Math.abs(beforeMean);
    if (!(afterMean <= lower && tailMean <= lower)) continue;
    // Only a candidate stronger than the best so far can take its place: its p-value is read then
    // (the t as welch() computes it from seg()'s numbers).
    if (bestK >= 0) {
      const t = welchTOf(
        k - from,
        beforeMean,
        segVariance(s2, from, k, beforeMean),
        minAfter,
        afterMean,
        segVariance(s2, k, k + minAfter, afterMean),
      );
      if (!(t < bestT)) continue;
    }
    const w = welch(seg(s1, s2, from, k), seg(s1, s2, k, k + minAfter));
    if (!(w.pLower < alpha)) continue;
    if (bestK < 0 || w.t < bestT) {
      bestK = k;
      bestT = w.t;
    }
  }
  return bestK;
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
      // Read into an array kept between evaluations (points() would make two arrays each time).
      const h = rs.stats.history;
      const n = h.length;
      const minAfter = p.min_after;
      const minBefore = Math.max(5, minAfter);
      if (n < minBefore + minAfter) continue;
      // Before the points are copied: a reward that holds or rises is passed over here, at every
      // other step of a healthy run.
      if (!mayFallWithin(h, rs.stats.summary, minAfter, p.drop)) continue;
      // Prefix sums: each candidate change point costs O(1).
      const vs = historyValues(h);
      const { s1, s2, max, maxAbs } = prefixSums(vs, n);
      // A reward that sits at about zero now, or is on its way there (half the last steps at ~0
      // already), is reward-collapse's.
      if (Math.abs(median(vs, n - minAfter, n)) <= p.zero_level) continue;
      const tailMean = segMean(s1, n - minAfter, n);
      if (!mayHaveFall(tailMean, max, maxAbs, n, p.drop)) continue;
      const k = strongestFall(s1, s2, n, minBefore, minAfter, p.before_points, p.drop, p.alpha, tailMean);
      if (k < 0) continue;
      const before = seg(s1, s2, Math.max(0, k - p.before_points), k);
      const w = welch(before, seg(s1, s2, k, k + minAfter));
      const best = { k, before, after: seg(s1, s2, k, n), t: w.t, p: w.pLower };
      const fell = 1 - best.after.mean / best.before.mean;
      out.push({
        round: r.round,
        step: h.stepAt(best.k),
        severity: p.severity,
        message: `${rs.name} fell from ${best.before.mean.toFixed(3)} to ${best.after.mean.toFixed(3)} at step ${h.stepAt(best.k)} (${Math.round(fell * 100)}% lower over the ${best.after.n} steps since; Welch t=${best.t.toFixed(1)}) and has not come back.`,
        evidence: {
          series: rs.name,
          change_step: h.stepAt(best.k),
          before_mean: r4(best.before.mean),
          before_steps: best.before.n,
          after_mean: r4(best.after.mean),
          after_steps: best.after.n,
          recent_mean: r4(tailMean),
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
