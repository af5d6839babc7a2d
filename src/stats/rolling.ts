/**
 * Bounded-memory statistics. Every structure here has a fixed size set at construction and can
 * be saved to JSON and restored, so a restart resumes with the same numbers.
 *
 * - RunningStats: count, mean, variance (Welford), min, max; two merge (Chan et al.).
 * - RollingWindow: mean and variance of the last W values, from a ring buffer, two passes.
 * - Ewma: exponentially weighted mean and variance.
 * - History: the last H (step, value) points, for detectors that need the shape of a series.
 * - Curve: a whole round downsampled to at most B buckets (pairs merge when full).
 *
 * The window, the history and the curve save their numbers packed (packDoubles): a daemon saves
 * every busy round's statistics every 30 s, and JSON numbers were most of that save's cost.
 */

/** Whether this machine stores doubles little-endian (packed doubles are little-endian everywhere). */
const LITTLE_ENDIAN = new Uint8Array(new Float64Array([1]).buffer)[7] === 0x3f;

/**
 * Doubles as the base64 of their little-endian bytes: exact (NaN, infinities and -0 stay as they
 * are, where JSON makes NaN null) and written and read several times faster than JSON numbers
 * (1,800 series of 800 steps: the curves in 17 ms instead of 79 ms; BENCHMARKS.md, session 19).
 */
