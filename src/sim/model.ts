/**
 * A small but real BAR-RAG world (docs/simulator.md): questions with a latent difficulty,
 * candidate documents with relevance and informativeness, a generator whose chance of answering
 * depends on its skill, the question and the evidence, and a selector policy over evidence sets
 * trained with group-normalised policy gradient on the paper's reward. Nothing here knows about
 * barwatch's detectors: the pathologies come from these dynamics and the knobs.
 */
import { normal } from './random.js';

export interface Knobs {
  /** K: generator rollouts per selected evidence set (p is estimated from them). */
  rollouts: number;
  /** c: the accuracy the boundary reward aims at. */
  target: number;
  weights: { boundary: number; relevance: number; format: number; count: number };
  /** The pre-training filter drops questions at or above `easy` and at or below `unsolvable`. */
  easy: number;
  unsolvable: number;
  selectorLr: number;
  generatorLr: number;
  /** False: the generator trains, but the next round starts from the old weights (a lost checkpoint). */
  updateGenerator: boolean;
  /** Selector updates between the weights that sampled a step's outputs and the weights they update (asynchronous rollouts). */
  rolloutLag: number;
}

export const DOCS = 6;
/** Every evidence set of one to three of a question's documents. */
export const SETS: number[][] = (() => {
  const out: number[][] = [];
  for (let a = 0; a < DOCS; a++) {
    out.push([a]);
    for (let b = a + 1; b < DOCS; b++) {
      out.push([a, b]);
      for (let c = b + 1; c < DOCS; c++) out.push([a, b, c]);
    }
  }
  return out;
})();
/** Features of a set the selector sees: evidence strength, strength x difficulty hint, relevance, size. */
export const FEATURES = 4;

export interface Question {
  id: number;
  /** Latent difficulty (the generator's skill must beat it). */
  difficulty: number;
  /** What the selector sees of the difficulty: a noisy hint. */
  hint: number;
  relevance: number[];
  informativeness: number[];
  /** Per set: how strongly it supports the answer, in [0, 1]. */
  strength: Float64Array;
  features: Float64Array[];
}

export function makeQuestions(r: () => number, n: number, firstId = 0): Question[] {
  const out: Question[] = [];
  for (let i = 0; i < n; i++) {
    const difficulty = 1.2 + 0.45 * normal(r);
    const relevance = Array.from({ length: DOCS }, () => r());
    // Relevant documents tend to help; some relevant ones are distractors that do not.
    const informativeness = relevance.map((rel) => Math.min(1, Math.max(0, rel * (r() < 0.3 ? 0.2 : 0.6 + 0.6 * r()))));
    const hint = difficulty + 0.5 * normal(r);
    const strength = new Float64Array(SETS.length);
    const features: Float64Array[] = [];
    SETS.forEach((set, j) => {
      let miss = 1;
      let rel = 0;
      for (const d of set) {
        miss *= 1 - informativeness[d]!;
        rel += relevance[d]!;
      }
      strength[j] = 1 - miss;
      features.push(Float64Array.of(strength[j], strength[j] * hint, rel / set.length, set.length / 3));
    });
    out.push({ id: firstId + i, difficulty, hint, relevance, informativeness, strength, features });
  }
  return out;
}

/** Pre-filter accuracy from which a question counts as mastered, and the share a batch needs. */
export const MASTERED_ACC = 0.6;
const MASTERED_NEEDED = 0.15;

const sigmoid = (x: number): number => 1 / (1 + Math.exp(-x));

/** The generator: one skill; its chance of answering rises with skill and evidence strength. */
export class Generator {
  constructor(public skill = 0) {}

  p(q: Question, set: number): number {
    return sigmoid(1.6 * (this.skill - q.difficulty) + 8 * (q.strength[set]! - 0.5));
  }

  /** Correct answers out of k. */
  sample(r: () => number, q: Question, set: number, k: number): number {
    const p = this.p(q, set);
    let n = 0;
    for (let i = 0; i < k; i++) if (r() < p) n++;
    return n;
  }

  /**
   * One fine-tuning step on a batch answered with the selector's evidence: answers near the
   * boundary teach the most (p(1-p)); a batch in which fewer than MASTERED_NEEDED of the questions
   * are mastered ones (pre-filter accuracy MASTERED_ACC or more) makes it forget what it knew: no
   * replay of what it can already do (a stand-in for catastrophic forgetting).
   */
  train(ps: number[], mastered: number, lr: number): void {
    let learn = 0;
    for (const p of ps) learn += 4 * p * (1 - p);
    learn /= ps.length;
    const forget = Math.max(0, MASTERED_NEEDED - mastered) / MASTERED_NEEDED;
    this.skill += lr * (learn - 2 * forget);
  }
}

export interface Action {
  set: number;
  wellFormed: boolean;
}

/** Sharpness of the selector's preference for sets whose strength is near its aim. */
const AIM_SHARPNESS = 8;
/** The box the weights are kept in (a stand-in for the KL penalty that keeps a policy near its reference). */
const THETA_BOX = 1;
const AIM_MIN = -0.2;
const AIM_MAX = 1.2;
const PSI = FEATURES;
const AIM = FEATURES + 1;

