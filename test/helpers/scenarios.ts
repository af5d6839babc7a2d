/**
 * Runs with known properties, written in the canonical layout of SPEC 3.1, for the detector tests.
 * Each scenario is a list of writes (file, text) in the order a real run makes them: configs,
 * filter lines, then round after round the selector's and the generator's lines. writeScenario
 * writes them all at once; a writer process can replay them at a pace (test/helpers/replay.ts).
 *
 * The curves come from formulas plus noise (white for even seeds, AR(1) for odd seeds, which is
 * closer to real training curves); the properties of each scenario are in SCENARIOS below.
 */
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { normal, rng } from '../../src/sim/random.js';

export type ScenarioName =
  | 'healthy'
  | 'oscillating'
  | 'format-heavy'
  | 'aggressive-filter'
  | 'loose-filter'
  | 'few-rollouts'
  | 'frozen-generator'
  | 'stalled'
  | 'nan-rewards'
  | 'stale'
  | 'round-regression'
  | 'reward-collapse'
  | 'repeating-selector'
  | 'noisy-ramp'
  | 'falling-generator'
  | 'old-checkpoint';

/** The detector ids each scenario must produce, and nothing else. */
export const EXPECTED: Record<ScenarioName, string[]> = {
  healthy: [],
  oscillating: ['boundary-oscillation'],
  'format-heavy': ['format-dominance'],
  'aggressive-filter': ['boundary-share-low'],
  'loose-filter': ['boundary-share-high', 'generator-regression'],
  'few-rollouts': ['low-rollouts'],
  'frozen-generator': ['frozen-generator'],
  stalled: ['generator-stall'],
  'nan-rewards': ['nonfinite-reward'],
  stale: ['stale-run'],
  'round-regression': ['round-regression'],
  'reward-collapse': ['reward-collapse'],
  // Each selector round's boundary curve repeats the round before (same ramp, within noise) while
  // the generator learns: a repeating selector curve alone is no diagnosis.
  'repeating-selector': [],
  // A rising ramp with noise of sd 0.07 over 300 steps a round: no swing to report.
  'noisy-ramp': [],
  // A loose filter whose generator falls steadily within each round and from round to round.
  'falling-generator': ['boundary-share-high', 'generator-regression'],
  // The generator learns round after round, but every selector round repeats round 1 (its
  // rollouts load the first checkpoint): a warning asking to check, not a critical diagnosis.
  'old-checkpoint': ['frozen-generator'],
};

/**
 * Findings a scenario may give besides its expected ones, as consequences, with why (nothing else
 * may appear). Held to the same rule as the expected ones: live equals analyze.
 */
export const ALSO: Partial<Record<ScenarioName, { ids: string[]; why: string }>> = {
  'frozen-generator': {
    ids: ['generator-stall'],
    why: 'where every round repeats round 1, the accuracy on the selected evidence climbs from the same start each round and never nears c',
  },
  'old-checkpoint': {
    ids: ['generator-stall'],
    why: "the selector's rollouts answer as round 1's generator did, so its accuracy climbs from the same start each round",
  },
};

/** Whether a run gave every expected id and nothing beyond its scenario's ALSO. */
export function asExpectedScenario(o: { scenario: ScenarioName; ids: string[] }): boolean {
  const may = new Set([...EXPECTED[o.scenario], ...(ALSO[o.scenario]?.ids ?? [])]);
  return EXPECTED[o.scenario].every((id) => o.ids.includes(id)) && o.ids.every((id) => may.has(id));
}

export const SCENARIO_NAMES = Object.keys(EXPECTED) as ScenarioName[];

export interface Write {
  file: string;
  text: string;
  /** The trainer time of this write (ms). */
  time: number;
}

class Noise {
  private prev = 0;
  constructor(
    private readonly r: () => number,
    private readonly phi: number,
  ) {}

  /** A standard normal draw, AR(1)-correlated with coefficient phi, unit marginal variance. */
  next(): number {
    const z = normal(this.r);
    this.prev = this.phi * this.prev + Math.sqrt(1 - this.phi * this.phi) * z;
    return this.prev;
  }
}

interface RoundPlan {
  /** Boundary reward: level at the start, rise over the round, noise sd. */
  boundary: [number, number, number];
  /** Accuracy on the selected evidence: start, end, noise sd. */
  selAcc: [number, number, number];
  /** Generator accuracy: start, end, noise sd. */
  genAcc: [number, number, number];
  oscillation?: { amplitude: number; period: number };
  /** Steps from which the reward collapses to zero. */
  collapseAt?: number;
  nanAt?: number;
}

