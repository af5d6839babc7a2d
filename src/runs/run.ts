/** Everything barwatch knows about one run: its rounds, its filter, the settings it was run with. */
import path from 'node:path';
import { FORMAT_IDS, type FormatId, type ParsedRecord, type PlanRecord, type Role, type RunSettings } from '../parsers/types.js';
import { DebugSteps, type DebugStepsJSON } from './debug-steps.js';
import { FilterStats, type FilterJSON } from './filter.js';
import { RoundState, roundKey, type RoundJSON } from './round.js';
import type { StatsOptions } from './series.js';
import type { PieceSink } from '../util/pieces.js';

/** Where a record came from: the file's place in the run. */
export interface RecordContext {
  role: Role;
  round: number | null;
  format: FormatId;
  /** The file the record came from. */
  file: string;
  /** Its rows are whole steps logged with the trainer's time: debug samples written before one are of its step (debug-steps.ts). */
  clock?: boolean;
  /** Its files write the same steps (a W&B run file and its console copy): a step it writes again is a copy, dropped. */
  copies?: boolean;
}

/** What a record changed that is worth a log line. */
export interface Discovery {
  round?: RoundState;
  series?: string[];
}

/** A fatal error a file printed, with no metric record from that file since. */
export interface Crash {
  file: string;
  message: string;
  role: Role;
  round: number | null;
  /** The last step of the round the file writes, when the error came. */
  step: number | null;
  /** When it was read (epoch ms), and the time the line carried, if any. */
  seen: number;
  time: number | null;
}

/** How long a round was meant to train: what the trainer stated, and its unnamed progress bars. */
export interface Plan {
  stated: { total: number; done: number | null } | null;
  /** Unnamed bars by total: how often each was drawn and how far it got. */
  bars: Record<string, { n: number; done: number }>;
}

/** Unnamed progress bars kept per round (the training bar is drawn far more often than the others). */
const MAX_BARS = 8;

export interface RunJSON {
  id: string;
  rounds: RoundJSON[];
  filter: FilterJSON;
  settings: RunSettings;
  rollouts: { k: number; role: Role; round: number | null } | null;
  formats: Partial<Record<FormatId, number>>;
  finished?: boolean;
  /** The round whose file said it finished, when it was a numbered round (see apply). */
  finishedIn?: string | null;
  crashes?: Crash[];
  plans?: Record<string, Plan>;
  debug?: DebugStepsJSON;
}

export class RunState {
  readonly rounds = new Map<string, RoundState>();
  /** The series of all its rounds, counted as they appear (a round's series are only ever added). */
  seriesCount = 0;
  /** The rounds in orderedRounds()'s order, worked out when a round was added. */
  private ordered: RoundState[] = [];
  /** roundsOf()'s lists, for the number of rounds they were worked out at. */
  private byRole: { size: number; lists: Partial<Record<Role, RoundState[]>> } = { size: 0, lists: {} };
  filter = new FilterStats();
  /** Settings from the run's configs and logs, the latest value of each key winning. */
  settings: RunSettings = {};
  /** The latest rollout count K announced by a log line. */
  rollouts: { k: number; role: Role; round: number | null } | null = null;
  /** The trainer said it finished. */
  finished = false;
  /**
   * The numbered round whose file said so: a later round's records mean the training went on (each
   * W&B run of BAR-RAG's official layout ends with an exit of its own, round after round).
   */
  private finishedIn: string | null = null;
  /** The round the last metric record went to. */
  private last: RoundState | null = null;
  /** Metric records read per format: the run's format is the one with most. */
  formats: Partial<Record<FormatId, number>> = {};
  /** Per file: the fatal error it printed last, until that file writes a step again. */
  readonly crashes = new Map<string, Crash>();
  /** Per round key: how long the round was meant to train. */
  readonly plans = new Map<string, Plan>();
  /** How its debug samples become steps, and those waiting for their step's row. */
  debug = new DebugSteps();

  constructor(
    readonly id: string,
    private readonly opts: StatsOptions,
  ) {}

  /** The format most of its metric records came in (on a tie, the one first in FORMAT_IDS). */
  get format(): FormatId | null {
    return this.formatsByRecords()[0] ?? null;
  }

