/**
 * Levels of a series that the training-health detectors compare: where it started, where it sits
 * now, and the sudden falls in between. Everything is read from the bounded statistics a series
 * keeps (its whole-round curve and its recent history), so memory does not grow with the run.
 */
import type { SeriesStats } from '../runs/series.js';
import { median } from '../stats/inference.js';

/** Four significant decimals, for evidence. */
export function r4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/**
 * The series' early level: the mean of its first `points` values, read from the whole-round curve
 * (exact while the round has at most `curve_buckets` points; in a longer round the curve's first
 * bucket, about 1% of the round). Null before the series has `points` values.
 */
export function earlyLevel(s: SeriesStats, points: number): { mean: number; n: number; lastStep: number } | null {
  const buckets = s.curve.toJSON().buckets;
  let n = 0;
  let sum = 0;
  for (const b of buckets) {
    n += b.n;
    sum += b.mean * b.n;
    if (n >= points) return { mean: sum / n, n, lastStep: b.lastStep };
  }
  return null;
}

/** The last `n` kept values and their steps, oldest first. */
export function lastPoints(s: SeriesStats, n: number): { steps: number[]; values: number[] } {
  const p = s.history.points();
  const from = Math.max(0, p.values.length - n);
  return { steps: p.steps.slice(from), values: p.values.slice(from) };
}

/** The median of the last `n` kept values, or null while fewer are kept. */
export function recentMedian(s: SeriesStats, n: number): { median: number; steps: number[]; values: number[] } | null {
  const p = lastPoints(s, n);
  if (p.values.length < n) return null;
  return { median: median(p.values), ...p };
}

/** Medians of each run of `w` values ending at each index (NaN before the first full run). */
export function rollingMedians(values: readonly number[], w: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < values.length; i++) out.push(i + 1 < w ? NaN : median(values.slice(i + 1 - w, i + 1)));
  return out;
}

export interface Fall {
  /** Index (into the values) at which the fallen level was first reached. */
  at: number;
  /** The level before the fall: the highest rolling median in the `horizon` values before it. */
  before: number;
  /** The rolling median at the fall. */
  after: number;
}

/**
 * The latest sudden fall: the first index of the last stretch where the rolling median of `w`
 * values sits at or below (1 - drop) x the highest rolling median of the `horizon` values before
 * the run of `w`. Levels are taken as positive (lengths, entropies).
 */
export function latestFall(values: readonly number[], w: number, horizon: number, drop: number): Fall | null {
  const m = rollingMedians(values, w);
  let found: Fall | null = null;
  let last = -2;
  for (let i = w - 1; i < values.length; i++) {
    let before = -Infinity;
    for (let j = Math.max(w - 1, i - w - horizon + 1); j <= i - w; j++) if (m[j]! > before) before = m[j]!;
    if (!(before > 0) || !(m[i]! <= (1 - drop) * before)) continue;
    // A new stretch of fallen medians starts a new fall; within a stretch the first index stays.
    if (i !== last + 1) found = { at: i, before, after: m[i]! };
    last = i;
  }
  return found;
}
