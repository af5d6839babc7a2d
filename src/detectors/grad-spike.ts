/**
 * grad-spike: the gradient norm jumps to many times its rolling median, again and again: the
 * optimisation is unstable (a learning rate too high, a bad batch, fp16 overflow) and a
 * divergence often follows. Zero norms (TRL logs 0.0 on steps whose groups carried no signal) are
 * left out of the median.
 */
import { allSeriesFor } from '../runs/quantities.js';
import { SortedWindow } from '../stats/inference.js';
import { historyValues, type History, type Points } from '../stats/rolling.js';
import { r4 } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** A value at least factor x the median of the values before it is a spike. */
  factor: number;
  /** Values before each point whose median it is compared with. */
  window: number;
  /** Spikes within the horizon that make a finding. */
  count: number;
  horizon: number;
}

/**
 * Whether any of the last `n` values of `h` could be a spike: a spike is at least `factor` x a
 * median of positive values among them, so at least `factor` x the least positive one. Where the
 * largest value stays below that, no value is a spike and the medians need not be followed (most
 * evaluations of a healthy run: its norms move within a few x over the horizon). Exact: a median
 * of positive values is never below the least of them, and the product rounds the same way.
 */
export function maySpike(h: History, n: number, factor: number): boolean {
  if (!(factor > 0)) return true;
  const vs = historyValues(h);
  let max = -Infinity;
  let minPositive = Infinity;
  for (let i = h.length - n; i < h.length; i++) {
    const v = vs[i]!;
    if (v > max) max = v;
    if (v > 0 && v < minPositive) minPositive = v;
  }
  return !(max < factor * minPositive);
}

interface Spike {
  step: number;
  value: number;
  median: number;
}

/** The spikes among the last `horizon` of `points`, each judged against the median of the values before it. */
export function spikesIn({ steps, values }: Points, p: Pick<P, 'factor' | 'window' | 'horizon'>): Spike[] {
  const spikes: Spike[] = [];
  const prior: number[] = [];
  const last = new SortedWindow(); // the last `window` of prior
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    let spike = false;
    if (prior.length >= Math.min(p.window, 5)) {
      const m = last.median();
      spike = m > 0 && v >= p.factor * m;
      if (spike && i >= values.length - p.horizon) spikes.push({ step: steps[i]!, value: v, median: m });
    }
    // A spike does not raise the median the next values are judged by.
    if (v > 0 && !spike) {
      prior.push(v);
      last.add(v);
      if (prior.length > p.window) last.remove(prior[prior.length - 1 - p.window]!);
    }
  }
  return spikes;
}

export const gradSpike: Detector<P> = {
  id: 'grad-spike',
  cleared: 'the grad norm no longer spikes repeatedly',
  scope: 'round',
  description: 'The gradient norm jumps to many times its rolling median, repeatedly.',
  defaults: { enabled: true, severity: 'warning', factor: 10, window: 20, count: 3, horizon: 50 },
  counts: ['window', 'count', 'horizon'],
  every: () => 2,
  reads: ['grad_norm'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      for (const s of allSeriesFor(r, 'grad_norm')) {
        // Only the horizon is judged; the values before it serve as its medians.
        const h = s.stats.history;
        if (p.count > 0 && !maySpike(h, Math.min(h.length, p.horizon + 2 * p.window), p.factor)) continue;
        const spikes = spikesIn(h.points(p.horizon + 2 * p.window), p);
        if (spikes.length < p.count) continue;
        const worst = spikes.reduce((a, b) => (b.value / b.median > a.value / a.median ? b : a));
        out.push({
          round: r.round,
          step: spikes[p.count - 1]!.step,
          severity: p.severity,
          message: `${s.name} spiked ${spikes.length} times in the last ${p.horizon} steps to ${p.factor}x or more its rolling median (worst ${worst.value.toPrecision(3)} at step ${worst.step}, ${(worst.value / worst.median).toFixed(0)}x): the optimisation is unstable.`,
          evidence: {
            series: s.name,
            spikes: spikes.slice(-10).map((x) => ({ step: x.step, value: r4(x.value), median: r4(x.median) })),
            spike_count: spikes.length,
            factor: p.factor,
            horizon: p.horizon,
          },
          recommendation:
            'Lower the learning rate, clip gradients (verl actor.grad_clip, TRL max_grad_norm), check the batches at the spike steps for outliers; in fp16, use bf16.',
          series: { role: r.role, round: r.round, name: s.name },
        });
        break;
      }
    }
    return out;
  },
};
