/**
 * Bounded-memory statistics. Every structure here has a fixed size set at construction and can
 * be saved to JSON and restored, so a restart resumes with the same numbers.
 *
 * - RunningStats: count, mean, variance (Welford), min, max; two merge (Chan et al.).
 * - RollingWindow: mean and variance of the last W values, from a ring buffer, two passes.
 * - Ewma: exponentially weighted mean and variance.
 * - History: the last H (step, value) points, for detectors that need the shape of a series.
 * - Curve: a whole round downsampled to at most B buckets (pairs merge when full).
 */

export interface RunningStatsJSON {
  n: number;
  mean: number;
  m2: number;
  min: number | null;
  max: number | null;
}

export class RunningStats {
  n = 0;
  mean = 0;
  m2 = 0;
  min = Infinity;
  max = -Infinity;

  add(x: number): void {
    this.n++;
    const d = x - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (x - this.mean);
    if (x < this.min) this.min = x;
    if (x > this.max) this.max = x;
  }

  /** Chan et al.'s parallel combination: the result equals one pass over both inputs. */
  merge(o: RunningStats): this {
    if (o.n === 0) return this;
    if (this.n === 0) {
      Object.assign(this, { n: o.n, mean: o.mean, m2: o.m2, min: o.min, max: o.max });
      return this;
    }
    const n = this.n + o.n;
    const d = o.mean - this.mean;
    this.mean += (d * o.n) / n;
    this.m2 += o.m2 + (d * d * this.n * o.n) / n;
    this.n = n;
    this.min = Math.min(this.min, o.min);
    this.max = Math.max(this.max, o.max);
    return this;
  }

  /** Sample variance (n - 1); 0 below two values. */
  get variance(): number {
    return this.n > 1 ? Math.max(0, this.m2 / (this.n - 1)) : 0;
  }

  get sd(): number {
    return Math.sqrt(this.variance);
  }

  toJSON(): RunningStatsJSON {
    return { n: this.n, mean: this.mean, m2: this.m2, min: this.n ? this.min : null, max: this.n ? this.max : null };
  }

  static from(j: RunningStatsJSON): RunningStats {
    const s = new RunningStats();
    s.n = j.n;
    s.mean = j.mean;
    s.m2 = j.m2;
    s.min = j.min ?? Infinity;
    s.max = j.max ?? -Infinity;
    return s;
  }
}

export interface WindowJSON {
  size: number;
  values: number[];
}

/**
 * Mean and variance of the last `size` values. Values live in a ring buffer; the statistics are
 * computed from it with two passes (plus a compensation term) when read after a change, and
 * cached. Reading costs O(size), pushing O(1), and there is no running sum whose rounding could
 * accumulate: values near 1e9 with a spread of 1e-3 come out as exact as the data allow.
 */
export class RollingWindow {
  private readonly buf: Float64Array;
  private head = 0; // next write position
  private count = 0;
  private dirty = false;
  private mean_ = NaN;
  private variance_ = 0;

  constructor(readonly size: number) {
    if (!(size >= 1)) throw new RangeError('window size must be at least 1');
    this.buf = new Float64Array(size);
  }

  push(x: number): void {
    this.buf[this.head] = x;
    if (++this.head === this.size) this.head = 0;
    if (this.count < this.size) this.count++;
    this.dirty = true;
  }

  private compute(): void {
    this.dirty = false;
    const n = this.count;
    if (n === 0) {
      this.mean_ = NaN;
      this.variance_ = 0;
      return;
    }
    let sum = 0;
    for (let i = 0; i < n; i++) sum += this.buf[i]!;
    const mean = sum / n;
    let ss = 0;
    let comp = 0;
    for (let i = 0; i < n; i++) {
      const d = this.buf[i]! - mean;
      ss += d * d;
      comp += d;
    }
    this.mean_ = mean + comp / n;
    this.variance_ = n > 1 ? Math.max(0, (ss - (comp * comp) / n) / (n - 1)) : 0;
  }

  get n(): number {
    return this.count;
  }

  get mean(): number {
    if (this.dirty) this.compute();
    return this.mean_;
  }

  get variance(): number {
    if (this.dirty) this.compute();
    return this.variance_;
  }

  get sd(): number {
    return Math.sqrt(this.variance);
  }

  /** Values oldest first. */
  *values(): IterableIterator<number> {
    const start = (this.head - this.count + this.size) % this.size;
    for (let i = 0; i < this.count; i++) yield this.buf[(start + i) % this.size]!;
  }

  toJSON(): WindowJSON {
    return { size: this.size, values: [...this.values()] };
  }

  static from(j: WindowJSON, size = j.size): RollingWindow {
    const w = new RollingWindow(size);
    for (const x of j.values.slice(-size)) w.push(x);
    return w;
  }
}

