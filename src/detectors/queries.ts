/** Reading series out of a run for the detectors: by role, across rounds, the reward series. */
import type { Role } from '../parsers/types.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import type { SeriesStats } from '../runs/series.js';
import type { Points } from '../stats/rolling.js';
import { seriesFor } from '../runs/quantities.js';

/** Rounds of one role, in round order (rounds without a number last). */
export function roundsOf(run: RunState, role: Role): readonly RoundState[] {
  return run.roundsOf(role);
}

/** Recent values of a series in a round, oldest first (at most the kept history). */
export function recent(round: RoundState, name: string, n = Infinity): Points {
  const s = round.series.get(name);
  return s === undefined ? { steps: [], values: [] } : s.history.points(n);
}

/** The last `n` values of a series over the rounds of `role`, oldest first, across round boundaries. */
export function acrossRounds(
  run: RunState,
  role: Role,
  name: string,
  n: number,
): { values: number[]; steps: number[]; rounds: (number | null)[] } {
  const out = { values: [] as number[], steps: [] as number[], rounds: [] as (number | null)[] };
  const rounds = roundsOf(run, role).filter((r) => r.series.has(name));
  for (let i = rounds.length - 1; i >= 0 && out.values.length < n; i--) {
    const r = rounds[i]!;
    const p = recent(r, name, n - out.values.length);
    out.values.unshift(...p.values);
    out.steps.unshift(...p.steps);
    out.rounds.unshift(...p.values.map(() => r.round));
  }
  return out;
}

/** The series that carries "the reward" of a round (runs/quantities.ts says which spellings count). */
export function rewardSeries(round: RoundState): { name: string; stats: SeriesStats } | null {
  return seriesFor(round, 'reward');
}

/**
 * The steps a series covers in a round so far, first to last (a round's other files may be ahead
 * of it or behind: a train.log read before the reward_history.jsonl of the same steps), or null.
 */
export function seriesSpan(round: RoundState, name: string): { first: number; last: number; steps: number } | null {
  const s = round.series.get(name);
  const first = s?.curve.firstStep ?? undefined;
  if (s === undefined || first === undefined || s.lastStep === null) return null;
  return { first, last: s.lastStep, steps: s.lastStep - first + 1 };
}

/** Mean values of a series' whole-round curve over `parts` equal spans of `span` steps from the series' first step. */
export function segmentMeans(round: RoundState, name: string, span: number, parts: number): number[] | null {
  const curve = round.series.get(name)?.curve;
  const first = curve?.firstStep ?? null;
  if (curve === undefined || first === null) return null;
  const sums = new Array<number>(parts).fill(0);
  const counts = new Array<number>(parts).fill(0);
  for (let b = 0; b < curve.length; b++) {
    const mid = (curve.firstStepAt(b) + curve.lastStepAt(b)) / 2 - first;
    if (mid < 0 || mid >= span) continue;
    const i = Math.min(parts - 1, Math.floor((mid / span) * parts));
    sums[i]! += curve.meanAt(b) * curve.countAt(b);
    counts[i]! += curve.countAt(b);
  }
  if (counts.some((c) => c === 0)) return null;
  return sums.map((x, i) => x / counts[i]!);
}

/** The guide's mark for the accuracy on the selected evidence when c = 0.5: a fix should reach it. */
export const GUIDE_ACCURACY = 0.48;

/** The target accuracy c of a run: its config, else the paper's 0.5. */
export function targetOf(run: RunState): { c: number; source: string } {
  const c = run.settings.targetAccuracy;
  return c !== undefined ? { c, source: 'run config' } : { c: 0.5, source: 'default (paper)' };
}
