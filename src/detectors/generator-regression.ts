/**
 * generator-regression: the accuracy falls significantly, within the latest round (Mann-Kendall
 * and a Theil-Sen drop larger than the sampling noise allows) or from one round to the next
 * (Welch's t-test on segment means, which tames the autocorrelation of training curves).
 */
import type { RunState } from '../runs/run.js';
import { accuracySources } from './accuracy.js';
import { recent, roundsOf, segmentMeans, seriesSpan, targetOf } from './queries.js';
import { mannKendall, moments, theilSen, welch } from '../stats/inference.js';
import type { Detector, Params } from './types.js';
import { round3 } from '../util/format.js';

interface P extends Params {
  window: number;
  /** One-sided significance level. */
  alpha: number;
  /** Smallest drop that matters, in accuracy (absolute). */
  min_drop: number;
  /** Steps a round needs before it is compared with the previous one. */
  min_steps: number;
}

const DEFAULTS: P = { enabled: true, severity: 'warning', window: 64, alpha: 0.01, min_drop: 0.03, min_steps: 32 };

export interface Decline {
  kind: 'within-round' | 'between-rounds';
  role: string;
  series: string;
  round: number | null;
  step: number | null;
  evidence: Record<string, unknown>;
  message: string;
}

/**
 * The first significant fall of the run's accuracy, or null. The selector's accuracy is what
 * BAR-RAG drives toward c: a fall that ends at c (within min_drop) or above is the selector closing
 * in on its target (after a generator round made its evidence too easy), not a regression.
 */
export function accuracyDecline(run: RunState, p: P = DEFAULTS): Decline | null {
  const { c } = targetOf(run);
  for (const src of accuracySources(run)) {
    // Ending within min_drop of c counts: the accuracy around c has noise of its own, and a fall
    // from well above c that ends at c - 0.01 is the selector closing in, not the generator falling.
    const approach = (after: number): boolean => src.role === 'selector' && after >= c - p.min_drop;
    const rounds = roundsOf(run, src.role).filter((r) => r.series.has(src.name));
    const last = rounds[rounds.length - 1];
    if (last === undefined) continue;
    const w = recent(last, src.name, p.window);
    if (w.values.length >= p.window) {
      const mk = mannKendall(w.values, true);
      const drop = mk.pDown < p.alpha ? -theilSen(w.values) * (w.values.length - 1) : 0;
      if (mk.pDown < p.alpha && drop >= p.min_drop && !approach(moments(w.values.slice(-Math.ceil(w.values.length / 4))).mean)) {
        return {
          kind: 'within-round',
          role: src.role,
          series: src.name,
          round: last.round,
          step: w.steps[w.steps.length - 1]!,
          evidence: {
            window: w.values.length,
            mann_kendall_z: round3(mk.z),
            p_value: +mk.pDown.toPrecision(3),
            theil_sen_drop: round3(drop),
            min_drop: p.min_drop,
          },
          message: `${src.role} ${src.name} fell by ${drop.toFixed(3)} over the last ${w.values.length} steps of round ${last.round ?? '-'} (Mann-Kendall z=${mk.z.toFixed(1)}, p=${mk.pDown.toPrecision(2)}).`,
        };
      }
    }
    for (let i = rounds.length - 1; i >= 1; i--) {
      const a = rounds[i - 1]!;
      const b = rounds[i]!;
      const spanA = seriesSpan(a, src.name);
      const spanB = seriesSpan(b, src.name);
      if (spanA === null || spanB === null || spanA.steps < p.min_steps || spanB.steps < p.min_steps) continue;
      const sa = segmentMeans(a, src.name, spanA.steps, 8);
      const sb = segmentMeans(b, src.name, spanB.steps, 8);
      if (sa === null || sb === null) continue;
      const ma = moments(sa);
      const mb = moments(sb);
      const t = welch(ma, mb);
      const drop = ma.mean - mb.mean;
      if (drop >= p.min_drop && t.pLower < p.alpha && !approach(mb.mean)) {
        return {
          kind: 'between-rounds',
          role: src.role,
          series: src.name,
          round: b.round,
          step: spanB.last,
          evidence: {
            round_before: a.round,
            round_after: b.round,
            mean_before: round3(ma.mean),
            mean_after: round3(mb.mean),
            welch_t: round3(t.t),
            p_value: +t.pLower.toPrecision(3),
            min_drop: p.min_drop,
          },
          message: `${src.role} ${src.name} fell from ${ma.mean.toFixed(3)} in round ${a.round} to ${mb.mean.toFixed(3)} in round ${b.round} (Welch t=${t.t.toFixed(1)}, p=${t.pLower.toPrecision(2)}).`,
        };
      }
    }
  }
  return null;
}

export const generatorRegression: Detector<P> = {
  id: 'generator-regression',
  cleared: 'the accuracy no longer falls',
  scope: 'run',
  description: 'Accuracy falls significantly within a round or from one round to the next.',
  defaults: DEFAULTS,
  counts: ['window', 'min_steps'],
  every: () => 8,
  detect(run, p) {
    const d = accuracyDecline(run, p);
    if (d === null) return [];
    return [
      {
        round: d.round,
        step: d.step,
        severity: p.severity,
        message: `Accuracy is falling: ${d.message}`,
        evidence: { kind: d.kind, role: d.role, series: d.series, ...d.evidence },
        recommendation:
          'Check what changed at the start of the fall: a filter that keeps too many hard questions (see the boundary share), a generator learning rate too high, or a selector that drifted to unanswerable evidence.',
        series: { role: d.role as 'selector' | 'generator' | 'unknown', round: d.round, name: d.series },
      },
    ];
  },
};
