/**
 * What the quantities of ordinary RL fine-tuning are called, framework by framework: one table.
 * Series keep the names their trainer gave them (a user recognises `actor/entropy` in a report);
 * the detectors, the page and the summary ask this table which of a round's series carries a
 * quantity. Names are as barwatch keeps them: TRL's `train/` TensorBoard prefix is already dropped,
 * and the reward components of SPEC 3.2 already folded (`reward`, `total`, `format`...).
 *
 * Sources of the spellings: verl's `trainer/ppo/metric_utils.py` and `workers/actor` (console, file
 * and TensorBoard loggers write the same keys), TRL's GRPOTrainer and PPOTrainer logs, OpenRLHF's
 * PPO trainer status dict.
 */
import type { RoundState } from './round.js';
import type { SeriesStats } from './series.js';
import { memoByName } from '../util/memo.js';

export type Quantity =
  | 'reward'
  | 'reward_std'
  | 'zero_std_fraction'
  | 'score_max'
  | 'score_min'
  | 'entropy'
  | 'kl_ref'
  | 'kl_update'
  | 'response_length'
  | 'response_length_max'
  | 'clip_ratio'
  | 'grad_norm'
  | 'loss'
  | 'rollout_probs_diff';

/** Each quantity's spellings, the most specific first. */
export const SPELLINGS: Record<Quantity, readonly string[]> = {
  // The main reward of a step (the BAR-RAG selector's `total` first: it is what GRPO normalises).
  reward: ['total', 'reward', 'critic/score/mean', 'critic/rewards/mean', 'rewards/mean', 'train/reward'],
  // The within-step spread of the reward (TRL `reward_std`, a reward_history's `total_std`).
  reward_std: ['reward_std', 'total_std', 'critic/score/std'],
  // TRL: the fraction of prompt groups whose completions all got the same reward.
  zero_std_fraction: ['frac_reward_zero_std'],
  score_max: ['critic/score/max'],
  score_min: ['critic/score/min'],
  // verl `actor/entropy` (older releases logged the same number as `actor/entropy_loss`), TRL `entropy`.
  entropy: ['actor/entropy', 'entropy', 'actor/entropy_loss', 'policy/entropy', 'entropy_loss'],
  // KL to the reference policy: TRL `kl`, verl `actor/kl_loss` (use_kl_loss) and `critic/kl` (KL in the reward).
  kl_ref: ['kl', 'actor/kl_loss', 'critic/kl', 'objective/kl', 'kl_div'],
  // KL between the policy that sampled and the one being updated (PPO's approximate KL).
  kl_update: ['actor/ppo_kl', 'approx_kl', 'policy/approxkl_avg'],
  response_length: ['response_length/mean', 'completions/mean_length', 'completion_length', 'response_length', 'generate_length'],
  response_length_max: ['response_length/max', 'completions/max_length'],
  // The fraction of responses cut at the generation limit.
  clip_ratio: ['response_length/clip_ratio', 'completions/clipped_ratio'],
  grad_norm: ['actor/grad_norm', 'grad_norm', 'critic/grad_norm'],
  loss: ['loss', 'actor/pg_loss', 'policy_loss'],
  // verl: the gap between the trainer's and the rollout engine's token probabilities.
  rollout_probs_diff: ['training/rollout_probs_diff_mean', 'rollout_probs_diff_mean'],
};

type Found = { name: string; stats: SeriesStats } | null;

type Named = { name: string; stats: SeriesStats };

/** Each quantity's place in SPELLINGS: seriesFor's memo is an array, read by it. */
const PLACE = Object.fromEntries(Object.keys(SPELLINGS).map((q, i) => [q, i])) as Record<Quantity, number>;
const QUANTITIES = Object.keys(SPELLINGS).length;

/** What the lookups found in one round, and the series count then (RoundState.lookups). */
export interface RoundMemo {
  series: number;
  /** seriesFor's answers by the quantity's PLACE (undefined: not asked yet): an array, where a Map's table was a cache miss more at each of a detector's lookups. */
  by: (Found | undefined)[];
  all: Map<Quantity, Named[]>;
  named: Map<(name: string) => boolean, Named[]>;
}

