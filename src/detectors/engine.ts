/**
 * Runs the detectors over a run's state as it grows and keeps the findings that hold.
 * Each finding is keyed by (run, detector, round); the engine remembers the step at which it
 * first held, updates its evidence while it holds, and reports when it stops holding. A verdict
 * changes only when two evaluations in a row agree (a finding fires once it has held at two
 * evaluations of its detector, and resolves once it has failed at two), or at a decisive
 * evaluation (`evaluate`): the last one of analyze, the end of a daemon's catch-up, a run that
 * has gone quiet (watch.settle_after).
 * A finding that holds for a moment as a statistic crosses its threshold is no alert. The same
 * engine serves `watch` (records as they arrive, timers for time-based detectors) and `analyze`
 * (records in one pass, then a final evaluation with everything read).
 */
import { carriesAny, type Quantity } from '../runs/quantities.js';
import type { RunState } from '../runs/run.js';
import { releaseSharedPoints } from '../stats/rolling.js';
import { DETECTORS } from './index.js';
import { findingKey, SEVERITY_RANK, type DetectContext, type Detector, type Draft, type Finding, type Params } from './types.js';

/**
 * A finding's change: it holds (after two evaluations, or a decisive one), it no longer holds, or
 * it holds at a higher severity. Alerts (alerting/) follow from findings with their own states;
 * the console and alerts.jsonl name these transitions firing, resolved and escalated.
 */
export interface Transition {
  kind: 'held' | 'cleared' | 'escalated';
  finding: Finding;
  /** On a cleared transition: the round the (run-wide) finding moved on to, where it holds now. */
  movedTo?: number | null;
}

export interface EngineJSON {
  findings: Finding[];
  evaluated: Record<string, number>;
  /** Findings held once, waiting for a second evaluation to fire. */
  pending?: Finding[];
  /** Keys of findings that failed once, waiting for a second evaluation to resolve. */
  failing?: string[];
}

const NO_TRANSITIONS: Transition[] = [];
/** Runs shorter than this (in records read) are evaluated at every detector's own cadence. */
const STRIDE_FROM = 8192;
/** Past STRIDE_FROM, a detector's stride is at least 1/STRIDE_RESOLUTION of the records read so far. */
const STRIDE_RESOLUTION = 128;

/** How far a run has been read (RunState.recordsRead): cadences count records, not distinct steps. */
function progress(run: RunState): number {
  return run.recordsRead();
}

/** Whether a draft is about the same round and series as the finding it updates. */
function samePlace(f: Finding, d: Draft): boolean {
  return f.round === d.round && f.series?.role === d.series?.role && f.series?.name === d.series?.name;
}

/**
 * What the engine keeps of one run, found with one lookup per record: a step judged by twenty
 * detectors looked the run up in several maps for each of them.
 */
interface RunBook {
  /** The run's progress at each detector's last evaluation, by the detector's place in `detectors` (NaN: none yet). */
  readonly last: Float64Array;
  /** The progress at which the next step-driven detector is due (NaN: worked out at the next record). */
  nextDue: number;
  /** Findings that held at one evaluation and not yet at a second, by key. */
  readonly pending: Map<string, Finding>;
  /** Keys of the run's active findings by detector, so judging one detector does not scan them all. */
  readonly active: Map<string, Set<string>>;
  /** Active findings of time-based detectors (stale-run): while there are any, a record may resolve them. */
  timeHeld: number;
  /**
   * Whether the run carries a quantity each detector reads (Detector.reads), by the detector's
   * place: 1 yes, 0 no, -1 not yet worked out; for the run's series count `carriesAt`.
   */
  readonly carries: Int8Array;
  carriesAt: number;
}

const NO_DRAFTS: readonly Draft[] = [];

export class DetectorEngine {
  private readonly active = new Map<string, Finding>();
  /** Per run: its evaluations, pending and active findings. */
  private readonly books = new Map<string, RunBook>();
  private enabled: Detector[];
  /** Each enabled detector's place in `detectors` (its slot in RunBook.last). */
  private place: number[];
  /** Cadence of each enabled detector, in records read (see progress). */
  private every: number[];
  /** Each enabled detector's parameters, by its place in `enabled` (a judgement reads them by index, not by the detector's id). */
  private paramsAt: Params[];
  private readonly timeBased: ReadonlySet<string>;
  /** Keys of active findings that failed at one evaluation and not yet at a second. */
  private readonly failing = new Set<string>();

  constructor(
    private params: Record<string, Params>,
    private readonly detectors: readonly Detector[] = DETECTORS,
  ) {
    this.enabled = detectors.filter((d) => params[d.id]?.enabled !== false);
    this.place = this.enabled.map((d) => detectors.indexOf(d));
    this.paramsAt = this.enabled.map((d) => this.paramsOf(d));
    this.every = this.enabled.map((d, i) => Math.max(1, d.every(this.paramsAt[i]!)));
    this.timeBased = new Set(detectors.filter((d) => d.timeBased === true).map((d) => d.id));
  }