/**
 * The selector: a softmax over evidence sets with logits theta . phi(set) - s (strength - aim)^2,
 * plus a learnable chance of a well-formed answer. `aim` is the evidence strength it reaches for:
 * the lever that moves the generator's accuracy on its evidence toward (or past) c.
 */
export class Selector {
  /** theta (one weight per feature), psi (the format logit), aim. */
  readonly params = new Float64Array(FEATURES + 2);

  constructor(private readonly lr: number) {
    this.params[PSI] = -0.5;
    this.params[AIM] = 0.6;
  }

  /** The policy under `params` (the current weights, or the older ones a rollout worker still holds). */
  probs(q: Question, params: Float64Array = this.params): Float64Array {
    const out = new Float64Array(SETS.length);
    let max = -Infinity;
    for (let j = 0; j < SETS.length; j++) {
      let z = -AIM_SHARPNESS * (q.strength[j]! - params[AIM]!) ** 2;
      for (let f = 0; f < FEATURES; f++) z += params[f]! * q.features[j]![f]!;
      out[j] = z;
      if (z > max) max = z;
    }
    let sum = 0;
    for (let j = 0; j < out.length; j++) sum += out[j] = Math.exp(out[j]! - max);
    for (let j = 0; j < out.length; j++) out[j]! /= sum;
    return out;
  }

  formatP(params: Float64Array = this.params): number {
    return sigmoid(params[PSI]!);
  }

  act(r: () => number, probs: Float64Array, formatP = this.formatP()): Action {
    let u = r();
    let set = probs.length - 1;
    for (let j = 0; j < probs.length; j++) {
      u -= probs[j]!;
      if (u <= 0) {
        set = j;
        break;
      }
    }
    return { set, wellFormed: r() < formatP };
  }

  /**
   * One policy-gradient step (plain SGD) from outputs sampled under `probs` and `formatP`, with
   * advantages already group-normalised. When those came from older weights (asynchronous
   * rollouts), the step answers what the policy was doing a few updates ago: delayed feedback,
   * stable at a small learning rate and swinging past the optimum and back at a large one.
   */
  update(batch: { q: Question; probs: Float64Array; actions: Action[]; advantages: number[] }[], formatP: number): void {
    const grad = new Float64Array(FEATURES + 2);
    let n = 0;
    for (const { q, probs, actions, advantages } of batch) {
      const mean = new Float64Array(FEATURES);
      let meanStrength = 0;
      for (let j = 0; j < SETS.length; j++) {
        meanStrength += probs[j]! * q.strength[j]!;
        for (let f = 0; f < FEATURES; f++) mean[f]! += probs[j]! * q.features[j]![f]!;
      }
      actions.forEach((a, i) => {
        const adv = advantages[i]!;
        for (let f = 0; f < FEATURES; f++) grad[f]! += adv * (q.features[a.set]![f]! - mean[f]!);
        grad[PSI]! += adv * ((a.wellFormed ? 1 : 0) - formatP);
        grad[AIM]! += adv * 2 * AIM_SHARPNESS * (q.strength[a.set]! - meanStrength);
        n++;
      });
    }
    const p = this.params;
    for (let i = 0; i < p.length; i++) p[i] = p[i]! + (this.lr * grad[i]!) / n;
    for (let f = 0; f < FEATURES; f++) p[f] = Math.min(THETA_BOX, Math.max(-THETA_BOX, p[f]!));
    p[AIM] = Math.min(AIM_MAX, Math.max(AIM_MIN, p[AIM]!));
  }
}

export interface Rewards {
  boundary: number;
  relevance: number;
  format: number;
  count: number;
}

/** The paper's reward for one selector output, from k generator rollouts. */
export function reward(
  r: () => number,
  gen: Generator,
  q: Question,
  a: Action,
  k: Knobs,
): { rewards: Rewards; total: number; pHat: number | null } {
  if (!a.wellFormed) {
    const rewards = { boundary: 0, relevance: 0, format: 0, count: 0 };
    return { rewards, total: 0, pHat: null };
  }
  const pHat = gen.sample(r, q, a.set, k.rollouts) / k.rollouts;
  const set = SETS[a.set]!;
  const rewards: Rewards = {
    boundary: Math.min(pHat / k.target, (1 - pHat) / (1 - k.target)),
    relevance: set.reduce((s, d) => s + q.relevance[d]!, 0) / set.length,
    format: 1,
    count: -(set.length - 1) / 2,
  };
  const w = k.weights;
  return {
    rewards,
    total: w.boundary * rewards.boundary + w.relevance * rewards.relevance + w.format * rewards.format + w.count * rewards.count,
    pHat,
  };
}

/** The set the filter and the generator's evaluation use: the three most relevant documents. */
export function topRelevant(q: Question): number {
  const order = [...q.relevance.keys()]
    .sort((a, b) => q.relevance[b]! - q.relevance[a]!)
    .slice(0, 3)
    .sort((a, b) => a - b);
  return SETS.findIndex((s) => s.length === 3 && s.every((d, i) => d === order[i]));
}
