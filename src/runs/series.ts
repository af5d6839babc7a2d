/** One series of one round (e.g. selector round 2, `boundary`): every statistic barwatch keeps of it. */
import { Curve, Ewma, History, RollingWindow, RunningStats } from '../stats/rolling.js';
import type { CurveColumns, CurveJSON, CurvePacked, EwmaJSON, HistoryJSON, RunningStatsJSON, WindowJSON } from '../stats/rolling.js';

export interface StatsOptions {
  /** Values in the rolling window (mean, variance). */
  window: number;
  /** Recent (step, value) points kept for detectors. */
  history: number;
  /** Half-life of the exponentially weighted statistics, in points. */
  ewmaHalfLife: number;
  /** Buckets of the downsampled whole-round curve. */
  curveBuckets: number;
  /** Series kept per round; further names are counted and dropped. */
  maxSeries: number;
}

export interface NonFinite {
  count: number;
  firstStep: number | null;
  lastStep: number | null;
  lastValue: string | null;
}

/** Values taken back because their steps were logged again (a run resumed from a checkpoint). */
export interface Rewinds {
  /** How many times the series went back, and how many values were replaced. */
  count: number;
  values: number;
  /** The step the latest one went back to, and the latest step written before it did. */
  lastTo: number | null;
  lastFrom?: number | null;
  /** Some values were older than the points kept and stay in the whole-round statistics. */
  inexact: boolean;
}

export interface SeriesJSON {
  summary: RunningStatsJSON;
  window: WindowJSON;
  ewma: EwmaJSON;
  history: HistoryJSON;
  curve: CurvePacked | CurveColumns | CurveJSON;
  nonfinite: NonFinite;
  lastStep: number | null;
  lastValue: number | null;
  /** Absent in states saved before resumed runs were recognised, and while the series never went back. */
  rewinds?: Rewinds;
}

/** Non-finite values taken in by every series of the process, restored ones included (see nonfiniteTaken). */
let nonfiniteValues = 0;

/**
 * How many non-finite values the series of this process have taken in so far, those of restored
 * states included. While it stays, no series that held none holds one: a detector that found a
 * run without any need not look through its series again (nonfiniteDrafts).
 */
export function nonfiniteTaken(): number {
  return nonfiniteValues;
}

export class SeriesStats {
  summary = new RunningStats();
  window: RollingWindow;
  ewma: Ewma;
  history: History;
  curve: Curve;
  private nonfinite_: NonFinite = { count: 0, firstStep: null, lastStep: null, lastValue: null };
  // The step and value of the last finite value and the latest step written, NaN for none: kept
  // as plain numbers, so that V8 stores them in place (a field that may hold null boxes every
  // fraction written to it: two allocations per value on the hottest path). Read as null for none.
  private lastStep_ = NaN;
  private lastValue_ = NaN;
  private latest_ = NaN;
  rewinds: Rewinds | null = null;

  constructor(opts: StatsOptions) {
    this.window = new RollingWindow(opts.window);
    this.ewma = Ewma.fromHalfLife(opts.ewmaHalfLife);
    this.history = new History(opts.history);
    this.curve = new Curve(opts.curveBuckets);
  }

  /** The non-finite values taken in (counted, never mixed into the statistics). */
  get nonfinite(): Readonly<NonFinite> {
    return this.nonfinite_;
  }

  /** The step of the last finite value; null before any. */
  get lastStep(): number | null {
    return Number.isNaN(this.lastStep_) ? null : this.lastStep_;
  }

  /** The last finite value; null before any. */
  get lastValue(): number | null {
    return Number.isNaN(this.lastValue_) ? null : this.lastValue_;
  }

  /** The latest step written, a non-finite value's included; null before any. */
  get latest(): number | null {
    return Number.isNaN(this.latest_) ? null : this.latest_;
  }

  /** Whether the series has a value (a non-finite one included) at `step` or later: `latest` >= step, without a number made for the null of none. */
  reaches(step: number): boolean {
    // (false while latest_ is NaN)
    return step <= this.latest_;
  }