  /**
   * New parameters (a config reload). Findings of a detector now disabled are returned as
   * resolved; the others keep their state and are re-judged at their next evaluation.
   */
  setParams(params: Record<string, Params>): Transition[] {
    this.params = params;
    this.enabled = this.detectors.filter((d) => params[d.id]?.enabled !== false);
    this.place = this.enabled.map((d) => this.detectors.indexOf(d));
    this.paramsAt = this.enabled.map((d) => this.paramsOf(d));
    this.every = this.enabled.map((d, i) => Math.max(1, d.every(this.paramsAt[i]!)));
    const on = new Set(this.enabled.map((d) => d.id));
    const out: Transition[] = [];
    for (const book of this.books.values()) {
      book.last.fill(NaN);
      book.nextDue = NaN;
      for (const [key, f] of book.pending) if (!on.has(f.detector)) book.pending.delete(key);
    }
    for (const [key, f] of this.active) {
      if (!on.has(f.detector)) {
        this.unset(key, f);
        out.push({ kind: 'cleared', finding: f });
      }
    }
    return out;
  }

  private paramsOf(d: Detector): Params {
    return this.params[d.id] ?? d.defaults;
  }

  /**
   * Before the first record of another step (Pipeline's sink: the step before is all in, from
   * every file of its round): evaluates the step-driven detectors whose cadence is due. The
   * schedule depends
   * on the records read alone, never on how they arrived (one at a time at a training pace, in
   * large batches when a daemon catches up, in one pass in analyze), so a finding first holds at
   * the same step live and in analyze. Past STRIDE_FROM records a detector waits at least 1/128 of
   * the records read so far between evaluations (about 128 evaluations each time the run's length
   * grows e-fold), so a long run is read fast: the step at which a finding first held is then
   * exact to within 1/128 of the run read before it.
   * Time-based detectors (stale-run) are judged by the clock (`evaluate(..., timeOnly)`); a record
   * only re-judges one whose finding holds for the run, since a record is news the run is alive.
   */
  onRecord(run: RunState, ctx: DetectContext): Transition[] {
    const read = progress(run);
    const book = this.bookOf(run.id);
    const held = book.timeHeld > 0;
    // Cheap exit for the common case: no detector is due yet (NaN: not worked out, never less).
    if (read < book.nextDue && !held) return NO_TRANSITIONS;
    const stride = read >= STRIDE_FROM ? Math.floor(read / STRIDE_RESOLUTION) : 0;
    let out: Transition[] | null = null;
    let next = Infinity;
    for (let i = 0; i < this.enabled.length; i++) {
      const d = this.enabled[i]!;
      if (d.timeBased === true) {
        if (ctx.live && held && book.active.has(d.id)) out = this.judgeAdd(out, run, book, i, ctx, read, true);
        continue;
      }
      const last = book.last[this.place[i]!]!;
      const cadence = Math.max(this.every[i]!, stride);
      if (Number.isNaN(last) ? read === 0 : read - last < cadence) {
        next = Math.min(next, Number.isNaN(last) ? 1 : last + cadence);
        continue;
      }
      next = Math.min(next, read + cadence);
      out = this.judgeAdd(out, run, book, i, ctx, read);
    }
    book.nextDue = next;
    releaseSharedPoints();
    return out ?? NO_TRANSITIONS;
  }

  /**
   * After a read (the records of one batch applied): the immediate detectors judge what is new
   * without waiting for their cadence or the next step, so a NaN or a crash is reported at once.
   */
  afterRead(run: RunState, ctx: DetectContext): Transition[] {
    const read = progress(run);
    const book = this.bookOf(run.id);
    let out: Transition[] | null = null;
    for (let i = 0; i < this.enabled.length; i++) {
      const d = this.enabled[i]!;
      if (d.immediate === true && d.timeBased !== true && book.last[this.place[i]!] !== read)
        out = this.judgeAdd(out, run, book, i, ctx, read);
    }
    releaseSharedPoints();
    return out ?? NO_TRANSITIONS;
  }

  /** Judges the i-th enabled detector now; its transitions are added to `out` (made when there are any). */
  private judgeAdd(
    out: Transition[] | null,
    run: RunState,
    book: RunBook,
    i: number,
    ctx: DetectContext,
    steps: number,
    decisive = false,
  ): Transition[] | null {
    const d = this.enabled[i]!;
    const place = this.place[i]!;
    book.last[place] = steps;
    const drafts = d.reads !== undefined && !this.carries(run, book, place, d.reads) ? NO_DRAFTS : d.detect(run, this.paramsAt[i]!, ctx);
    const t = this.apply(run, book, d, drafts, decisive);
    if (t.length > 0) (out ??= []).push(...t);
    return out;
  }

