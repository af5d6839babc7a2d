/**
 * The statistics the detectors use, written for short noisy series (tens to hundreds of points):
 * Mann-Kendall trend test, Theil-Sen slope, Welch's t-test, the F-test for a variance ratio, a
 * detrended periodogram, and the distribution functions they need.
 */

/** Standard normal CDF (Abramowitz-Stegun 7.1.26 via erf, |error| < 1.5e-7). */
export function normalCdf(z: number): number {
  const t = 1 / (1 + 0.3275911 * (Math.abs(z) / Math.SQRT2));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-(z * z) / 2);
  return z >= 0 ? 0.5 * (1 + y) : 0.5 * (1 - y);
}

/** Lanczos' coefficients for logGamma (made once: the detectors call it ~100,000 times an `analyze`). */
const LANCZOS = [76.18009172947146, -86.50532032941678, 24.01409824083091, -1.231739572450155, 0.1208650973866179e-2, -0.5395239384953e-5];

function logGamma(x: number): number {
  let y = x;
  const tmp = x + 5.5 - (x + 0.5) * Math.log(x + 5.5);
  let ser = 1.000000000190015;
  for (let i = 0; i < LANCZOS.length; i++) ser += LANCZOS[i]! / ++y;
  return -tmp + Math.log((2.5066282746310007 * ser) / x);
}

/** Continued fraction for the incomplete beta function (Numerical Recipes betacf). */
function betacf(a: number, b: number, x: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < 1e-300) d = 1e-300;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= 300; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < 1e-300) d = 1e-300;
    c = 1 + aa / c;
    if (Math.abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < 1e-300) d = 1e-300;
    c = 1 + aa / c;
    if (Math.abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) < 3e-14) break;
  }
  return h;
}

/** Regularized incomplete beta I_x(a, b). */
export function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const bt = Math.exp(logGamma(a + b) - logGamma(a) - logGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (bt * betacf(a, b, x)) / a : 1 - (bt * betacf(b, a, 1 - x)) / b;
}

/** P(T > t) for Student's t with `dof` degrees of freedom (one-sided upper tail). */
export function studentTUpper(t: number, dof: number): number {
  const x = dof / (dof + t * t);
  const tail = 0.5 * incompleteBeta(x, dof / 2, 0.5);
  return t >= 0 ? tail : 1 - tail;
}

/** P(F > f) for the F distribution with (d1, d2) degrees of freedom. */
export function fUpper(f: number, d1: number, d2: number): number {
  if (f <= 0) return 1;
  return incompleteBeta(d2 / (d2 + d1 * f), d2 / 2, d1 / 2);
}

export interface MannKendall {
  n: number;
  s: number;
  z: number;
  /** One-sided p-value for an upward trend. */
  pUp: number;
  /** One-sided p-value for a downward trend. */
  pDown: number;
}

/** Scratch arrays of sortCountingOutOfOrder's merge sort, grown as needed. */
let mergeA = new Float64Array(256);
let mergeB = new Float64Array(256);

/**
 * Finite values sorted by a merge sort that counts, on its way, the pairs i < j with
 * xs[i] > xs[j] (equal values are no such pair): the sorted values (a scratch array, valid until
 * the next call) and that count. Null when a value is not finite.
 */
function sortCountingOutOfOrder(xs: readonly number[]): { sorted: Float64Array; outOfOrder: number } | null {
  const n = xs.length;
  if (mergeA.length < n) {
    mergeA = new Float64Array(n);
    mergeB = new Float64Array(n);
  }
  let from = mergeA;
  let to = mergeB;
  for (let i = 0; i < n; i++) {
    const x = xs[i]!;
    if (!Number.isFinite(x)) return null;
    from[i] = x;
  }
  let outOfOrder = 0;
  for (let width = 1; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      let k = lo;
      while (i < mid && j < hi) {
        // An equal value on the left goes first: not a pair out of order.
        if (from[i]! <= from[j]!) to[k++] = from[i++]!;
        else {
          outOfOrder += mid - i;
          to[k++] = from[j++]!;
        }
      }
      while (i < mid) to[k++] = from[i++]!;
      while (j < hi) to[k++] = from[j++]!;
    }
    const t = from;
    from = to;
    to = t;
  }
  return { sorted: from.subarray(0, n), outOfOrder };
}

