/**
 * `barwatch simulate`: runs the alternating training of model.ts and writes it, as it goes, in
 * the canonical layout of SPEC 3.1 (configs, then per round the selector's and the generator's
 * reward_history.jsonl and train.log with [filter], [eval] and rollout lines) or, with the W&B
 * logger, as BAR-RAG's official scripts leave it (writers.ts).
 */
import { setImmediate as yieldNow, setTimeout as sleep } from 'node:timers/promises';
import {
  Generator,
  makeQuestions,
  MASTERED_ACC,
  reward,
  Selector,
  SETS,
  topRelevant,
  type Action,
  type Knobs,
  type Question,
  type Rewards,
} from './model.js';
import { rng } from './random.js';
import { knobsOf, type SimScenarioName } from './scenarios.js';
import { CanonicalWriter, OfficialWriter, type SimLogger, type SimWriter } from './writers.js';

export const SELECTOR_STEPS = 160;
export const GENERATOR_STEPS = 80;
const BATCH = 8;
const GROUP = 8;
const GEN_BATCH = 16;
/** Selector samples per question in the pre-training filter (N), each with K rollouts. */
const FILTER_SAMPLES = 8;

export interface SimulateOptions {
  scenario: SimScenarioName;
  seed: number;
  rounds: number;
  /** Steps per second, or null: as fast as it can (still yielding between steps). */
  speed: number | null;
  /** Knobs over the scenario's (the demo's fix). */
  override?: Partial<Knobs>;
  /** How the training is written: the canonical layout (default), or W&B run files in the official layout. */
  logger?: SimLogger;
  /** Called after every step. */
  onStep?: (p: { role: 'selector' | 'generator'; round: number; step: number; boundary?: number; accuracy: number }) => void;
  signal?: AbortSignal;
}

function meanSd(xs: number[]): { mean: number; sd: number } {
  if (xs.length === 0) return { mean: 0, sd: 0 };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length;
  return { mean, sd: Math.sqrt(v) };
}

export async function simulate(outDir: string, o: SimulateOptions): Promise<void> {
  const k = knobsOf(o.scenario, o.override);
  const r = rng(o.seed * 2654435761 + 17);
  const w: SimWriter = o.logger === 'wandb' ? new OfficialWriter(outDir, o.seed) : new CanonicalWriter(outDir);
  const pace = async (): Promise<void> => {
    if (o.signal?.aborted) throw new Error('simulation stopped');
    if (o.speed === null) await yieldNow();
    else await sleep(1000 / o.speed);
  };

  w.configs(k, FILTER_SAMPLES);

  const gen = new Generator(0);
  const sel = new Selector(k.selectorLr);
  const pool = makeQuestions(r, 600);
  const evalSet = makeQuestions(r, 100, 10_000);

  // The pre-training filter: N evidence sets from the initial selector, K rollouts each.
  const acc = new Map<Question, number>();
  const judged: { id: number; acc: number; kept: boolean }[] = [];
  const train: Question[] = [];
  for (const q of pool) {
    const probs = sel.probs(q);
    let right = 0;
    for (let i = 0; i < FILTER_SAMPLES; i++) right += gen.sample(r, q, sel.act(r, probs).set, k.rollouts);
    const a = right / (FILTER_SAMPLES * k.rollouts);
    acc.set(q, a);
    const keep = a > k.unsolvable && a < k.easy;
    if (keep) train.push(q);
    judged.push({ id: q.id, acc: a, kept: keep });
  }
  w.filter(judged, train.length);
  if (train.length === 0) throw new Error('the filter kept no question');
  const pick = (): Question => train[Math.floor(r() * train.length)]!;

  for (let round = 1; round <= o.rounds; round++) {
    w.selectorStart(round, BATCH, GROUP);
    const snapshots: Float64Array[] = [];
    for (let s = 1; s <= SELECTOR_STEPS; s++) {
      snapshots.push(Float64Array.from(sel.params));
      if (snapshots.length > k.rolloutLag + 1) snapshots.shift();
      const stale = snapshots[0]!;
      const staleFormatP = sel.formatP(stale);
      const comps: Record<keyof Rewards, number[]> = { boundary: [], relevance: [], format: [], count: [] };
      const totals: number[] = [];
      const pHats: number[] = [];
      const batch: { q: Question; probs: Float64Array; actions: Action[]; advantages: number[] }[] = [];
      for (let b = 0; b < BATCH; b++) {
        const q = pick();
        const probs = sel.probs(q, stale);
        const actions: Action[] = [];
        const group: number[] = [];
        for (let g = 0; g < GROUP; g++) {
          const a = sel.act(r, probs, staleFormatP);
          const out = reward(r, gen, q, a, k);
          actions.push(a);
          group.push(out.total);
          totals.push(out.total);
          for (const c of Object.keys(comps) as (keyof Rewards)[]) comps[c].push(out.rewards[c]);
          if (out.pHat !== null) pHats.push(out.pHat);
          w.selectorSample(round, s, b, { rewards: out.rewards, total: out.total, pHat: out.pHat, docs: SETS[a.set]!.length });
        }
        const { mean, sd } = meanSd(group);
        batch.push({ q, probs, actions, advantages: group.map((x) => (x - mean) / (sd + 1e-6)) });
      }
      sel.update(batch, staleFormatP);
      const m = Object.fromEntries(Object.entries(comps).map(([c, xs]) => [c, meanSd(xs)])) as Record<
        keyof Rewards,
        { mean: number; sd: number }
      >;
      const t = meanSd(totals);
      const accuracy = meanSd(pHats).mean;
      const pick2 = (f: 'mean' | 'sd'): Rewards => ({
        boundary: m.boundary[f],
        relevance: m.relevance[f],
        format: m.format[f],
        count: m.count[f],
      });
      w.selectorStep(round, s, { means: pick2('mean'), sds: pick2('sd'), total: t, accuracy, formatP: sel.formatP() });
      o.onStep?.({ role: 'selector', round, step: s, boundary: m.boundary.mean, accuracy });
      await pace();
    }
    w.selectorEnd(round);

    w.generatorStart(round);
    const skillBefore = gen.skill;
    for (let s = 1; s <= GENERATOR_STEPS; s++) {
      const ps: number[] = [];
      let mastered = 0;
      let correct = 0;
      for (let b = 0; b < GEN_BATCH; b++) {
        const q = pick();
        const a = sel.act(r, sel.probs(q));
        ps.push(gen.p(q, a.set));
        const right = gen.sample(r, q, a.set, 1);
        correct += right;
        w.generatorAnswer(round, s, right > 0);
        if (acc.get(q)! >= MASTERED_ACC) mastered++;
      }
      gen.train(ps, mastered / GEN_BATCH, k.generatorLr);
      let right = 0;
      for (const q of evalSet) right += gen.sample(r, q, topRelevant(q), 1);
      const evalAcc = right / evalSet.length;
      w.generatorStep(round, s, { reward: correct / GEN_BATCH, accuracy: evalAcc });
      o.onStep?.({ role: 'generator', round, step: s, accuracy: evalAcc });
      await pace();
    }
    let right = 0;
    for (const q of evalSet) for (let i = 0; i < 4; i++) right += gen.sample(r, q, topRelevant(q), 1);
    w.generatorEnd(round, right / (4 * evalSet.length));
    // A lost checkpoint: the next round loads the weights this round started from.
    if (!k.updateGenerator) gen.skill = skillBefore;
  }
  w.finished(o.rounds);
}