export interface EwmaJSON {
  alpha: number;
  n: number;
  mean: number;
  variance: number;
}

/** Exponentially weighted mean and variance (Finch 2009, incremental form). */
export class Ewma {
  n = 0;
  mean = 0;
  variance = 0;

  constructor(readonly alpha: number) {
    if (!(alpha > 0 && alpha <= 1)) throw new RangeError('alpha must be in (0, 1]');
  }

  /** alpha for a given half-life in samples. */
  static fromHalfLife(samples: number): Ewma {
    return new Ewma(1 - Math.pow(0.5, 1 / samples));
  }

  push(x: number): void {
    if (this.n++ === 0) {
      this.mean = x;
      this.variance = 0;
      return;
    }
    const d = x - this.mean;
    const inc = this.alpha * d;
    this.mean += inc;
    this.variance = (1 - this.alpha) * (this.variance + d * inc);
  }

  /**
   * Takes back the latest push of `x` (the inverse of push). False where the inverse does not
   * exist (the value was the first, or alpha is 1): rebuild from the values kept instead.
   */
  unpush(x: number): boolean {
    if (this.n <= 1 || this.alpha === 1) return false;
    const mean = (this.mean - this.alpha * x) / (1 - this.alpha);
    const d = x - mean;
    this.variance = Math.max(0, this.variance / (1 - this.alpha) - this.alpha * d * d);
    this.mean = mean;
    this.n--;
    return true;
  }

  get sd(): number {
    return Math.sqrt(this.variance);
  }

  toJSON(): EwmaJSON {
    return { alpha: this.alpha, n: this.n, mean: this.mean, variance: this.variance };
  }

  static from(j: EwmaJSON): Ewma {
    const e = new Ewma(j.alpha);
    e.n = j.n;
    e.mean = j.mean;
    e.variance = j.variance;
    return e;
  }
}

export interface HistoryJSON {
  size: number;
  steps: number[];
  values: number[];
}

/** Points of a History, oldest first: shared by every reader until the history changes, so never written to. */
export interface Points {
  readonly steps: readonly number[];
  readonly values: readonly number[];
}

/** Histories up to this many points keep their last points() for the next reader. */
const SHARED_POINTS = 4096;
/** The histories holding shared points: they let them go when the readers are done (releaseSharedPoints). */
const sharing: History[] = [];

/**
 * The points shared since the last call are let go (the detectors' engine calls this after each
 * pass): kept past their pass, they would outlive a young collection while the run waits for its
 * next step, and die in the old generation, which costs a daemon following many runs more than
 * the copies saved.
 */
export function releaseSharedPoints(): void {
  for (const h of sharing) h.release();
  sharing.length = 0;
}

/** The last `size` (step, value) points, oldest first. */
export class History {
  private readonly steps: Float64Array;
  private readonly vals: Float64Array;
  private head = 0;
  private count = 0;
  /** Changes with every point added or taken back: the points last read are current while it stays. */
  private version = 0;
  /** The points last read (of `n` points, at `version`): the detectors evaluated at one record read the same series. */
  private shared: { version: number; n: number; points: Points } | null = null;

  constructor(readonly size: number) {
    this.steps = new Float64Array(size);
    this.vals = new Float64Array(size);
  }

  push(step: number, value: number): void {
    this.steps[this.head] = step;
    this.vals[this.head] = value;
    if (++this.head === this.size) this.head = 0;
    if (this.count < this.size) this.count++;
    this.version++;
  }

  get length(): number {
    return this.count;
  }

  /** The step of the oldest point kept; null when empty. */
  get firstStep(): number | null {
    return this.count === 0 ? null : this.steps[(this.head - this.count + this.size) % this.size]!;
  }

  /**
   * Removes the newest points whose step is `step` or later (steps only grow along the history)
   * and returns them, oldest first.
   */
  dropFrom(step: number): { steps: number[]; values: number[] } {
    this.version++;
    const steps: number[] = [];
    const values: number[] = [];
    while (this.count > 0) {
      const at = (this.head - 1 + this.size) % this.size;
      if (this.steps[at]! < step) break;
      steps.push(this.steps[at]!);
      values.push(this.vals[at]!);
      this.head = at;
      this.count--;
    }
    return { steps: steps.reverse(), values: values.reverse() };
  }

  /**
   * Points oldest first, as two arrays: all kept, or the last `last` of them. The arrays are the
   * same for every reader until a point is added or taken back: read them, never write to them.
   */
  points(last = Infinity): Points {
    const n = Math.min(this.count, last);
    const shared = this.shared;
    if (shared !== null && shared.version === this.version && shared.n === n) return shared.points;
    const points = this.copy(n);
    if (n <= SHARED_POINTS) {
      if (this.shared === null) sharing.push(this);
      this.shared = { version: this.version, n, points };
    }
    return points;
  }