  /**
   * Whether some round of the run carries one of the quantities the detector at `place` reads:
   * worked out once for each count of the run's series. A detector none of whose quantities a run
   * carries finds nothing there (Detector.reads), so its evaluation is an empty one.
   */
  private carries(run: RunState, book: RunBook, place: number, reads: readonly Quantity[]): boolean {
    if (book.carriesAt !== run.seriesCount) {
      book.carries.fill(-1);
      book.carriesAt = run.seriesCount;
    }
    let c = book.carries[place]!;
    if (c === -1) book.carries[place] = c = carriesAny(run.orderedRounds(), reads) ? 1 : 0;
    return c === 1;
  }

  private bookOf(runId: string): RunBook {
    let b = this.books.get(runId);
    if (b === undefined) {
      const n = this.detectors.length;
      b = {
        last: new Float64Array(n).fill(NaN),
        nextDue: NaN,
        pending: new Map(),
        active: new Map(),
        timeHeld: 0,
        carries: new Int8Array(n).fill(-1),
        carriesAt: -1,
      };
      this.books.set(runId, b);
    }
    return b;
  }

  /**
   * Evaluates every enabled detector now (`timeOnly`: just the time-based ones), decisively: what
   * holds now fires and what does not resolves, without waiting for a second evaluation. The
   * step-driven detectors' schedule (onRecord) stays as it was: a run judged while its trainer
   * pauses (settle_after) is then judged at the same records as analyze judges it.
   */
  evaluate(run: RunState, ctx: DetectContext, timeOnly = false): Transition[] {
    const out: Transition[] = [];
    const steps = progress(run);
    const book = this.bookOf(run.id);
    for (let i = 0; i < this.enabled.length; i++) {
      const d = this.enabled[i]!;
      if (timeOnly && d.timeBased !== true) continue;
      if (d.timeBased === true) book.last[this.place[i]!] = steps;
      out.push(...this.apply(run, book, d, d.detect(run, this.paramsAt[i]!, ctx), true));
      book.nextDue = NaN;
    }
    releaseSharedPoints();
    return out;
  }

  /** A finding held long enough (no active finding has its key): it fires. */
  private fire(key: string, finding: Finding): Transition[] {
    this.put(key, finding);
    return [{ kind: 'held', finding }];
  }

  private apply(run: RunState, book: RunBook, d: Detector, drafts: readonly Draft[], decisive: boolean): Transition[] {
    const pending = book.pending;
    // Most evaluations find nothing where nothing held: nothing to fire, resolve or forget.
    if (drafts.length === 0 && !book.active.has(d.id) && pending.size === 0) return NO_TRANSITIONS;
    const out: Transition[] = [];
    // The keys of the drafts judged (most evaluations find nothing: no set is made for them).
    let seen = null as Set<string> | null;
    for (const draft of drafts) {
      const key = findingKey(run.id, d.id, d.scope === 'run' ? '*' : draft.round);
      if (seen?.has(key) === true) continue;
      (seen ??= new Set()).add(key);
      this.failing.delete(key);
      const active = this.active.get(key);
      // A finding not yet fired is judged against the one that held once before it.
      const prev = active ?? pending.get(key);
      // One story: the round and step go with the message and evidence. Within a round and series
      // the step at which the finding first held stays; when a run-scoped finding moves on to
      // another round or series (a later round fell further), its place moves with its story.
      const stays = prev !== undefined && samePlace(prev, draft);
      const finding: Finding = {
        detector: d.id,
        severity: draft.severity,
        run: run.id,
        round: stays ? prev.round : draft.round,
        step: stays ? prev.step : draft.step,
        message: draft.message,
        evidence: draft.evidence,
        recommendation: draft.recommendation,
      };
      if (draft.series !== undefined) finding.series = draft.series;
      if (active === undefined) {
        // Held at two evaluations in a row (or at a decisive one, or a fact): it fires.
        if (decisive || d.immediate === true || pending.has(key)) {
          pending.delete(key);
          out.push(...this.fire(key, finding));
        } else pending.set(key, finding);
        continue;
      }
      this.put(key, finding);
      // A run-scoped finding that moves to another round is another alert (alerts are keyed by
      // run, detector and round on every surface): the old one resolves, the new one fires.
      if (active.round !== finding.round) out.push({ kind: 'cleared', finding: active, movedTo: finding.round }, { kind: 'held', finding });
      else if (SEVERITY_RANK[finding.severity] > SEVERITY_RANK[active.severity]) out.push({ kind: 'escalated', finding });
    }
    // Held once and not again: never fired, forgotten.
    for (const [key, f] of pending) if (f.detector === d.id && seen?.has(key) !== true) pending.delete(key);
    const activeKeys = book.active.get(d.id);
    for (const key of activeKeys === undefined ? [] : [...activeKeys]) {
      if (seen?.has(key) === true) continue;
      // Failed at two evaluations in a row (or at a decisive one): it resolves.
      if (!decisive && d.immediate !== true && !this.failing.has(key)) {
        this.failing.add(key);
        continue;
      }
      this.failing.delete(key);
      const f = this.active.get(key)!;
      this.unset(key, f);
      out.push({ kind: 'cleared', finding: f });
    }
    return out;
  }

