/**
 * generator-stall: the accuracy on the selected evidence sits below the target c by more than a
 * margin, with no significant trend either way over the last window (Mann-Kendall, plus a
 * Theil-Sen rise large enough to matter against the sampling noise of an accuracy). A falling
 * accuracy is generator-regression's business, not a stall.
 */
import { accuracySources } from './accuracy.js';
import { acrossRounds, targetOf } from './queries.js';
import { mannKendall, theilSen } from '../stats/inference.js';
import type { Detector, Params } from './types.js';
import { pct, round3 } from '../util/format.js';

interface P extends Params {
  /** Recent accuracy points (across rounds) judged. */
  window: number;
  /** Points needed before judging. */
  min_points: number;
  /** How far below c counts as stalled. */
  margin: number;
  alpha: number;
  /** A rise over the window smaller than this does not count as moving. */
  min_rise: number;
  /**
   * Steps within which the trend must close the gap to c - margin to count as moving: a rise of
   * 0.01 per 128 steps at 0.41 would take the better part of ten rounds, which is a stall.
   */
  horizon: number;
}

export const generatorStall: Detector<P> = {
  id: 'generator-stall',
  scope: 'run',
  description: 'Accuracy stays below the target c by more than margin with no significant upward trend.',
  defaults: { enabled: true, severity: 'warning', window: 128, min_points: 128, margin: 0.05, alpha: 0.01, min_rise: 0.01, horizon: 320 },
  every: () => 8,
  detect(run, p) {
    const src = accuracySources(run)[0];
    if (src === undefined) return [];
    const w = acrossRounds(run, src.role, src.name, p.window);
    if (w.values.length < p.min_points) return [];
    const { c, source } = targetOf(run);
    const mean = w.values.reduce((a, b) => a + b, 0) / w.values.length;
    if (!(mean < c - p.margin)) return [];
    const mk = mannKendall(w.values, true);
    // Theil-Sen costs O(n^2 log n): only when Mann-Kendall already sees a trend.
    const change = mk.pUp < p.alpha || mk.pDown < p.alpha ? theilSen(w.values) * (w.values.length - 1) : 0;
    const gap = c - p.margin - mean;
    const needed = Math.max(p.min_rise, (gap * (w.values.length - 1)) / p.horizon);
    const rising = mk.pUp < p.alpha && change >= needed;
    const falling = mk.pDown < p.alpha && -change >= p.min_rise;
    if (rising || falling) return [];
    const round = w.rounds[w.rounds.length - 1] ?? null;
    const share = run.filter.postShare;
    const hints: string[] = [];
    if (share !== null && (share < 0.25 || share > 0.4)) hints.push(`the post-filter boundary share is ${pct(share)} (healthy 25%-35%)`);
    if (run.rollouts !== null && run.rollouts.k < 5) hints.push(`only K=${run.rollouts.k} rollouts estimate p`);
    return [
      {
        round,
        step: w.steps[w.steps.length - 1]!,
        severity: p.severity,
        message: `Accuracy on the selected evidence has sat at ${mean.toFixed(2)} over the last ${w.values.length} steps, ${(c - mean).toFixed(2)} below the target c=${c}, with no upward trend (Mann-Kendall z=${mk.z.toFixed(1)}).`,
        evidence: {
          role: src.role,
          series: src.name,
          window: w.values.length,
          mean: round3(mean),
          target: c,
          gap: round3(c - mean),
          target_source: source,
          margin: p.margin,
          mann_kendall_z: round3(mk.z),
          p_value_up: +mk.pUp.toPrecision(3),
          theil_sen_change: round3(change),
          rise_needed: round3(needed),
          horizon: p.horizon,
        },
        recommendation:
          hints.length > 0
            ? `The selector cannot move the accuracy toward c: ${hints.join('; ')}. Fix that first.`
            : 'The selector cannot move the accuracy toward c: check that the generator is updated between rounds, that the candidate pool holds evidence of graded difficulty, and the boundary reward weight.',
        series: { role: src.role, round, name: src.name },
      },
    ];
  },
};
