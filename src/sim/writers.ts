/**
 * How the simulated training is written: SPEC 3.1's canonical layout (per round a
 * reward_history.jsonl and a train.log, configs/*.yaml), or the layout BAR-RAG's official scripts
 * leave (`--logger wandb`): one W&B run file per invocation, the selector's and generator's reward
 * debug logs, and the filter's `filtered_data/` output.
 */
import { appendFileSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Knobs, Rewards } from './model.js';
import { exitRecord, historyRecord, runRecord, WandbWriter } from './wandb-writer.js';

export type SimLogger = 'files' | 'wandb';

/** One selector sample: the reward's components, its total, the generator's accuracy on the evidence (null: malformed output). */
export interface SimSample {
  rewards: Rewards;
  total: number;
  pHat: number | null;
  /** Documents in the selected set. */
  docs: number;
}

/** One selector step's aggregates. */
export interface SelectorStep {
  means: Rewards;
  sds: Rewards;
  total: { mean: number; sd: number };
  accuracy: number;
  formatP: number;
}

export interface SimWriter {
  configs(k: Knobs, filterSamples: number): void;
  filter(questions: { id: number; acc: number; kept: boolean }[], kept: number): void;
  selectorStart(round: number, batch: number, group: number): void;
  /** A sample of the step being computed (before its step's row). */
  selectorSample(round: number, step: number, worker: number, s: SimSample): void;
  selectorStep(round: number, step: number, s: SelectorStep): void;
  selectorEnd(round: number): void;
  generatorStart(round: number): void;
  /** One answer of the step being trained. */
  generatorAnswer(round: number, step: number, correct: boolean): void;
  generatorStep(round: number, step: number, s: { reward: number; accuracy: number }): void;
  generatorEnd(round: number, evalAccuracy: number): void;
  finished(rounds: number): void;
}

const f4 = (x: number): number => Math.round(x * 1e4) / 1e4;

