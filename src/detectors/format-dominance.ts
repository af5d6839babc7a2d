/**
 * format-dominance: the format reward drowns the boundary signal. The selector learns "emit a
 * valid index set" before "pick just-right evidence". Fires when the configured format weight is
 * at least ratio x the boundary weight, or when the boundary carries less than min_share of the
 * reward signal: abs(w_i) * sd_i / sum_j abs(w_j) * sd_j over the rolling window.
 */
import { COMPONENTS, type Component } from '../parsers/types.js';
import { signalShares, type SignalShare } from '../runs/signal.js';
import { roundsOf } from './queries.js';
import type { Detector, Params } from './types.js';
import { pct, round3 } from '../util/format.js';

interface P extends Params {
  /** Format weight / boundary weight at or above this fires. */
  ratio: number;
  /** The boundary's share of the signal below this fires. */
  min_share: number;
  /** Steps in the window before the shares are judged. */
  min_points: number;
  /** Below this total weighted spread there is no signal to share (a collapsed reward). */
  min_signal: number;
}

function floorTo(x: number, step: number): number {
  return Math.floor(x / step + 1e-9) * step;
}

/** The format weight (or boundary weight) that gives the boundary `target` of the signal. */
export function rebalance(s: SignalShare, target: number, ratio: number): string {
  const w = s.weights;
  const sd = (c: Component): number => s.sd[c] ?? 0;
  const bs = Math.abs(w.boundary) * sd('boundary');
  let others = 0;
  for (const c of COMPONENTS) if (c !== 'boundary' && c !== 'format') others += Math.abs(w[c]) * sd(c);
  const parts: string[] = [];
  if (sd('format') > 0) {
    const maxFormat = (bs / target - bs - others) / sd('format');
    const cap = Math.min(maxFormat, ratio * Math.abs(w.boundary) - 0.05);
    if (cap > 0) parts.push(`lower the format weight from ${w.format} to ${floorTo(cap, 0.05).toFixed(2)} or less`);
  }
  if (sd('boundary') > 0) {
    const need = (target * (Math.abs(w.format) * sd('format') + others)) / ((1 - target) * sd('boundary'));
    const minBoundary = Math.max(need, Math.abs(w.format) / ratio + 0.05);
    parts.push(`raise the boundary weight from ${w.boundary} to ${(Math.ceil(minBoundary / 0.05 - 1e-9) * 0.05).toFixed(2)} or more`);
  }
  return `${parts.join(', or ')}: at the spreads observed in this round that gives the boundary at least ${pct(target)} of the reward signal.`;
}

export const formatDominance: Detector<P> = {
  id: 'format-dominance',
  scope: 'run',
  description: 'Format weight >= ratio x boundary weight, or the boundary carries < min_share of the reward signal.',
  defaults: { enabled: true, severity: 'warning', ratio: 3, min_share: 0.4, min_points: 32, min_signal: 0.02 },
  every: () => 4,
  detect(run, p) {
    const rounds = roundsOf(run, 'selector').filter((r) => r.series.has('boundary'));
    const r = rounds[rounds.length - 1] ?? roundsOf(run, 'unknown').find((x) => x.series.has('boundary'));
    if (r === undefined) return [];
    const configured = run.settings.weights ?? {};
    const s = signalShares(r, configured);
    const byWeights =
      configured.format !== undefined &&
      configured.boundary !== undefined &&
      Math.abs(configured.format) >= p.ratio * Math.abs(configured.boundary);
    const share = s?.share.boundary;
    // With (almost) no spread at all there is no signal to share out: nothing to judge.
    const totalSignal = s === null ? 0 : Object.entries(s.sd).reduce((a, [c, v]) => a + Math.abs(s.weights[c as Component]) * v, 0);
    const enough = s !== null && s.window >= p.min_points && totalSignal >= p.min_signal;
    const bySignal = enough && share !== undefined && share < p.min_share;
    if (!byWeights && !bySignal) return [];
    const reasons: string[] = [];
    if (byWeights)
      reasons.push(
        `the format weight ${configured.format} is ${(Math.abs(configured.format!) / Math.abs(configured.boundary!)).toFixed(1)}x the boundary weight ${configured.boundary}`,
      );
    if (bySignal) reasons.push(`the boundary carries only ${pct(share)} of the reward signal (format ${pct(s.share.format ?? 0)})`);
    const evidence: Record<string, unknown> = {
      weights: s?.weights ?? configured,
      weights_configured: configured,
      ratio_limit: p.ratio,
      min_share: p.min_share,
    };
    if (s !== null) {
      evidence['sd'] = Object.fromEntries(Object.entries(s.sd).map(([k, v]) => [k, round3(v)]));
      evidence['signal_share'] = Object.fromEntries(Object.entries(s.share).map(([k, v]) => [k, round3(v)]));
      evidence['spread'] = s.spread;
      evidence['window'] = s.window;
      evidence['variance_ratio_boundary_format'] = s.varianceRatio === null ? null : round3(s.varianceRatio);
    }
    return [
      {
        round: r.round,
        step: r.lastStep,
        severity: p.severity,
        message: `The format reward drowns the boundary signal: ${reasons.join(', and ')}.`,
        evidence,
        recommendation:
          s !== null
            ? `To let the boundary reward drive the gradient, ${rebalance(s, p.min_share, p.ratio)}`
            : `Keep the format weight below ${p.ratio}x the boundary weight.`,
        series: { role: r.role, round: r.round, name: 'boundary' },
      },
    ];
  },
};