/**
 * What seriesFor, allSeriesFor and seriesNamed found in a round, while the round has as many
 * series as then (a round's series are only ever added): the detectors ask the same questions at
 * every evaluation. Kept on the round itself, a field read rather than a lookup in a table of rounds.
 */
function foundIn(round: RoundState): RoundMemo {
  let memo = round.lookups;
  if (memo === null || memo.series !== round.series.size)
    round.lookups = memo = { series: round.series.size, by: new Array<Found | undefined>(QUANTITIES), all: new Map(), named: new Map() };
  return memo;
}

/** The first series of a round that carries `q`, or null. */
export function seriesFor(round: RoundState, q: Quantity): Found {
  const memo = foundIn(round).by;
  const at = PLACE[q];
  let f = memo[at];
  if (f === undefined) memo[at] = f = findSeries(round, q);
  return f;
}

/** The series of a round whose names `pick` takes (validation scores, reward components), in the round's order. */
export function seriesNamed(round: RoundState, pick: (name: string) => boolean): readonly Named[] {
  const memo = foundIn(round).named;
  let f = memo.get(pick);
  if (f === undefined) {
    f = [];
    for (const [name, stats] of round.series) if (pick(name)) f.push({ name, stats });
    memo.set(pick, f);
  }
  return f;
}

function findSeries(round: RoundState, q: Quantity): Found {
  for (const name of SPELLINGS[q]) {
    const s = round.series.get(name);
    if (s !== undefined) return { name, stats: s };
  }
  if (q === 'reward') {
    for (const [name, s] of round.series) if (/^rewards\/[^/]+\/mean$/.test(name)) return { name, stats: s };
  }
  return null;
}

/** Every series of a round that carries `q` (a run may log both an actor's and a critic's grad norm). */
export function allSeriesFor(round: RoundState, q: Quantity): readonly Named[] {
  const memo = foundIn(round).all;
  let out = memo.get(q);
  if (out === undefined) {
    out = [];
    for (const name of SPELLINGS[q]) {
      const s = round.series.get(name);
      if (s !== undefined) out.push({ name, stats: s });
    }
    memo.set(q, out);
  }
  return out;
}

/** Whether some round of a run carries one of `qs` (as seriesFor finds them). */
export function carriesAny(rounds: readonly RoundState[], qs: readonly Quantity[]): boolean {
  for (const r of rounds) for (const q of qs) if (seriesFor(r, q) !== null) return true;
  return false;
}

/** Quantities worth a chart on any run, in the order the page draws them. */
export const CHARTED: readonly Quantity[] = ['reward', 'entropy', 'kl_ref', 'response_length', 'clip_ratio', 'grad_norm'];

/** What a chart of each quantity is titled. */
export const QUANTITY_LABELS: Record<Quantity, string> = {
  reward: 'Reward',
  reward_std: 'Within-step reward spread',
  zero_std_fraction: 'Groups with no reward spread',
  score_max: 'Highest score',
  score_min: 'Lowest score',
  entropy: 'Policy entropy',
  kl_ref: 'KL to the reference policy',
  kl_update: 'KL between sampling and updated policy',
  response_length: 'Mean response length (tokens)',
  response_length_max: 'Longest response (tokens)',
  clip_ratio: 'Responses cut at the length limit',
  grad_norm: 'Gradient norm',
  loss: 'Loss',
  rollout_probs_diff: 'Trainer vs rollout probability gap',
};

/**
 * Validation series whose higher values are better: verl `val-core/<set>/<var>/mean@N` and
 * `val/test_score/<set>`, HF / TRL `eval_*` (read as `eval/*`) naming a reward, score or accuracy.
 */
export const isValidationScore = memoByName(validationScore);

function validationScore(name: string): boolean {
  if (!/^(val-core|val|eval|val-aux)\//.test(name)) return false;
  if (/(^|[/_@])(std|loss|runtime|samples_per_second|steps_per_second|length)/i.test(name)) return false;
  return /reward|score|acc|pass|exact|(^|[/_])em($|[/_@])|f1|correct/i.test(name);
}
