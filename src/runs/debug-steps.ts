/**
 * BAR-RAG's reward debug logs write a block per sample with the time it was written and no step.
 * Where the same run's trainer logs its steps with their times (W&B rows and their `_timestamp`),
 * each sample belongs to the step logged next after it: the trainer computes a step's rewards,
 * then logs the step. So the samples of a role wait here, merged by the second they carry, until a
 * row of that role comes; the row takes every sample written up to its time and they become one
 * record of the row's round and step (`samples`, each component's mean and spread, the boundary
 * share). Samples of one role from several files (one per Ray worker) are one step's together.
 *
 * The blocks carry the trainer's local time without a zone (read as UTC); the W&B rows carry
 * epoch time. The offset between the two is settled once, at a role's first row: the zone of this
 * machine, else UTC, when it puts the earliest sample before that row and at most MAX_LEAD before
 * it, else the quarter hour that puts it nearest before the row.
 */
import { addSample, emptySet, mergeSets, setValues, type SampleSetJSON } from '../parsers/buckets.js';
import type { FormatId, MetricRecord, Role } from '../parsers/types.js';

/** Seconds with samples kept waiting for their row, per role; beyond, the oldest two are merged (counted). */
const MAX_PENDING = 100_000;

/** The earliest sample of a run comes at most this long before the trainer logs its first step. */
const MAX_LEAD = 6 * 3600_000;

const QUARTER_HOUR = 15 * 60_000;

/** How samples of a role became steps where they were not matched by time (the parser's grouping). */
export type Grouping = { by: 'count'; samples: number } | { by: 'pause'; ms: number };

export interface DebugRoleJSON {
  format: FormatId;
  /** The source its steps are recorded under (the folder of its files): it owns their series. */
  source: string;
  /** Written time minus epoch time, ms; null until the role's first row met samples. */
  offset: number | null;
  /** The offset is this machine's zone or UTC (false: guessed from the rows). */
  zoned: boolean;
  /** The trainer's time of the latest row of the role. */
  lastRow: number | null;
  /** Samples waiting for their row: [written second (ms), the samples of that second], by time. */
  pending: [number, SampleSetJSON][];
  /** Samples matched to a step, the steps they made, and the rounds those steps are in. */
  samples: number;
  steps: number;
  rounds: number[];
  /** Samples written before a row that had already taken its samples (dropped). */
  late: number;
  /** Times the oldest two waiting seconds were merged to keep within MAX_PENDING. */
  merged: number;
}

export interface DebugStepsJSON {
  byTime: Partial<Record<Role, DebugRoleJSON>>;
  grouped: Partial<Record<Role, Grouping>>;
}

/** A step formed from samples, and where it goes. */
export interface DebugStep {
  record: MetricRecord;
  format: FormatId;
  source: string;
}

function pendingCount(r: DebugRoleJSON): number {
  let n = 0;
  for (const [, s] of r.pending) n += s.n;
  return n;
}

/** This machine's zone at `t`: local wall time minus epoch time, ms. */
function localOffset(t: number): number {
  return -new Date(t).getTimezoneOffset() * 60_000 || 0;
}

export class DebugSteps {
  private byTime: Partial<Record<Role, DebugRoleJSON>> = {};
  private grouped: Partial<Record<Role, Grouping>> = {};

  /** A sample of a role, with the time its block carried. */
  add(role: Role, format: FormatId, source: string, values: Record<string, number>, time: number): void {
    const r = (this.byTime[role] ??= {
      format,
      source,
      offset: null,
      zoned: true,
      lastRow: null,
      pending: [],
      samples: 0,
      steps: 0,
      rounds: [],
      late: 0,
      merged: 0,
    });
    if (r.offset !== null && r.lastRow !== null && time - r.offset <= r.lastRow) {
      r.late++;
      return;
    }
    const sec = Math.floor(time / 1000) * 1000;
    const p = r.pending;
    let i = p.length;
    while (i > 0 && p[i - 1]![0] > sec) i--;
    if (i > 0 && p[i - 1]![0] === sec) addSample(p[i - 1]![1], values);
    else {
      const set = emptySet();
      addSample(set, values);
      p.splice(i, 0, [sec, set]);
    }
    if (p.length > MAX_PENDING) {
      mergeSets(p[1]![1], p[0]![1]);
      p.shift();
      r.merged++;
    }
  }

