/** One round of one role in one run (e.g. selector round 2): its steps and its series. */
import { ListedRecord, ShapedRecord } from '../parsers/keys.js';
import type { FormatId, MetricRecord, Role } from '../parsers/types.js';
import type { RoundMemo } from './quantities.js';
import { SeriesStats, type SeriesJSON, type StatsOptions } from './series.js';
import { History, type HistoryJSON } from '../stats/rolling.js';
import { humanDuration } from '../util/format.js';

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
  /** A log written in blocks (W&B): how far it reaches in the trainer's time, and how much a block holds. */
  reach?: RoundReach;
  /** Per file: its format and the first step it wrote in the round. Absent in states saved before it was kept. */
  files?: Record<string, FileStart>;
  /** Series a continuing file took over (see RoundState.continues). */
  handovers?: number;
  /** Records numbered by entry (absent in states saved before they were counted). */
  counted?: number;
  arrivals: HistoryJSON;
  stepTimes?: HistoryJSON;
  series: Record<string, SeriesJSON>;
}

/** How far a log written in blocks reaches (the trainer's time) and how much a block holds (ReachRecord). */
export interface RoundReach {
  time: number;
  block: { steps: number; ms: number };
}

/** The format a file of the round is in and the first step it wrote there. */
export interface FileStart {
  format: FormatId;
  first: number;
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
  /** Records whose step is the entry's number in its file: the log says none (MetricRecord.counted). */
  counted = 0;
  /** Series that a file continuing their owner took over (a run resumed into a new log). */
  handovers = 0;
  /** Where its log written in blocks (W&B) reaches, and how late its rows come: see reached. */
  reach: RoundReach | null = null;
  /** Per file: its format and the first step it wrote in this round (a few files per round). */
  private readonly files = new Map<string, FileStart>();
  /** The file of the last record applied, and its start (see apply). */
  private lastFile: { source: string; start: FileStart } | null = null;
  /**
   * Each file's name as the round first met it. A name read again is often another string of the
   * same text (made for each read); the series' owners are compared with the first one, by
   * pointer, instead of character by character for every value (see apply).
   */
  private readonly names = new Map<string, string>();
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
  /** What the quantity lookups found in this round (quantities.ts fills and reads it). */
  lookups: RoundMemo | null = null;
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
   * first time. `steps` counts distinct steps: a step past the highest seen so far. With `copies`,
   * the source is two files that write the same steps (a W&B run file and its console copy): a
   * value for a step its series already has is a copy, counted as a duplicate.
   */
  apply(rec: MetricRecord, step: number, now: number, source: string, format: FormatId, copies = false): string[] {
    let fresh: string[] = NO_NAMES;
    this.records++;
    if (rec.counted === true) this.counted++;
    if (this.lastFile?.source !== source) {
      let start = this.files.get(source);
      if (start === undefined) this.files.set(source, (start = { format, first: step }));
      this.lastFile = { source: this.nameOf(source), start };
    }
    source = this.lastFile.source;
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
        fresh = this.add(at++, name, raw[key] as number, step, source, fresh, copies);
      }
    } else if (rec instanceof ListedRecord) {
      const { names, nums } = rec;
      for (; at < names.length; at++) fresh = this.add(at, names[at]!, nums[at]!, step, source, fresh, copies);
    } else {
      const values = rec.values;
      for (const name in values) fresh = this.add(at++, name, values[name]!, step, source, fresh, copies);
    }
    return fresh;
  }

  /** The file's name as the round first met it (see names). */
  private nameOf(source: string): string {
    let name = this.names.get(source);
    if (name === undefined) this.names.set(source, (name = source));
    return name;
  }

  /**
   * One value of the series `name`, the `at`-th of its record. A file writes the same names in
   * the same order line after line: the slot of the name at each place is remembered, and a name
   * equal to the last one there (a pointer comparison of interned names) needs no map lookup.
   * Returns `fresh`, with `name` added when the series is new.
   */
  private add(at: number, name: string, value: number, step: number, source: string, fresh: string[], copies: boolean): string[] {
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
    if (slot.owner !== source && !this.continues(slot, source)) this.duplicates++;
    // One source of two files writing the same steps: the first value of a step counts, its copy does not.
    else if (copies && slot.stats.reaches(step)) this.duplicates++;
    else slot.stats.add(step, value);
    return fresh;
  }

  /**
   * Whether `source`, which does not own the series, continues it: a run resumed into a new log
   * (train_0101.log to step 80, then train_0102.log from its checkpoint at step 61). It does when
   * it is in the owner's format and its first step in the round falls after the series' first and
   * at most one past its latest; then it takes the series over, and its steps replace the ones
   * written before (SeriesStats.rewind). A file in another format writes the same numbers (a
   * reward_history.jsonl and its train.log), and one from the same first step is a peer (a
   * worker's log): neither takes over.
   */
  private continues(slot: Slot, source: string): boolean {
    const mine = this.files.get(source);
    const owner = this.files.get(slot.owner!);
    const first = slot.stats.firstStep;
    const latest = slot.stats.latest;
    if (mine === undefined || owner === undefined || first === null || latest === null) return false;
    if (mine.format !== owner.format || !(mine.first > first && mine.first <= latest + 1)) return false;
    slot.owner = source;
    this.handovers++;
    return true;
  }

  /**
   * Where the round's series went back to steps written before (a run resumed from a checkpoint,
   * or its log appended by a rerun), from the series that replaced most values; null if none did.
   */
  resumed(): { times: number; replaced: number; lastTo: number; lastFrom: number | null; inexact: boolean } | null {
    let out: { times: number; replaced: number; lastTo: number; lastFrom: number | null } | null = null;
    let inexact = false;
    for (const s of this.series.values()) {
      const r = s.rewinds;
      if (r === null || r.lastTo === null) continue;
      if (out === null || r.values > out.replaced)
        out = { times: r.count, replaced: r.values, lastTo: r.lastTo, lastFrom: r.lastFrom ?? null };
      inexact ||= r.inexact;
    }
    return out === null ? null : { ...out, inexact };
  }

  /** A log of the round written in blocks reaches the trainer's time `r.time`. */
  reached(r: RoundReach): void {
    if (this.reach !== null && this.reach.time >= r.time) return;
    this.reach = { time: r.time, block: { ...r.block } };
    this.text = null;
  }

  /**
   * A round whose log is written in whole blocks while it runs (W&B) and has not finished: how far
   * behind its file is, in words; null otherwise.
   */
  behind(finished: boolean): string | null {
    if (this.reach === null || finished || this.lastStep === null) return null;
    const b = this.reach.block;
    return `W&B writes its log in 32 KiB blocks: rows after step ${this.lastStep} appear when the block fills, here about ${b.steps} step(s) (${humanDuration(b.ms)} of training)`;
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
      files: Object.fromEntries([...this.files].map(([k, v]) => [k, { ...v }])),
      handovers: this.handovers,
      counted: this.counted,
      arrivals: this.arrivals.toJSON(),
      stepTimes: this.stepTimes.toJSON(),
      ...(this.reach !== null ? { reach: this.reach } : {}),
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
    r.handovers = j.handovers ?? 0;
    r.counted = j.counted ?? 0;
    for (const [k, v] of Object.entries(j.files ?? {})) r.files.set(k, { ...v });
    r.arrivals = History.from(j.arrivals);
    if (j.stepTimes !== undefined) r.stepTimes = History.from(j.stepTimes);
    if (j.reach !== undefined) r.reach = j.reach;
    for (const [k, v] of Object.entries(j.series)) {
      const stats = SeriesStats.from(v, opts);
      r.series.set(k, stats);
      const owner = j.owners?.[k];
      r.slots.set(k, { stats, owner: owner === undefined ? undefined : r.nameOf(owner) });
    }
    return r;
  }
}