/**
 * Mann-Kendall trend test with the tie and continuity corrections. With `serial`, the
 * variance of S is inflated for lag-1 autocorrelation of the detrended series (Yue and Wang's
 * effective sample size, first lag): training curves are autocorrelated, and without this the
 * test finds "trends" in noise far more often than alpha.
 */
export function mannKendall(xs: readonly number[], serial = false): MannKendall {
  const n = xs.length;
  // S from the pairs out of order, counted by the sort that also finds the ties: all pairs less
  // the pairs of equal values less twice the pairs out of order, an integer either way, so the
  // same S as comparing every pair (O(n log n) instead of O(n^2)).
  const merged = sortCountingOutOfOrder(xs);
  // Ties: runs of equal values in the sorted values (with a non-finite value, a typed-array copy
  // sorted numerically: a NaN last, an infinity first or last).
  const sorted = merged?.sorted ?? Float64Array.from(xs).sort();
  let ties = 0;
  let tiedPairs = 0;
  for (let i = 0; i < n;) {
    let j = i + 1;
    while (j < n && sorted[j] === sorted[i]) j++;
    const t = j - i;
    if (t > 1) {
      ties += t * (t - 1) * (2 * t + 5);
      tiedPairs += (t * (t - 1)) / 2;
    }
    i = j;
  }
  let s = 0;
  // (No pair below two values: 0, not the -0 that n * (n - 1) / 2 makes of an empty series.)
  if (merged !== null) s = n < 2 ? 0 : (n * (n - 1)) / 2 - tiedPairs - 2 * merged.outOfOrder;
  else {
    // Every pair, where a NaN or two equal infinities make S NaN as they always did (their
    // difference has no sign).
    for (let i = 0; i < n - 1; i++) {
      const xi = xs[i]!;
      for (let j = i + 1; j < n; j++) s += Math.sign(xs[j]! - xi);
    }
  }
  let variance = (n * (n - 1) * (2 * n + 5) - ties) / 18;
  if (serial && n > 3) variance *= 1 + 2 * (1 - 1 / n) * Math.max(0, lag1(detrend(xs)));
  const z = variance <= 0 ? 0 : s > 0 ? (s - 1) / Math.sqrt(variance) : s < 0 ? (s + 1) / Math.sqrt(variance) : 0;
  return { n, s, z, pUp: 1 - normalCdf(z), pDown: normalCdf(z) };
}

/** Where median() sorts a short input (a detector's window of a few values, read at every evaluation). */
const SHORT = new Float64Array(32);

/**
 * Median (of xs[from..to) alone, when given); a typed-array copy sorts numerically without a
 * comparator. A short input is sorted by insertion into a scratch array in the same order
 * (sortsBefore), so the same value comes out without a copy made and sorted for each window.
 */
