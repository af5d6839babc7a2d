/** Everything barwatch knows about one run: its rounds, its filter, the settings it was run with. */
import type { FormatId, ParsedRecord, Role, RunSettings } from '../parsers/types.js';
import { FilterStats, type FilterJSON } from './filter.js';
import { RoundState, roundKey, type RoundJSON } from './round.js';
import type { StatsOptions } from './series.js';

/** Where a record came from: the file's place in the run. */
export interface RecordContext {
  role: Role;
  round: number | null;
  format: FormatId;
  /** The file the record came from. */
  file: string;
}

/** What a record changed that is worth a log line. */
export interface Discovery {
  round?: RoundState;
  series?: string[];
}

export interface RunJSON {
  id: string;
  rounds: RoundJSON[];
  filter: FilterJSON;
  settings: RunSettings;
  rollouts: { k: number; role: Role; round: number | null } | null;
  formats: Partial<Record<FormatId, number>>;
  finished?: boolean;
}

export class RunState {
  readonly rounds = new Map<string, RoundState>();
  filter = new FilterStats();
  /** Settings from the run's configs and logs, the latest value of each key winning. */
  settings: RunSettings = {};
  /** The latest rollout count K announced by a log line. */
  rollouts: { k: number; role: Role; round: number | null } | null = null;
  /** The trainer said it finished. */
  finished = false;
  /** The round the last metric record went to. */
  private last: RoundState | null = null;
  /** Metric records read per format: the run's format is the one with most. */
  formats: Partial<Record<FormatId, number>> = {};

  constructor(
    readonly id: string,
    private readonly opts: StatsOptions,
  ) {}

  get format(): FormatId | null {
    let best: FormatId | null = null;
    for (const [f, n] of Object.entries(this.formats) as [FormatId, number][]) {
      if (best === null || n > this.formats[best]!) best = f;
    }
    return best;
  }

  round(role: Role, round: number | null): RoundState | undefined {
    return this.rounds.get(roundKey(role, round));
  }

  /** Rounds ordered by role then round number. */
  orderedRounds(): RoundState[] {
    const order: Record<Role, number> = { selector: 0, generator: 1, unknown: 2 };
    return [...this.rounds.values()].sort((a, b) => (a.round ?? 0) - (b.round ?? 0) || order[a.role] - order[b.role]);
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
        const step = rec.step ?? (round.lastStep ?? 0) + 1;
        const fresh = round.apply(rec, step, now, ctx.file);
        if (!created && fresh.length === 0) return null;
        const d: Discovery = {};
        if (created) d.round = round;
        if (fresh.length > 0) d.series = fresh;
        return d;
      }
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
        return null;
      case 'settings': {
        const { weights, ...rest } = rec.settings;
        this.settings = { ...this.settings, ...rest };
        if (weights !== undefined) this.settings.weights = { ...this.settings.weights, ...weights };
        return null;
      }
    }
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
    };
  }

  /**
   * Appends to `out` pieces of text whose concatenation is JSON.stringify(this.toJSON()), keys in
   * another order; each round's text is reused while the round reads nothing new.
   */
  toJSONPieces(out: string[]): void {
    out.push('{"rounds":[');
    let first = true;
    for (const r of this.rounds.values()) {
      if (!first) out.push(',');
      out.push(r.toJSONText());
      first = false;
    }
    out.push(`],${JSON.stringify(this.head()).slice(1)}`);
  }

  static from(j: RunJSON, opts: StatsOptions): RunState {
    const run = new RunState(j.id, opts);
    for (const r of j.rounds) {
      const round = RoundState.from(r, opts);
      run.rounds.set(round.key, round);
    }
    run.filter = FilterStats.from(j.filter);
    run.settings = j.settings ?? {};
    run.rollouts = j.rollouts ?? null;
    run.formats = j.formats ?? {};
    run.finished = j.finished ?? false;
    return run;
  }
}
