/**
 * reward-collapse: the reward falls to about zero and stays there with about zero spread: every
 * sampled answer gets the same reward, so the group-normalised advantage (GRPO) is zero and the
 * policy no longer learns (TRL shows it as `frac_reward_zero_std` near 1).
 */
import type { RoundState } from '../runs/round.js';
import type { SeriesStats } from '../runs/series.js';
import { rewardSeries } from './queries.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Recent steps that must all sit near zero. */
  window: number;
  /** |reward| at or below this is "about zero". */
  level: number;
  /** The reward must have been at least this high earlier in the round. */
  earlier_min: number;
  /** frac_reward_zero_std at or above this means no within-step spread. */
  zero_std_frac: number;
  /** A logged within-step std at or below this means no spread. */
  max_std: number;
}

const SPREAD = ['reward_std', 'total_std', 'boundary_std'];
/** The fraction of a stretch that must sit at ~0 for it to count as collapsed. */
const MOSTLY = 0.75;

/**
 * The start (an index into `values`, an array or a History read in place) of the stretch at the
 * end in which the reward sits at ~0, or null: the earliest ~0 value from which on the values
 * average ~0 (at most `level`) and at least 75% of them are within twice that, when the stretch is
 * at least `window` long. A non-zero value (one lucky group) neither ends the stretch nor moves its
 * start, so the finding neither flickers nor names a late onset.
 */
export function collapsedFrom(
  values: { readonly length: number; at(i: number): number | undefined },
  level: number,
  window: number,
): number | null {
  const n = values.length;
  let from: number | null = null;
  let sum = 0;
  let close = 0;
  for (let j = n - 1; j >= 0; j--) {
    const a = Math.abs(values.at(j)!);
    sum += a;
    if (a <= 2 * level) close++;
    const len = n - j;
    if (a <= level && sum <= level * len && close >= MOSTLY * len) from = j;
    // No earlier start can qualify once the sum exceeds what even j more values of 0 allow, or
    // too few values are close for j more close ones to make up (the sum only grows: adding a
    // value >= 0 never rounds down). A healthy reward stops here after about a tenth of the points.
    if (sum > level * (len + j) || close - MOSTLY * len < -(1 - MOSTLY) * j) break;
  }
  return from !== null && n - from >= window ? from : null;
}

/**
 * Whether a series may hold a value within `level` of zero, by the least and the greatest value of
 * its whole round (kept as values arrive): when not, no stretch of it sits at ~0 (collapsedFrom
 * starts a stretch only at such a value) and its history need not be read. A reward that never
 * came near zero is judged at every step without a look at its points.
 */
export function mayReachZero(stats: SeriesStats, level: number): boolean {
  const s = stats.summary;
  return !(s.min > level || s.max < -level);
}

/** Math.max of `xs[0..to)`, the same number (NaN for any NaN, +0 above -0) without an argument per value. */
function maxOf(xs: readonly number[], to = xs.length): number {
  let m = -Infinity;
  for (let k = 0; k < to; k++) m = Math.max(m, xs[k]!);
  return m;
}

/**
 * Whether a round's reward sits at about zero now after having been higher, by reward-collapse's
 * default levels (no-learning-signal leaves such a round to this detector, which says more).
 */
export function rewardAtZero(r: RoundState): boolean {
  const d = rewardCollapse.defaults;
  const rs = rewardSeries(r);
  if (rs === null || !mayReachZero(rs.stats, d.level)) return false;
  return collapsedFrom(rs.stats.history, d.level, d.window) !== null && maxOf(rs.stats.curve.means()) >= d.earlier_min;
}

export const rewardCollapse: Detector<P> = {
  id: 'reward-collapse',
  cleared: 'the reward is no longer stuck at about zero',
  scope: 'round',
  description: 'The reward falls to ~0 and stays there with ~zero within-step spread.',
  defaults: { enabled: true, severity: 'critical', window: 8, level: 0.05, earlier_min: 0.2, zero_std_frac: 0.8, max_std: 0.05 },
  counts: ['window'],
  every: () => 1,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const rs = rewardSeries(r);
      if (rs === null) continue;
      // Judged in place, from the newest value back (a healthy reward stops the search within a
      // tenth of the values): the points are made only for a collapse.
      const n = rs.stats.history.length;
      if (n < p.window + 2 || !mayReachZero(rs.stats, p.level)) continue;
      const i = collapsedFrom(rs.stats.history, p.level, p.window);
      if (i === null) continue;
      const pts = rs.stats.history.points();
      const last = pts.values.slice(-p.window);
      // Math.max of the curve's means and the values before the stretch, without spreading them
      // into arguments (hundreds at each evaluation while the stretch lasts).
      const earlier = Math.max(maxOf(rs.stats.curve.means()), maxOf(pts.values, i));
      if (!(earlier >= p.earlier_min)) continue;
      const evidence: Record<string, unknown> = {
        series: rs.name,
        window: p.window,
        last_values: last.map((x) => Math.round(x * 1e4) / 1e4),
        level: p.level,
        earlier_level: Math.round(earlier * 1e4) / 1e4,
      };
      let spreadGone: boolean;
      const zs = r.series.get('frac_reward_zero_std');
      if (zs !== undefined && zs.history.length >= p.window) {
        const fr = zs.history.points().values.slice(-p.window);
        const mean = fr.reduce((a, b) => a + b, 0) / fr.length;
        evidence['frac_reward_zero_std'] = Math.round(mean * 1e4) / 1e4;
        spreadGone = mean >= p.zero_std_frac;
      } else {
        const sd = SPREAD.map((s) => r.series.get(s)).find((s) => s !== undefined && s.history.length >= p.window);
        if (sd !== undefined) {
          const v = sd.history.points().values.slice(-p.window);
          const mean = v.reduce((a, b) => a + b, 0) / v.length;
          evidence['within_step_std'] = Math.round(mean * 1e4) / 1e4;
          spreadGone = mean <= p.max_std;
        } else {
          // Over the whole collapsed stretch, not the last window: a window's spread moves with
          // each lucky group, the stretch's settles.
          const stretch = pts.values.slice(i);
          const mean = stretch.reduce((a, b) => a + b, 0) / stretch.length;
          const sd2 = Math.sqrt(stretch.reduce((a, b) => a + (b - mean) ** 2, 0) / (stretch.length - 1));
          evidence['across_step_sd'] = Math.round(sd2 * 1e4) / 1e4;
          spreadGone = sd2 <= p.max_std / 2;
        }
      }
      if (!spreadGone) continue;
      out.push({
        round: r.round,
        step: pts.steps[Math.min(i + p.window - 1, n - 1)]!,
        severity: p.severity,
        message: `${rs.name} collapsed from ${earlier.toFixed(2)} to about 0 since step ${pts.steps[i]} and every sample gets the same reward: the policy has stopped learning.`,
        evidence,
        recommendation:
          'Stop the run and resume from the checkpoint before the collapse with a lower learning rate or a KL penalty; check completions for a degenerate pattern (e.g. all hitting the length limit).',
        series: { role: r.role, round: r.round, name: rs.name },
      });
    }
    return out;
  },
};