  /** Lets the shared points go (releaseSharedPoints). */
  release(): void {
    this.shared = null;
  }

  private copy(n: number): { steps: number[]; values: number[] } {
    // Arrays of their final length are filled ~3x faster than pushed to (detectors read points at
    // every evaluation); past V8's limit for a fast preallocated array, pushed.
    const sized = n <= 50_000;
    const steps: number[] = sized ? new Array<number>(n) : [];
    const values: number[] = sized ? new Array<number>(n) : [];
    let j = (this.head - n + this.size) % this.size;
    for (let i = 0; i < n; i++) {
      steps[i] = this.steps[j]!;
      values[i] = this.vals[j]!;
      if (++j === this.size) j = 0;
    }
    return { steps, values };
  }

  toJSON(): HistoryJSON {
    return { size: this.size, ...this.copy(this.count) };
  }

  static from(j: HistoryJSON, size = j.size): History {
    const h = new History(size);
    const from = Math.max(0, j.steps.length - size);
    for (let i = from; i < j.steps.length; i++) h.push(j.steps[i]!, j.values[i]!);
    return h;
  }
}

export interface CurveBucket {
  firstStep: number;
  lastStep: number;
  n: number;
  mean: number;
  /** Sum of squared deviations from the mean (Welford): the spread within the bucket. Absent in states saved before it was kept. */
  m2?: number;
  /** The least and the greatest value in the bucket. Absent in states saved before they were kept. */
  min?: number;
  max?: number;
}

export interface CurveJSON {
  size: number;
  per: number;
  buckets: CurveBucket[];
}

/**
 * A whole round's series in at most `size` buckets of `per` points each. When the buckets are
 * full, neighbours merge pairwise and `per` doubles: memory stays fixed however long the round.
 */
export class Curve {
  private buckets: CurveBucket[] = [];
  private per = 1;

  constructor(readonly size = 128) {
    if (size < 2 || size % 2 !== 0) throw new RangeError('curve size must be even and at least 2');
  }

  push(step: number, value: number): void {
    let last = this.buckets[this.buckets.length - 1];
    if (last === undefined || last.n >= this.per) {
      if (this.buckets.length >= this.size) this.halve();
      last = { firstStep: step, lastStep: step, n: 0, mean: 0, m2: 0, min: value, max: value };
      this.buckets.push(last);
    }
    addTo(last, step, value);
  }

