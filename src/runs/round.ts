/** One round of one role in one run (e.g. selector round 2): its steps and its series. */
import { ListedRecord, ShapedRecord } from '../parsers/keys.js';
import type { MetricRecord, Role } from '../parsers/types.js';
import { SeriesStats, type SeriesJSON, type StatsOptions } from './series.js';
import { History, type HistoryJSON } from '../stats/rolling.js';

export interface RoundJSON {
  role: Role;
  round: number | null;
  steps: number;
  records: number;
  firstStep: number | null;
  lastStep: number | null;
  firstSeen: number | null;
  lastSeen: number | null;
  lastTime: number | null;
  droppedSeries: number;
  duplicates: number;
  owners: Record<string, string>;
  arrivals: HistoryJSON;
  stepTimes?: HistoryJSON;
  series: Record<string, SeriesJSON>;
}

interface Slot {
  stats: SeriesStats;
  owner: string | undefined;
}

const NO_NAMES: string[] = [];

export function roundKey(role: Role, round: number | null): string {
  return `${role}:${round ?? '-'}`;
}

export class RoundState {
  steps = 0;
  records = 0;
  firstStep: number | null = null;
  lastStep: number | null = null;
  /** When barwatch received the first and the latest record (epoch ms). */
  firstSeen: number | null = null;
  lastSeen: number | null = null;
  /** The latest time the trainer itself wrote into a record, when it writes one. */
  lastTime: number | null = null;
  droppedSeries = 0;
  /**
   * Each series is read from one file: the first that wrote it (a selector's reward_history.jsonl
   * and its train.log often log the same numbers). Values of that series from other files are
   * counted here and dropped, so nothing is counted twice.
   */
  duplicates = 0;
  /** Per series: its statistics and the file that owns it (one lookup per value on the hot path). */
  private readonly slots = new Map<string, Slot>();
  /** The names of the last record applied, in order, and their slots (see apply). */
  private readonly lastNames: string[] = [];
  private readonly lastSlots: Slot[] = [];
  /** (step, arrival time) of recent steps: how often this round is written, as barwatch sees it. */
  arrivals = new History(64);
  /** (step, trainer time) of recent steps whose records carry a time. */
  stepTimes = new History(64);
  readonly series = new Map<string, SeriesStats>();
  /** The record count at the last toJSONText, and the text kept when the round had not changed. */
  private text: { records: number; json: string | null } | null = null;

  constructor(
    readonly role: Role,
    readonly round: number | null,
    private readonly opts: StatsOptions,
  ) {}

  get key(): string {
    return roundKey(this.role, this.round);
  }

  /**
   * Applies one step's values from `source` (a file); returns the names of series seen for the
   * first time. `steps` counts distinct steps: a step past the highest seen so far.
   */
  apply(rec: MetricRecord, step: number, now: number, source: string): string[] {
    let fresh: string[] = NO_NAMES;
    this.records++;
    if (this.lastStep === null || step > this.lastStep) {
      this.steps++;
      this.arrivals.push(step, now);
      if (rec.time !== undefined) this.stepTimes.push(step, rec.time);
      this.lastStep = step;
    }
    this.firstStep ??= step;
    if (step < this.firstStep) this.firstStep = step;
    this.firstSeen ??= now;
    this.lastSeen = now;
    if (rec.time !== undefined) this.lastTime = rec.time;
    let at = 0;
    if (rec instanceof ShapedRecord) {
      // Read through the parser's shape: no values object was built for this record.
      const { raw, shape } = rec;
      let k = 0;
      for (const key in raw) {
        const name = shape[k++];
        if (name === null || name === undefined) continue;
        fresh = this.add(at++, name, raw[key] as number, step, source, fresh);
      }
    } else if (rec instanceof ListedRecord) {
      const { names, nums } = rec;
      for (; at < names.length; at++) fresh = this.add(at, names[at]!, nums[at]!, step, source, fresh);
    } else {
      const values = rec.values;
      for (const name in values) fresh = this.add(at++, name, values[name]!, step, source, fresh);
    }
    return fresh;
  }

  /**
   * One value of the series `name`, the `at`-th of its record. A file writes the same names in
   * the same order line after line: the slot of the name at each place is remembered, and a name
   * equal to the last one there (a pointer comparison of interned names) needs no map lookup.
   * Returns `fresh`, with `name` added when the series is new.
   */
  private add(at: number, name: string, value: number, step: number, source: string, fresh: string[]): string[] {
    let slot = this.lastNames[at] === name ? this.lastSlots[at] : undefined;
    if (slot === undefined) {
      slot = this.slots.get(name);
      if (slot === undefined) {
        if (this.series.size >= this.opts.maxSeries) {
          this.droppedSeries++;
          return fresh;
        }
        const stats = new SeriesStats(this.opts);
        this.series.set(name, stats);
        this.slots.set(name, (slot = { stats, owner: source }));
        if (fresh === NO_NAMES) fresh = [];
        fresh.push(name);
      }
      this.lastNames[at] = name;
      this.lastSlots[at] = slot;
    }
    // A state saved before owners were kept: the first file to write a series claims it.
    slot.owner ??= source;
    if (slot.owner !== source) this.duplicates++;
    else slot.stats.add(step, value);
    return fresh;
  }

  toJSON(): RoundJSON {
    const series: Record<string, SeriesJSON> = {};
    for (const [k, v] of this.series) series[k] = v.toJSON();
    return {
      role: this.role,
      round: this.round,
      steps: this.steps,
      records: this.records,
      firstStep: this.firstStep,
      lastStep: this.lastStep,
      firstSeen: this.firstSeen,
      lastSeen: this.lastSeen,
      lastTime: this.lastTime,
      droppedSeries: this.droppedSeries,
      duplicates: this.duplicates,
      owners: Object.fromEntries([...this.slots].flatMap(([k, v]) => (v.owner === undefined ? [] : [[k, v.owner]]))),
      arrivals: this.arrivals.toJSON(),
      stepTimes: this.stepTimes.toJSON(),
      series,
    };
  }

  /**
   * This round as JSON text. The text of a round that read nothing since the previous call is
   * kept and reused (a daemon saving its state every few seconds mostly holds rounds nobody writes
   * any more); a round still being written is serialised afresh and its text not kept, so it dies
   * young instead of piling up in the old generation until the next save replaces it.
   */
  toJSONText(): string {
    if (this.text?.records === this.records) return (this.text.json ??= JSON.stringify(this.toJSON()));
    this.text = { records: this.records, json: null };
    return JSON.stringify(this.toJSON());
  }

  static from(j: RoundJSON, opts: StatsOptions): RoundState {
    const r = new RoundState(j.role, j.round, opts);
    r.steps = j.steps;
    r.records = j.records;
    r.firstStep = j.firstStep;
    r.lastStep = j.lastStep;
    r.firstSeen = j.firstSeen;
    r.lastSeen = j.lastSeen;
    r.lastTime = j.lastTime;
    r.droppedSeries = j.droppedSeries;
    r.duplicates = j.duplicates ?? 0;
    r.arrivals = History.from(j.arrivals);
    if (j.stepTimes !== undefined) r.stepTimes = History.from(j.stepTimes);
    for (const [k, v] of Object.entries(j.series)) {
      const stats = SeriesStats.from(v, opts);
      r.series.set(k, stats);
      r.slots.set(k, { stats, owner: j.owners?.[k] });
    }
    return r;
  }
}