  /**
   * Every format its metric records came in, most records first, a tie in FORMAT_IDS order: the
   * same whichever file was read first (a simulated run's train.log and reward_history.jsonl hold
   * a record a step each).
   */
  formatsByRecords(): FormatId[] {
    const n = (f: FormatId): number => this.formats[f] ?? 0;
    return FORMAT_IDS.filter((f) => n(f) > 0).sort((a, b) => n(b) - n(a) || FORMAT_IDS.indexOf(a) - FORMAT_IDS.indexOf(b));
  }

  round(role: Role, round: number | null): RoundState | undefined {
    return this.rounds.get(roundKey(role, round));
  }

  /**
   * How far the run has been read: its metric records, all rounds and files together (a round's
   * second file brings new values for steps already counted, so records, not distinct steps).
   */
  recordsRead(): number {
    let n = 0;
    for (const r of this.rounds.values()) n += r.records;
    return n;
  }

  /**
   * Rounds ordered by round number then role. Rounds are only ever added and their numbers never
   * change, so the order is worked out again only when there are more of them (detectors ask for
   * it at every evaluation).
   */
  orderedRounds(): readonly RoundState[] {
    if (this.ordered.length !== this.rounds.size) {
      const order: Record<Role, number> = { selector: 0, generator: 1, unknown: 2 };
      this.ordered = [...this.rounds.values()].sort((a, b) => (a.round ?? 0) - (b.round ?? 0) || order[a.role] - order[b.role]);
    }
    return this.ordered;
  }

  /**
   * The rounds of one role in order of their number (rounds without one last), kept like
   * orderedRounds() until a round is added: a dozen detectors ask at every step.
   */
  roundsOf(role: Role): readonly RoundState[] {
    if (this.byRole.size !== this.rounds.size) this.byRole = { size: this.rounds.size, lists: {} };
    return (this.byRole.lists[role] ??= [...this.rounds.values()]
      .filter((r) => r.role === role)
      .sort((a, b) => (a.round ?? Infinity) - (b.round ?? Infinity)));
  }

  apply(rec: ParsedRecord, ctx: RecordContext, now: number): Discovery | null {
    switch (rec.kind) {
      case 'metrics': {
        this.formats[ctx.format] = (this.formats[ctx.format] ?? 0) + 1;
        // Records come in runs from one file: the round of the last one usually serves again.
        let round =
          this.last !== null && this.last.role === ctx.role && this.last.round === ctx.round
            ? this.last
            : this.rounds.get(roundKey(ctx.role, ctx.round));
        let created = false;
        if (round === undefined) {
          round = new RoundState(ctx.role, ctx.round, this.opts);
          this.rounds.set(round.key, round);
          created = true;
        }
        this.last = round;
        if (this.finished && this.finishedIn !== null && ctx.round !== null && round.key !== this.finishedIn) {
          this.finished = false;
          this.finishedIn = null;
        }
        if (this.crashes.size > 0) this.crashes.delete(ctx.file);
        const step = rec.step ?? (round.lastStep ?? 0) + 1;
        let fresh = round.apply(rec, step, now, ctx.file, ctx.format, ctx.copies === true);
        // The debug samples written before this row are of its step.
        const samples =
          ctx.clock === true && ctx.round !== null && rec.time !== undefined ? this.debug.row(ctx.role, ctx.round, step, rec.time) : null;
        if (samples !== null) {
          this.formats[samples.format] = (this.formats[samples.format] ?? 0) + 1;
          const more = round.apply(samples.record, step, now, samples.source, samples.format);
          if (more.length > 0) fresh = [...fresh, ...more];
        }
        this.seriesCount += fresh.length;
        if (!created && fresh.length === 0) return null;
        const d: Discovery = {};
        if (created) d.round = round;
        if (fresh.length > 0) d.series = fresh;
        return d;
      }
      case 'reach':
        this.rounds.get(roundKey(ctx.role, ctx.round))?.reached(rec);
        return null;
      case 'sample':
        this.debug.add(ctx.role, ctx.format, path.dirname(ctx.file), rec.values, rec.time);
        return null;
      case 'filter-question':
        this.filter.addQuestion(rec);
        return null;
      case 'filter-summary':
        this.filter.addSummary(rec);
        return null;
      case 'rollouts':
        this.rollouts = { k: rec.k, role: ctx.role, round: ctx.round };
        return null;
      case 'finished':
        this.finished = true;
        this.finishedIn = ctx.round === null ? null : roundKey(ctx.role, ctx.round);
        this.crashes.delete(ctx.file);
        return null;
      case 'fatal':
        // An error after the trainer said it finished (a crash while shutting down) lost nothing.
        if (!this.finished) {
          const step = this.rounds.get(roundKey(ctx.role, ctx.round))?.lastStep ?? this.last?.lastStep ?? null;
          this.crashes.set(ctx.file, {
            file: ctx.file,
            message: rec.message,
            role: ctx.role,
            round: ctx.round,
            step,
            seen: now,
            time: rec.time ?? null,
          });
        }
        return null;
      case 'plan':
        this.plan(roundKey(ctx.role, ctx.round), rec);
        return null;
      case 'settings': {
        const { weights, ...rest } = rec.settings;
        this.settings = { ...this.settings, ...rest };
        if (weights !== undefined) this.settings.weights = { ...this.settings.weights, ...weights };
        return null;
      }
    }
  }