  /**
   * Takes back every value from `step` on (a run resumed from a checkpoint logs those steps
   * again). Buckets that start there go whole; the bucket that straddles `step` is rebuilt from
   * `points`, the newest points known (oldest first, the ones taken back included), when they
   * cover it; else the known values are taken out of it one by one. False when some values could
   * not be taken back: they are older than the points known, in a bucket that straddles `step`.
   */
  dropFrom(step: number, points: { steps: readonly number[]; values: readonly number[] }): boolean {
    while (this.buckets.length > 0 && this.buckets[this.buckets.length - 1]!.firstStep >= step) this.buckets.pop();
    const b = this.buckets[this.buckets.length - 1];
    if (b === undefined || b.lastStep < step) return true;
    const { steps, values } = points;
    if (steps.length > 0 && steps[0]! <= b.firstStep) {
      const fresh: CurveBucket = { firstStep: b.firstStep, lastStep: b.firstStep, n: 0, mean: 0, m2: 0, min: Infinity, max: -Infinity };
      for (let i = 0; i < steps.length && steps[i]! < step; i++) if (steps[i]! >= b.firstStep) addTo(fresh, steps[i]!, values[i]!);
      if (fresh.n === 0) this.buckets.pop();
      else Object.assign(b, fresh);
      return true;
    }
    // The bucket began before the points known: take out the values known; its least and
    // greatest stay as they were.
    let lastKept = b.firstStep;
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i]!;
      if (s < step) lastKept = s;
      else if (s <= b.lastStep && b.n > 1) {
        const x = values[i]!;
        const mean = (b.mean * b.n - x) / (b.n - 1);
        b.m2 = Math.max(0, (b.m2 ?? 0) - (x - mean) * (x - b.mean));
        b.mean = mean;
        b.n--;
      }
    }
    b.lastStep = lastKept;
    return steps.length > 0 && steps[0]! <= step;
  }

  /** Count, mean, spread, least and greatest of every value in the curve, as one RunningStats. */
  total(): { n: number; mean: number; m2: number; min: number | null; max: number | null } {
    const { n, mean, m2 } = this.combined(0, this.buckets.length - 1);
    let min: number | null = Infinity;
    let max: number | null = -Infinity;
    for (const b of this.buckets) {
      min = b.min === undefined || min === null ? null : Math.min(min, b.min);
      max = b.max === undefined || max === null ? null : Math.max(max, b.max);
    }
    return { n, mean, m2, min: n === 0 ? null : min, max: n === 0 ? null : max };
  }

  /** Count, mean and sum of squared deviations of buckets `from`..`to`, combined exactly (Chan et al.). */
  private combined(from: number, to: number): { n: number; mean: number; m2: number } {
    let n = 0;
    let mean = 0;
    let m2 = 0;
    for (let j = from; j <= to; j++) {
      const b = this.buckets[j]!;
      const total = n + b.n;
      const d = b.mean - mean;
      mean += (d * b.n) / total;
      m2 += (b.m2 ?? 0) + (d * d * n * b.n) / total;
      n = total;
    }
    return { n, mean, m2 };
  }

  private halve(): void {
    const merged: CurveBucket[] = [];
    for (let i = 0; i < this.buckets.length; i += 2) {
      const a = this.buckets[i]!;
      const b = this.buckets[i + 1];
      if (b === undefined) {
        merged.push(a);
        continue;
      }
      const n = a.n + b.n;
      const d = b.mean - a.mean;
      const m2 = (a.m2 ?? 0) + (b.m2 ?? 0) + (d * d * a.n * b.n) / n;
      const pair: CurveBucket = { firstStep: a.firstStep, lastStep: b.lastStep, n, mean: a.mean + (d * b.n) / n, m2 };
      if (a.min !== undefined && b.min !== undefined) pair.min = Math.min(a.min, b.min);
      if (a.max !== undefined && b.max !== undefined) pair.max = Math.max(a.max, b.max);
      merged.push(pair);
    }
    this.buckets = merged;
    this.per *= 2;
  }

  /**
   * Mean and standard deviation of the values in each run of `width` buckets ending at each
   * bucket (a rolling window over about width x per steps), combining the buckets exactly.
   */
  rolling(width: number): { mean: number[]; sd: number[] } {
    const mean: number[] = [];
    const sd: number[] = [];
    for (let i = 0; i < this.buckets.length; i++) {
      const c = this.combined(Math.max(0, i - width + 1), i);
      mean.push(c.mean);
      sd.push(c.n > 1 ? Math.sqrt(c.m2 / (c.n - 1)) : 0);
    }
    return { mean, sd };
  }

  /**
   * The mean of the first buckets that together hold at least `points` values, their count and the
   * last step they cover; null while the curve holds fewer.
   */
  headMean(points: number): { mean: number; n: number; lastStep: number } | null {
    let n = 0;
    let sum = 0;
    for (const b of this.buckets) {
      n += b.n;
      sum += b.mean * b.n;
      if (n >= points) return { mean: sum / n, n, lastStep: b.lastStep };
    }
    return null;
  }

  /** The step of the first value; null when empty. */
  get firstStep(): number | null {
    return this.buckets[0]?.firstStep ?? null;
  }

  /** Bucket means, oldest first. */
  means(): number[] {
    return this.buckets.map((b) => b.mean);
  }

  get length(): number {
    return this.buckets.length;
  }

  /** The buckets as they are, oldest first, to read without a copy. */
  get bucketsRead(): readonly Readonly<CurveBucket>[] {
    return this.buckets;
  }

  toJSON(): CurveJSON {
    return { size: this.size, per: this.per, buckets: this.buckets.map((b) => ({ ...b })) };
  }

  static from(j: CurveJSON): Curve {
    const c = new Curve(j.size);
    c.per = j.per;
    c.buckets = j.buckets.map((b) => ({ ...b }));
    return c;
  }
}

/** One more value into a curve bucket (Welford). */
function addTo(b: CurveBucket, step: number, value: number): void {
  b.n++;
  const d = value - b.mean;
  b.mean += d / b.n;
  b.m2 = (b.m2 ?? 0) + d * (value - b.mean);
  if (b.min !== undefined && value < b.min) b.min = value;
  if (b.max !== undefined && value > b.max) b.max = value;
  b.lastStep = step;
}

/** Averages consecutive values down to at most `width` points. */
export function resample(values: readonly number[], width: number): number[] {
  if (values.length <= width) return [...values];
  const out: number[] = [];
  for (let i = 0; i < width; i++) {
    const a = Math.floor((i * values.length) / width);
    const b = Math.floor(((i + 1) * values.length) / width);
    let sum = 0;
    let n = 0;
    for (let j = a; j < b; j++) {
      if (Number.isFinite(values[j])) {
        sum += values[j]!;
        n++;
      }
    }
    out.push(n > 0 ? sum / n : NaN);
  }
  return out;
}
