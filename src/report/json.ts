/**
 * The JSON document of `barwatch analyze --format json` (SPEC 5): version, runs, and per run its
 * format, rounds with series statistics, and findings. Non-finite numbers become null.
 */
import type { Finding } from '../detectors/types.js';
import type { FileSource } from '../sources/file-source.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import type { SeriesStats } from '../runs/series.js';
import { signalShares } from '../runs/signal.js';

export type { Finding };

export function num(x: number | null | undefined): number | null {
  return x === null || x === undefined || !Number.isFinite(x) ? null : x;
}

export function seriesJson(s: SeriesStats): Record<string, unknown> {
  return {
    n: s.summary.n,
    mean: num(s.summary.mean),
    sd: num(s.summary.sd),
    min: num(s.summary.n ? s.summary.min : null),
    max: num(s.summary.n ? s.summary.max : null),
    last: num(s.lastValue),
    last_step: s.lastStep,
    window: { n: s.window.n, mean: num(s.window.mean), sd: num(s.window.sd) },
    ewma: { mean: num(s.ewma.mean), sd: num(s.ewma.sd) },
    nonfinite: s.nonfinite.count,
    ...(s.rewinds === null ? {} : { replaced: s.rewinds.values }),
  };
}

function roundJson(r: RoundState, run: RunState): Record<string, unknown> {
  const series: Record<string, unknown> = {};
  for (const name of [...r.series.keys()].sort()) series[name] = seriesJson(r.series.get(name)!);
  const out: Record<string, unknown> = {
    role: r.role,
    round: r.round,
    steps: r.steps,
    first_step: r.firstStep,
    last_step: r.lastStep,
    series,
  };
  const share = signalShares(r, run.settings.weights);
  if (share !== null) {
    out['signal_share'] = {
      share: share.share,
      sd: share.sd,
      weights: share.weights,
      spread: share.spread,
      variance_ratio_boundary_format: num(share.varianceRatio),
      window: share.window,
    };
  }
  if (r.droppedSeries > 0) out['dropped_series'] = r.droppedSeries;
  // The log gave no step: the numbers are the entries' (a TRL console without progress bars).
  if (r.counted > 0) out['steps_are'] = 'entries';
  // A log written in whole blocks (W&B): how far it reaches, and (still running) how far behind it is.
  if (r.reach !== null)
    out['written_to'] = {
      trainer_time: new Date(r.reach.time).toISOString(),
      block_steps: r.reach.block.steps,
      block_ms: r.reach.block.ms,
      behind: !run.finished,
    };
  const resumed = r.resumed();
  if (resumed !== null)
    out['resumed'] = {
      times: resumed.times,
      replaced: resumed.replaced,
      last_to: resumed.lastTo,
      last_from: resumed.lastFrom,
      exact: !resumed.inexact,
    };
  return out;
}

/** A finding as SPEC 5 prints it (the sparkline series stays internal). */
export function findingJson(f: Finding): Record<string, unknown> {
  const { series: _series, ...rest } = f;
  void _series;
  return rest;
}

export function runJson(run: RunState, files: FileSource[], findings: Finding[]): Record<string, unknown> {
  const f = run.filter;
  return {
    run: run.id,
    format: run.format,
    rounds: run.orderedRounds().map((r) => roundJson(r, run)),
    findings: findings.map(findingJson),
    finished: run.finished,
    settings: run.settings,
    rollouts: run.rollouts,
    ...(run.debug.empty ? {} : { debug_steps: run.debug.summary() }),
    filter: f.empty
      ? null
      : {
          questions_before: f.preN,
          questions_after: f.postN,
          boundary_share_before: num(f.preShare),
          boundary_share_after: num(f.postShare),
          kept_unknown: f.keptUnknown,
          summary_before: f.before,
          summary_after: f.after,
        },
    files: files.map((s) => ({
      path: s.file,
      format: s.format(),
      role: s.place.role,
      round: s.place.round,
      ...s.counters,
    })),
  };
}

export function analyzeDocument(
  runs: RunState[],
  filesByRun: Map<string, FileSource[]>,
  findings: Finding[] = [],
  notRead: readonly { path: string; run: string | null; reason: string }[] = [],
): Record<string, unknown> {
  return {
    version: 1,
    runs: runs.map((run) => ({
      ...runJson(
        run,
        filesByRun.get(run.id) ?? [],
        findings.filter((x) => x.run === run.id),
      ),
      problems: notRead.filter((p) => p.run === run.id).map((p) => ({ path: p.path, reason: p.reason })),
    })),
    problems: notRead.filter((p) => p.run === null).map((p) => ({ path: p.path, reason: p.reason })),
  };
}
