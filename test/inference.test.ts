/** The detectors' statistics against values computed by hand or known from tables. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  detrend,
  fUpper,
  incompleteBeta,
  mannKendall,
  median,
  moments,
  noiseSd,
  normalCdf,
  spectralPeak,
  type SpectralPeak,
  SortedWindow,
  studentTUpper,
  theilSen,
  welch,
  welchT,
} from '../src/stats/inference.js';
import { historyMedians, latestFall, rollingMedians, type Fall } from '../src/detectors/levels.js';
import { History, releaseSharedPoints } from '../src/stats/rolling.js';
import { rng } from '../src/sim/random.js';

const close = (a: number, b: number, tol: number, what: string): void => assert.ok(Math.abs(a - b) <= tol, `${what}: ${a} vs ${b}`);

describe('distribution functions', () => {
  test('normal, t and F tails match tables', () => {
    close(normalCdf(1.959964), 0.975, 1e-6, 'Phi(1.96)');
    close(normalCdf(-1), 0.158655, 1e-6, 'Phi(-1)');
    close(studentTUpper(2.228, 10), 0.025, 2e-4, 't(10) upper at 2.228');
    close(studentTUpper(-2.228, 10), 0.975, 2e-4, 't(10) upper at -2.228');
    close(fUpper(2.98, 10, 10), 0.05, 2e-3, 'F(10,10) upper at 2.98');
    close(incompleteBeta(0.5, 2, 2), 0.5, 1e-12, 'I_0.5(2,2)');
  });
});

describe('trend tests', () => {
  test('Mann-Kendall: S and z for a short series by hand, ties corrected', () => {
    const mk = mannKendall([1, 2, 3, 4, 5]);
    assert.equal(mk.s, 10);
    close(mk.z, (10 - 1) / Math.sqrt((5 * 4 * 15) / 18), 1e-12, 'z');
    const tied = mannKendall([1, 1, 2, 2]);
    assert.equal(tied.s, 4);
    close(tied.z, (4 - 1) / Math.sqrt((4 * 3 * 13 - 2 * (2 * 1 * 9)) / 18), 1e-12, 'z with ties');
    assert.ok(mannKendall([5, 4, 3, 2, 1, 0]).pDown < 0.01);
  });

  test('Mann-Kendall: S counted by a merge sort equals S by every pair, ties, -0 and non-finite values included', () => {
    // S by every pair, as the test defines it.
    const byPairs = (xs: number[]): number => {
      let s = 0;
      for (let i = 0; i < xs.length - 1; i++) for (let j = i + 1; j < xs.length; j++) s += Math.sign(xs[j]! - xs[i]!);
      return s;
    };
    const r = rng(20261204);
    for (let k = 0; k < 400; k++) {
      const n = Math.floor(r() * 300);
      // Few distinct values (many ties) in half the series, any double in the rest.
      const few = k % 2 === 0;
      const xs = Array.from({ length: n }, () => (few ? Math.floor(r() * 6) - 2 : (r() - 0.5) * 1e3));
      if (k % 7 === 0 && n > 2) xs[1] = -0;
      if (k % 11 === 0 && n > 3) xs[2] = 0;
      assert.equal(mannKendall(xs).s, byPairs(xs), `series ${k} (${n} values)`);
    }
    for (const odd of [
      [1, NaN, 3],
      [Infinity, 1, Infinity],
      [-Infinity, 2, 3],
      [1, 2, Infinity],
    ])
      assert.ok(Object.is(mannKendall(odd).s, byPairs(odd)), `${odd.join(', ')}`);
    assert.equal(mannKendall([]).s, 0);
    assert.equal(mannKendall([7]).s, 0);
  });

  test('Theil-Sen ignores an outlier that would tilt least squares', () => {
    const xs = Array.from({ length: 21 }, (_, i) => 0.5 * i);
    xs[20] = 100;
    close(theilSen(xs), 0.5, 1e-12, 'slope');
  });

  test("Welch's t-test against values from SciPy", () => {
    // Two samples: means 20.0 and 22.0, variances 4 and 9, n 10 and 12. Expected values from
    // scipy.stats.ttest_ind_from_stats(20, 2, 10, 22, 3, 12, equal_var=False) (SciPy 1.17; its t is the first mean minus the second):
    // t 1.8650096, Welch-Satterthwaite dof 19.190546, one-sided p (second mean higher) 0.0387732.
    const w = welch({ n: 10, mean: 20, variance: 4 }, { n: 12, mean: 22, variance: 9 });
    close(w.t, 1.8650096, 1e-6, 't');
    close(w.dof, 19.190546, 1e-5, 'dof');
    close(w.pHigher, 0.0387732, 1e-5, 'p (higher)');
    close(w.pLower, 1 - 0.0387732, 1e-5, 'p (lower)');
  });

  test("welchT is welch's t bit for bit, equal and zero spreads included", () => {
    const rand = rng(11);
    for (let i = 0; i < 2000; i++) {
      const m = (): { n: number; mean: number; variance: number } => ({
        n: 2 + Math.floor(rand() * 40),
        mean: (rand() - 0.5) * 10 ** Math.floor(rand() * 6 - 3),
        variance: i % 10 === 0 ? 0 : rand() * 10 ** Math.floor(rand() * 6 - 4),
      });
      const a = m();
      const b = i % 7 === 0 ? { ...a } : m();
      assert.ok(Object.is(welchT(a, b), welch(a, b).t), JSON.stringify([a, b]));
    }
  });
});

describe('spectral peak', () => {
  test('finds the period of a sine under noise and trend, and not in white noise', () => {
    let seed = 7;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5;
    const sine = Array.from({ length: 64 }, (_, i) => 0.01 * i + 0.15 * Math.sin((2 * Math.PI * i) / 12) + 0.03 * rand());
    const k = spectralPeak(sine, 4, 32)!;
    close(k.period, 12.8, 1.5, 'period');
    assert.ok(k.share > 0.6, `share ${k.share}`);
    close(k.amplitude, 0.15 / Math.SQRT2, 0.03, 'amplitude');
    const noise = Array.from({ length: 64 }, () => rand());
    assert.ok(spectralPeak(noise, 4, 32)!.share < 0.3);
  });

  test('the bins of the period range and the total from Parseval give the peak of the whole spectrum', () => {
    // The spectral peak as it was computed before: every bin transformed, the total summed.
    const reference = (xs: number[], minPeriod: number, maxPeriod: number): SpectralPeak | null => {
      const n = xs.length;
      const r = detrend(xs);
      const w = r.map((x, i) => x * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1))));
      const half = Math.floor(n / 2);
      const power = new Array<number>(half + 1).fill(0);
      for (let k = 1; k <= half; k++) {
        let re = 0;
        let im = 0;
        for (let i = 0; i < n; i++) {
          re += w[i]! * Math.cos((2 * Math.PI * k * i) / n);
          im -= w[i]! * Math.sin((2 * Math.PI * k * i) / n);
        }
        power[k] = re * re + im * im;
      }
      const total = power.reduce((a, b) => a + b, 0);
      if (!(total > 0)) return null;
      const kMin = Math.max(1, Math.ceil(n / maxPeriod));
      const kMax = Math.min(half, Math.floor(n / minPeriod));
      const band = (k: number): number => (k - 1 >= kMin ? power[k - 1]! : 0) + power[k]! + (k + 1 <= kMax ? power[k + 1]! : 0);
      let best = -1;
      for (let k = kMin; k <= kMax; k++) {
        if (power[k]! < power[k - 1]! || (k < half && power[k]! < power[k + 1]!)) continue;
        if (best < 0 || band(k) > band(best)) best = k;
      }
      return best < 0 ? null : { period: n / best, share: band(best) / total, amplitude: NaN, contrast: NaN };
    };
    const rand = rng(31);
    let compared = 0;
    for (let t = 0; t < 3000; t++) {
      const n = [8, 9, 31, 32, 63, 64, 65, 96, 128, 129, 160, 256][t % 12]!;
      const kind = Math.floor(t / 12) % 6;
      const period = 3 + rand() * 40;
      let ar = 0;
      const xs = Array.from({ length: n }, (_, i) => {
        ar = 0.8 * ar + (rand() - 0.5);
        if (kind === 0) return rand() - 0.5;
        if (kind === 1) return 0.5 + 0.2 * Math.sin((2 * Math.PI * i) / period) + 0.05 * (rand() - 0.5);
        if (kind === 2) return ar;
        if (kind === 3) return 0.001 * i * i + 0.1 * (rand() - 0.5);
        if (kind === 4) return 0.3;
        return Math.round(rand() * 3) / 3;
      });
      const [lo, hi] = t % 5 === 0 ? [2, n] : [4, 32];
      const got = spectralPeak(xs, lo, hi);
      const want = reference(xs, lo, hi);
      assert.equal(got === null, want === null, `n=${n} kind=${kind}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
      if (got === null || want === null) continue;
      compared++;
      assert.equal(got.period, want.period, `n=${n} kind=${kind}: period`);
      close(got.share, want.share, 1e-9 * Math.max(1, want.share), `n=${n} kind=${kind}: share`);
    }
    assert.ok(compared > 2000, `${compared} peaks compared`);
  });

  test('detrend removes a line; noiseSd reads white noise through a trend', () => {
    const line = Array.from({ length: 10 }, (_, i) => 3 + 2 * i);
    for (const r of detrend(line)) close(r, 0, 1e-9, 'residual');
    let s = 1;
    const gauss = (): number => {
      s = (s * 16807) % 2147483647;
      const u = s / 2147483647;
      s = (s * 16807) % 2147483647;
      return Math.sqrt(-2 * Math.log(u)) * Math.cos((2 * Math.PI * s) / 2147483647);
    };
    const xs = Array.from({ length: 5000 }, (_, i) => 0.001 * i + 0.2 * gauss());
    close(noiseSd(xs), 0.2, 0.01, 'noise sd');
  });
});

describe('medians along a series', () => {
  // Ties, both zeros and NaN: where a sort's order shows in the median (its sign, NaN's place).
  const POOL = [0, -0, 1, 1, 2, -3.5, 1e-9, NaN, Infinity, -Infinity, 0.1 + 0.2, 0.3];
  const rand = rng(11);
  const value = (): number => (rand() < 0.6 ? POOL[Math.floor(rand() * POOL.length)]! : rand() * 4 - 2);

  test('a sorted window gives the median of its values, bit for bit, through every add and remove', () => {
    const win = new SortedWindow();
    const kept: number[] = [];
    for (let i = 0; i < 20_000; i++) {
      if (kept.length > 0 && rand() < 0.45) win.remove(kept.splice(Math.floor(rand() * kept.length), 1)[0]!);
      else {
        const x = value();
        kept.push(x);
        win.add(x);
      }
      assert.equal(win.length, kept.length);
      assert.ok(Object.is(win.median(), median(kept)), `${kept.join(',')}: ${win.median()} vs ${median(kept)}`);
    }
  });

  test('the median of a short input (sorted by insertion) is the median of a typed-array sort, bit for bit', () => {
    const sorted = (xs: number[]): number => {
      const s = Float64Array.from(xs).sort();
      const m = s.length >> 1;
      return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
    };
    for (let i = 0; i < 20_000; i++) {
      const xs = Array.from({ length: 1 + (i % 40) }, value);
      assert.ok(Object.is(median(xs), sorted(xs)), `${xs.join(',')}: ${median(xs)} vs ${sorted(xs)}`);
    }
  });

  test('the median and moments of a range of values are those of the range copied out, bit for bit', () => {
    for (let i = 0; i < 5_000; i++) {
      const xs = Array.from({ length: 1 + (i % 80) }, value);
      const a = Math.floor(rand() * (xs.length + 1));
      const b = a + Math.floor(rand() * (xs.length - a + 1));
      const part = xs.slice(a, b);
      assert.ok(Object.is(median(xs, a, b), median(part)), `median of [${a}, ${b}) of ${xs.join(',')}`);
      assert.deepEqual(moments(xs, a, b), moments(part), `moments of [${a}, ${b}) of ${xs.join(',')}`);
    }
  });

  test("a history's rolling medians, kept from one call to the next, are those computed afresh: points pushed past the room, taken back, another window", () => {
    const rand = rng(7);
    for (const size of [8, 64]) {
      const h = new History(size);
      let step = 0;
      let w = 5;
      for (let i = 0; i < 3000; i++) {
        const r = rand();
        // Mostly a point or two between calls; now and then many, a step taken back, another w.
        const pushes = r < 0.9 ? 1 + Math.floor(rand() * 2) : r < 0.95 ? Math.floor(rand() * 3 * size) : 0;
        for (let k = 0; k < pushes; k++) h.push(++step, Math.round(rand() * 20) / 4 - (rand() < 0.05 ? 0 : 1));
        if (r >= 0.95 && r < 0.98 && h.length > 2) step = h.dropFrom(step - 1).steps[0]! - 1;
        if (r >= 0.98) w = 1 + Math.floor(rand() * 9);
        const values = h.points().values;
        const got = historyMedians(h, values, w);
        const want = rollingMedians(values, w);
        assert.equal(got.length, want.length);
        want.forEach((x, k) => assert.ok(Object.is(got[k], x), `size ${size}, call ${i}, w=${w}, at ${k}: ${got[k]} against ${x}`));
        releaseSharedPoints();
      }
    }
  });

  test("latestFall's highest median before each point is that of a scan of the stretch before it", () => {
    // The definition, by a scan of every stretch.
    const scanned = (values: number[], w: number, horizon: number, drop: number): Fall | null => {
      const m = rollingMedians(values, w);
      let found: Fall | null = null;
      let last = -2;
      for (let i = w - 1; i < values.length; i++) {
        let before = -Infinity;
        for (let j = Math.max(w - 1, i - w - horizon + 1); j <= i - w; j++) if (m[j]! > before) before = m[j]!;
        if (!(before > 0) || !(m[i]! <= (1 - drop) * before)) continue;
        if (i !== last + 1) found = { at: i, before, after: m[i]! };
        last = i;
      }
      return found;
    };
    let falls = 0;
    for (let k = 0; k < 3_000; k++) {
      const n = 1 + Math.floor(rand() * 300);
      // Levels that fall and come back, with ties and noise.
      let level = 100;
      const values = Array.from({ length: n }, () => {
        if (rand() < 0.05) level = rand() < 0.5 ? level / 3 : level * 2;
        return rand() < 0.2 ? Math.round(level) : level * (0.8 + 0.4 * rand());
      });
      const w = 1 + Math.floor(rand() * 8);
      const horizon = 1 + Math.floor(rand() * 20);
      const drop = [0.3, 0.5, 0.6][k % 3]!;
      const want = scanned(values, w, horizon, drop);
      if (want !== null) falls++;
      assert.deepEqual(latestFall(values, w, horizon, drop), want, `n=${n} w=${w} horizon=${horizon} drop=${drop}`);
    }
    assert.ok(falls > 500, `falls found: ${falls}`);
  });

  test('rolling medians are the medians of each run of values', () => {
    for (const w of [1, 2, 5, 20]) {
      const xs = Array.from({ length: 500 }, value);
      const got = rollingMedians(xs, w);
      xs.forEach((_, i) => assert.ok(Object.is(got[i], i + 1 < w ? NaN : median(xs.slice(i + 1 - w, i + 1))), `w=${w} at ${i}`));
    }
  });
});
