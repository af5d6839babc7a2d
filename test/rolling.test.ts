import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Curve, Ewma, History, RollingWindow, RunningStats } from '../src/stats/rolling.js';
import { normal, rng } from '../src/sim/random.js';
import { RoundState } from '../src/runs/round.js';
import { DEFAULTS } from './helpers/defaults.js';
import { viaJson } from './helpers/json.js';

/** The reference: the textbook two-pass mean and variance over the same values. */
function twoPass(xs: number[]): { mean: number; variance: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  let ss = 0;
  for (const x of xs) ss += (x - mean) * (x - mean);
  return { mean, variance: xs.length > 1 ? ss / (xs.length - 1) : 0 };
}

function relErr(a: number, b: number): number {
  return Math.abs(a - b) / Math.max(Math.abs(b), 1e-300);
}

describe('RollingWindow against a two-pass reference', () => {
  const cases: [string, (r: () => number, i: number) => number][] = [
    ['values near 1e8 with sd 0.1', (r) => 1e8 + 0.1 * normal(r)],
    ['values near 1e9 with sd 1e-3 and a drift', (r, i) => 1e9 + i * 1e-4 + 1e-3 * normal(r)],
    ['rewards in [0, 1]', (r) => r()],
    ['a level shift of 1e6 halfway', (r, i) => (i < 50_000 ? 0 : 1e6) + normal(r)],
    ['alternating huge and tiny', (r, i) => (i % 2 === 0 ? 1e8 : -1e8) + normal(r)],
  ];
  for (const [name, gen] of cases) {
    test(name, () => {
      const r = rng(name.length * 7919);
      const w = new RollingWindow(64);
      const all: number[] = [];
      for (let i = 0; i < 100_000; i++) {
        const x = gen(r, i);
        all.push(x);
        w.push(x);
        if (i % 997 === 0 || i === 99_999) {
          const ref = twoPass(all.slice(-64));
          const scale = Math.abs(ref.mean) + Math.sqrt(ref.variance);
          assert.ok(Math.abs(w.mean - ref.mean) <= 1e-12 * scale, `mean at ${i}: ${w.mean} vs ${ref.mean}`);
          assert.ok(relErr(w.variance, ref.variance) < 1e-6, `variance at ${i}: ${w.variance} vs ${ref.variance}`);
        }
      }
      assert.equal(w.n, 64);
    });
  }

  test('the naive sum-of-squares form would fail this data (the test can fail)', () => {
    const r = rng(1);
    const xs = Array.from({ length: 64 }, () => 1e8 + 0.1 * normal(r));
    const n = xs.length;
    const s = xs.reduce((a, b) => a + b, 0);
    const ss = xs.reduce((a, b) => a + b * b, 0);
    const naive = (ss - (s * s) / n) / (n - 1);
    assert.ok(relErr(naive, twoPass(xs).variance) > 0.1, `naive variance ${naive}`);
  });

  test('fewer values than the window, and a window of one', () => {
    const w = new RollingWindow(10);
    w.push(1);
    assert.equal(w.mean, 1);
    assert.equal(w.variance, 0);
    w.push(3);
    assert.equal(w.mean, 2);
    assert.equal(w.variance, 2);
    const one = new RollingWindow(1);
    one.push(5);
    one.push(7);
    assert.equal(one.mean, 7);
    assert.equal(one.n, 1);
  });

  test('save and restore give the same numbers', () => {
    const w = new RollingWindow(8);
    for (let i = 0; i < 20; i++) w.push(i * i);
    const back = RollingWindow.from(viaJson(w.toJSON()));
    assert.equal(back.mean, w.mean);
    assert.ok(relErr(back.variance, w.variance) < 1e-12);
  });
});

describe('RunningStats', () => {
  test('merging per-round summaries equals one pass (Chan et al.)', () => {
    const r = rng(42);
    const xs = Array.from({ length: 10_000 }, () => 1e8 + normal(r));
    const parts = [xs.slice(0, 1), xs.slice(1, 3000), xs.slice(3000, 3000), xs.slice(3000)];
    const merged = new RunningStats();
    for (const part of parts) {
      const s = new RunningStats();
      part.forEach((x) => s.add(x));
      merged.merge(s);
    }
    const ref = twoPass(xs);
    assert.equal(merged.n, xs.length);
    assert.ok(relErr(merged.mean, ref.mean) < 1e-13);
    assert.ok(relErr(merged.variance, ref.variance) < 1e-8, `${merged.variance} vs ${ref.variance}`);
    assert.equal(merged.min, Math.min(...xs));
    assert.equal(merged.max, Math.max(...xs));
  });
});

describe('Ewma', () => {
  test('tracks a level shift with its half-life', () => {
    const e = Ewma.fromHalfLife(10);
    for (let i = 0; i < 200; i++) e.push(0);
    for (let i = 0; i < 10; i++) e.push(1);
    assert.ok(Math.abs(e.mean - 0.5) < 1e-9, `mean after one half-life: ${e.mean}`);
    assert.ok(e.variance > 0);
  });

  test('a constant series has zero variance', () => {
    const e = new Ewma(0.1);
    for (let i = 0; i < 100; i++) e.push(3);
    assert.equal(e.mean, 3);
    assert.equal(e.variance, 0);
  });
});

describe('bounded memory', () => {
  test('History keeps the last points in order', () => {
    const h = new History(4);
    for (let i = 1; i <= 10; i++) h.push(i, i * 10);
    assert.deepEqual(h.points(), { steps: [7, 8, 9, 10], values: [70, 80, 90, 100] });
  });

  test('Curve stays within its buckets and keeps the overall mean', () => {
    const c = new Curve(16);
    let sum = 0;
    const n = 100_003;
    for (let i = 0; i < n; i++) {
      c.push(i, i % 7);
      sum += i % 7;
    }
    assert.ok(c.length <= 16);
    const j = c.toJSON();
    const total = j.buckets.reduce((a, b) => a + b.n, 0);
    const mean = j.buckets.reduce((a, b) => a + b.mean * b.n, 0) / total;
    assert.equal(total, n);
    assert.ok(Math.abs(mean - sum / n) < 1e-9);
    assert.equal(j.buckets[0]!.firstStep, 0);
    assert.equal(j.buckets[j.buckets.length - 1]!.lastStep, n - 1);
  });
});

describe('RoundState.apply', () => {
  test('records whose names change place, appear and vanish land in the right series (slots remembered by place)', () => {
    const round = new RoundState('selector', 1, DEFAULTS.stats);
    const shapes = [['a', 'b'], ['b', 'a'], ['a', 'c'], ['c'], ['a', 'b', 'c'], ['a', 'b']];
    const want = new Map<string, number[]>();
    let step = 0;
    for (let rep = 0; rep < 3; rep++) {
      for (const shape of shapes) {
        step++;
        const values: Record<string, number> = {};
        for (const name of shape) {
          const v = step * 10 + name.charCodeAt(0);
          values[name] = v;
          want.set(name, [...(want.get(name) ?? []), v]);
        }
        round.apply({ kind: 'metrics', step, values }, step, 0, 'f');
      }
    }
    // A second file writing `a` is counted as a duplicate, not mixed in.
    round.apply({ kind: 'metrics', step: step + 1, values: { a: -1 } }, step + 1, 0, 'other');
    assert.equal(round.duplicates, 1);
    for (const [name, vs] of want) {
      const s = round.series.get(name)!;
      assert.equal(s.summary.n, vs.length, name);
      assert.equal(s.summary.mean, vs.reduce((x, y) => x + y, 0) / vs.length, name);
      assert.deepEqual(s.history.points().values, vs, name);
    }
  });
});