function median(xs: ArrayLike<number>, from = 0, to = xs.length): number {
  const n = to - from;
  if (n <= 0) return NaN;
  let s: Float64Array;
  if (n <= SHORT.length) {
    s = SHORT;
    for (let i = 0; i < n; i++) {
      const x = xs[from + i]!;
      let j = i;
      while (j > 0 && sortsBefore(x, s[j - 1]!)) {
        s[j] = s[j - 1]!;
        j--;
      }
      s[j] = x;
    }
  } else {
    s = new Float64Array(n);
    for (let i = 0; i < n; i++) s[i] = xs[from + i]!;
    s.sort();
  }
  const m = n >> 1;
  return n % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export { median };

/** Whether `a` sorts before `b` the way a typed array sorts: numerically, -0 before 0, NaN last. */
function sortsBefore(a: number, b: number): boolean {
  if (a < b) return true;
  if (a > b || a !== a) return false;
  return b !== b || (a === 0 && b === 0 && 1 / a < 0 && 1 / b > 0);
}

/**
 * The values of a sliding window kept in sorted order (the order median() sorts a copy into), so
 * the median of each window along a series costs an insertion and a removal instead of a sort:
 * the same number median() gives of the same values.
 */
export class SortedWindow {
  private readonly xs: number[] = [];

  get length(): number {
    return this.xs.length;
  }

  add(x: number): void {
    // Insertion from the end (the windows are short): no splice, no search.
    const xs = this.xs;
    let i = xs.length;
    xs.push(x);
    while (i > 0 && sortsBefore(x, xs[i - 1]!)) {
      xs[i] = xs[i - 1]!;
      i--;
    }
    xs[i] = x;
  }

  /** Takes out one value equal to `x` (one that was added). */
  remove(x: number): void {
    const xs = this.xs;
    let i = 0;
    while (i < xs.length - 1 && sortsBefore(xs[i]!, x)) i++;
    for (; i < xs.length - 1; i++) xs[i] = xs[i + 1]!;
    xs.pop();
  }

  median(): number {
    const s = this.xs;
    const n = s.length;
    if (n === 0) return NaN;
    const m = n >> 1;
    return n % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  }
}

/** Lag-1 autocorrelation. */
export function lag1(xs: readonly number[]): number {
  const { mean, variance, n } = moments(xs);
  if (!(variance > 0) || n < 3) return 0;
  let c = 0;
  for (let i = 1; i < n; i++) c += (xs[i]! - mean) * (xs[i - 1]! - mean);
  return c / ((n - 1) * variance);
}

/** Theil-Sen slope (median of pairwise slopes) per index step. O(n^2). */
export function theilSen(xs: readonly number[]): number {
  const n = xs.length;
  const slopes = new Float64Array((n * (n - 1)) / 2);
  let k = 0;
  for (let i = 0; i < n - 1; i++) for (let j = i + 1; j < n; j++) slopes[k++] = (xs[j]! - xs[i]!) / (j - i);
  slopes.sort();
  const m = slopes.length >> 1;
  return slopes.length === 0 ? NaN : slopes.length % 2 ? slopes[m]! : (slopes[m - 1]! + slopes[m]!) / 2;
}

export interface Moments {
  n: number;
  mean: number;
  variance: number;
}

export function moments(xs: ArrayLike<number>, from = 0, to = xs.length): Moments {
  const n = to - from;
  if (n <= 0) return { n: 0, mean: NaN, variance: NaN };
  let mean = 0;
  for (let i = from; i < to; i++) mean += xs[i]!;
  mean /= n;
  let ss = 0;
  for (let i = from; i < to; i++) ss += (xs[i]! - mean) * (xs[i]! - mean);
  return { n, mean, variance: n > 1 ? ss / (n - 1) : 0 };
}

export interface Welch {
  t: number;
  dof: number;
  /** One-sided p-value that the second mean is lower than the first. */
  pLower: number;
  /** One-sided p-value that the second mean is higher than the first. */
  pHigher: number;
}

/** Welch's t-test of the difference b - a. */
export function welch(a: Moments, b: Moments): Welch {
  const t = welchT(a, b);
  const va = a.variance / a.n;
  const vb = b.variance / b.n;
  if (!(Math.sqrt(va + vb) > 0)) {
    const d = b.mean - a.mean;
    return { t, dof: a.n + b.n - 2, pLower: d < 0 ? 0 : 1, pHigher: d > 0 ? 0 : 1 };
  }
  const dof = (va + vb) ** 2 / ((va * va) / (a.n - 1) + (vb * vb) / (b.n - 1));
  // One tail (an incomplete beta function), the other its complement.
  const higher = studentTUpper(t, dof);
  return { t, dof, pLower: 1 - higher, pHigher: higher };
}

/**
 * The t of welch(a, b) alone, the same number bit for bit: a search for the strongest of many
 * candidates needs the p-value only of one that beats the best so far.
 */
export function welchT(a: Moments, b: Moments): number {
  return welchTOf(a.n, a.mean, a.variance, b.n, b.mean, b.variance);
}

/** welchT of two samples given as their counts, means and variances (no objects made for a candidate). */
export function welchTOf(na: number, meanA: number, varA: number, nb: number, meanB: number, varB: number): number {
  const se = Math.sqrt(varA / na + varB / nb);
  if (!(se > 0)) {
    const d = meanB - meanA;
    return d === 0 ? 0 : d > 0 ? Infinity : -Infinity;
  }
  return (meanB - meanA) / se;
}

/** Residuals of a least-squares line through (i, xs[i]). */
export function detrend(xs: readonly number[]): number[] {
  const n = xs.length;
  const mx = (n - 1) / 2;
  let my = 0;
  for (const x of xs) my += x;
  my /= n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (i - mx) * (xs[i]! - my);
    sxx += (i - mx) * (i - mx);
  }
  const slope = sxx > 0 ? sxy / sxx : 0;
  return xs.map((x, i) => x - my - slope * (i - mx));
}

