/**
 * Levels of a series that the training-health detectors compare: where it started, where it sits
 * now, and the sudden falls in between. Everything is read from the bounded statistics a series
 * keeps (its whole-round curve and its recent history), so memory does not grow with the run.
 */
import type { SeriesStats } from '../runs/series.js';
import type { History } from '../stats/rolling.js';
import { median, SortedWindow } from '../stats/inference.js';

/** Four significant decimals, for evidence. */
export function r4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/** The mean of some values (NaN for none); of those from `from` up to `to` alone, without copying them. */
export function mean(xs: readonly number[], from = 0, to = xs.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += xs[i]!;
  return sum / (to - from);
}

/**
 * The series' early level: the mean of its first `points` values, read from the whole-round curve
 * (exact while the round has at most `curve_buckets` points; in a longer round the curve's first
 * bucket, about 1% of the round). Null before the series has `points` values.
 */
export function earlyLevel(s: SeriesStats, points: number): { mean: number; n: number; lastStep: number } | null {
  return s.curve.headMean(points);
}

/** A series' recent level: the median of its last values, and the step of the newest. */
export interface Recent {
  median: number;
  lastStep: number;
}

/** Where recentMedian copies the values it reads (grown when a window is longer). */
let recentScratch = new Float64Array(64);

/**
 * The median of the last `n` kept values, or null while fewer are kept. The values are read in
 * place into an array kept between calls: the detectors that ask at every step (entropy, KL,
 * lengths) made two points() arrays and two objects for each answer.
 */
export function recentMedian(s: SeriesStats, n: number): Recent | null {
  const h = s.history;
  if (h.length < n) return null;
  if (recentScratch.length < n) recentScratch = new Float64Array(n * 2);
  const from = h.length - n;
  for (let i = 0; i < n; i++) recentScratch[i] = h.at(from + i);
  return { median: median(recentScratch, 0, n), lastStep: n > 0 ? h.stepAt(h.length - 1) : NaN };
}

/**
 * Where a series started and where it sits now: the mean of its first `early` values and the
 * median of its last `window`, once it has both (entropy, KL: a level against its own start).
 */
export function againstEarly(s: SeriesStats, early: number, window: number): { early: { mean: number; n: number }; now: Recent } | null {
  if (s.history.length < early + window) return null;
  const e = earlyLevel(s, early);
  const now = recentMedian(s, window);
  return e === null || now === null ? null : { early: e, now };
}

/** Medians of each run of `w` values ending at each index (NaN before the first full run). */
export function rollingMedians(values: ArrayLike<number>, w: number): Float64Array {
  const out = new Float64Array(values.length);
  const win = new SortedWindow();
  for (let i = 0; i < values.length; i++) {
    win.add(values[i]!);
    if (i >= w) win.remove(values[i - w]!);
    out[i] = i + 1 < w ? NaN : win.median();
  }
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

/** A history's rolling medians as last computed: the next call computes those of the points pushed since. */
interface MedianMemo {
  pushed: number;
  dropped: number;
  w: number;
  m: Float64Array;
}
const medianMemo = new WeakMap<History, MedianMemo>();
/** Past this many new points, the medians are computed afresh in one sweep. */
const MEDIANS_TO_ADD = 32;

/**
 * rollingMedians of all the points a history keeps (`values`: its values, oldest first), reusing the
 * medians computed at its last call: a point's median depends only on it and the w - 1 before
 * it, so only the points pushed since need one (a detector judges a series at every step or two;
 * its history moves by a point or two). The array is the memo's own, valid until the next call
 * for the same history: read it, never keep it.
 */
export function historyMedians(h: History, values: ArrayLike<number>, w: number): Float64Array {
  const n = values.length;
  if (n !== h.length) throw new RangeError(`historyMedians: ${n} values of a history of ${h.length}`);
  const memo = medianMemo.get(h);
  let m: Float64Array;
  const added = memo === undefined ? -1 : h.pushed - memo.pushed;
  // Points that left the front since (pushed past the room), and the medians kept.
  const shift = memo === undefined ? -1 : memo.m.length + added - n;
  const keep = memo === undefined ? -1 : memo.m.length - shift;
  if (memo === undefined || memo.w !== w || memo.dropped !== h.dropped || added < 0 || shift < 0 || keep < 0 || n - keep > MEDIANS_TO_ADD) {
    m = rollingMedians(values, w);
  } else {
    if (memo.m.length === n) {
      m = memo.m;
      m.copyWithin(0, shift);
    } else {
      m = new Float64Array(n);
      m.set(memo.m.subarray(shift));
    }
    // The first w - 1 have no full run of w before them.
    for (let i = 0; i < Math.min(w - 1, n); i++) m[i] = NaN;
    for (let i = Math.max(keep, w - 1); i < n; i++) m[i] = median(values, i + 1 - w, i + 1);
  }
  if (memo === undefined) medianMemo.set(h, { pushed: h.pushed, dropped: h.dropped, w, m });
  else {
    // Updated in place: a series judged at every step makes no memo object a step.
    memo.pushed = h.pushed;
    memo.dropped = h.dropped;
    memo.w = w;
    memo.m = m;
  }
  return m;
}

/** The indices latestFall keeps in its queue (reused from call to call). */
let fallQueue = new Int32Array(512);

/**
 * The latest sudden fall: the first index of the last stretch where the rolling median of `w`
 * values sits at or below (1 - drop) x the highest rolling median of the `horizon` values before
 * the run of `w`. Levels are taken as positive (lengths, entropies). `m`: the values' rolling
 * medians of `w`, when known (historyMedians).
 */
export function latestFall(
  values: ArrayLike<number>,
  w: number,
  horizon: number,
  drop: number,
  m = rollingMedians(values, w),
): Fall | null {
  let found: Fall | null = null;
  let last = -2;
  // The highest median of each stretch [i - w - horizon + 1, i - w] (from w - 1 on): both ends move
  // up by one with i, so a queue of indices whose medians fall from its front gives it, each index
  // queued and dropped once (no scan of the stretch for every i).
  if (fallQueue.length < values.length) fallQueue = new Int32Array(values.length * 2);
  const q = fallQueue;
  let head = 0;
  let tail = 0;
  let next = w - 1;
  for (let i = w - 1; i < values.length; i++) {
    for (; next <= i - w; next++) {
      const x = m[next]!;
      // NaN (no median) is never the highest.
      if (x !== x) continue;
      while (tail > head && m[q[tail - 1]!]! <= x) tail--;
      q[tail++] = next;
    }
    const from = Math.max(w - 1, i - w - horizon + 1);
    while (tail > head && q[head]! < from) head++;
    const before = tail > head ? m[q[head]!]! : -Infinity;
    if (!(before > 0) || !(m[i]! <= (1 - drop) * before)) continue;
    // A new stretch of fallen medians starts a new fall; within a stretch the first index stays.
    if (i !== last + 1) found = { at: i, before, after: m[i]! };
    last = i;
  }
  return found;
}