interface Plan {
  rounds: RoundPlan[];
  weights: { boundary: number; relevance: number; format: number; count: number };
  formatStd: number;
  k: number;
  easy: number;
  unsolvable: number;
  /** Omit generator round n (frozen generator). */
  skipGenerator?: number;
  /** Stop writing after this many selector steps of this round (stale run). */
  stopAt?: { round: number; step: number };
  /** How long ago the last write was (ms). */
  endsAgo: number;
  finished: boolean;
  /** Selector steps a round (default SEL_STEPS). */
  selSteps?: number;
  /** AR(1) coefficient of the noise (default: 0 for even seeds, 0.4 for odd). */
  phi?: number;
}

const SEL_STEPS = 160;
const GEN_STEPS = 80;
const INTERVAL = 30_000;

function healthyRounds(): RoundPlan[] {
  return [
    { boundary: [0.55, 0.03, 0.07], selAcc: [0.4, 0.44, 0.015], genAcc: [0.4, 0.43, 0.012] },
    { boundary: [0.64, 0.03, 0.055], selAcc: [0.44, 0.47, 0.015], genAcc: [0.43, 0.46, 0.012] },
    { boundary: [0.71, 0.02, 0.045], selAcc: [0.47, 0.49, 0.015], genAcc: [0.46, 0.49, 0.012] },
  ];
}

function plan(name: ScenarioName, r: () => number, seed: number): Plan {
  const base: Plan = {
    rounds: healthyRounds(),
    weights: { boundary: 1, relevance: 0.2, format: 0.5, count: 1 },
    formatStd: 0.08,
    k: 10,
    easy: 0.8,
    unsolvable: 0.2,
    endsAgo: 60_000,
    finished: true,
  };
  const rounds = base.rounds;
  switch (name) {
    case 'healthy':
      return base;
    case 'oscillating': {
      const period = 8 + Math.floor(r() * 13);
      for (const i of [1, 2]) {
        rounds[i]!.oscillation = { amplitude: 0.14 + 0.06 * r(), period };
        rounds[i]!.boundary[2] = 0.04;
      }
      return base;
    }
    case 'format-heavy':
      return { ...base, weights: { boundary: 0.5, relevance: 0.2, format: 1.5, count: 1 }, formatStd: 0.35 };
    case 'aggressive-filter':
      return { ...base, easy: 0.42, unsolvable: 0.05 };
    case 'loose-filter':
      return {
        ...base,
        easy: 0.62,
        unsolvable: 0.38,
        rounds: [
          { boundary: [0.55, 0.03, 0.07], selAcc: [0.48, 0.45, 0.015], genAcc: [0.48, 0.45, 0.012] },
          { boundary: [0.6, 0.03, 0.06], selAcc: [0.45, 0.42, 0.015], genAcc: [0.45, 0.42, 0.012] },
          { boundary: [0.65, 0.02, 0.05], selAcc: [0.42, 0.38, 0.015], genAcc: [0.42, 0.38, 0.012] },
        ],
      };
    case 'few-rollouts':
      for (const rp of rounds) rp.boundary[2] = 0.09;
      return { ...base, k: 2 };
    case 'frozen-generator':
      if (seed % 2 === 0) {
        // Generator round 2 never ran: selector round 3 aims at the round-1 generator again.
        rounds[2] = { ...rounds[1]!, boundary: [...rounds[1]!.boundary], selAcc: [...rounds[1]!.selAcc], genAcc: [...rounds[1]!.genAcc] };
        return { ...base, skipGenerator: 2, rounds: rounds.slice(0, 3) };
      }
      // Generator rounds ran but changed nothing: every round repeats round 1.
      return { ...base, rounds: [rounds[0]!, { ...rounds[0]! }, { ...rounds[0]! }] };
    case 'stalled':
      return {
        ...base,
        // The generator is updated (its own accuracy moves), but the accuracy on the evidence
        // the selector picks stays at 0.41 round after round.
        rounds: [
          { boundary: [0.48, 0.02, 0.06], selAcc: [0.41, 0.41, 0.015], genAcc: [0.38, 0.39, 0.012] },
          { boundary: [0.62, 0.02, 0.06], selAcc: [0.41, 0.41, 0.015], genAcc: [0.41, 0.42, 0.012] },
          { boundary: [0.54, 0.02, 0.06], selAcc: [0.41, 0.41, 0.015], genAcc: [0.43, 0.44, 0.012] },
        ],
      };
    case 'nan-rewards':
      rounds[1]!.nanAt = 20 + Math.floor(r() * 100);
      return base;
    case 'stale':
      return { ...base, stopAt: { round: 2, step: 90 + Math.floor(r() * 40) }, endsAgo: 2 * 3_600_000, finished: false };
    case 'round-regression':
      rounds[2] = { boundary: [0.55, 0.0, 0.11], selAcc: [0.47, 0.49, 0.015], genAcc: [0.46, 0.49, 0.012] };
      return base;
    case 'reward-collapse':
      rounds[2]!.collapseAt = 50 + Math.floor(r() * 40);
      return base;
    case 'repeating-selector': {
      // Noise levels 0.03-0.09 by seed; the selector's accuracy starts higher each round.
      const sd = [0.03, 0.05, 0.07, 0.09][seed % 4]!;
      return {
        ...base,
        rounds: [
          { boundary: [0.6, 0.04, sd], selAcc: [0.4, 0.43, 0.015], genAcc: [0.39, 0.42, 0.012] },
          { boundary: [0.6, 0.04, sd], selAcc: [0.43, 0.46, 0.015], genAcc: [0.42, 0.45, 0.012] },
          { boundary: [0.6, 0.04, sd], selAcc: [0.46, 0.49, 0.015], genAcc: [0.45, 0.48, 0.012] },
        ],
      };
    }
    case 'noisy-ramp':
      return {
        ...base,
        selSteps: 300,
        phi: 0,
        rounds: [
          // The accuracy climbs at the healthy run's pace per step (a slower climb over 300 steps
          // would be a slow start that generator-stall may rightly call).
          { boundary: [0.5, 0.1, 0.07], selAcc: [0.42, 0.48, 0.015], genAcc: [0.42, 0.47, 0.012] },
          { boundary: [0.6, 0.1, 0.07], selAcc: [0.46, 0.5, 0.015], genAcc: [0.46, 0.49, 0.012] },
          { boundary: [0.7, 0.08, 0.07], selAcc: [0.48, 0.5, 0.015], genAcc: [0.48, 0.5, 0.012] },
        ],
      };
    case 'old-checkpoint': {
      const sel = { boundary: [0.55, 0.03, 0.07], selAcc: [0.4, 0.44, 0.015] } as const;
      return {
        ...base,
        rounds: [
          { boundary: [...sel.boundary], selAcc: [...sel.selAcc], genAcc: [0.4, 0.43, 0.012] },
          { boundary: [...sel.boundary], selAcc: [...sel.selAcc], genAcc: [0.43, 0.46, 0.012] },
          { boundary: [...sel.boundary], selAcc: [...sel.selAcc], genAcc: [0.46, 0.49, 0.012] },
        ],
      };
    }
    case 'falling-generator':
      return {
        ...base,
        easy: 0.62,
        unsolvable: 0.38,
        rounds: [
          { boundary: [0.6, 0.02, 0.06], selAcc: [0.47, 0.44, 0.015], genAcc: [0.47, 0.44, 0.012] },
          { boundary: [0.6, 0.02, 0.06], selAcc: [0.44, 0.41, 0.015], genAcc: [0.44, 0.41, 0.012] },
          { boundary: [0.6, 0.02, 0.06], selAcc: [0.41, 0.38, 0.015], genAcc: [0.41, 0.38, 0.012] },
        ],
      };
  }
}

