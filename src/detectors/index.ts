/** Every detector, in one list (SPEC 4). The ids are a contract. */
import { boundaryOscillation } from './boundary-oscillation.js';
import { boundaryShareHigh } from './boundary-share-high.js';
import { boundaryShareLow } from './boundary-share-low.js';
import { formatDominance } from './format-dominance.js';
import { frozenGenerator } from './frozen-generator.js';
import { generatorRegression } from './generator-regression.js';
import { generatorStall } from './generator-stall.js';
import { lowRollouts } from './low-rollouts.js';
import { nonfiniteReward } from './nonfinite-reward.js';
import { rewardCollapse } from './reward-collapse.js';
import { roundRegression } from './round-regression.js';
import { staleRun } from './stale-run.js';
import type { Detector } from './types.js';

export const DETECTORS: readonly Detector[] = [
  boundaryOscillation,
  formatDominance,
  boundaryShareLow,
  boundaryShareHigh,
  lowRollouts,
  generatorStall,
  generatorRegression,
  frozenGenerator,
  roundRegression,
  staleRun,
  nonfiniteReward,
  rewardCollapse,
];

/** The detector ids, in the order of DETECTORS. */
export const DETECTOR_IDS: readonly string[] = DETECTORS.map((d) => d.id);
