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

/** How far inside the rules a recommendation aims: this much more signal share, this fraction of the ratio limit. */
export const SHARE_MARGIN = 0.1;
export const RATIO_AIM = 2 / 3;

/**
 * The format weight (or boundary weight) that clears both rules with a margin: the boundary's
 * share of the signal at least `minShare` + SHARE_MARGIN at the spreads observed, and the format
 * weight at most RATIO_AIM x `ratio` x the boundary weight. Each option states what it reaches.
 */
export function rebalance(s: SignalShare, minShare: number, ratio: number): string {
  const w = s.weights;
  const sd = (c: Component): number => s.sd[c] ?? 0;
  const target = Math.min(0.9, minShare + SHARE_MARGIN);
  const aimRatio = RATIO_AIM * ratio;
  const bs = Math.abs(w.boundary) * sd('boundary');
  let others = 0;
  for (const c of COMPONENTS) if (c !== 'boundary' && c !== 'format') others += Math.abs(w[c]) * sd(c);
  const shareAt = (wb: number, wf: number): number => {
    const b = Math.abs(wb) * sd('boundary');
    const total = b + Math.abs(wf) * sd('format') + others;
    return total > 0 ? b / total : 0;
  };
  const reaches = (wb: number, wf: number): string =>
    `which gives the boundary ${pct(shareAt(wb, wf))} of the reward signal, with the format weight ${(Math.abs(wf) / Math.abs(wb)).toFixed(2)}x the boundary weight`;
  const parts: string[] = [];
  if (sd('format') > 0 && w.boundary !== 0) {
    const forShare = (bs / target - bs - others) / sd('format');
    const wf = floorTo(Math.min(forShare, aimRatio * Math.abs(w.boundary)), 0.05);
    if (wf > 0) parts.push(`lower the format weight from ${w.format} to ${wf.toFixed(2)} (${reaches(w.boundary, wf)})`);
  }
  if (sd('boundary') > 0) {
    const forShare = (target * (Math.abs(w.format) * sd('format') + others)) / ((1 - target) * sd('boundary'));
    const wb = Math.ceil(Math.max(forShare, Math.abs(w.format) / aimRatio) / 0.05 - 1e-9) * 0.05;
    parts.push(`raise the boundary weight from ${w.boundary} to ${wb.toFixed(2)} (${reaches(wb, w.format)})`);
  }
  return `${parts.join(', or ')}; both rules are cleared with room to spare at the spreads observed in this round (the rules: under ${ratio}x and at least ${pct(minShare)} of the signal).`;
}

export const formatDominance: Detector<P> = {
  id: 'format-dominance',
  cleared: 'the boundary reward carries enough of the reward signal again',
  scope: 'run',
  description: 'Format weight >= ratio x boundary weight, or the boundary carries < min_share of the reward signal.',
  defaults: { enabled: true, severity: 'warning', ratio: 3, min_share: 0.4, min_points: 32, min_signal: 0.02 },
  counts: ['min_points'],
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
