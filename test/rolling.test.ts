import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Curve,
  Ewma,
  History,
  historySteps,
  historyValues,
  keptValues,
  packDoubles,
  packedCount,
  releaseSharedPoints,
  RollingWindow,
  RunningStats,
  unpackDoubles,
  type CurveColumns,
  type CurvePacked,
  type HistoryJSON,
  type WindowJSON,
} from '../src/stats/rolling.js';
import { normal, rng } from '../src/sim/random.js';
import { RoundState } from '../src/runs/round.js';
import { SeriesStats } from '../src/runs/series.js';
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
    assert.deepEqual(
      [0, 1, 2, 3].map((i) => h.at(i)),
      [70, 80, 90, 100],
    );
    const young = new History(4);
    young.push(1, 5);
    young.push(2, 6);
    assert.deepEqual([young.at(0), young.at(1)], [5, 6]);
    assert.deepEqual([h.stepAt(0), h.stepAt(3), young.stepAt(0), young.stepAt(1)], [7, 10, 1, 2]);
  });

  test('History values copied out (valuesInto, historyValues) are its points in order, however far the ring has turned', () => {
    // Every position of the ring's head, a young history, a full one and one taken back
    // (dropFrom): the copy must be the values of points(), oldest first, and nothing past them
    // written; historyValues grows its shared array for a history longer than it.
    for (const size of [1, 4, 7]) {
      const h = new History(size);
      for (let i = 1; i <= 3 * size + 2; i++) {
        h.push(i, i * 10 + 0.5);
        if (i % 5 === 0) h.dropFrom(i);
        const out = new Float64Array(size + 2).fill(-1);
        assert.equal(h.valuesInto(out), h.length);
        assert.deepEqual([...out.subarray(0, h.length)], h.points().values, `size ${size} after ${i} pushes`);
        assert.deepEqual([...out.subarray(h.length)], new Array<number>(size + 2 - h.length).fill(-1));
        assert.deepEqual([...historyValues(h).subarray(0, h.length)], h.points().values);
        assert.deepEqual([...keptValues(h)], h.points().values);
        assert.deepEqual([...historySteps(h).subarray(0, h.length)], h.points().steps);
      }
    }
    const long = new History(2000);
    for (let i = 0; i < 2500; i++) long.push(i, i);
    const vs = historyValues(long);
    assert.ok(vs.length >= 2000);
    assert.deepEqual([vs[0], vs[1999]], [500, 2499]);
  });

  test('History points are shared by readers until a point is added or taken back, and earlier readers keep theirs', () => {
    const h = new History(4);
    for (let i = 1; i <= 6; i++) h.push(i, i * 10);
    const a = h.points();
    assert.equal(h.points(), a, 'the same points for the next reader');
    assert.notEqual(h.points(2), a, 'the last two are points of their own');
    assert.deepEqual(h.points(2), { steps: [5, 6], values: [50, 60] });
    h.push(7, 70);
    const b = h.points();
    assert.notEqual(b, a);
    assert.deepEqual(b, { steps: [4, 5, 6, 7], values: [40, 50, 60, 70] });
    assert.deepEqual(a, { steps: [3, 4, 5, 6], values: [30, 40, 50, 60] }, 'what a reader holds does not change under it');
    h.dropFrom(6);
    const c = h.points();
    assert.deepEqual(c, { steps: [4, 5], values: [40, 50] });
    assert.deepEqual(b, { steps: [4, 5, 6, 7], values: [40, 50, 60, 70] });
    // The detectors' pass is over: the points are let go, and the next reader gets the same ones anew.
    releaseSharedPoints();
    const d = h.points();
    assert.notEqual(d, c);
    assert.deepEqual(d, c);
    assert.equal(h.points(), d);
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
    const buckets = c.buckets();
    const total = buckets.reduce((a, b) => a + b.n, 0);
    const mean = buckets.reduce((a, b) => a + b.mean * b.n, 0) / total;
    assert.equal(total, n);
    assert.ok(Math.abs(mean - sum / n) < 1e-9);
    assert.equal(buckets[0]!.firstStep, 0);
    assert.equal(buckets[buckets.length - 1]!.lastStep, n - 1);
  });

  test('Curve from a state saved before m2, min and max were kept: they stay unknown where a bucket lacks them, and round-trip', () => {
    const saved = {
      size: 4,
      per: 2,
      buckets: [
        { firstStep: 1, lastStep: 2, n: 2, mean: 1.5 },
        { firstStep: 3, lastStep: 4, n: 2, mean: 3.5, m2: 0.5, min: 3, max: 4 },
        { firstStep: 5, lastStep: 5, n: 1, mean: 5, m2: 0, min: 5, max: 5 },
      ],
    };
    const old = Curve.from(saved);
    assert.deepEqual(old.buckets(), saved.buckets);
    // The columns of the states saved after the objects and before the packed numbers: read the same.
    const columns: CurveColumns = {
      size: 4,
      per: 2,
      firstStep: [1, 3, 5],
      lastStep: [2, 4, 5],
      n: [2, 2, 1],
      mean: [1.5, 3.5, 5],
      m2: [null, 0.5, 0],
      min: [null, 3, 5],
      max: [null, 4, 5],
    };
    assert.deepEqual(Curve.from(columns).buckets(), saved.buckets);
    // Saved again packed, the unknown ones kept as unknown (NaN), and read back the same.
    const text = JSON.stringify(old.toJSON());
    assert.deepEqual(Object.keys(JSON.parse(text) as object), ['size', 'per', 'store']);
    const c = Curve.from(JSON.parse(text) as CurvePacked);
    assert.deepEqual(c.buckets(), saved.buckets);
    assert.equal(JSON.stringify(c.toJSON()), text);
    assert.deepEqual(c.total(), { n: 5, mean: 3, m2: 9.5, min: null, max: null });
    for (let step = 6; step <= 9; step++) c.push(step, step); // step 9 opens a fifth bucket: the four halve
    assert.equal(c.pointsPerBucket, 4);
    assert.deepEqual(c.buckets(), [
      { firstStep: 1, lastStep: 4, n: 4, mean: 2.5, m2: 4.5 },
      { firstStep: 5, lastStep: 8, n: 4, mean: 6.5, m2: 5, min: 5, max: 8 },
      { firstStep: 9, lastStep: 9, n: 1, mean: 9, m2: 0, min: 9, max: 9 },
    ]);
    assert.deepEqual(
      [0, 1, 2].map((i) => [c.firstStepAt(i), c.lastStepAt(i), c.countAt(i), c.meanAt(i)]),
      [
        [1, 4, 4, 2.5],
        [5, 8, 4, 6.5],
        [9, 9, 1, 9],
      ],
    );
    assert.deepEqual(c.means(), [2.5, 6.5, 9]);
    assert.deepEqual(c.headMean(5), { mean: 4.5, n: 8, lastStep: 8 });
  });
});