/** `YYYY-MM-DD HH:MM:SS` of an epoch-ms time: in UTC (the canonical logs), or in this machine's zone (BAR-RAG's datetime.now()). */
function wall(ms: number, local = false): string {
  if (!local) return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** SPEC 3.1's layout, as `simulate` always wrote it. */
export class CanonicalWriter implements SimWriter {
  private filterLog = '';
  private rollouts = 0;

  constructor(private readonly dir: string) {}

  private append(p: string, text: string): void {
    appendFileSync(path.join(this.dir, p), text);
  }

  private stamp(): string {
    return wall(Date.now());
  }

  configs(k: Knobs, filterSamples: number): void {
    this.rollouts = k.rollouts;
    mkdirSync(path.join(this.dir, 'configs'), { recursive: true });
    writeFileSync(
      path.join(this.dir, 'configs/filter_config.yaml'),
      `easy_threshold: ${k.easy}\nunsolvable_threshold: ${k.unsolvable}\nrollouts: ${k.rollouts}\nselector_samples: ${filterSamples}\n`,
    );
    writeFileSync(
      path.join(this.dir, 'configs/reward_config.yaml'),
      `weights: {boundary: ${k.weights.boundary}, relevance: ${k.weights.relevance}, format: ${k.weights.format}, count: ${k.weights.count}}\ntarget_accuracy: ${k.target}\nrollouts: ${k.rollouts}\nselector_lr: ${k.selectorLr}\ngenerator_lr: ${k.generatorLr}\n`,
    );
  }

  filter(questions: { id: number; acc: number; kept: boolean }[], kept: number): void {
    for (const q of questions) this.filterLog += `[filter] id=q${q.id} acc=${f4(q.acc)} kept=${q.kept}\n`;
    this.filterLog += `[filter] before=${questions.length} after=${kept}\n`;
  }

  selectorStart(round: number, batch: number, group: number): void {
    const dir = `outputs/selector_round${round}`;
    mkdirSync(path.join(this.dir, dir), { recursive: true });
    this.append(
      `${dir}/train.log`,
      `[${this.stamp()}] selector round ${round}: GRPO, ${batch} questions x ${group} samples per step, rollouts=${this.rollouts}\n`,
    );
    if (round === 1) this.append(`${dir}/train.log`, this.filterLog);
  }

  selectorSample(): void {}

  selectorStep(round: number, step: number, s: SelectorStep): void {
    const dir = `outputs/selector_round${round}`;
    this.append(
      `${dir}/reward_history.jsonl`,
      JSON.stringify({
        step,
        boundary: f4(s.means.boundary),
        relevance: f4(s.means.relevance),
        format: f4(s.means.format),
        count: f4(s.means.count),
        total: f4(s.total.mean),
        accuracy: f4(s.accuracy),
        boundary_std: f4(s.sds.boundary),
        relevance_std: f4(s.sds.relevance),
        format_std: f4(s.sds.format),
        count_std: f4(s.sds.count),
        total_std: f4(s.total.sd),
        rollouts: this.rollouts,
        time: new Date().toISOString(),
      }) + '\n',
    );
    this.append(
      `${dir}/train.log`,
      `[${this.stamp()}] step=${step} reward=${f4(s.total.mean)} boundary=${f4(s.means.boundary)} format_p=${f4(s.formatP)}\n`,
    );
  }

  selectorEnd(): void {}

  generatorStart(round: number): void {
    const dir = `outputs/generator_round${round}`;
    mkdirSync(path.join(this.dir, dir), { recursive: true });
    this.append(
      `${dir}/train.log`,
      `[${this.stamp()}] generator round ${round}: fine-tuning on the selector's evidence, rollouts=${this.rollouts}\n`,
    );
  }

  generatorAnswer(): void {}

  generatorStep(round: number, step: number, s: { reward: number; accuracy: number }): void {
    const dir = `outputs/generator_round${round}`;
    this.append(
      `${dir}/reward_history.jsonl`,
      JSON.stringify({ step, reward: f4(s.reward), accuracy: f4(s.accuracy), time: new Date().toISOString() }) + '\n',
    );
    this.append(`${dir}/train.log`, `[${this.stamp()}] step=${step} loss=${f4(1 - s.reward)}\n`);
  }

  generatorEnd(round: number, evalAccuracy: number): void {
    this.append(`outputs/generator_round${round}/train.log`, `[eval] round=${round} accuracy=${f4(evalAccuracy)}\n`);
  }

  finished(rounds: number): void {
    mkdirSync(path.join(this.dir, 'outputs'), { recursive: true });
    this.append('outputs/train_finished.log', `[${this.stamp()}] Training finished after ${rounds} rounds\n`);
  }
}

/**
 * The trainer's clock for the official layout: real time, but at least a second between events, so
 * the debug blocks of a step (second resolution) fall after the previous step's row even when the
 * simulation runs faster than a step a second.
 */
class TrainerClock {
  private last = 0;

  /** The next whole second. */
  next(): number {
    this.last = Math.max(Math.ceil(Date.now() / 1000) * 1000, this.last + 1000);
    return this.last;
  }
}

const WORKERS = 2;

/**
 * The timing and throughput keys verl logs every step beside its metrics (no detector reads them):
 * they give the simulated rows a real row's size, so a 32 KiB block holds about as many steps as a
 * real run's and the file's lag shows as it does there.
 */
function timings(step: number): Record<string, number> {
  const wobble = (k: number): number => f4(1 + 0.1 * Math.sin(step * 0.7 + k));
  const out: Record<string, number> = {};
  ['gen', 'reward', 'old_log_prob', 'ref', 'adv', 'update_actor', 'step', 'testing'].forEach(
    (k, i) => (out[`timing_s/${k}`] = f4(wobble(i) * (5 + 3 * i))),
  );
  ['gen', 'update_actor', 'ref'].forEach((k, i) => (out[`timing_per_token_ms/${k}`] = f4(wobble(10 + i) * 0.02)));
  out['perf/total_num_tokens'] = 250_000 + (step % 97) * 131;
  out['perf/time_per_step'] = out['timing_s/step']!;
  out['perf/throughput'] = f4(2200 * wobble(20));
  out['perf/max_memory_allocated_gb'] = f4(61.5 * wobble(21));
  out['perf/max_memory_reserved_gb'] = f4(70.2 * wobble(22));
  out['perf/cpu_memory_used_gb'] = f4(120.4 * wobble(23));
  return out;
}

/**
 * What BAR-RAG's `scripts/selector_training.sh` and `generator_training.sh` leave, alternated: one
 * W&B run per invocation (verl's `trainer.logger='["wandb"]'`, projects verl-selector-training
 * and verl-generator-training, the same experiment name every round), `wandb/latest-run`, the
 * reward functions' debug logs (one per Ray worker, opened for append), and the filter's output.
 * No step is written anywhere else: the console logs hold none.
 */
export class OfficialWriter implements SimWriter {
  private readonly clock = new TrainerClock();
  private k: Knobs | null = null;
  private filterSamples = 0;
  private run: WandbWriter | null = null;
  private readonly pid: number;
  /** The second the samples of the step being computed are written in (one per step: a step computes its rewards in one burst). */
  private burst: { key: string; at: number } | null = null;

  constructor(
    private readonly dir: string,
    seed: number,
  ) {
    this.pid = 20_000 + (Math.abs(seed) % 10_000);
  }

  configs(k: Knobs, filterSamples: number): void {
    this.k = k;
    this.filterSamples = filterSamples;
    for (const d of ['wandb', 'debug_logs', 'filtered_data', 'logs']) mkdirSync(path.join(this.dir, d), { recursive: true });
  }

  filter(questions: { id: number; acc: number; kept: boolean }[], kept: number): void {
    const k = this.k!;
    const ts = wall(this.clock.next(), true)
      .replace(/[-: ]/g, '')
      .replace(/^(\d{8})/, '$1_');
    const keptOnes = questions.filter((q) => q.kept);
    writeFileSync(
      path.join(this.dir, 'filtered_data', `filtered_${ts}.jsonl`),
      keptOnes.map((q) => JSON.stringify({ data_source: 'sim', question: `question ${q.id}`, extra_info: { index: q.id } })).join('\n') +
        '\n',
    );
    writeFileSync(
      path.join(this.dir, 'filtered_data', `filtered_ids_${ts}.json`),
      JSON.stringify({
        filter_config: { mean_min: k.unsolvable, mean_max: k.easy, n_samples: this.filterSamples, k_rollouts: k.rollouts },
        total: questions.length,
        num_kept: kept,
        ids: keptOnes.map((q) => q.id),
        stats: questions.map((q) => ({ id: q.id, mean: f4(q.acc), kept: q.kept })),
      }),
    );
  }

  /** A new invocation: its W&B run, started now. */
  private startRun(role: 'selector' | 'generator', round: number, config: Record<string, unknown>): void {
    const start = this.clock.next();
    const id = `${role[0]}${String(round).padStart(2, '0')}${this.pid.toString(36)}`.slice(0, 8).padEnd(8, '0');
    const folder = `run-${wall(start, true)
      .replace(/[-: ]/g, '')
      .replace(/^(\d{8})/, '$1_')}-${id}`;
    this.run = new WandbWriter(path.join(this.dir, 'wandb', folder, `run-${id}.wandb`));
    this.run.append(runRecord({ project: `verl-${role}-training`, name: `${role}-training`, id, start, config }));
    const latest = path.join(this.dir, 'wandb', 'latest-run');
    rmSync(latest, { force: true });
    try {
      symlinkSync(folder, latest);
    } catch {
      // A file system without links: wandb itself goes on without one.
    }
    appendFileSync(
      path.join(this.dir, 'logs', `${role}_training_${folder.slice(4, 19)}.log`),
      `[${wall(start, true)}] wandb: Tracking run with wandb version 0.30.0\n`,
    );
  }

  private endRun(): void {
    this.run!.append(exitRecord(0));
    this.run!.finish();
    this.run = null;
  }

  /** `[time]` of the samples of a step: one second per step, after the row before it. */
  private sampleStamp(role: string, round: number, step: number): string {
    const key = `${role}:${round}:${step}`;
    if (this.burst?.key !== key) this.burst = { key, at: this.clock.next() };
    return `[${wall(this.burst.at, true)}]`;
  }

  selectorStart(round: number, batch: number, group: number): void {
    const k = this.k!;
    this.startRun('selector', round, {
      actor_rollout_ref: { rollout: { n: group } },
      data: { train_batch_size: batch },
      trainer: { project_name: 'verl-selector-training', experiment_name: 'selector-training', logger: ['wandb'] },
      reward_model: {
        lambda_unc: k.weights.boundary,
        lambda_rel: k.weights.relevance,
        format_bonus: k.weights.format,
        count_penalty: k.weights.count,
        target_center: k.target,
        generator_rollouts: k.rollouts,
      },
    });
  }

  selectorSample(round: number, step: number, worker: number, s: SimSample): void {
    const k = this.k!;
    const t = this.sampleStamp('selector', round, step);
    const lines = ['='.repeat(100), `${t} REWARD COMPUTATION`];
    if (s.pHat === null) lines.push(`${t} FORMAT INVALID`, `${t} format_valid=False has_duplicate=False`, `${t} >>> FINAL REWARD: 0.0 <<<`);
    else {
      const right = Math.round(s.pHat * k.rollouts);
      const w = k.weights;
      lines.push(
        `${t} selected_docs=[...] (num=${s.docs}, target=5)`,
        `${t} format_valid=True has_duplicate=False`,
        `${t} GENERATOR ROLLOUTS (K=${k.rollouts}):`,
        `${t}   num_correct=${right}/${k.rollouts} accuracy=${s.pHat.toFixed(3)}`,
        `${t}   unc_reward=${s.rewards.boundary.toFixed(4)} (center=${k.target}, max=1.0)`,
        `${t}   rel_reward=${s.rewards.relevance.toFixed(4)} (max=1.0)`,
        `${t}   format_bonus=${s.rewards.format.toFixed(4)}`,
        `${t}   count_penalty=${s.rewards.count.toFixed(4)}`,
        `${t}   total = ${w.boundary}*${s.rewards.boundary.toFixed(4)} + ${w.relevance}*${s.rewards.relevance.toFixed(4)}`,
        `${t} >>> FINAL REWARD: ${s.total.toFixed(4)} <<<`,
      );
    }
    lines.push('='.repeat(100), '');
    appendFileSync(
      path.join(this.dir, 'debug_logs', `selector_reward_debug_${this.pid + (worker % WORKERS)}.log`),
      lines.join('\n') + '\n',
    );
  }

  selectorStep(_round: number, step: number, s: SelectorStep): void {
    this.run!.append(
      historyRecord(
        step,
        {
          'critic/score/mean': f4(s.total.mean),
          'critic/score/std': f4(s.total.sd),
          'critic/rewards/mean': f4(s.total.mean),
          'actor/pg_loss': f4(-s.total.sd / 10),
          'response_length/mean': 40 + 10 * s.formatP,
          ...timings(step),
        },
        (this.clock.next() + 500) / 1000,
      ),
    );
  }

  selectorEnd(): void {
    this.endRun();
  }

  generatorStart(round: number): void {
    const k = this.k!;
    this.startRun('generator', round, {
      actor_rollout_ref: { rollout: { n: k.rollouts } },
      trainer: { project_name: 'verl-generator-training', experiment_name: 'generator-training', logger: ['wandb'] },
    });
  }

  generatorAnswer(round: number, step: number, correct: boolean): void {
    const t = this.sampleStamp('generator', round, step);
    const r = correct ? 1 : 0;
    appendFileSync(
      path.join(this.dir, 'debug_logs', `reward_debug_${this.pid}.log`),
      `${'='.repeat(100)}\n${t} fmt=1.0 reward=${r.toFixed(6)} max_f1=${r.toFixed(6)} max_em=${r.toFixed(6)}\n${'='.repeat(100)}\n\n`,
    );
  }

  generatorStep(_round: number, step: number, s: { reward: number; accuracy: number }): void {
    this.run!.append(
      historyRecord(
        step,
        { 'critic/score/mean': f4(s.reward), 'reward_extra_info/accuracy': f4(s.accuracy), ...timings(step) },
        (this.clock.next() + 500) / 1000,
      ),
    );
  }

  generatorEnd(): void {
    this.endRun();
  }

  finished(): void {}
}
