/**
 * validation-decline: a validation score falls well below its best while the training reward
 * holds or rises: the policy is overfitting its training prompts or exploiting the training
 * reward. Validation series are those whose higher values are better (runs/quantities.ts: verl
 * `val-core/<set>/<var>/mean@N`, HF `eval_*` accuracies and rewards); they are logged every few
 * steps, so levels are means of `points` validations.
 */
import { historySteps, historyValues } from '../stats/rolling.js';
import { isValidationScore, seriesFor, seriesNamed } from '../runs/quantities.js';
import { r4 } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Validations per level (the best level and the recent one). */
  points: number;
  /** The fraction of the best level the recent one must lose... */
  drop: number;
  /** ...and at least this much in absolute terms. */
  min_drop: number;
  /** The training reward counts as holding while it lost at most this fraction. */
  train_tolerance: number;
}

/** The mean of the first `n` values whose steps are from..to (added in order, as mean() adds them); null when there are none. */
function meanBetween(steps: Float64Array, values: Float64Array, n: number, from: number, to: number): number | null {
  let sum = 0;
  let k = 0;
  for (let i = 0; i < n; i++) {
    const s = steps[i]!;
    if (s >= from && s <= to) {
      sum += values[i]!;
      k++;
    }
  }
  return k === 0 ? null : sum / k;
}

/** The mean of the `w` values from the `i`-th (levels' mean(): the same sum in the same order). */
function windowMean(vs: Float64Array, i: number, w: number): number {
  let sum = 0;
  for (let j = i; j < i + w; j++) sum += vs[j]!;
  return sum / w;
}

export const validationDecline: Detector<P> = {
  id: 'validation-decline',
  cleared: 'the validation score is back near its best, or the training reward fell with it',
  scope: 'round',
  description: 'A validation score falls well below its best while the training reward holds or rises.',
  defaults: { enabled: true, severity: 'warning', points: 3, drop: 0.1, min_drop: 0.03, train_tolerance: 0.05 },
  counts: ['points'],
  every: () => 2,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const train = seriesFor(r, 'reward');
      if (train === null) continue;
      for (const { name, stats: s } of seriesNamed(r, isValidationScore)) {
        const h = s.history;
        const n = h.length;
        if (n < 2 * p.points) continue;
        // The values in an array kept between evaluations (points() would make two arrays each time).
        const vs = historyValues(h);
        const w = p.points;
        const recent = windowMean(vs, n - w, w);
        let best = -Infinity;
        let bestAt = 0;
        for (let i = 0; i + w <= n - w; i++) {
          const m = windowMean(vs, i, w);
          if (m > best) {
            best = m;
            bestAt = i;
          }
        }
        const fall = best - recent;
        if (!(fall >= Math.max(p.min_drop, p.drop * Math.abs(best)))) continue;
        // The training reward around the best validations, and since the recent ones began (its
        // steps and values copied into the arrays kept between evaluations: `vs` is read no more).
        const t = train.stats.history;
        const ts = historySteps(t);
        const tv = historyValues(t);
        const bestSteps = [h.stepAt(bestAt), h.stepAt(bestAt + p.points - 1)] as const;
        const trainThen = meanBetween(ts, tv, t.length, bestSteps[0], bestSteps[1]);
        const trainNow = meanBetween(ts, tv, t.length, h.stepAt(n - p.points), Infinity);
        if (trainThen === null || trainNow === null) continue;
        if (trainNow < trainThen - p.train_tolerance * Math.abs(trainThen)) continue;
        out.push({
          round: r.round,
          step: h.stepAt(n - 1),
          severity: p.severity,
          message: `${name} fell from ${best.toFixed(3)} (steps ${bestSteps[0]}-${bestSteps[1]}) to ${recent.toFixed(3)} (last ${p.points} validations) while the training reward ${train.name} went ${trainThen.toFixed(3)} -> ${trainNow.toFixed(3)}: the policy is overfitting or exploiting the training reward.`,
          evidence: {
            series: name,
            best_level: r4(best),
            best_steps: bestSteps,
            recent_level: r4(recent),
            points: p.points,
            train_series: train.name,
            train_then: r4(trainThen),
            train_now: r4(trainNow),
          },
          recommendation:
            'Keep the checkpoint of the best validation; read training completions for a pattern the reward pays for but the task does not; lower the learning rate or raise the KL coefficient, or stop early.',
          series: { role: r.role, round: r.round, name },
        });
        break;
      }
    }
    return out;
  },
};
