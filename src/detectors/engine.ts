/**
 * Runs the detectors over a run's state as it grows and keeps the findings that hold.
 * Each finding is keyed by (run, detector, round); the engine remembers the step at which it
 * first held, updates its evidence while it holds, and reports when it stops holding. The same
 * engine serves `watch` (records as they arrive, timers for time-based detectors) and `analyze`
 * (records in one pass, then a final evaluation with everything read).
 */
import type { RunState } from '../runs/run.js';
import { DETECTORS } from './index.js';
import { findingKey, SEVERITY_RANK, type DetectContext, type Detector, type Draft, type Finding, type Params } from './types.js';

export interface Transition {
  kind: 'firing' | 'resolved' | 'escalated';
  finding: Finding;
  /** On a resolved transition: the round the (run-wide) finding moved on to, where it fires now. */
  movedTo?: number | null;
}

export interface EngineJSON {
  findings: Finding[];
  evaluated: Record<string, number>;
}

const NO_TRANSITIONS: Transition[] = [];
/** Runs shorter than this are evaluated at full cadence even in bulk (analyze equals watch on them). */
const BULK_FROM = 1024;
/** In bulk, a detector's stride is at least 1/BULK_RESOLUTION of the records read so far. */
const BULK_RESOLUTION = 32;

/**
 * How far a run has been read: its metric records, all rounds and files together. Cadences count
 * these, not distinct steps: a round's second file (a train.log read after its
 * reward_history.jsonl, or before it) brings new values for steps already counted.
 */
function progress(run: RunState): number {
  let n = 0;
  for (const r of run.rounds.values()) n += r.records;
  return n;
}

/** Whether a draft is about the same round and series as the finding it updates. */
function samePlace(f: Finding, d: Draft): boolean {
  return f.round === d.round && f.series?.role === d.series?.role && f.series?.name === d.series?.name;
}

export class DetectorEngine {
  private readonly active = new Map<string, Finding>();
  /** Keys of active findings by `run|detector`, so judging one detector does not scan them all. */
  private readonly activeBy = new Map<string, Set<string>>();
  /** run -> detector -> the run's progress at its last evaluation (no key built per record). */
  private readonly evaluated = new Map<string, Map<string, number>>();
  private enabled: Detector[];
  /** Cadence of each enabled detector, in records read (see progress). */
  private every: number[];
  /** Per run: the progress at which the next detector is due. */
  private readonly nextDue = new Map<string, number>();
  /** Runs with a finding of a time-based detector (stale-run) that holds: a record may resolve it. */
  private readonly timeHeld = new Map<string, number>();
  private readonly timeBased: ReadonlySet<string>;

  constructor(
    private params: Record<string, Params>,
    private readonly detectors: readonly Detector[] = DETECTORS,
  ) {
    this.enabled = detectors.filter((d) => params[d.id]?.enabled !== false);
    this.every = this.enabled.map((d) => Math.max(1, d.every(this.paramsOf(d))));
    this.timeBased = new Set(detectors.filter((d) => d.timeBased === true).map((d) => d.id));
  }

  /**
   * New parameters (a config reload). Findings of a detector now disabled are returned as
   * resolved; the others keep their state and are re-judged at their next evaluation.
   */
  setParams(params: Record<string, Params>): Transition[] {
    this.params = params;
    this.enabled = this.detectors.filter((d) => params[d.id]?.enabled !== false);
    this.every = this.enabled.map((d) => Math.max(1, d.every(this.paramsOf(d))));
    this.evaluated.clear();
    this.nextDue.clear();
    const on = new Set(this.enabled.map((d) => d.id));
    const out: Transition[] = [];
    for (const [key, f] of this.active) {
      if (!on.has(f.detector)) {
        this.unset(key, f);
        out.push({ kind: 'resolved', finding: f });
      }
    }
    return out;
  }

  private paramsOf(d: Detector): Params {
    return this.params[d.id] ?? d.defaults;
  }

  /**
   * After a record: evaluates the step-driven detectors whose cadence is due. `bulk` says the
   * record came in a large batch (analyze, or a daemon catching up on a backlog): then, past
   * BULK_FROM steps, a detector waits at least 1/32 of the steps read so far between evaluations
   * (about 32 evaluations each time the run's length grows e-fold: ~150 over a 20,000-step run),
   * so many runs read fast, and the step at which a
   * finding first held is exact to within 1/32 of the steps read before it.
   * Time-based detectors (stale-run) are judged by the clock (`evaluate(..., timeOnly)`); a record
   * only re-judges one whose finding holds for the run, since a record is news the run is alive.
   */
  onRecord(run: RunState, ctx: DetectContext, bulk = false): Transition[] {
    const read = progress(run);
    const held = this.timeHeld.has(run.id);
    // Cheap exit for the common case: no detector is due yet.
    const due = this.nextDue.get(run.id);
    if (due !== undefined && read < due && !held) return NO_TRANSITIONS;
    const stride = bulk && read >= BULK_FROM ? Math.floor(read / BULK_RESOLUTION) : 0;
    let out: Transition[] | null = null;
    let next = Infinity;
    const byDetector = this.evaluatedOf(run.id);
    for (let i = 0; i < this.enabled.length; i++) {
      const d = this.enabled[i]!;
      if (d.timeBased === true) {
        if (ctx.live && held && this.activeBy.has(`${run.id}|${d.id}`)) out = this.judgeAdd(out, run, d, ctx, byDetector, read);
        continue;
      }
      const last = byDetector.get(d.id);
      const cadence = Math.max(this.every[i]!, stride);
      if (last === undefined ? read === 0 : read - last < cadence) {
        next = Math.min(next, last === undefined ? 1 : last + cadence);
        continue;
      }
      next = Math.min(next, read + cadence);
      out = this.judgeAdd(out, run, d, ctx, byDetector, read);
    }
    this.nextDue.set(run.id, next);
    return out ?? NO_TRANSITIONS;
  }