describe('packed numbers (the saved window, history and curve)', () => {
  test('every double comes back bit for bit: NaN, infinities, -0, the least and the greatest', () => {
    const xs = new Float64Array([0, -0, 1.5, -2.25, NaN, Infinity, -Infinity, Number.MIN_VALUE, Number.MAX_VALUE, 0.1 + 0.2, 1e-310]);
    const text = packDoubles(xs);
    assert.equal(packedCount(text), xs.length);
    const back = unpackDoubles(text);
    assert.deepEqual(new Uint8Array(back.buffer), new Uint8Array(xs.buffer));
    // A part of a larger array, at an offset: only that part.
    assert.deepEqual([...unpackDoubles(packDoubles(xs.subarray(2, 4)))], [1.5, -2.25]);
    assert.equal(packDoubles(new Float64Array(0)), '');
    assert.equal(packedCount(''), 0);
  });

  test('a text that is not packed doubles is told apart', () => {
    assert.equal(packedCount('not base64!'), null);
    // Base64, but of 6 bytes: not a whole number of doubles.
    assert.equal(packedCount(Buffer.from('abcdef').toString('base64')), null);
    assert.equal(packedCount('AAAA'), null);
    assert.equal(packedCount(packDoubles(new Float64Array(3))), 3);
  });

  test('window and history round-trip packed, and still read the numbers of earlier states', () => {
    const w = new RollingWindow(4);
    const h = new History(4);
    for (let i = 1; i <= 6; i++) {
      w.push(i / 3);
      h.push(i * 10, i / 7);
    }
    const w2 = RollingWindow.from(viaJson(w.toJSON()));
    assert.deepEqual([...w2.values()], [...w.values()]);
    assert.equal(w2.mean, w.mean);
    const h2 = History.from(viaJson(h.toJSON()));
    assert.deepEqual(h2.points(), h.points());
    // The numbers of states saved before, and a smaller room than was saved: the newest kept.
    assert.deepEqual([...RollingWindow.from({ size: 4, values: [1, 2, 3, 4] }, 2).values()], [3, 4]);
    assert.deepEqual(History.from({ size: 4, steps: [1, 2, 3], values: [5, 6, 7] }, 2).points(), { steps: [2, 3], values: [6, 7] });
    assert.deepEqual(History.from(h.toJSON(), 2).points(), { steps: [50, 60], values: [5 / 7, 6 / 7] });
  });

  test('window and history save their own points at every turn of the ring, one save after another', () => {
    // Saves pack from one shared array: a long history saved first must leave nothing of its
    // points in a shorter one's text, and a text once made must not change with the next save.
    const big = new History(64);
    for (let i = 0; i < 100; i++) big.push(1000 + i, -i);
    for (let pushes = 0; pushes <= 12; pushes++) {
      const w = new RollingWindow(5);
      const h = new History(5);
      for (let i = 1; i <= pushes; i++) {
        w.push(i * 1.5);
        h.push(i * 10, i / 7);
      }
      const bigText = JSON.stringify(big.toJSON());
      const wText = JSON.stringify(w.toJSON());
      const hText = JSON.stringify(h.toJSON());
      assert.equal(JSON.stringify(big.toJSON()), bigText, `after ${pushes} pushes`);
      assert.deepEqual([...RollingWindow.from(JSON.parse(wText) as WindowJSON).values()], [...w.values()], `after ${pushes} pushes`);
      assert.deepEqual(History.from(JSON.parse(hText) as HistoryJSON).points(), h.points(), `after ${pushes} pushes`);
      assert.deepEqual(History.from(JSON.parse(bigText) as HistoryJSON).points(), big.points());
    }
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
        round.apply({ kind: 'metrics', step, values }, step, 0, 'f', 'reward-history');
      }
    }
    // A second file in another format writing `a` (a train.log beside reward_history.jsonl) is counted as a duplicate, not mixed in.
    round.apply({ kind: 'metrics', step: step + 1, values: { a: -1 } }, step + 1, 0, 'other', 'train-log');
    assert.equal(round.duplicates, 1);
    for (const [name, vs] of want) {
      const s = round.series.get(name)!;
      assert.equal(s.summary.n, vs.length, name);
      assert.equal(s.summary.mean, vs.reduce((x, y) => x + y, 0) / vs.length, name);
      assert.deepEqual(s.history.points().values, vs, name);
    }
  });
});