  /** NaN and infinities are counted (a detector reports them), never mixed into the statistics. */
  add(step: number, v: number): void {
    // (false while latest_ is NaN)
    if (step <= this.latest_) this.rewind(step);
    this.latest_ = step;
    if (!Number.isFinite(v)) {
      const nf = this.nonfinite_;
      nf.count++;
      nonfiniteValues++;
      nf.firstStep ??= step;
      nf.lastStep = step;
      nf.lastValue = String(v);
      return;
    }
    this.summary.add(v);
    this.window.push(v);
    this.ewma.push(v);
    this.history.push(step, v);
    this.curve.push(step, v);
    this.lastStep_ = step;
    this.lastValue_ = v;
  }

  /** The step of the first value kept, a non-finite value's included; null before any. */
  get firstStep(): number | null {
    const a = this.curve.firstStep;
    const b = this.nonfinite.firstStep;
    return a === null ? b : b === null ? a : Math.min(a, b);
  }

  /**
   * A step written again: the run was resumed from a checkpoint (or its log appended by a rerun).
   * The newest write wins, as the trainer's own dashboards show it: every value from `step` on is
   * taken back before the new one goes in. The recent points (History) are exact; the window is
   * rebuilt from them, the weighted mean unwound value by value, the whole-round curve cut and
   * the summary recounted from it.
   */
  private rewind(step: number): void {
    const from = this.latest;
    const all = this.summary.n <= this.history.length;
    const before = this.history.points();
    const dropped = this.history.dropFrom(step);
    const exact = this.curve.dropFrom(step, before) && (all || (this.history.firstStep ?? Infinity) < step);
    const t = this.curve.total();
    const kept = this.history.points();
    Object.assign(this.summary, { n: t.n, mean: t.n ? t.mean : 0, m2: t.m2 });
    if (t.min !== null && t.max !== null) Object.assign(this.summary, { min: t.min, max: t.max });
    else if (t.n === 0) Object.assign(this.summary, { min: Infinity, max: -Infinity });
    this.window = RollingWindow.from({ size: this.window.size, values: kept.values.slice(-this.window.size) });
    let unwound = exact;
    for (let i = dropped.values.length - 1; unwound && i >= 0; i--) unwound = this.ewma.unpush(dropped.values[i]!);
    if (!unwound || this.ewma.n !== t.n) {
      const e = new Ewma(this.ewma.alpha);
      for (const x of kept.values) e.push(x);
      e.n = t.n;
      this.ewma = e;
    }
    const n = kept.steps.length;
    this.lastStep_ = n > 0 ? kept.steps[n - 1]! : NaN;
    this.lastValue_ = n > 0 ? kept.values[n - 1]! : NaN;
    if (this.nonfinite.firstStep !== null && this.nonfinite.firstStep >= step)
      this.nonfinite_ = { count: 0, firstStep: null, lastStep: null, lastValue: null };
    const r = (this.rewinds ??= { count: 0, values: 0, lastTo: null, inexact: false });
    r.count++;
    r.values += dropped.values.length;
    r.lastTo = step;
    r.lastFrom = from;
    r.inexact ||= !exact;
  }

  toJSON(): SeriesJSON {
    return {
      summary: this.summary.toJSON(),
      window: this.window.toJSON(),
      ewma: this.ewma.toJSON(),
      history: this.history.toJSON(),
      curve: this.curve.toJSON(),
      nonfinite: { ...this.nonfinite },
      lastStep: this.lastStep,
      lastValue: this.lastValue,
      ...(this.rewinds === null ? {} : { rewinds: { ...this.rewinds } }),
    };
  }

  static from(j: SeriesJSON, opts: StatsOptions): SeriesStats {
    const s = new SeriesStats(opts);
    s.summary = RunningStats.from(j.summary);
    s.window = RollingWindow.from(j.window, opts.window);
    s.ewma = Ewma.from(j.ewma);
    s.history = History.from(j.history, opts.history);
    s.curve = Curve.from(j.curve);
    s.nonfinite_ = { ...j.nonfinite };
    nonfiniteValues += j.nonfinite.count;
    s.lastStep_ = j.lastStep ?? NaN;
    s.lastValue_ = j.lastValue ?? NaN;
    const latest = Math.max(j.lastStep ?? -Infinity, j.nonfinite.lastStep ?? -Infinity);
    s.latest_ = latest === -Infinity ? NaN : latest;
    s.rewinds = j.rewinds === undefined ? null : { ...j.rewinds };
    return s;
  }
}