/**
 * Question accuracies for the filter: 80% over (0.15, 0.85), a little thinner in the middle (so a
 * filter at 0.2/0.8 keeps a boundary share near 30%), the rest easy or unsolvable.
 */
function questions(r: () => number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    let acc: number;
    if (r() < 0.8) {
      acc = 0.15 + 0.7 * r();
      if (acc >= 0.4 && acc <= 0.6 && r() < 0.15) acc = r() < 0.5 ? 0.15 + 0.25 * r() : 0.6 + 0.25 * r();
    } else acc = r() < 0.5 ? 0.15 * r() : 0.85 + 0.15 * r();
    out.push(Math.round(acc * 80) / 80); // N = 8 selector rollouts x K = 10 generator rollouts
  }
  return out;
}

const f4 = (x: number): string => (Number.isFinite(x) ? String(Math.round(x * 1e4) / 1e4) : String(x));

/** The writes of a scenario, oldest first; the last is `endsAgo` before `now`. */
export function scenarioWrites(name: ScenarioName, seed: number, now = Date.now()): Write[] {
  const r = rng((seed * 7919 + name.length) * 2654435761);
  const p = plan(name, r, seed);
  const noise = new Noise(r, p.phi ?? (seed % 2 === 1 ? 0.4 : 0));
  const selSteps = p.selSteps ?? SEL_STEPS;
  const steps = p.rounds.length * (selSteps + GEN_STEPS) + 2;
  let t = now - p.endsAgo - steps * INTERVAL;
  const out: Write[] = [];
  const w = (file: string, text: string): void => void out.push({ file, text, time: t });
  const iso = (): string => new Date(t).toISOString();

  w('configs/filter_config.yaml', `easy_threshold: ${p.easy}\nunsolvable_threshold: ${p.unsolvable}\nvar_min: 0.02\nrollouts: ${p.k}\n`);
  w(
    'configs/reward_config.yaml',
    `weights: {boundary: ${p.weights.boundary}, relevance: ${p.weights.relevance}, format: ${p.weights.format}, count: ${p.weights.count}}\ntarget_accuracy: 0.5\nrollouts: ${p.k}\n`,
  );
  const qs = questions(r, 2000);
  let filter = '';
  let kept = 0;
  for (const [i, acc] of qs.entries()) {
    const keep = acc > p.unsolvable && acc < p.easy;
    if (keep) kept++;
    filter += `[filter] id=q${i} acc=${acc} kept=${keep}\n`;
  }
  filter += `[filter] before=${qs.length} after=${kept}\n`;
  w('outputs/selector_round1/train.log', filter);

  for (const [i, rp] of p.rounds.entries()) {
    const round = i + 1;
    const selDir = `outputs/selector_round${round}`;
    for (let s = 1; s <= selSteps; s++) {
      if (p.stopAt !== undefined && round === p.stopAt.round && s > p.stopAt.step) return out;
      t += INTERVAL;
      const x = (s - 1) / (selSteps - 1);
      let b = rp.boundary[0] + rp.boundary[1] * x + rp.boundary[2] * noise.next();
      if (rp.oscillation !== undefined) b += rp.oscillation.amplitude * Math.sin((2 * Math.PI * s) / rp.oscillation.period);
      let acc = rp.selAcc[0] + (rp.selAcc[1] - rp.selAcc[0]) * x + rp.selAcc[2] * noise.next();
      const rel = 0.3 + 0.02 * noise.next();
      const fmt = Math.min(1, 0.93 + 0.03 * noise.next());
      const cnt = 0.1 + 0.02 * noise.next();
      let bStd = 0.25 + 0.02 * noise.next();
      let spread = 1;
      let total = p.weights.boundary * b + p.weights.relevance * rel + p.weights.format * fmt - p.weights.count * cnt;
      let totalStd = 0.3;
      if (rp.collapseAt !== undefined && s >= rp.collapseAt) {
        b = 0.002 * Math.abs(noise.next());
        total = 0.005 * Math.abs(noise.next());
        bStd = 0.001;
        totalStd = 0.002;
        spread = 0.01; // every sample gets the same reward: every component's spread is gone
      }
      if (rp.nanAt !== undefined && s >= rp.nanAt && s < rp.nanAt + 3) {
        b = NaN;
        total = NaN;
      }
      acc = Math.max(0, Math.min(1, acc));
      const rec = `{"step": ${s}, "boundary": ${f4(b)}, "relevance": ${f4(rel)}, "format": ${f4(fmt)}, "count": ${f4(-cnt)}, "total": ${f4(total)}, "accuracy": ${f4(acc)}, "boundary_share": ${f4(0.3 + 0.03 * noise.next())}, "boundary_std": ${f4(bStd)}, "relevance_std": ${f4(0.1 * spread)}, "format_std": ${f4(p.formatStd * spread)}, "count_std": ${f4(0.05 * spread)}, "total_std": ${f4(totalStd)}, "rollouts": ${p.k}, "time": "${iso()}"}\n`;
      w(`${selDir}/reward_history.jsonl`, rec);
      w(`${selDir}/train.log`, `[${iso().slice(0, 19).replace('T', ' ')}] step=${s} loss=${f4(0.5 - 0.1 * x)} rollouts=${p.k}\n`);
    }
    if (p.skipGenerator === round) continue;
    const genDir = `outputs/generator_round${round}`;
    for (let s = 1; s <= GEN_STEPS; s++) {
      t += INTERVAL;
      const x = (s - 1) / (GEN_STEPS - 1);
      const acc = rp.genAcc[0] + (rp.genAcc[1] - rp.genAcc[0]) * x + rp.genAcc[2] * noise.next();
      w(`${genDir}/reward_history.jsonl`, `{"step": ${s}, "reward": ${f4(acc + 0.05)}, "accuracy": ${f4(acc)}, "time": "${iso()}"}\n`);
    }
  }
  if (p.finished) {
    t += INTERVAL;
    w('outputs/train_finished.log', `[${iso().slice(0, 19).replace('T', ' ')}] Training finished after ${p.rounds.length} rounds\n`);
  }
  return out;
}

/** Writes a whole scenario under `dir`; file times are set to the last write of each file. */
export function writeScenario(dir: string, name: ScenarioName, seed: number, now = Date.now()): void {
  const byFile = new Map<string, { text: string[]; time: number }>();
  for (const w of scenarioWrites(name, seed, now)) {
    const e = byFile.get(w.file) ?? { text: [], time: w.time };
    e.text.push(w.text);
    e.time = w.time;
    byFile.set(w.file, e);
  }
  for (const [file, e] of byFile) {
    const abs = path.join(dir, file);
    mkdirSync(path.dirname(abs), { recursive: true });
    writeFileSync(abs, e.text.join(''));
    utimesSync(abs, e.time / 1000, e.time / 1000);
  }
}