describe('a step written again: the newest value wins (a run resumed from a checkpoint)', () => {
  const v1 = (s: number): number => Math.sin(s / 7) + s / 1000;
  const v2 = (s: number): number => Math.cos(s / 5) + s / 900;
  /** The series as written (steps 1..crash, then resume..total again) and as it should read (each step once, the later value). */
  function pair(total: number, resume: number, crash: number, history = 256): { got: SeriesStats; want: SeriesStats } {
    const opts = { ...DEFAULTS.stats, history };
    const got = new SeriesStats(opts);
    const want = new SeriesStats(opts);
    for (let s = 1; s <= crash; s++) got.add(s, v1(s));
    for (let s = resume; s <= total; s++) got.add(s, v2(s));
    for (let s = 1; s <= total; s++) want.add(s, s < resume ? v1(s) : v2(s));
    return { got, want };
  }
  function close(a: number, b: number, what: string): void {
    assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
  }
  function same(got: SeriesStats, want: SeriesStats): void {
    assert.equal(got.summary.n, want.summary.n, 'n');
    close(got.summary.mean, want.summary.mean, 'mean');
    close(got.summary.variance, want.summary.variance, 'variance');
    assert.equal(got.summary.min, want.summary.min, 'min');
    assert.equal(got.summary.max, want.summary.max, 'max');
    assert.deepEqual(got.history.points(), want.history.points(), 'history');
    assert.deepEqual([...got.window.values()], [...want.window.values()], 'window');
    close(got.ewma.mean, want.ewma.mean, 'ewma mean');
    close(got.ewma.variance, want.ewma.variance, 'ewma variance');
    assert.equal(got.ewma.n, want.ewma.n, 'ewma n');
    assert.equal(got.lastStep, want.lastStep);
    assert.equal(got.lastValue, want.lastValue);
    const total = got.curve.total();
    close(total.n, want.summary.n, 'curve n');
    close(total.mean, want.summary.mean, 'curve mean');
  }
  const cases: [string, number, number, number][] = [
    ['crashed at 279, resumed from the checkpoint at 251', 400, 251, 279],
    ['restarted from step 1 after 100 steps', 150, 1, 100],
    ['a long run (curve buckets of 16) resumed 90 steps back', 2000, 1900, 1990],
    ['resumed at the very last step', 300, 300, 300],
  ];
  for (const [name, total, resume, crash] of cases) {
    test(name, () => {
      const { got, want } = pair(total, resume, crash);
      same(got, want);
      assert.deepEqual(got.rewinds, { count: 1, values: crash - resume + 1, lastTo: resume, lastFrom: crash, inexact: false });
    });
  }

  test('saved and restored between the crash and the resume: the same numbers', () => {
    const opts = DEFAULTS.stats;
    const a = new SeriesStats(opts);
    for (let s = 1; s <= 279; s++) a.add(s, v1(s));
    const b = SeriesStats.from(viaJson(a.toJSON()), opts);
    for (let s = 251; s <= 400; s++) b.add(s, v2(s));
    same(b, pair(400, 251, 279).want);
  });

  test('a non-finite value among the steps taken back is taken back too', () => {
    const opts = DEFAULTS.stats;
    const s = new SeriesStats(opts);
    for (let i = 1; i <= 50; i++) s.add(i, i === 45 ? NaN : i);
    assert.equal(s.nonfinite.count, 1);
    for (let i = 41; i <= 60; i++) s.add(i, i);
    assert.equal(s.nonfinite.count, 0, 'the NaN at 45 was written over by the resumed run');
    assert.equal(s.summary.n, 60);
    assert.equal(s.summary.mean, 30.5);
  });

  test('resumed further back than the points kept: whole buckets go, the rest is said to be inexact', () => {
    const { got, want } = pair(600, 100, 500);
    assert.equal(got.rewinds?.inexact, true);
    // Buckets that start after the resume step go whole: at most one bucket (4 values) stays wrong.
    assert.ok(got.summary.n - want.summary.n <= 4 && got.summary.n >= want.summary.n, `${got.summary.n} vs ${want.summary.n}`);
    assert.deepEqual(got.history.points(), want.history.points());
    assert.deepEqual([...got.window.values()], [...want.window.values()]);
    close(got.ewma.mean, want.ewma.mean, 'ewma mean, rebuilt from the points kept');
  });

  test('History.dropFrom and Curve.dropFrom on their own', () => {
    const h = new History(8);
    for (let i = 1; i <= 10; i++) h.push(i, i * 10);
    assert.deepEqual(h.dropFrom(9), { steps: [9, 10], values: [90, 100] });
    assert.deepEqual(h.points().steps, [3, 4, 5, 6, 7, 8]);
    assert.equal(h.firstStep, 3);
    assert.deepEqual(h.dropFrom(100), { steps: [], values: [] });
    const c = new Curve(4);
    const all = { steps: [] as number[], values: [] as number[] };
    for (let i = 1; i <= 8; i++) {
      c.push(i, i);
      all.steps.push(i);
      all.values.push(i);
    }
    assert.equal(c.dropFrom(4, all), true);
    assert.deepEqual(c.total(), { n: 3, mean: 2, m2: 2, min: 1, max: 3 });
    assert.equal(c.firstStep, 1);
  });
});