export function packDoubles(xs: Float64Array): string {
  const bytes = Buffer.from(xs.buffer, xs.byteOffset, xs.byteLength);
  return (LITTLE_ENDIAN ? bytes : Buffer.from(bytes).swap64()).toString('base64');
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** How many doubles `text` packs (packDoubles), or null when it is not such a text. */
export function packedCount(text: string): number | null {
  if (text.length % 4 !== 0 || !BASE64.test(text)) return null;
  const bytes = (text.length / 4) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
  return bytes % 8 === 0 ? bytes / 8 : null;
}

/** The doubles packDoubles wrote (the text checked with packedCount). */
export function unpackDoubles(text: string): Float64Array {
  const bytes = Buffer.from(text, 'base64');
  if (!LITTLE_ENDIAN) bytes.swap64();
  // A copy: the decoded bytes may sit at any offset of a shared pool, not at a multiple of 8.
  const out = new Float64Array(Math.floor(bytes.length / 8));
  new Uint8Array(out.buffer).set(bytes.subarray(0, out.length * 8));
  return out;
}

/** What a save packs from (packFrom), kept from one pack to the next and grown as needed. */
let packScratch = new Float64Array(1024);

/**
 * Room for `n` doubles to pack, shared by every save: fill it, pack it at once (packDoubles copies
 * the bytes into its text), never keep it. A daemon saves every series of every busy round every
 * 30 s, and a typed array of a few KiB made for each cost 10-25 µs (its memory is outside V8's heap).
 */
function packFrom(n: number): Float64Array {
  if (packScratch.length < n) packScratch = new Float64Array(n * 2);
  return packScratch;
}

/**
 * The `count` newest values of a ring (`head`: where the next is written), oldest first, copied
 * into `out` from `at` in native code: at most two copies, one for each end of the ring.
 */
function ringInto(ring: Float64Array, head: number, count: number, out: Float64Array, at: number): void {
  const start = head - count;
  if (start >= 0) out.set(ring.subarray(start, head), at);
  else {
    out.set(ring.subarray(start + ring.length), at);
    out.set(ring.subarray(0, head), at - start);
  }
}

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

/** A window as a state saves it: its values oldest first, packed (packDoubles); states saved before, as numbers. */
export type WindowJSON = { size: number; packed: string } | { size: number; values: number[] };

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
    const out = packFrom(this.count);
    ringInto(this.buf, this.head, this.count, out, 0);
    return { size: this.size, packed: packDoubles(out.subarray(0, this.count)) };
  }

  static from(j: WindowJSON, size = j.size): RollingWindow {
    const w = new RollingWindow(size);
    const values = 'packed' in j ? unpackDoubles(j.packed) : j.values;
    for (let i = Math.max(0, values.length - size); i < values.length; i++) w.push(values[i]!);
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

/**
 * A history as a state saves it: its steps, then its values, oldest first, packed (packDoubles);
 * states saved before, as numbers.
 */
export type HistoryJSON = { size: number; packed: string } | { size: number; steps: number[]; values: number[] };

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

/** The array historyValues fills (grown when a history holds more). */
let valuesScratch = new Float64Array(512);

/**
 * The values of `h`, oldest first, in one array shared by every caller and filled again at each
 * call (History.valuesInto): read them before the next call, never keep them or write to them.
 * Its first `h.length` entries are the history's; it may be longer.
 */
export function historyValues(h: History): Float64Array {
  if (valuesScratch.length < h.length) valuesScratch = new Float64Array(h.length * 2);
  h.valuesInto(valuesScratch);
  return valuesScratch;
}

/** historyValues cut to the history's own points: a view of the same shared array, with the same rules. */
export function keptValues(h: History): Float64Array {
  return historyValues(h).subarray(0, h.length);
}

/** The array historySteps fills. */
let stepsScratch = new Float64Array(512);

/** The steps of `h`, oldest first, as historyValues gives its values (an array of its own). */
export function historySteps(h: History): Float64Array {
  if (stepsScratch.length < h.length) stepsScratch = new Float64Array(h.length * 2);
  h.stepsInto(stepsScratch);
  return stepsScratch;
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
  /** Points pushed, and points taken back (dropFrom), since the history was made. */
  private pushes = 0;
  private drops = 0;

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
    this.pushes++;
  }

  /**
   * Points pushed since the history was made, and whether any was taken back since: while
   * `dropped` stays, the points of a later read are those of an earlier one less the oldest
   * (as many as were pushed since, beyond the room), plus the ones pushed since.
   */
  get pushed(): number {
    return this.pushes;
  }

  get dropped(): number {
    return this.drops;
  }

  get length(): number {
    return this.count;
  }

  /** Where in the ring the `i`-th point kept is, oldest first (0 <= i < length). */
  private slot(i: number): number {
    const j = this.head - this.count + i;
    return j < 0 ? j + this.size : j;
  }

  /** The value of the `i`-th point kept, oldest first (0 <= i < length), read in place: no points copied. */
  at(i: number): number {
    return this.vals[this.slot(i)]!;
  }

  /** The step of the `i`-th point kept, oldest first (0 <= i < length), read in place. */
  stepAt(i: number): number {
    return this.steps[this.slot(i)]!;
  }

  /**
   * The values of the points kept, oldest first, copied into `out` from its start (it must have
   * room for `length`); the count copied, in native code (at most two copies: the ring's two
   * ends). A detector that reads each value several times reads them from `out` rather than
   * one at() a time (issue 32: a young run's detectors run unoptimised for hundreds of steps).
   */
  valuesInto(out: Float64Array): number {
    ringInto(this.vals, this.head, this.count, out, 0);
    return this.count;
  }

  /** The steps of the points kept, oldest first, copied into `out` as valuesInto copies the values. */
  stepsInto(out: Float64Array): number {
    ringInto(this.steps, this.head, this.count, out, 0);
    return this.count;
  }

  /** The step of the oldest point kept; null when empty. */
  get firstStep(): number | null {
    return this.count === 0 ? null : this.stepAt(0);
  }

  /**
   * Removes the newest points whose step is `step` or later (steps only grow along the history)
   * and returns them, oldest first.
   */
  dropFrom(step: number): { steps: number[]; values: number[] } {
    this.version++;
    this.drops++;
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
    // Steps, then values, oldest first.
    const n = this.count;
    const both = packFrom(2 * n);
    ringInto(this.steps, this.head, n, both, 0);
    ringInto(this.vals, this.head, n, both, n);
    return { size: this.size, packed: packDoubles(both.subarray(0, 2 * n)) };
  }

  static from(j: HistoryJSON, size = j.size): History {
    const h = new History(size);
    if ('packed' in j) {
      const both = unpackDoubles(j.packed);
      const n = both.length >> 1;
      for (let i = Math.max(0, n - size); i < n; i++) h.push(both[i]!, both[n + i]!);
      return h;
    }
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

/** A curve as states saved it before CurveColumns: an object a bucket (still read). */
export interface CurveJSON {
  size: number;
  per: number;
  /** A mean JSON could not hold (NaN) was saved as null. */
  buckets: (Omit<CurveBucket, 'mean'> & { mean: number | null })[];
}

/**
 * A curve as states saved it before CurvePacked (still read): its buckets' numbers field by field
 * (oldest first), absent ones (m2, min and max of states saved before they were kept) as null.
 */
export interface CurveColumns {
  size: number;
  per: number;
  firstStep: number[];
  lastStep: number[];
  n: number[];
  mean: (number | null)[];
  m2: (number | null)[];
  min: (number | null)[];
  max: (number | null)[];
}

/**
 * A curve as a state saves it: its store (CURVE_FIELDS numbers a bucket: first step, last step,
 * count, mean, m2, least, greatest; oldest bucket first), packed (packDoubles).
 */
export interface CurvePacked {
  size: number;
  per: number;
  store: string;
}

/** A bucket's numbers in Curve's store, FIELDS numbers a bucket. */
const FIRST = 0;
const LAST = 1;
const COUNT = 2;
const MEAN = 3;
const M2 = 4;
const MIN = 5;
const MAX = 6;
const FIELDS = 7;
/** Numbers a bucket in CurvePacked's store. */
export const CURVE_FIELDS = FIELDS;
/** Buckets a curve holds room for at first; the room doubles up to its size. */
const FIRST_ROOM = 8;

/**
 * A whole round's series in at most `size` buckets of `per` points each. When the buckets are
 * full, neighbours merge pairwise and `per` doubles: memory stays fixed however long the round.
 *
 * The buckets are numbers in one typed array, not objects: a daemon following young runs opens a
 * bucket per value, and each bucket object lived until the next halving, long enough to reach
 * V8's old generation (what its major collections then walked, on every core). m2, min and max are
 * NaN where a state saved before they were kept lacks them (values are finite, so NaN is free).
 */
export class Curve {
  private store: Float64Array;
  private count = 0;
  private per = 1;

  constructor(readonly size = 128) {
    if (size < 2 || size % 2 !== 0) throw new RangeError('curve size must be even and at least 2');
    this.store = new Float64Array(Math.min(size, FIRST_ROOM) * FIELDS);
  }

  push(step: number, value: number): void {
    let at = (this.count - 1) * FIELDS;
    if (this.count === 0 || this.store[at + COUNT]! >= this.per) {
      if (this.count >= this.size) this.halve();
      at = this.open(step, value, value);
    }
    this.addAt(at, step, value);
  }

  /**
   * Takes back every value from `step` on (a run resumed from a checkpoint logs those steps
   * again). Buckets that start there go whole; the bucket that straddles `step` is rebuilt from
   * `points`, the newest points known (oldest first, the ones taken back included), when they
   * cover it; else the known values are taken out of it one by one. False when some values could
   * not be taken back: they are older than the points known, in a bucket that straddles `step`.
   */
  dropFrom(step: number, points: { steps: readonly number[]; values: readonly number[] }): boolean {
    const s = this.store;
    while (this.count > 0 && s[(this.count - 1) * FIELDS + FIRST]! >= step) this.count--;
    if (this.count === 0) return true;
    const at = (this.count - 1) * FIELDS;
    if (s[at + LAST]! < step) return true;
    const { steps, values } = points;
    const first = s[at + FIRST]!;
    if (steps.length > 0 && steps[0]! <= first) {
      // Rebuilt from the points, least and greatest included.
      this.count--;
      let rebuilt = -1;
      for (let i = 0; i < steps.length && steps[i]! < step; i++) {
        if (steps[i]! < first) continue;
        if (rebuilt === -1) rebuilt = this.open(first, Infinity, -Infinity);
        this.addAt(rebuilt, steps[i]!, values[i]!);
      }
      return true;
    }
    // The bucket began before the points known: take out the values known; its least and
    // greatest stay as they were.
    let lastKept = first;
    for (let i = 0; i < steps.length; i++) {
      const st = steps[i]!;
      if (st < step) lastKept = st;
      else if (st <= s[at + LAST]! && s[at + COUNT]! > 1) {
        const x = values[i]!;
        const n = s[at + COUNT]!;
        const old = s[at + MEAN]!;
        const mean = (old * n - x) / (n - 1);
        s[at + M2] = Math.max(0, orZero(s[at + M2]!) - (x - mean) * (x - old));
        s[at + MEAN] = mean;
        s[at + COUNT] = n - 1;
      }
    }
    s[at + LAST] = lastKept;
    return steps.length > 0 && steps[0]! <= step;
  }

  /** Count, mean, spread, least and greatest of every value in the curve, as one RunningStats. */
  total(): { n: number; mean: number; m2: number; min: number | null; max: number | null } {
    const { n, mean, m2 } = this.combined(0, this.count - 1);
    let min = Infinity;
    let max = -Infinity;
    // NaN (a bucket without them) carries through Math.min and Math.max: then unknown.
    for (let at = 0; at < this.count * FIELDS; at += FIELDS) {
      min = Math.min(min, this.store[at + MIN]!);
      max = Math.max(max, this.store[at + MAX]!);
    }
    return { n, mean, m2, min: n === 0 || Number.isNaN(min) ? null : min, max: n === 0 || Number.isNaN(max) ? null : max };
  }

  /** Count, mean and sum of squared deviations of buckets `from`..`to`, combined exactly (Chan et al.). */
  private combined(from: number, to: number): { n: number; mean: number; m2: number } {
    const s = this.store;
    let n = 0;
    let mean = 0;
    let m2 = 0;
    for (let at = from * FIELDS; at <= to * FIELDS; at += FIELDS) {
      const bn = s[at + COUNT]!;
      const total = n + bn;
      const d = s[at + MEAN]! - mean;
      mean += (d * bn) / total;
      m2 += orZero(s[at + M2]!) + (d * d * n * bn) / total;
      n = total;
    }
    return { n, mean, m2 };
  }

  /** Opens a bucket after the last, empty, at `step`; its offset in the store. */
  private open(step: number, min: number, max: number): number {
    if ((this.count + 1) * FIELDS > this.store.length) this.grow(this.count + 1);
    const at = this.count * FIELDS;
    const s = this.store;
    s[at + FIRST] = step;
    s[at + LAST] = step;
    s[at + COUNT] = 0;
    s[at + MEAN] = 0;
    s[at + M2] = 0;
    s[at + MIN] = min;
    s[at + MAX] = max;
    this.count++;
    return at;
  }

  /** Room for at least `buckets` buckets (doubling, up to the size unless more are asked for). */
  private grow(buckets: number): void {
    let room = this.store.length / FIELDS;
    while (room < buckets) room = Math.max(buckets, Math.min(this.size, room * 2));
    const store = new Float64Array(room * FIELDS);
    store.set(this.store.subarray(0, this.count * FIELDS));
    this.store = store;
  }

  /** One more value into the bucket at `at` (Welford). */
  private addAt(at: number, step: number, value: number): void {
    const s = this.store;
    const n = s[at + COUNT]! + 1;
    s[at + COUNT] = n;
    const d = value - s[at + MEAN]!;
    const mean = s[at + MEAN]! + d / n;
    s[at + MEAN] = mean;
    s[at + M2] = orZero(s[at + M2]!) + d * (value - mean);
    // NaN (unknown) stays NaN: a comparison with it is false.
    if (value < s[at + MIN]!) s[at + MIN] = value;
    if (value > s[at + MAX]!) s[at + MAX] = value;
    s[at + LAST] = step;
  }

  private halve(): void {
    const s = this.store;
    let out = 0;
    for (let i = 0; i < this.count; i += 2, out += FIELDS) {
      const a = i * FIELDS;
      if (i + 1 === this.count) {
        if (out !== a) s.copyWithin(out, a, a + FIELDS);
        continue;
      }
      const b = a + FIELDS;
      const na = s[a + COUNT]!;
      const nb = s[b + COUNT]!;
      const n = na + nb;
      const d = s[b + MEAN]! - s[a + MEAN]!;
      const m2 = orZero(s[a + M2]!) + orZero(s[b + M2]!) + (d * d * na * nb) / n;
      const mean = s[a + MEAN]! + (d * nb) / n;
      const min = Math.min(s[a + MIN]!, s[b + MIN]!);
      const max = Math.max(s[a + MAX]!, s[b + MAX]!);
      s[out + FIRST] = s[a + FIRST]!;
      s[out + LAST] = s[b + LAST]!;
      s[out + COUNT] = n;
      s[out + MEAN] = mean;
      s[out + M2] = m2;
      s[out + MIN] = min;
      s[out + MAX] = max;
    }
    this.count = out / FIELDS;
    this.per *= 2;
  }

  /**
   * Mean and standard deviation of the values in each run of `width` buckets ending at each
   * bucket (a rolling window over about width x per steps), combining the buckets exactly.
   */
  rolling(width: number): { mean: number[]; sd: number[] } {
    const mean: number[] = [];
    const sd: number[] = [];
    for (let i = 0; i < this.count; i++) {
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
    const s = this.store;
    let n = 0;
    let sum = 0;
    for (let at = 0; at < this.count * FIELDS; at += FIELDS) {
      n += s[at + COUNT]!;
      sum += s[at + MEAN]! * s[at + COUNT]!;
      if (n >= points) return { mean: sum / n, n, lastStep: s[at + LAST]! };
    }
    return null;
  }

  /** The step of the first value; null when empty. */
  get firstStep(): number | null {
    return this.count === 0 ? null : this.store[FIRST]!;
  }

  /** Bucket means, oldest first. */
  means(): number[] {
    const out = new Array<number>(this.count);
    for (let i = 0; i < this.count; i++) out[i] = this.store[i * FIELDS + MEAN]!;
    return out;
  }

  get length(): number {
    return this.count;
  }

  /** Points a bucket holds (the last bucket may hold fewer). */
  get pointsPerBucket(): number {
    return this.per;
  }

  /** Bucket `i` (oldest first): its first and last step, count and mean, read without a copy of the curve. */
  firstStepAt(i: number): number {
    return this.store[i * FIELDS + FIRST]!;
  }

  lastStepAt(i: number): number {
    return this.store[i * FIELDS + LAST]!;
  }

  countAt(i: number): number {
    return this.store[i * FIELDS + COUNT]!;
  }

  meanAt(i: number): number {
    return this.store[i * FIELDS + MEAN]!;
  }

  /** The buckets as objects, oldest first (m2, min and max left out where a saved state lacked them). */
  buckets(): CurveBucket[] {
    const buckets: CurveBucket[] = [];
    const s = this.store;
    for (let at = 0; at < this.count * FIELDS; at += FIELDS) {
      const b: CurveBucket = { firstStep: s[at + FIRST]!, lastStep: s[at + LAST]!, n: s[at + COUNT]!, mean: s[at + MEAN]! };
      if (!Number.isNaN(s[at + M2]!)) b.m2 = s[at + M2]!;
      if (!Number.isNaN(s[at + MIN]!)) b.min = s[at + MIN]!;
      if (!Number.isNaN(s[at + MAX]!)) b.max = s[at + MAX]!;
      buckets.push(b);
    }
    return buckets;
  }

  toJSON(): CurvePacked {
    return { size: this.size, per: this.per, store: packDoubles(this.store.subarray(0, this.count * FIELDS)) };
  }

  /** A curve from its state: CurvePacked, or as states saved before it (CurveColumns, CurveJSON). */
  static from(j: CurvePacked | CurveColumns | CurveJSON): Curve {
    const c = new Curve(j.size);
    c.per = j.per;
    if ('store' in j) {
      const s = unpackDoubles(j.store);
      for (let at = 0; at + FIELDS <= s.length; at += FIELDS)
        c.put(s[at + FIRST]!, s[at + LAST]!, s[at + COUNT]!, s[at + MEAN]!, s[at + M2]!, s[at + MIN]!, s[at + MAX]!);
      return c;
    }
    if ('buckets' in j) {
      for (const b of j.buckets) c.put(b.firstStep, b.lastStep, b.n, b.mean ?? NaN, b.m2 ?? NaN, b.min ?? NaN, b.max ?? NaN);
      return c;
    }
    for (let i = 0; i < j.firstStep.length; i++)
      c.put(j.firstStep[i]!, j.lastStep[i]!, j.n[i]!, j.mean[i] ?? NaN, j.m2[i] ?? NaN, j.min[i] ?? NaN, j.max[i] ?? NaN);
    return c;
  }

  /** Appends a bucket read from a state. */
  private put(first: number, last: number, n: number, mean: number, m2: number, min: number, max: number): void {
    const at = this.open(first, min, max);
    this.store[at + LAST] = last;
    this.store[at + COUNT] = n;
    this.store[at + MEAN] = mean;
    this.store[at + M2] = m2;
  }
}

/** m2 as a sum: 0 where a saved state lacked it (NaN). */
function orZero(x: number): number {
  return Number.isNaN(x) ? 0 : x;
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