  /**
   * A row of a role's round at `step`, logged at `time` (epoch ms): the step the samples written
   * up to then make, or null when none wait.
   */
  row(role: Role, round: number, step: number, time: number): DebugStep | null {
    const r = this.byTime[role];
    if (r === undefined) return null;
    if (r.lastRow === null || time > r.lastRow) r.lastRow = time;
    if (r.pending.length === 0) return null;
    if (r.offset === null) this.settleOffset(r, time);
    const off = r.offset!;
    let k = 0;
    while (k < r.pending.length && r.pending[k]![0] - off <= time) k++;
    if (k === 0) return null;
    const set = emptySet();
    for (const [, s] of r.pending.splice(0, k)) mergeSets(set, s);
    r.samples += set.n;
    r.steps++;
    if (!r.rounds.includes(round)) r.rounds.push(round);
    const record: MetricRecord = { kind: 'metrics', step, values: setValues(set, role === 'selector'), time };
    return { record, format: r.format, source: r.source };
  }

  private settleOffset(r: DebugRoleJSON, rowTime: number): void {
    const earliest = r.pending[0]![0];
    const fits = (off: number): boolean => earliest - off <= rowTime && earliest - off >= rowTime - MAX_LEAD;
    for (const off of [localOffset(earliest), 0]) {
      if (fits(off)) {
        r.offset = off;
        r.zoned = true;
        return;
      }
    }
    // The quarter hour that puts the earliest sample nearest before the row.
    r.offset = Math.ceil((earliest - rowTime) / QUARTER_HOUR) * QUARTER_HOUR;
    r.zoned = false;
  }

  /** How the grouping parser formed a role's steps (recorded where its samples were not matched by time). */
  groupedBy(role: Role, g: Grouping): void {
    this.grouped[role] = g;
  }

  /** Per role: how its debug samples became steps, in words (empty: the run has no debug samples). */
  describe(): string[] {
    const out: string[] = [];
    for (const role of ['selector', 'generator', 'unknown'] as const) {
      const r = this.byTime[role];
      if (r !== undefined) {
        const rounds = r.rounds.length === 0 ? '' : ` of round${r.rounds.length > 1 ? 's' : ''} ${r.rounds.join(', ')}`;
        const parts = [
          `${role} debug steps by time: ${r.samples} sample(s) matched to the ${r.steps} step(s)${rounds} logged next after them`,
        ];
        const waiting = pendingCount(r);
        if (waiting > 0) parts.push(`${waiting} written after the last row wait for the next`);
        if (r.late > 0) parts.push(`${r.late} written before a row already read were dropped`);
        if (r.offset !== null && !r.zoned) parts.push(`their clock read as UTC${r.offset >= 0 ? '+' : '-'}${hhmm(Math.abs(r.offset))}`);
        out.push(parts.join('; '));
      }
      const g = this.grouped[role];
      if (g !== undefined)
        out.push(
          `${role} debug steps grouped ${g.by === 'count' ? `by ${g.samples} samples a step (parser.debug_samples_per_step)` : `by a pause of more than ${g.ms / 1000} s in writing (parser.debug_step_gap)`}: no log of the trainer's timed steps to match`,
        );
    }
    return out;
  }

  /** Per role, for the JSON report. */
  summary(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [role, r] of Object.entries(this.byTime))
      out[role] = {
        by: 'time',
        samples: r.samples,
        steps: r.steps,
        rounds: r.rounds,
        waiting: pendingCount(r),
        late: r.late,
        offset_ms: r.offset,
      };
    for (const [role, g] of Object.entries(this.grouped))
      out[role] ??= g.by === 'count' ? { by: 'count', samples_per_step: g.samples } : { by: 'pause', gap_ms: g.ms };
    return out;
  }

  get empty(): boolean {
    return Object.keys(this.byTime).length === 0 && Object.keys(this.grouped).length === 0;
  }

  toJSON(): DebugStepsJSON {
    return { byTime: this.byTime, grouped: this.grouped };
  }

  static from(j: DebugStepsJSON | undefined): DebugSteps {
    const d = new DebugSteps();
    if (j !== undefined && j !== null && typeof j === 'object') {
      d.byTime = j.byTime ?? {};
      d.grouped = j.grouped ?? {};
    }
    return d;
  }
}

function hhmm(ms: number): string {
  const m = Math.round(ms / 60_000);
  return `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}
