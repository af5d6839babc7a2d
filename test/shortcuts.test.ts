/**
 * The detectors' shortcuts: a test that says "nothing can hold here" before the full computation
 * runs (grad-spike's maySpike, length-collapse's mayFall, reward-drop's mayHaveFall and mayFallWithin,
 * reward-collapse's mayReachZero) must never say so where the full
 * computation finds something. Random series of every shape the shortcuts reason about (positive
 * levels with spikes and falls, zeros, negatives, NaN, infinities, values at the thresholds), and
 * the counts of both answers, so the test cannot pass by never taking the shortcut.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { maySpike, spikesIn } from '../src/detectors/grad-spike.js';
import { mayFall } from '../src/detectors/length-collapse.js';
import { latestFall } from '../src/detectors/levels.js';
import { collapsedFrom, mayReachZero } from '../src/detectors/reward-collapse.js';
import { mayFallWithin, mayHaveFall, prefixSums, strongestFall } from '../src/detectors/reward-drop.js';
import { DEFAULTS } from './helpers/defaults.js';
import { SeriesStats } from '../src/runs/series.js';
import { rng } from '../src/sim/random.js';
import { History, historyValues } from '../src/stats/rolling.js';

/** A series of `n` values around a level, with the oddities a trainer's log has now and then. */
function series(rand: () => number, n: number): number[] {
  const level = 10 ** (rand() * 4 - 2);
  const spread = [0.02, 0.2, 0.6, 2][Math.floor(rand() * 4)]!;
  const out: number[] = [];
  let at = level;
  for (let i = 0; i < n; i++) {
    const r = rand();
    // A level that moves: a fall or a rise now and then.
    if (r < 0.02) at *= [0.1, 0.3, 0.5, 2, 5][Math.floor(rand() * 5)]!;
    let v = at * (1 + spread * (rand() - 0.5));
    const odd = rand();
    if (odd < 0.03) v *= 5 + rand() * 20;
    else if (odd < 0.04) v = 0;
    else if (odd < 0.045) v = -v;
    else if (odd < 0.048) v = NaN;
    else if (odd < 0.049) v = rand() < 0.5 ? Infinity : -Infinity;
    out.push(v);
  }
  return out;
}

function historyOf(values: readonly number[], size = 256): History {
  const h = new History(size);
  values.forEach((v, i) => h.push(i + 1, v));
  return h;
}

describe('grad-spike: maySpike', () => {
  test('never passes over a series with a spike (5,000 random series, six factors)', () => {
    const rand = rng(7);
    let skipped = 0;
    let spiky = 0;
    for (let c = 0; c < 5_000; c++) {
      const values = series(rand, Math.floor(rand() * 130));
      const h = historyOf(values, [64, 256][c % 2]);
      for (const factor of [10, 5, 3, 1.5, 0.5, -1]) {
        const p = { factor, window: [1, 5, 20][c % 3]!, horizon: [5, 50][c % 2]! };
        const last = p.horizon + 2 * p.window;
        const spikes = spikesIn(h.points(last), p);
        if (!maySpike(h, Math.min(h.length, last), factor)) {
          skipped++;
          assert.equal(spikes.length, 0, `case ${c}, factor ${factor}: skipped, but ${spikes.length} spikes`);
        }
        if (spikes.length > 0) spiky++;
      }
    }
    // Both answers are exercised.
    assert.ok(skipped > 2_000, `skipped ${skipped}`);
    assert.ok(spiky > 2_000, `series with spikes ${spiky}`);
  });

  test('a value exactly factor x the median is a spike, and is not passed over', () => {
    const values = [...Array.from({ length: 20 }, () => 1), 10, 1, 1, 10, 1, 10];
    const h = historyOf(values);
    const p = { factor: 10, window: 20, horizon: 50 };
    assert.equal(spikesIn(h.points(90), p).length, 3);
    assert.equal(maySpike(h, h.length, 10), true);
    // Just below: no spike, and the shortcut says so.
    const below = historyOf(values.map((v) => (v === 10 ? 9.999 : v)));
    assert.equal(spikesIn(below.points(90), p).length, 0);
    assert.equal(maySpike(below, below.length, 10), false);
  });
});

describe('length-collapse: mayFall', () => {
  test('never passes over a series with a fall (5,000 random series, five drops)', () => {
    const rand = rng(11);
    let skipped = 0;
    let falls = 0;
    for (let c = 0; c < 5_000; c++) {
      const values = Float64Array.from(series(rand, 11 + Math.floor(rand() * 250)));
      for (const drop of [0.5, 0.25, 0, 1, 1.5]) {
        const w = [1, 2, 5][c % 3]!;
        const fall = latestFall(values, w, [3, 10][c % 2]!, drop);
        if (!mayFall(values, drop)) {
          skipped++;
          assert.equal(fall, null, `case ${c}, drop ${drop}: skipped, but a fall at ${fall?.at}`);
        }
        if (fall !== null) falls++;
      }
    }
    assert.ok(skipped > 1_000, `skipped ${skipped}`);
    assert.ok(falls > 2_000, `series with falls ${falls}`);
  });

  test('a fall to exactly (1 - drop) x the level before is a fall, and is not passed over', () => {
    const values = Float64Array.from([...Array.from({ length: 20 }, () => 100), ...Array.from({ length: 20 }, () => 50)]);
    assert.notEqual(latestFall(values, 5, 10, 0.5), null);
    assert.equal(mayFall(values, 0.5), true);
    const above = values.map((v) => (v === 50 ? 50.001 : v));
    assert.equal(latestFall(above, 5, 10, 0.5), null);
    assert.equal(mayFall(above, 0.5), false);
  });
});

