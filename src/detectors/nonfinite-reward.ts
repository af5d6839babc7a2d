/** nonfinite-reward: NaN or Infinity in a reward or accuracy value. */
import type { RunState } from '../runs/run.js';
import { nonfiniteTaken, type SeriesStats } from '../runs/series.js';
import type { Detector, Draft, Params, Severity } from './types.js';

const WATCHED = /^(boundary|relevance|format|count|total|reward|accuracy)$|reward|score|(^|\/)acc/;

/** Whether a series is a reward component, the total, a score or an accuracy (this detector's; nonfinite-metric takes the rest). */
export function isRewardSeries(name: string): boolean {
  return WATCHED.test(name) && !name.endsWith('_std');
}

interface P extends Params {
  enabled: boolean;
}

/** Runs found without a non-finite value, and nonfiniteTaken() then. */
const cleanAt = new WeakMap<RunState, number>();

/**
 * One finding per round whose series that `keep` admits hold NaN or Infinity: the first such value
 * named with its step, every series counted. Shared by nonfinite-reward and nonfinite-metric.
 */
export function nonfiniteDrafts(
  run: RunState,
  keep: (name: string, s: SeriesStats) => boolean,
  severity: Severity,
  meaning: string,
  recommendation: string,
): Draft[] {
  // A run found without any non-finite value keeps none while no series took one in.
  const taken = nonfiniteTaken();
  if (cleanAt.get(run) === taken) return [];
  const out: Draft[] = [];
  let clean = true;
  for (const r of run.orderedRounds()) {
    // Nearly always none: the series are walked by name only where one is.
    let any = false;
    for (const s of r.series.values()) {
      if (s.nonfinite.count > 0) {
        any = true;
        break;
      }
    }
    if (!any) continue;
    clean = false;
    const bad: { series: string; count: number; firstStep: number | null; value: string | null }[] = [];
    for (const [name, s] of r.series) {
      if (s.nonfinite.count > 0 && keep(name, s)) {
        bad.push({ series: name, count: s.nonfinite.count, firstStep: s.nonfinite.firstStep, value: s.nonfinite.lastValue });
      }
    }
    if (bad.length === 0) continue;
    bad.sort((a, b) => (a.firstStep ?? 0) - (b.firstStep ?? 0));
    const first = bad[0]!;
    const total = bad.reduce((a, b) => a + b.count, 0);
    out.push({
      round: r.round,
      step: first.firstStep,
      severity,
      message: `${first.series} became ${first.value} at step ${first.firstStep} (${total} non-finite value(s) in ${bad.length} series): ${meaning}.`,
      evidence: { series: bad, non_finite_values: total, role: r.role },
      recommendation,
      series: { role: r.role, round: r.round, name: first.series },
    });
  }
  if (clean) cleanAt.set(run, taken);
  return out;
}

export const nonfiniteReward: Detector<P> = {
  id: 'nonfinite-reward',
  cleared: 'no reward, total or accuracy is NaN or Infinity any more',
  scope: 'round',
  immediate: true,
  description: 'NaN or Infinity in a reward component, the total reward or an accuracy.',
  defaults: { enabled: true, severity: 'critical' },
  every: () => 1,
  detect(run, p) {
    return nonfiniteDrafts(
      run,
      (name) => isRewardSeries(name),
      p.severity,
      'the reward computation is broken',
      'Find what produced the first non-finite value (a division by zero rollouts, log(0), an overflow in the reward function or loss) and resume from the last checkpoint before that step.',
    );
  },
};
