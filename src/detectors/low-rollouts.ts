/**
 * low-rollouts: K generator rollouts per evidence set estimate the accuracy p on that set. With
 * K < 5 the estimate is mostly noise: K = 2 gives p in {0, 0.5, 1} and a standard error of
 * sqrt(c(1-c)/K) = 0.35 at c = 0.5, so the boundary reward cannot tell good evidence from bad.
 */
import type { RoundState } from '../runs/round.js';
import { targetOf } from './queries.js';
import type { Detector, Params } from './types.js';

interface P extends Params {
  /** Smallest acceptable K. */
  min_k: number;
  /** The recommended K brings the standard error of p at c to this or below. */
  max_se: number;
}

export function standardError(c: number, k: number): number {
  return Math.sqrt((c * (1 - c)) / k);
}

export const lowRollouts: Detector<P> = {
  id: 'low-rollouts',
  cleared: 'the generator rollouts per evidence set are 5 or more now',
  scope: 'run',
  immediate: true,
  description: 'Fewer than min_k generator rollouts per evidence set (from the configs or the logs).',
  defaults: { enabled: true, severity: 'warning', min_k: 5, max_se: 0.16 },
  counts: ['min_k'],
  every: () => 1,
  detect(run, p) {
    // k from the log, the run's config or the last round that logs a rollouts series; where it came
    // from is put into words only for a finding (this detector judges every read).
    let k: number | undefined;
    let from: RoundState | null = null;
    if (run.rollouts !== null) k = run.rollouts.k;
    else if (run.settings.rollouts !== undefined) k = run.settings.rollouts;
    else {
      for (const r of run.orderedRounds()) {
        const s = r.series.get('rollouts');
        if (s?.lastValue != null) {
          k = s.lastValue;
          from = r;
        }
      }
    }
    if (k === undefined || !(k < p.min_k)) return [];
    const source =
      run.rollouts !== null
        ? `log (${run.rollouts.role}${run.rollouts.round !== null ? ` round ${run.rollouts.round}` : ''})`
        : from === null
          ? 'run config'
          : `series rollouts (${from.role} round ${from.round})`;
    const { c } = targetOf(run);
    const se = standardError(c, k);
    let need = Math.max(p.min_k, k + 1);
    while (standardError(c, need) > p.max_se) need++;
    const values = Array.from({ length: k + 1 }, (_, i) => +(i / k).toFixed(2));
    return [
      {
        round: null,
        step: null,
        severity: p.severity,
        message: `Only K=${k} generator rollouts per evidence set: p can only be ${values.join(', ')} and its standard error at c=${c} is ${se.toFixed(2)}, so the boundary reward is mostly noise.`,
        evidence: { k, source, target: c, standard_error: +se.toFixed(4), min_k: p.min_k, max_se: p.max_se },
        recommendation: `Raise the generator rollouts to K=${need} (standard error ${standardError(c, need).toFixed(3)} at c=${c}, at most ${p.max_se}).`,
      },
    ];
  },
};