/** strongestFall as reward-drop calls it (alpha 2: any candidate of the mean tests is taken), and mayHaveFall's answer. */
function judge(values: Float64Array, drop: number): { k: number; may: boolean } {
  const n = values.length;
  const { s1, s2, max, maxAbs } = prefixSums(values, n);
  const tailMean = (s1[n]! - s1[n - 10]!) / 10;
  return { k: strongestFall(s1, s2, n, 10, 10, 20, drop, 2, tailMean), may: mayHaveFall(tailMean, max, maxAbs, n, drop) };
}

/** Passes over and change points counted over series, each judged at five drops. */
interface Tally {
  skipped: number;
  falls: number;
}

/**
 * One series judged at five drops: `judged(drop)` gives the full computation's change point (k, -1
 * for none) and whether the shortcut lets it be looked at (may). A series passed over must have none.
 */
function tallyDrops(t: Tally, label: string, judged: (drop: number) => { k: number; may: boolean }): void {
  for (const drop of [0.25, 0.5, 0, 0.9, 1.2]) {
    const { k, may } = judged(drop);
    if (!may) {
      t.skipped++;
      assert.equal(k, -1, `${label}, drop ${drop}: skipped, but a change point at ${k}`);
    }
    if (k >= 0) t.falls++;
  }
}

describe('reward-drop: mayHaveFall', () => {
  test('never passes over a series with a change point (5,000 random series, five drops)', () => {
    const rand = rng(13);
    const t: Tally = { skipped: 0, falls: 0 };
    for (let c = 0; c < 5_000; c++) {
      const values = Float64Array.from(series(rand, 20 + Math.floor(rand() * 240)));
      tallyDrops(t, `case ${c}`, (drop) => judge(values, drop));
    }
    assert.ok(t.skipped > 1_000, `skipped ${t.skipped}`);
    assert.ok(t.falls > 2_000, `series with a change point ${t.falls}`);
  });

  test('a recent mean exactly (1 - drop) x the level before is a fall, and is not passed over', () => {
    const values = Float64Array.from([...Array.from({ length: 20 }, () => 1), ...Array.from({ length: 10 }, () => 0.75)]);
    assert.equal(judge(values, 0.25).k, 20);
    assert.equal(judge(values, 0.25).may, true);
    const above = values.map((v) => (v === 0.75 ? 0.7501 : v));
    assert.equal(judge(above, 0.25).k, -1);
    assert.equal(judge(above, 0.25).may, false);
  });
});

/** A round's series as the daemon keeps it (non-finite values counted, not kept), its history 256 points. */
function statsOf(values: readonly number[]): SeriesStats {
  const s = new SeriesStats({ ...DEFAULTS.stats, history: 256 });
  values.forEach((v, i) => s.add(i + 1, v));
  return s;
}

describe('reward-drop: mayFallWithin (before the history is copied)', () => {
  test('never passes over a series with a change point (3,000 random series, older values out of the history, five drops)', () => {
    const rand = rng(17);
    const t: Tally = { skipped: 0, falls: 0 };
    for (let c = 0; c < 3_000; c++) {
      // Up to 400 values: past 256, the whole round holds values the history no longer does.
      const stats = statsOf(series(rand, 30 + Math.floor(rand() * 370)));
      const h = stats.history;
      if (h.length < 20) continue;
      const kept = historyValues(h).slice(0, h.length);
      // The full computation on the points kept, as the mayHaveFall test above runs it.
      tallyDrops(t, `case ${c}`, (drop) => ({ k: judge(kept, drop).k, may: mayFallWithin(h, stats.summary, 10, drop) }));
    }
    assert.ok(t.skipped > 400, `skipped ${t.skipped}`);
    assert.ok(t.falls > 1_000, `series with a change point ${t.falls}`);
  });
});

describe('reward-collapse: mayReachZero', () => {
  test('never passes over a collapsed series (4,000 random series, some ending at about zero, three levels)', () => {
    const rand = rng(19);
    let skipped = 0;
    let collapsed = 0;
    for (let c = 0; c < 4_000; c++) {
      const values = series(rand, 20 + Math.floor(rand() * 380));
      // Half of them end in a stretch at about zero (of either sign, a lucky group now and then).
      if (rand() < 0.5) {
        const from = Math.floor(rand() * values.length);
        for (let i = from; i < values.length; i++) values[i] = rand() < 0.1 ? 0.3 : (rand() - 0.5) * 0.08;
      }
      // Some lie below zero throughout.
      const sign = rand() < 0.2 ? -1 : 1;
      const stats = statsOf(values.map((v) => sign * v));
      for (const level of [0.05, 0.01, 0.2]) {
        const from = collapsedFrom(stats.history, level, 8);
        if (!mayReachZero(stats, level)) {
          skipped++;
          assert.equal(from, null, `case ${c}, level ${level}: skipped, but collapsed from ${from}`);
        }
        if (from !== null) collapsed++;
      }
    }
    assert.ok(skipped > 300, `skipped ${skipped}`);
    assert.ok(collapsed > 1_000, `collapsed ${collapsed}`);
  });

  test('a value exactly at the level can start a stretch, and is not passed over', () => {
    const stats = statsOf([...Array.from({ length: 20 }, () => 0.5), ...Array.from({ length: 10 }, () => 0.05)]);
    assert.equal(collapsedFrom(stats.history, 0.05, 8), 20);
    assert.equal(mayReachZero(stats, 0.05), true);
    assert.equal(mayReachZero(stats, 0.0499), false);
    const below = statsOf([...Array.from({ length: 20 }, () => -0.5), ...Array.from({ length: 10 }, () => -0.05)]);
    assert.equal(collapsedFrom(below.history, 0.05, 8), 20);
    assert.equal(mayReachZero(below, 0.05), true);
  });
});
