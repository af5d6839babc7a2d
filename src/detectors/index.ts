/**
 * Every detector, in one list. The ids are a contract. First BAR-RAG's own failure modes, then
 * how GRPO / PPO training of a language model fails in general (any run, any role).
 */
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
import { entropyBlowup } from './entropy-blowup.js';
import { entropyCollapse } from './entropy-collapse.js';
import { gradSpike } from './grad-spike.js';
import { klBlowup } from './kl-blowup.js';
import { lengthAtLimit } from './length-at-limit.js';
import { lengthCollapse } from './length-collapse.js';
import { noLearningSignal } from './no-learning-signal.js';
import { nonfiniteMetric } from './nonfinite-metric.js';
import { rewardDrop } from './reward-drop.js';
import { rewardHacking } from './reward-hacking.js';
import { rolloutMismatch } from './rollout-mismatch.js';
import { runCrashed } from './run-crashed.js';
import { runStoppedShort } from './run-stopped-short.js';
import { validationDecline } from './validation-decline.js';
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
  noLearningSignal,
  rewardDrop,
  entropyCollapse,
  entropyBlowup,
  klBlowup,
  lengthCollapse,
  lengthAtLimit,
  gradSpike,
  nonfiniteMetric,
  validationDecline,
  runCrashed,
  runStoppedShort,
  rolloutMismatch,
  rewardHacking,
];

/** The detector ids, in the order of DETECTORS. */
export const DETECTOR_IDS: readonly string[] = DETECTORS.map((d) => d.id);

const CLEARED = new Map(DETECTORS.map((d) => [d.id, d.cleared]));

/**
 * The message of a resolved alert: what changed, then what the finding had said. `movedTo`: the
 * finding moved on to another round (a run-wide finding), whose alert fires instead.
 */
export function resolvedMessage(f: { detector: string; message: string }, movedTo?: number | null): string {
  const what =
    movedTo !== undefined
      ? `moved on to ${movedTo === null ? 'the run as a whole' : `round ${movedTo}`}, where it fires now`
      : (CLEARED.get(f.detector) ?? 'the finding no longer holds');
  return `${what[0]!.toUpperCase()}${what.slice(1)}. It had said: ${f.message}`;
}
