/**
 * Thresholds for the pre-training filter, computed from the run's own pre-filter accuracy
 * histogram: the easy/unsolvable pair that puts the post-filter boundary share (accuracy in
 * [0.4, 0.6]) inside the band, keeping as many questions as possible and moving the current
 * thresholds as little as possible.
 */
import { GRID, type FilterStats } from '../runs/filter.js';

export interface ThresholdSuggestion {
  easy: number;
  unsolvable: number;
  share: number;
  kept: number;
  total: number;
}

/**
 * Kept questions are those with unsolvable < accuracy < easy; candidates are on the 0.05 grid,
 * where FilterStats counts exactly.
 * Returns null when no pair reaches the band (the histogram has too few boundary questions).
 */
export function suggestThresholds(
  f: FilterStats,
  band: [number, number],
  current: { easy?: number; unsolvable?: number },
): ThresholdSuggestion | null {
  const total = f.preN;
  if (total === 0) return null;
  // Aim at the middle half of the band first (25-35% -> 27.5-32.5%), so the result does not sit
  // on an edge that the next run's histogram can push it over; the whole band only if that fails.
  const quarter = (band[1] - band[0]) / 4;
  return pick(f, [band[0] + quarter, band[1] - quarter], current) ?? pick(f, band, current);
}

function pick(f: FilterStats, band: [number, number], current: { easy?: number; unsolvable?: number }): ThresholdSuggestion | null {
  const total = f.preN;
  let best: (ThresholdSuggestion & { cost: number }) | null = null;
  const mid = (band[0] + band[1]) / 2;
  for (let u = 0; u <= 8; u++) {
    for (let e = 12; e <= GRID; e++) {
      const { kept, boundary } = f.keptWith(u / GRID, e / GRID);
      if (kept === 0) continue;
      const share = boundary / kept;
      if (share < band[0] || share > band[1]) continue;
      const move = Math.abs(e / GRID - (current.easy ?? 0.8)) + Math.abs(u / GRID - (current.unsolvable ?? 0.2));
      // Keep questions first, then stay near the middle of the band, then move little.
      const cost = -kept / total + 0.5 * Math.abs(share - mid) + 0.2 * move;
      if (best === null || cost < best.cost) best = { easy: e / GRID, unsolvable: u / GRID, share, kept, total, cost };
    }
  }
  if (best === null) return null;
  const { cost: _cost, ...s } = best;
  void _cost;
  return s;
}

export function describeSuggestion(s: ThresholdSuggestion, current: { easy?: number; unsolvable?: number }): string {
  const set = (name: string, now: number | undefined, next: number): string =>
    now === next ? `keep ${name} at ${next}` : `set ${name} ${now === undefined ? '' : `${now} -> `}${next}`;
  const text = `${set('easy_threshold', current.easy, s.easy)} and ${set('unsolvable_threshold', current.unsolvable, s.unsolvable)}`;
  return `${text[0]!.toUpperCase()}${text.slice(1)}: on this run's pre-filter accuracies that keeps ${s.kept} of ${s.total} questions with a boundary share of ${(s.share * 100).toFixed(0)}%.`;
}
