/**
 * Signal share per reward component (SPEC 4): abs(w_i) * sd_i / sum_j abs(w_j) * sd_j over the
 * rolling window. sd_i is the logged within-step spread (`<component>_std`, what GRPO's group
 * normalisation sees) when the trainer logs it, else the spread of the per-step values.
 */
import { COMPONENTS, type Component } from '../parsers/types.js';
import type { RoundState } from './round.js';

/** Paper defaults (l_bdy 1.0, l_rel 0.2, count subtracted with weight 1); an additive format term counts 1. */
export const DEFAULT_WEIGHTS: Record<Component, number> = { boundary: 1.0, relevance: 0.2, format: 1.0, count: 1.0 };

/** `<component>_std` of each component, made once: judged at every few records of every run. */
const STD_NAMES = Object.fromEntries(COMPONENTS.map((c) => [c, `${c}_std`])) as Record<Component, string>;

export interface SignalShare {
  weights: Record<Component, number>;
  sd: Partial<Record<Component, number>>;
  share: Partial<Record<Component, number>>;
  /** `within-step` when the logged `<component>_std` was used, `across-steps` otherwise. */
  spread: Partial<Record<Component, 'within-step' | 'across-steps'>>;
  /** var(boundary) / var(format), the guide's 5x rule; null when either is missing or zero. */
  varianceRatio: number | null;
  window: number;
}

/** Signal shares of the components this round logs; null when fewer than two are present. */
export function signalShares(round: RoundState, weights: Partial<Record<Component, number>> = {}): SignalShare | null {
  const w: Record<Component, number> = { ...DEFAULT_WEIGHTS, ...weights };
  const sd: Partial<Record<Component, number>> = {};
  const spread: SignalShare['spread'] = {};
  let window = 0;
  for (const c of COMPONENTS) {
    const within = round.series.get(STD_NAMES[c]);
    const values = round.series.get(c);
    if (within !== undefined && within.window.n > 0) {
      sd[c] = Math.abs(within.window.mean);
      spread[c] = 'within-step';
      window = Math.max(window, within.window.n);
    } else if (values !== undefined && values.window.n > 1) {
      sd[c] = values.window.sd;
      spread[c] = 'across-steps';
      window = Math.max(window, values.window.n);
    }
  }
  const present = Object.keys(sd) as Component[];
  if (present.length < 2) return null;
  let total = 0;
  for (const c of present) total += Math.abs(w[c]) * sd[c]!;
  const share: Partial<Record<Component, number>> = {};
  for (const c of present) share[c] = total > 0 ? (Math.abs(w[c]) * sd[c]!) / total : 0;
  const vb = sd.boundary;
  const vf = sd.format;
  const varianceRatio = vb !== undefined && vf !== undefined && vf > 0 ? (vb * vb) / (vf * vf) : null;
  return { weights: w, sd, share, spread, varianceRatio, window };
}
