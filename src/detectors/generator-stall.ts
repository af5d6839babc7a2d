/**
 * generator-stall: the accuracy on the selected evidence sits below the target c by more than a
 * margin, with no significant trend either way over the last window (Mann-Kendall, plus a
 * Theil-Sen rise large enough to matter against the sampling noise of an accuracy). A falling
 * accuracy is generator-regression's business, not a stall.
 */
import { accuracySources } from './accuracy.js';
import { acrossRounds, recent, roundsOf, segmentMeans, seriesSpan, targetOf } from './queries.js';
import type { RoundState } from '../runs/round.js';
import type { Role } from '../parsers/types.js';
import type { RunState } from '../runs/run.js';
import { mannKendall, moments, theilSen } from '../stats/inference.js';
import { resample } from '../stats/rolling.js';
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

/**
 * The window a stall is judged on. Rounds that hold a full window are judged one at a time: the
 * latest once it has `minPoints` steps of the series, until then the round before (a window that
 * straddles a round's start mixes two levels, and its verdict flips at every round's start).
 * Runs whose rounds are shorter than a window are judged across rounds. Returns the window and
 * the round it lies in (null across rounds).
 */
function basisOf(
  run: RunState,
  role: Role,
  name: string,
  window: number,
  minPoints: number,
): { w: { values: readonly number[]; steps: readonly number[]; last: number | null }; index: number | null; rounds: RoundState[] } {
  const rounds = roundsOf(run, role).filter((r) => r.series.has(name));
  const full = (r: RoundState | undefined): boolean => r !== undefined && (seriesSpan(r, name)?.steps ?? 0) >= minPoints;
  const index = full(rounds[rounds.length - 1]) ? rounds.length - 1 : full(rounds[rounds.length - 2]) ? rounds.length - 2 : null;
  if (index === null) {
    const a = acrossRounds(run, role, name, window);
    return { w: { values: a.values, steps: a.steps, last: a.rounds[a.rounds.length - 1] ?? null }, index, rounds };
  }
  // No round per point: only the last one's is read.
  const r = rounds[index]!;
  const p = recent(r, name, window);
  return { w: { values: p.values, steps: p.steps, last: r.round }, index, rounds };
}

/**
 * How much round `index` stands above the round before over the same steps (their first n, n the
 * shorter of the two), or null with no earlier round.
 */
function roundProgress(
  rounds: RoundState[],
  index: number,
  name: string,
): { rounds: [number | null, number | null]; steps: number; rise: number } | null {
  const b = rounds[index];
  const a = rounds[index - 1];
  if (a === undefined || b === undefined) return null;
  const sa = seriesSpan(a, name);
  const sb = seriesSpan(b, name);
  if (sa === null || sb === null) return null;
  const n = Math.min(sa.steps, sb.steps);
  const ma = segmentMeans(a, name, n, 1)?.[0];
  const mb = segmentMeans(b, name, n, 1)?.[0];
  if (ma === undefined || mb === undefined) return null;
  return { rounds: [a.round, b.round], steps: n, rise: round3(mb - ma) };
}

export const generatorStall: Detector<P> = {
  id: 'generator-stall',
  cleared: 'the accuracy on the selected evidence is moving toward c again, or within the margin of it',
  scope: 'run',
  description: 'Accuracy stays below the target c by more than margin with no significant upward trend.',
  defaults: { enabled: true, severity: 'warning', window: 128, min_points: 128, margin: 0.05, alpha: 0.01, min_rise: 0.01, horizon: 320 },
  counts: ['window', 'min_points', 'horizon'],
  every: () => 8,
  detect(run, p) {
    const src = accuracySources(run)[0];
    if (src === undefined) return [];
    const basis = basisOf(run, src.role, src.name, p.window, p.min_points);
    const w = basis.w;
    if (w.values.length < p.min_points) return [];
    const { c, source } = targetOf(run);
    const mean = w.values.reduce((a, b) => a + b, 0) / w.values.length;
    // Below c - margin beyond doubt: the mean's standard error from 8 block means (blocks tame the
    // autocorrelation; a swinging accuracy, e.g. 0.39-0.58, has a mean that is not a level).
    const blocks = resample(w.values, 8);
    const se = Math.sqrt(moments(blocks).variance / blocks.length);
    if (!(mean + 2 * se < c - p.margin)) return [];
    const mk = mannKendall(w.values, true);
    // Theil-Sen costs O(n^2 log n): only when Mann-Kendall already sees a trend.
    const change = mk.pUp < p.alpha || mk.pDown < p.alpha ? theilSen(w.values) * (w.values.length - 1) : 0;
    const needed = Math.max(p.min_rise, ((c - p.margin - mean) * (w.values.length - 1)) / p.horizon);
    // A rise within the round counts only if the round also stands above the one before over the
    // same steps: a generator whose evidence answers alike each round (each round climbing from
    // the same start) has not moved, however its last window looks.
    const progress = basis.index === null ? null : roundProgress(basis.rounds, basis.index, src.name);
    const rising = mk.pUp < p.alpha && change >= needed && (progress === null || progress.rise >= p.min_rise);
    const falling = mk.pDown < p.alpha && -change >= p.min_rise;
    if (rising || falling) return [];
    const round = w.last;
    // Below the target by this much, at the precision the message states it.
    const gap = +(c - mean).toFixed(2);
    const share = run.filter.postShare;
    const hints: string[] = [];
    if (share !== null && (share < 0.25 || share > 0.4)) hints.push(`the post-filter boundary share is ${pct(share)} (healthy 25%-35%)`);
    if (run.rollouts !== null && run.rollouts.k < 5) hints.push(`only K=${run.rollouts.k} rollouts estimate p`);
    return [
      {
        round,
        step: w.steps[w.steps.length - 1]!,
        severity: p.severity,
        message: `Accuracy on the selected evidence has sat at ${mean.toFixed(2)} over the last ${w.values.length} steps, ${gap.toFixed(2)} below the target c=${c}, ${
          mk.pUp < p.alpha && change >= needed && progress !== null
            ? `climbing within round ${progress.rounds[1]} (Mann-Kendall z=${mk.z.toFixed(1)}) but from where round ${progress.rounds[0]} started: over the same ${progress.steps} steps it stands ${progress.rise.toFixed(3)} above round ${progress.rounds[0]}`
            : `with no upward trend (Mann-Kendall z=${mk.z.toFixed(1)})`
        }.`,
        evidence: {
          role: src.role,
          series: src.name,
          window: w.values.length,
          mean: round3(mean),
          mean_se: round3(se),
          target: c,
          gap,
          target_source: source,
          margin: p.margin,
          mann_kendall_z: round3(mk.z),
          p_value_up: +mk.pUp.toPrecision(3),
          theil_sen_change: round3(change),
          rise_needed: round3(needed),
          horizon: p.horizon,
          ...(progress !== null ? { round_over_round: progress } : {}),
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