  /** Judges one detector now; its transitions are added to `out` (made when there are any). */
  private judgeAdd(
    out: Transition[] | null,
    run: RunState,
    d: Detector,
    ctx: DetectContext,
    byDetector: Map<string, number>,
    steps: number,
  ): Transition[] | null {
    byDetector.set(d.id, steps);
    const t = this.apply(run, d, d.detect(run, this.paramsOf(d), ctx));
    if (t.length > 0) (out ??= []).push(...t);
    return out;
  }

  private evaluatedOf(runId: string): Map<string, number> {
    let m = this.evaluated.get(runId);
    if (m === undefined) this.evaluated.set(runId, (m = new Map<string, number>()));
    return m;
  }

  /** Evaluates every enabled detector now (`timeOnly`: just the time-based ones). */
  evaluate(run: RunState, ctx: DetectContext, timeOnly = false): Transition[] {
    const out: Transition[] = [];
    const steps = progress(run);
    const byDetector = this.evaluatedOf(run.id);
    for (const d of this.enabled) {
      if (timeOnly && d.timeBased !== true) continue;
      byDetector.set(d.id, steps);
      out.push(...this.apply(run, d, d.detect(run, this.paramsOf(d), ctx)));
      this.nextDue.delete(run.id);
    }
    return out;
  }

  private apply(run: RunState, d: Detector, drafts: Draft[]): Transition[] {
    const out: Transition[] = [];
    const seen = new Set<string>();
    for (const draft of drafts) {
      const key = findingKey(run.id, d.id, d.scope === 'run' ? '*' : draft.round);
      if (seen.has(key)) continue;
      seen.add(key);
      const prev = this.active.get(key);
      const finding: Finding = {
        detector: d.id,
        severity: draft.severity,
        run: run.id,
        // One story: the round and step go with the message and evidence. Within a round and series
        // the step at which the finding first held stays; when a run-scoped finding moves on to
        // another round or series (a later round fell further), its place moves with its story.
        round: prev !== undefined && samePlace(prev, draft) ? prev.round : draft.round,
        step: prev !== undefined && samePlace(prev, draft) ? prev.step : draft.step,
        message: draft.message,
        evidence: draft.evidence,
        recommendation: draft.recommendation,
        ...(draft.series !== undefined ? { series: draft.series } : {}),
      };
      this.put(key, finding);
      if (prev === undefined) out.push({ kind: 'firing', finding });
      // A run-scoped finding that moves to another round is another alert (alerts are keyed by
      // run, detector and round on every surface): the old one resolves, the new one fires.
      else if (prev.round !== finding.round)
        out.push({ kind: 'resolved', finding: prev, movedTo: finding.round }, { kind: 'firing', finding });
      else if (SEVERITY_RANK[finding.severity] > SEVERITY_RANK[prev.severity]) out.push({ kind: 'escalated', finding });
    }
    for (const key of [...(this.activeBy.get(`${run.id}|${d.id}`) ?? [])]) {
      if (seen.has(key)) continue;
      const f = this.active.get(key)!;
      this.unset(key, f);
      out.push({ kind: 'resolved', finding: f });
    }
    return out;
  }

  private put(key: string, f: Finding): void {
    this.active.set(key, f);
    const by = `${f.run}|${f.detector}`;
    let keys = this.activeBy.get(by);
    if (keys === undefined) this.activeBy.set(by, (keys = new Set()));
    if (!keys.has(key) && this.timeBased.has(f.detector)) this.timeHeld.set(f.run, (this.timeHeld.get(f.run) ?? 0) + 1);
    keys.add(key);
  }

  private unset(key: string, f: Finding): void {
    this.active.delete(key);
    const by = `${f.run}|${f.detector}`;
    const keys = this.activeBy.get(by);
    if (keys?.delete(key) === true && this.timeBased.has(f.detector)) {
      const n = (this.timeHeld.get(f.run) ?? 1) - 1;
      if (n === 0) this.timeHeld.delete(f.run);
      else this.timeHeld.set(f.run, n);
    }
    if (keys?.size === 0) this.activeBy.delete(by);
  }

  /** Findings that hold now, for one run or all. */
  findings(runId?: string): Finding[] {
    const all = [...this.active.values()];
    return runId === undefined ? all : all.filter((f) => f.run === runId);
  }

  toJSON(): EngineJSON {
    const evaluated: Record<string, number> = {};
    for (const [run, m] of this.evaluated) for (const [d, steps] of m) evaluated[`${run}|${d}`] = steps;
    return { findings: [...this.active.values()], evaluated };
  }

  restore(j: EngineJSON | undefined): void {
    if (j === undefined) return;
    const scope = new Map(this.enabled.map((d) => [d.id, d.scope]));
    for (const f of j.findings ?? []) this.put(findingKey(f.run, f.detector, scope.get(f.detector) === 'run' ? '*' : f.round), f);
    for (const [k, v] of Object.entries(j.evaluated ?? {})) {
      // `run|detector`; a run path may itself hold a '|', a detector id never does.
      const bar = k.lastIndexOf('|');
      if (bar > 0) this.evaluatedOf(k.slice(0, bar)).set(k.slice(bar + 1), v);
    }
  }
}