describe('RoundState: a run resumed into a new log continues its series', () => {
  test('the new log in the same format takes the series over from its first step; a log in another format or a peer from the same first step does not', () => {
    const round = new RoundState('unknown', null, DEFAULTS.stats);
    for (let s = 1; s <= 80; s++) round.apply({ kind: 'metrics', step: s, values: { r: s } }, s, 0, 'a.log', 'verl-console');
    // The same numbers in the file logger's JSONL: duplicates.
    for (let s = 1; s <= 80; s++) round.apply({ kind: 'metrics', step: s, values: { r: s } }, s, 0, 'a.jsonl', 'verl-jsonl');
    // A second worker's log of the same format from step 1: a peer, not a continuation.
    for (let s = 1; s <= 80; s++) round.apply({ kind: 'metrics', step: s, values: { r: -s } }, s, 0, 'worker1.log', 'verl-console');
    assert.equal(round.duplicates, 160);
    assert.equal(round.series.get('r')!.summary.n, 80);
    // The resumed run's log from its checkpoint at step 61.
    for (let s = 61; s <= 120; s++) round.apply({ kind: 'metrics', step: s, values: { r: 1000 + s } }, s, 0, 'b.log', 'verl-console');
    const r = round.series.get('r')!;
    assert.equal(r.summary.n, 120);
    assert.deepEqual(r.history.points(60).values.slice(0, 2), [1061, 1062]);
    assert.equal(round.handovers, 1);
    assert.equal(round.resumed()?.lastTo, 61);
    const back = RoundState.from(viaJson(round.toJSON()), DEFAULTS.stats);
    // After a restart the resumed log still owns the series; the first log's late lines are duplicates.
    back.apply({ kind: 'metrics', step: 81, values: { r: 0 } }, 81, 0, 'a.log', 'verl-console');
    assert.equal(back.series.get('r')!.summary.n, 120);
  });
});