  private plan(key: string, rec: PlanRecord): void {
    let p = this.plans.get(key);
    if (p === undefined) this.plans.set(key, (p = { stated: null, bars: {} }));
    if (rec.source === 'stated') {
      p.stated = { total: rec.total, done: rec.done ?? (p.stated?.total === rec.total ? p.stated.done : null) };
      return;
    }
    const k = String(rec.total);
    const bar = (p.bars[k] ??= { n: 0, done: 0 });
    bar.n++;
    bar.done = Math.max(bar.done, rec.done ?? 0);
    const keys = Object.keys(p.bars);
    if (keys.length > MAX_BARS) {
      const least = keys.reduce((a, b) => (p.bars[b]!.n < p.bars[a]!.n ? b : a));
      delete p.bars[least];
    }
  }

  /**
   * How long a round was meant to train and how far it got by its own count: what the trainer
   * stated, else the unnamed progress bar drawn most often (Hugging Face's training bar; its
   * evaluation bars are drawn less). Null when the round said nothing.
   */
  planOf(role: Role, round: number | null): { total: number; done: number | null; source: 'stated' | 'bar' } | null {
    const p = this.plans.get(roundKey(role, round));
    if (p === undefined) return null;
    if (p.stated !== null) {
      const bar = p.bars[String(p.stated.total)];
      return { total: p.stated.total, done: p.stated.done ?? bar?.done ?? null, source: 'stated' };
    }
    let best: [string, { n: number; done: number }] | null = null;
    for (const e of Object.entries(p.bars)) if (best === null || e[1].n > best[1].n) best = e;
    return best === null ? null : { total: Number(best[0]), done: best[1].done, source: 'bar' };
  }

  toJSON(): RunJSON {
    return { ...this.head(), rounds: [...this.rounds.values()].map((r) => r.toJSON()) };
  }

  /** Everything but the rounds. */
  private head(): Omit<RunJSON, 'rounds'> {
    return {
      id: this.id,
      filter: this.filter.toJSON(),
      settings: this.settings,
      rollouts: this.rollouts,
      formats: { ...this.formats },
      finished: this.finished,
      ...(this.finishedIn !== null ? { finishedIn: this.finishedIn } : {}),
      crashes: [...this.crashes.values()],
      plans: Object.fromEntries(this.plans),
      ...(this.debug.empty ? {} : { debug: this.debug.toJSON() }),
    };
  }

  /**
   * Appends to `out` pieces of text whose concatenation is JSON.stringify(this.toJSON()), keys in
   * another order; each round's text is reused while the round reads nothing new.
   */
  toJSONPieces(out: PieceSink): void {
    out.push('{"rounds":[');
    let first = true;
    for (const r of this.rounds.values()) {
      if (!first) out.push(',');
      out.push(r.toJSONText());
      first = false;
    }
    // Apart, not joined: a joined piece is a rope the write would first copy flat.
    out.push('],', JSON.stringify(this.head()).slice(1));
  }

  static from(j: RunJSON, opts: StatsOptions): RunState {
    const run = new RunState(j.id, opts);
    for (const r of j.rounds) {
      const round = RoundState.from(r, opts);
      run.rounds.set(round.key, round);
      run.seriesCount += round.series.size;
    }
    run.filter = FilterStats.from(j.filter);
    run.settings = j.settings ?? {};
    run.rollouts = j.rollouts ?? null;
    run.formats = j.formats ?? {};
    run.finished = j.finished ?? false;
    run.finishedIn = j.finishedIn ?? null;
    for (const c of j.crashes ?? []) run.crashes.set(c.file, c);
    for (const [k, p] of Object.entries(j.plans ?? {})) run.plans.set(k, p);
    run.debug = DebugSteps.from(j.debug);
    return run;
  }
}
