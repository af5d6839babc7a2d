/**
 * length-collapse: the mean response length falls by more than half within a few steps and has
 * not come back: the policy found that short answers pay (or stopped reasoning), usually with the
 * reward following it down. A slow shortening over many steps (learning to be concise) is not
 * one: the fall is measured against the highest level of the few steps before it.
 */
import { seriesFor } from '../runs/quantities.js';
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

export const lengthCollapse: Detector<P> = {
  id: 'length-collapse',
  cleared: 'the response length has come back',
  scope: 'round',
  description: 'The mean response length falls by more than half within a few steps and does not come back.',
  defaults: { enabled: true, severity: 'warning', window: 5, horizon: 10, drop: 0.5, recover: 0.8 },
  counts: ['window', 'horizon'],
  every: () => 2,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const s = seriesFor(r, 'response_length');
      if (s === null || s.stats.history.length < 2 * p.window + 1) continue;
      const pts = s.stats.history.points();
      const fall = latestFall(pts.values, p.window, p.horizon, p.drop, historyMedians(s.stats.history, pts.values, p.window));
      if (fall === null) continue;
      const now = recentMedian(s.stats, p.window)!;
      if (now.median >= p.recover * fall.before) continue;
      const at = pts.steps[fall.at]!;
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
