/**
 * Healthy boundary-reward rounds with no oscillation, for boundary-oscillation's false-positive
 * rate (scripts/noise-fp.ts prints it; test/detectors.test.ts holds it at zero on a sample).
 */
import { boundaryOscillationDefaults, judgeSpan } from '../../src/detectors/boundary-oscillation.js';
import { normal, rng } from '../../src/sim/random.js';

export interface NoiseModel {
  name: string;
  /** Noise sd (marginal). */
  sd: number;
  /** AR(1) coefficient (0: white). */
  phi: number;
  /** The mean curve at x in [0, 1]. */
  mean: (x: number) => number;
}

const flat = (): number => 0.6;
const linear = (x: number): number => 0.5 + 0.15 * x;
/** A fast rise that levels off: what a linear detrend of a window leaves as a slow bend. */
const saturating = (x: number): number => 0.45 + 0.3 * (1 - Math.exp(-x / 0.25));

export const NOISE_MODELS: NoiseModel[] = [
  { name: 'white sd 0.07, flat', sd: 0.07, phi: 0, mean: flat },
  { name: 'white sd 0.07, linear ramp +0.15', sd: 0.07, phi: 0, mean: linear },
  { name: 'white sd 0.07, saturating ramp +0.3', sd: 0.07, phi: 0, mean: saturating },
  { name: 'AR(1) 0.4 sd 0.07, flat', sd: 0.07, phi: 0.4, mean: flat },
  { name: 'AR(1) 0.4 sd 0.07, saturating ramp', sd: 0.07, phi: 0.4, mean: saturating },
  { name: 'AR(1) 0.7 sd 0.07, flat', sd: 0.07, phi: 0.7, mean: flat },
  { name: 'AR(1) 0.7 sd 0.07, saturating ramp', sd: 0.07, phi: 0.7, mean: saturating },
  { name: 'white sd 0.1, linear ramp', sd: 0.1, phi: 0, mean: linear },
  { name: 'AR(1) 0.4 sd 0.1, linear ramp', sd: 0.1, phi: 0.4, mean: linear },
];

/** One round of `steps` values of a model. */
export function noiseRound(m: NoiseModel, steps: number, seed: number): number[] {
  const r = rng(seed * 2654435761 + 99);
  const out: number[] = [];
  let e = normal(r);
  for (let s = 0; s < steps; s++) {
    e = m.phi * e + Math.sqrt(1 - m.phi * m.phi) * normal(r);
    out.push(m.mean(s / (steps - 1)) + m.sd * e);
  }
  return out;
}

export interface NoiseResult {
  evaluations: number;
  windows: number;
  firingEvaluations: number;
  firingRounds: number;
}

/** Judges each round as the detector does while it grows: every `every` steps once a full span is there. */
export function noiseFalsePositives(
  m: NoiseModel,
  rounds: number,
  steps: number,
  p = boundaryOscillationDefaults,
  every = 16,
): NoiseResult {
  const hop = Math.floor(p.window / 2);
  const span = p.window + (p.windows - 1) * hop;
  const res: NoiseResult = { evaluations: 0, windows: 0, firingEvaluations: 0, firingRounds: 0 };
  for (let i = 0; i < rounds; i++) {
    const values = noiseRound(m, steps, i + 1);
    let fired = false;
    for (let end = span; end <= steps; end += every) {
      res.evaluations++;
      res.windows += p.windows;
      if (judgeSpan(values.slice(0, end), p) !== null) {
        res.firingEvaluations++;
        fired = true;
      }
    }
    if (fired) res.firingRounds++;
  }
  return res;
}
