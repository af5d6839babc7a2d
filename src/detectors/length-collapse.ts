/**
 * length-collapse: the mean response length falls by more than half within a few steps and has
 * not come back: the policy found that short answers pay (or stopped reasoning), usually with the
 * reward following it down. A slow shortening over many steps (learning to be concise) is not
 * one: the fall is measured against the highest level of the few steps before it.
 */
import { seriesFor } from '../runs/quantities.js';
import { keptValues } from '../stats/rolling.js';
import { historyMedians, latestFall, r4, recentMedian } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Values per rolling median. */
  window: number;
  /** A fall counts when it happens within this many values. */
  horizon: number;
  /** The fraction the rolling median must lose. */
  drop: number;
  /** The finding holds until the length is back to this fraction of where it fell from. */
  recover: number;
}

/**
 * Whether a history's values could hold a fall: a fall is a rolling median at or below (1 - drop)
 * x an earlier one, and every median lies between the least and the largest value. Where the least
 * stays above (1 - drop) x the largest, there is none, and no medians need computing (most
 * evaluations: a length that moves within a factor of two). Exact: the products round the same way.
 */
export function mayFall(values: Float64Array, drop: number): boolean {
  if (!(1 - drop >= 0)) return true;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  // Past 1e300 a median of two values may round to an infinity outside them.
  return !(min > (1 - drop) * max && min > -1e300 && max < 1e300);
}

export const lengthCollapse: Detector<P> = {
  id: 'length-collapse',
  cleared: 'the response length has come back',
  scope: 'round',
  description: 'The mean response length falls by more than half within a few steps and does not come back.',
  defaults: { enabled: true, severity: 'warning', window: 5, horizon: 10, drop: 0.5, recover: 0.8 },
  counts: ['window', 'horizon'],
  every: () => 2,
  reads: ['response_length'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const s = seriesFor(r, 'response_length');
      if (s === null || s.stats.history.length < 2 * p.window + 1) continue;
      // The values read in place (points() would make two arrays at each evaluation).
      const h = s.stats.history;
      const values = keptValues(h);
      if (!mayFall(values, p.drop)) continue;
      const fall = latestFall(values, p.window, p.horizon, p.drop, historyMedians(h, values, p.window));
      if (fall === null) continue;
      const now = recentMedian(s.stats, p.window)!;
      if (now.median >= p.recover * fall.before) continue;
      const at = h.stepAt(fall.at);
      out.push({
        round: r.round,
        step: at,
        severity: p.severity,
        message: `${s.name} fell from ${fall.before.toFixed(0)} to ${fall.after.toFixed(0)} tokens within ${p.horizon + p.window} steps (by step ${at}) and sits at ${now.median.toFixed(0)}: the policy's answers collapsed.`,
        evidence: {
          series: s.name,
          before: r4(fall.before),
          after: r4(fall.after),
          fell_by_step: at,
          recent_median: r4(now.median),
          window: p.window,
          horizon: p.horizon,
          drop: p.drop,
        },
        recommendation:
          'Read a sample of the short completions: a reward that pays for brevity or format alone, or a length penalty too strong; lower the learning rate and resume from a checkpoint before the fall.',
        series: { role: r.role, round: r.round, name: s.name },
      });
    }
    return out;
  },
};
