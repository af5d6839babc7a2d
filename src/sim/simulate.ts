/**
 * `barwatch simulate`: runs the alternating training of model.ts and writes it, as it goes, in
 * the canonical layout of SPEC 3.1: configs, then per round the selector's and the generator's
 * reward_history.jsonl and train.log (with [filter], [eval] and rollout lines).
 */
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setImmediate as yieldNow, setTimeout as sleep } from 'node:timers/promises';
import {
  Generator,
  makeQuestions,
  MASTERED_ACC,
  reward,
  Selector,
  topRelevant,
  type Action,
  type Knobs,
  type Question,
  type Rewards,
} from './model.js';
import { rng } from './random.js';
import { knobsOf, type SimScenarioName } from './scenarios.js';

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
  /** Called after every step. */
  onStep?: (p: { role: 'selector' | 'generator'; round: number; step: number; boundary?: number; accuracy: number }) => void;
  signal?: AbortSignal;
}

const f4 = (x: number): number => Math.round(x * 1e4) / 1e4;

function meanSd(xs: number[]): { mean: number; sd: number } {
  if (xs.length === 0) return { mean: 0, sd: 0 };
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const v = xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length;
  return { mean, sd: Math.sqrt(v) };
}

export async function simulate(outDir: string, o: SimulateOptions): Promise<void> {
  const k = knobsOf(o.scenario, o.override);
  const r = rng(o.seed * 2654435761 + 17);
  const file = (p: string): string => path.join(outDir, p);
  const append = (p: string, text: string): void => appendFileSync(file(p), text);
  const stamp = (): string => new Date().toISOString().slice(0, 19).replace('T', ' ');
  const pace = async (): Promise<void> => {
    if (o.signal?.aborted) throw new Error('simulation stopped');
    if (o.speed === null) await yieldNow();
    else await sleep(1000 / o.speed);
  };

  mkdirSync(file('configs'), { recursive: true });
  writeFileSync(
    file('configs/filter_config.yaml'),
    `easy_threshold: ${k.easy}\nunsolvable_threshold: ${k.unsolvable}\nrollouts: ${k.rollouts}\nselector_samples: ${FILTER_SAMPLES}\n`,
  );
  writeFileSync(
    file('configs/reward_config.yaml'),
    `weights: {boundary: ${k.weights.boundary}, relevance: ${k.weights.relevance}, format: ${k.weights.format}, count: ${k.weights.count}}\ntarget_accuracy: ${k.target}\nrollouts: ${k.rollouts}\nselector_lr: ${k.selectorLr}\ngenerator_lr: ${k.generatorLr}\n`,
  );

  const gen = new Generator(0);
  const sel = new Selector(k.selectorLr);
  const pool = makeQuestions(r, 600);
  const evalSet = makeQuestions(r, 100, 10_000);

  // The pre-training filter: N evidence sets from the initial selector, K rollouts each.
  const acc = new Map<Question, number>();
  let filterLog = '';
  const train: Question[] = [];
  for (const q of pool) {
    const probs = sel.probs(q);
    let right = 0;
    for (let i = 0; i < FILTER_SAMPLES; i++) right += gen.sample(r, q, sel.act(r, probs).set, k.rollouts);
    const a = right / (FILTER_SAMPLES * k.rollouts);
    acc.set(q, a);
    const keep = a > k.unsolvable && a < k.easy;
    if (keep) train.push(q);
    filterLog += `[filter] id=q${q.id} acc=${f4(a)} kept=${keep}\n`;
  }
  filterLog += `[filter] before=${pool.length} after=${train.length}\n`;
  if (train.length === 0) throw new Error('the filter kept no question');
  const pick = (): Question => train[Math.floor(r() * train.length)]!;

  for (let round = 1; round <= o.rounds; round++) {
    const selDir = `outputs/selector_round${round}`;
    mkdirSync(file(selDir), { recursive: true });
    append(
      `${selDir}/train.log`,
      `[${stamp()}] selector round ${round}: GRPO, ${BATCH} questions x ${GROUP} samples per step, rollouts=${k.rollouts}\n`,
    );
    if (round === 1) append(`${selDir}/train.log`, filterLog);
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
      append(
        `${selDir}/reward_history.jsonl`,
        JSON.stringify({
          step: s,
          boundary: f4(m.boundary.mean),
          relevance: f4(m.relevance.mean),
          format: f4(m.format.mean),
          count: f4(m.count.mean),
          total: f4(t.mean),
          accuracy: f4(accuracy),
          boundary_std: f4(m.boundary.sd),
          relevance_std: f4(m.relevance.sd),
          format_std: f4(m.format.sd),
          count_std: f4(m.count.sd),
          total_std: f4(t.sd),
          rollouts: k.rollouts,
          time: new Date().toISOString(),
        }) + '\n',
      );
      append(
        `${selDir}/train.log`,
        `[${stamp()}] step=${s} reward=${f4(t.mean)} boundary=${f4(m.boundary.mean)} format_p=${f4(sel.formatP())}\n`,
      );
      o.onStep?.({ role: 'selector', round, step: s, boundary: m.boundary.mean, accuracy });
      await pace();
    }

    const genDir = `outputs/generator_round${round}`;
    mkdirSync(file(genDir), { recursive: true });
    append(
      `${genDir}/train.log`,
      `[${stamp()}] generator round ${round}: fine-tuning on the selector's evidence, rollouts=${k.rollouts}\n`,
    );
    const skillBefore = gen.skill;
    for (let s = 1; s <= GENERATOR_STEPS; s++) {
      const ps: number[] = [];
      let mastered = 0;
      let correct = 0;
      for (let b = 0; b < GEN_BATCH; b++) {
        const q = pick();
        const a = sel.act(r, sel.probs(q));
        ps.push(gen.p(q, a.set));
        correct += gen.sample(r, q, a.set, 1);
        if (acc.get(q)! >= MASTERED_ACC) mastered++;
      }
      gen.train(ps, mastered / GEN_BATCH, k.generatorLr);
      let right = 0;
      for (const q of evalSet) right += gen.sample(r, q, topRelevant(q), 1);
      const evalAcc = right / evalSet.length;
      append(
        `${genDir}/reward_history.jsonl`,
        JSON.stringify({ step: s, reward: f4(correct / GEN_BATCH), accuracy: f4(evalAcc), time: new Date().toISOString() }) + '\n',
      );
      append(`${genDir}/train.log`, `[${stamp()}] step=${s} loss=${f4(1 - correct / GEN_BATCH)}\n`);
      o.onStep?.({ role: 'generator', round, step: s, accuracy: evalAcc });
      await pace();
    }
    let right = 0;
    for (const q of evalSet) for (let i = 0; i < 4; i++) right += gen.sample(r, q, topRelevant(q), 1);
    append(`${genDir}/train.log`, `[eval] round=${round} accuracy=${f4(right / (4 * evalSet.length))}\n`);
    // A lost checkpoint: the next round loads the weights this round started from.
    if (!k.updateGenerator) gen.skill = skillBefore;
  }
  mkdirSync(file('outputs'), { recursive: true });
  append('outputs/train_finished.log', `[${stamp()}] Training finished after ${o.rounds} rounds\n`);
}
