/** The simulator's scenarios: each sets knobs only; what goes wrong comes from the dynamics. */
import type { Knobs } from './model.js';

export const BASE: Knobs = {
  rollouts: 8,
  target: 0.5,
  weights: { boundary: 1.0, relevance: 0.2, format: 0.2, count: 0.1 },
  easy: 0.9,
  unsolvable: 0.1,
  selectorLr: 0.1,
  generatorLr: 0.01,
  updateGenerator: true,
  rolloutLag: 4,
};

export interface SimScenario {
  knobs: Partial<Knobs>;
  /** What the knob is, in words (for the demo and docs). */
  change: string;
  /** The detector ids barwatch must report on a finished run. */
  expected: string[];
  /** Ids it may report as well, with why (nothing else may appear). */
  mayAlso?: { ids: string[]; why: string };
  /** The knobs that fix it (the demo's second run). */
  fix: Partial<Knobs>;
}

export const SIM_SCENARIOS = {
  healthy: { knobs: {}, change: 'nothing', expected: [], fix: {} },
  'few-rollouts': {
    knobs: { rollouts: 2 },
    change: 'K = 2 generator rollouts per evidence set',
    expected: ['low-rollouts'],
    mayAlso: {
      ids: ['generator-regression'],
      why: 'a boundary reward that is mostly noise can walk the selector to harder evidence, and the accuracy on it falls',
    },
    fix: { rollouts: 8 },
  },
  'format-heavy': {
    knobs: { weights: { ...BASE.weights, format: 3.0 } },
    change: 'format weight 3.0, three times the boundary weight',
    expected: ['format-dominance'],
    fix: { weights: BASE.weights },
  },
  'aggressive-filter': {
    knobs: { easy: 0.42, unsolvable: 0.05 },
    change: 'filter drops every question the generator answers 42% of the time or more',
    expected: ['boundary-share-low', 'generator-regression', 'generator-stall'],
    mayAlso: {
      ids: ['reward-collapse', 'reward-drop'],
      why: "once the generator answers almost nothing on the hard questions left, every output earns about zero; before that, the generator's own reward falls by a third or more with its accuracy",
    },
    fix: { easy: BASE.easy, unsolvable: BASE.unsolvable },
  },
  'loose-filter': {
    knobs: { easy: 0.6, unsolvable: 0.4 },
    change: 'filter keeps only questions answered 40%-60% of the time',
    expected: ['boundary-share-high', 'generator-regression', 'generator-stall'],
    mayAlso: {
      ids: ['round-regression', 'reward-collapse', 'reward-drop'],
      why: "without replay the generator can keep falling round after round: the next selector round then earns less boundary reward with more spread, the generator's own reward falls with its accuracy, and once it answers almost nothing every output earns about zero",
    },
    fix: { easy: BASE.easy, unsolvable: BASE.unsolvable },
  },
  'frozen-generator': {
    knobs: { updateGenerator: false },
    change: 'the generator trains, but every round starts from the first checkpoint',
    expected: ['frozen-generator'],
    fix: { updateGenerator: true },
  },
  'high-lr': {
    knobs: { selectorLr: 1.5 },
    change: 'selector learning rate 1.5, fifteen times the healthy one (rollouts are sampled 4 updates behind, as in every scenario)',
    expected: ['boundary-oscillation'],
    mayAlso: {
      ids: ['generator-regression', 'round-regression'],
      why: 'evidence that swings between too easy and too hard teaches the generator less than it forgets: its accuracy can fall in the last round, and a round whose swing starts late ends worse than the one before',
    },
    fix: { selectorLr: BASE.selectorLr },
  },
} satisfies Record<string, SimScenario>;

export type SimScenarioName = keyof typeof SIM_SCENARIOS;
export const SIM_SCENARIO_NAMES = Object.keys(SIM_SCENARIOS) as SimScenarioName[];

export function knobsOf(name: SimScenarioName, override: Partial<Knobs> = {}): Knobs {
  return { ...BASE, ...SIM_SCENARIOS[name].knobs, ...override };
}