  private put(key: string, f: Finding): void {
    this.active.set(key, f);
    const book = this.bookOf(f.run);
    let keys = book.active.get(f.detector);
    if (keys === undefined) book.active.set(f.detector, (keys = new Set()));
    if (!keys.has(key) && this.timeBased.has(f.detector)) book.timeHeld++;
    keys.add(key);
  }

  private unset(key: string, f: Finding): void {
    this.active.delete(key);
    const book = this.books.get(f.run);
    const keys = book?.active.get(f.detector);
    if (keys?.delete(key) === true && this.timeBased.has(f.detector)) book!.timeHeld--;
    if (keys?.size === 0) book!.active.delete(f.detector);
  }

  /**
   * What changed since `before` (findings that held then, from `findings()`), as the transitions
   * one evaluation would give: a daemon that read a backlog with its alerts held reports what
   * holds at the end, not every finding that came and went in the backlog.
   */
  changesSince(before: readonly Finding[]): Transition[] {
    const scope = new Map(this.detectors.map((d) => [d.id, d.scope]));
    const keyOf = (f: Finding): string => findingKey(f.run, f.detector, scope.get(f.detector) === 'run' ? '*' : f.round);
    const was = new Map(before.map((f) => [keyOf(f), f]));
    const out: Transition[] = [];
    for (const [key, f] of this.active) {
      const prev = was.get(key);
      if (prev === undefined) out.push({ kind: 'held', finding: f });
      else if (prev.round !== f.round) out.push({ kind: 'cleared', finding: prev, movedTo: f.round }, { kind: 'held', finding: f });
      else if (SEVERITY_RANK[f.severity] > SEVERITY_RANK[prev.severity]) out.push({ kind: 'escalated', finding: f });
    }
    for (const [key, f] of was) if (!this.active.has(key)) out.push({ kind: 'cleared', finding: f });
    return out;
  }

  /**
   * Forgets a run that is no more (its files were found to be separate runs, sources/runs.ts):
   * its findings are returned as cleared, and nothing of it is kept.
   */
  forgetRun(runId: string): Transition[] {
    const out: Transition[] = [];
    for (const [key, f] of this.active) {
      if (f.run !== runId) continue;
      this.unset(key, f);
      this.failing.delete(key);
      out.push({ kind: 'cleared', finding: f });
    }
    this.books.delete(runId);
    return out;
  }

  /** Findings that hold now, for one run or all. */
  findings(runId?: string): Finding[] {
    const all = [...this.active.values()];
    return runId === undefined ? all : all.filter((f) => f.run === runId);
  }

  toJSON(): EngineJSON {
    const evaluated: Record<string, number> = {};
    for (const [run, book] of this.books)
      for (let i = 0; i < this.detectors.length; i++)
        if (!Number.isNaN(book.last[i]!)) evaluated[`${run}|${this.detectors[i]!.id}`] = book.last[i]!;
    return {
      findings: [...this.active.values()],
      evaluated,
      pending: [...this.books.values()].flatMap((b) => [...b.pending.values()]),
      failing: [...this.failing],
    };
  }

  restore(j: EngineJSON | undefined): void {
    if (j === undefined) return;
    const scope = new Map(this.enabled.map((d) => [d.id, d.scope]));
    const keyOf = (f: Finding): string => findingKey(f.run, f.detector, scope.get(f.detector) === 'run' ? '*' : f.round);
    for (const f of j.findings ?? []) this.put(keyOf(f), f);
    for (const f of j.pending ?? []) if (scope.has(f.detector)) this.bookOf(f.run).pending.set(keyOf(f), f);
    for (const key of j.failing ?? []) if (this.active.has(key)) this.failing.add(key);
    const at = new Map(this.detectors.map((d, i) => [d.id, i]));
    for (const [k, v] of Object.entries(j.evaluated ?? {})) {
      // `run|detector`; a run path may itself hold a '|', a detector id never does. A detector
      // this version does not have is left out.
      const bar = k.lastIndexOf('|');
      const i = at.get(k.slice(bar + 1));
      if (bar > 0 && i !== undefined) this.bookOf(k.slice(0, bar)).last[i] = v;
    }
  }
}