export interface SpectralPeak {
  /** Period of the peak, in steps. */
  period: number;
  /** Share of the non-DC power in the peak bin and its two neighbours. */
  share: number;
  /** Standard deviation of the periodic component at the peak. */
  amplitude: number;
  /**
   * The band's power over what red noise would put there: an AR(1) process with the residual's
   * own lag-1 autocorrelation, scaled to the same total power. Training noise is autocorrelated,
   * so its spectrum rises toward long periods; a swing must stand out from that slope.
   */
  contrast: number;
}

const trigTables = new Map<number, { cos: Float64Array; sin: Float64Array; hann: Float64Array }>();

/**
 * cos and sin of 2*pi*j/n for j < n, and the Hann window's weights of n points, computed once per
 * n (a detector judges the same window lengths at every evaluation: the cosines were a third of a
 * spectrum's time).
 */
function trig(n: number): { cos: Float64Array; sin: Float64Array; hann: Float64Array } {
  let t = trigTables.get(n);
  if (t === undefined) {
    t = { cos: new Float64Array(n), sin: new Float64Array(n), hann: new Float64Array(n) };
    for (let j = 0; j < n; j++) {
      t.cos[j] = Math.cos((2 * Math.PI * j) / n);
      t.sin[j] = Math.sin((2 * Math.PI * j) / n);
      t.hann[j] = 0.5 - 0.5 * Math.cos((2 * Math.PI * j) / (n - 1));
    }
    if (trigTables.size < 16) trigTables.set(n, t);
  }
  return t;
}

/**
 * |DFT bin k|^2 of `w` into power[k] for k in [from, to], `cos` and `sin` of 2*pi*j/n as tables.
 * Four bins are summed in one pass over the points (each bin's sums still add the points in
 * order, so every bin comes out bit for bit as summed alone), which loads each point once for
 * four bins: 0.66x the time of one pass a bin for a 128-point spectrum (issue 32).
 */
function binPowers(w: readonly number[], cos: Float64Array, sin: Float64Array, from: number, to: number, power: number[]): void {
  const n = w.length;
  let k = from;
  for (; k + 3 <= to; k += 4) {
    let re0 = 0;
    let im0 = 0;
    let re1 = 0;
    let im1 = 0;
    let re2 = 0;
    let im2 = 0;
    let re3 = 0;
    let im3 = 0;
    // j = (k * i) mod n for each of the four bins, stepped instead of divided.
    for (let i = 0, j0 = 0, j1 = 0, j2 = 0, j3 = 0; i < n; i++, j0 += k, j1 += k + 1, j2 += k + 2, j3 += k + 3) {
      if (j0 >= n) j0 -= n;
      if (j1 >= n) j1 -= n;
      if (j2 >= n) j2 -= n;
      if (j3 >= n) j3 -= n;
      const x = w[i]!;
      re0 += x * cos[j0]!;
      im0 -= x * sin[j0]!;
      re1 += x * cos[j1]!;
      im1 -= x * sin[j1]!;
      re2 += x * cos[j2]!;
      im2 -= x * sin[j2]!;
      re3 += x * cos[j3]!;
      im3 -= x * sin[j3]!;
    }
    power[k] = re0 * re0 + im0 * im0;
    power[k + 1] = re1 * re1 + im1 * im1;
    power[k + 2] = re2 * re2 + im2 * im2;
    power[k + 3] = re3 * re3 + im3 * im3;
  }
  for (; k <= to; k++) {
    let re = 0;
    let im = 0;
    for (let i = 0, j = 0; i < n; i++, j += k) {
      if (j >= n) j -= n;
      re += w[i]! * cos[j]!;
      im -= w[i]! * sin[j]!;
    }
    power[k] = re * re + im * im;
  }
}

/**
 * The strongest periodic component with a period in [minPeriod, maxPeriod] of a detrended,
 * Hann-windowed series (direct DFT; series here are 32-256 points).
 */
