/** One series of one round (e.g. selector round 2, `boundary`): every statistic barwatch keeps of it. */
import { Curve, Ewma, History, RollingWindow, RunningStats } from '../stats/rolling.js';
import type { CurveJSON, EwmaJSON, HistoryJSON, RunningStatsJSON, WindowJSON } from '../stats/rolling.js';

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

export interface SeriesJSON {
  summary: RunningStatsJSON;
  window: WindowJSON;
  ewma: EwmaJSON;
  history: HistoryJSON;
  curve: CurveJSON;
  nonfinite: NonFinite;
  lastStep: number | null;
  lastValue: number | null;
}

export class SeriesStats {
  summary = new RunningStats();
  window: RollingWindow;
  ewma: Ewma;
  history: History;
  curve: Curve;
  nonfinite: NonFinite = { count: 0, firstStep: null, lastStep: null, lastValue: null };
  lastStep: number | null = null;
  lastValue: number | null = null;

  constructor(opts: StatsOptions) {
    this.window = new RollingWindow(opts.window);
    this.ewma = Ewma.fromHalfLife(opts.ewmaHalfLife);
    this.history = new History(opts.history);
    this.curve = new Curve(opts.curveBuckets);
  }

  /** NaN and infinities are counted (a detector reports them), never mixed into the statistics. */
  add(step: number, v: number): void {
    if (!Number.isFinite(v)) {
      const nf = this.nonfinite;
      nf.count++;
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
    this.lastStep = step;
    this.lastValue = v;
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
    };
  }

  static from(j: SeriesJSON, opts: StatsOptions): SeriesStats {
    const s = new SeriesStats(opts);
    s.summary = RunningStats.from(j.summary);
    s.window = RollingWindow.from(j.window, opts.window);
    s.ewma = Ewma.from(j.ewma);
    s.history = History.from(j.history, opts.history);
    s.curve = Curve.from(j.curve);
    s.nonfinite = { ...j.nonfinite };
    s.lastStep = j.lastStep;
    s.lastValue = j.lastValue;
    return s;
  }
}
