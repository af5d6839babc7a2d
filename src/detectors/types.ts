/**
 * A detector is a pure function of a run's state: it says which of its findings hold now.
 * The engine (engine.ts) calls it as records arrive (watch) or in one pass (analyze), remembers
 * the step at which each finding first held, and reports when one stops holding.
 */
import type { RunState } from '../runs/run.js';
import type { Quantity } from '../runs/quantities.js';

export type Severity = 'info' | 'warning' | 'critical';

/** What a detector returns: one finding that holds now. */
export interface Draft {
  round: number | null;
  /** The step at which it holds (the engine keeps the first one). */
  step: number | null;
  severity: Severity;
  message: string;
  evidence: Record<string, unknown>;
  recommendation: string | null;
  /** The series the finding is about, for sparklines: role, round and name. */
  series?: { role: 'selector' | 'generator' | 'unknown'; round: number | null; name: string };
}

export interface DetectContext {
  /** Epoch ms: the clock of the daemon, or the time of the analysis. */
  now: number;
  /** True in `watch`: arrival times mean something; false in `analyze`. */
  live: boolean;
  /** True at the end of an `analyze` pass: the last evaluation, with everything read. */
  final: boolean;
}

export type ParamValue = number | boolean | string;
export type Params = Record<string, ParamValue> & { enabled: boolean; severity: Severity };

export interface Detector<P extends Params = Params> {
  readonly id: string;
  /** One line for the docs: what it looks at. */
  readonly description: string;
  /** What it means when a finding stops holding, for the resolved message ("the boundary reward no longer swings"). */
  readonly cleared: string;
  /** Every parameter with its default; the config may override each (detectors.<id>.<param>). */
  readonly defaults: P;
  /** The parameters that count steps, points, windows or segments: whole numbers from 1 (others are any number from 0). */
  readonly counts?: readonly string[];
  /** Evaluate at most once every this many new records of a run (heavy detectors ask for more). */
  every(p: P): number;
  /**
   * `round`: one finding per round (a swing in round 2 and one in round 3 are two findings).
   * `run`: one finding per run, which follows the latest round it concerns without restarting
   * (its round, step, message and evidence move together).
   */
  readonly scope: 'round' | 'run';
  /**
   * Its verdict reads a fact (a NaN, a crash, a setting, the filter's counts), not a statistic
   * that can cross its threshold for a moment, and names the step the fact is at: it fires and
   * resolves at the first evaluation that says so, and is judged after every read as well as by
   * its cadence, so a NaN is reported as soon as it is read. Others wait for a second evaluation.
   */
  readonly immediate?: boolean;
  /** Only meaningful with a clock (stale-run): evaluated on timers and at the end, not per step. */
  readonly timeBased?: boolean;
  /**
   * The quantities (runs/quantities.ts) it judges, when it judges nothing else: while no round of
   * a run carries any of them it finds nothing there, and the engine does not ask it (a run of
   * the BAR-RAG selector logs no entropy, KL or length).
   */
  readonly reads?: readonly Quantity[];
  detect(run: RunState, p: P, ctx: DetectContext): Draft[];
}

/** A finding as SPEC 5 prints it. */
export interface Finding {
  detector: string;
  severity: Severity;
  run: string;
  round: number | null;
  step: number | null;
  message: string;
  evidence: Record<string, unknown>;
  recommendation: string | null;
  series?: Draft['series'];
}

/** Higher is more severe: sort with `SEVERITY_RANK[b] - SEVERITY_RANK[a]` for the most severe first. */
export const SEVERITY_RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

/**
 * The identity of a finding (and of its alert): run, detector and round. `round` is '*' for a
 * run-scoped detector's finding in the engine, which follows the latest round it concerns.
 */
export function findingKey(run: string, detector: string, round: number | null | '*'): string {
  return `${run}|${detector}|${round ?? '-'}`;
}