export function spectralPeak(xs: readonly number[], minPeriod: number, maxPeriod: number): SpectralPeak | null {
  const n = xs.length;
  if (n < 8) return null;
  const r = detrend(xs);
  const { cos, sin, hann } = trig(n);
  const w = r.map((x, i) => x * hann[i]!);
  const half = Math.floor(n / 2);
  const kMin = Math.max(1, Math.ceil(n / maxPeriod));
  const kMax = Math.min(half, Math.floor(n / minPeriod));
  // Only the bins the search reads (the range and a neighbour each side) are transformed: the
  // periods of interest are about half the spectrum. The power of all of it, which the shares are
  // of, comes from Parseval: the bins 0..n-1 hold n * sum(w^2) together, bin k as much as bin n-k
  // (w is real), bin 0 is sum(w)^2 and, n even, bin n/2 is the alternating sum squared.
  const power = new Array<number>(half + 1).fill(0);
  binPowers(w, cos, sin, Math.max(1, kMin - 1), Math.min(half, kMax + 1), power);
  let s0 = 0;
  let s2 = 0;
  let alt = 0;
  for (let i = 0; i < n; i++) {
    s0 += w[i]!;
    s2 += w[i]! * w[i]!;
    alt += i % 2 === 0 ? w[i]! : -w[i]!;
  }
  const total = n % 2 === 0 ? (n * s2 - s0 * s0 + alt * alt) / 2 : (n * s2 - s0 * s0) / 2;
  if (!(total > 0)) return null;
  // A band is the peak bin and its neighbours inside the range (a bin outside it, e.g. the
  // slow bend a linear detrend leaves at the longest period, is not part of a swing).
  const bandOf = (xs: number[], k: number): number => (k - 1 >= kMin ? xs[k - 1]! : 0) + xs[k]! + (k + 1 <= kMax ? xs[k + 1]! : 0);
  let best = -1;
  let bestBand = -1;
  for (let k = kMin; k <= kMax; k++) {
    // A peak is a local maximum of the spectrum: at the long end of the range, red noise rises
    // on toward longer periods, and that slope is not a swing.
    if (power[k]! < power[k - 1]! || (k < half && power[k]! < power[k + 1]!)) continue;
    const band = bandOf(power, k);
    if (band > bestBand) {
      bestBand = band;
      best = k;
    }
  }
  if (best < 0) return null;
  // The red-noise background: an AR(1) spectrum at the lag-1 autocorrelation of what is left once
  // the band's sinusoids are taken out (a swing left in would make the noise look red itself).
  const rest = r.slice();
  for (let k = Math.max(kMin, best - 1); k <= Math.min(kMax, best + 1); k++) {
    let a = 0;
    let b = 0;
    for (let i = 0, j = 0; i < n; i++, j += k) {
      if (j >= n) j -= n;
      a += r[i]! * cos[j]!;
      b += r[i]! * sin[j]!;
    }
    for (let i = 0, j = 0; i < n; i++, j += k) {
      if (j >= n) j -= n;
      rest[i]! -= (2 / n) * (a * cos[j]! + b * sin[j]!);
    }
  }
  const phi = Math.max(0, Math.min(0.95, lag1(rest)));
  const red = new Array<number>(half + 1).fill(0);
  let redTotal = 0;
  for (let k = 1; k <= half; k++) {
    red[k] = 1 / (1 + phi * phi - 2 * phi * cos[k]!);
    redTotal += red[k]!;
  }
  // The band's share of the windowed spectrum, applied to the unwindowed residual's variance:
  // the amplitude of the periodic component in the series' own units.
  const resVar = r.reduce((a, x) => a + x * x, 0) / n;
  const share = bestBand / total;
  const contrast = share / (bandOf(red, best) / redTotal);
  return { period: n / best, share, amplitude: Math.sqrt(share * resVar), contrast };
}

/** Standard deviation of the noise around a slow curve: sd of first differences / sqrt(2). */
export function noiseSd(xs: readonly number[]): number {
  if (xs.length < 3) return NaN;
  const d: number[] = [];
  for (let i = 1; i < xs.length; i++) d.push(xs[i]! - xs[i - 1]!);
  return Math.sqrt(moments(d).variance / 2);
}
