/**
 * GET /api/v1/runs and GET /api/v1/runs/<id>: every run with its state, and one run's rounds with
 * the curves barwatch keeps (at most curve_buckets points a series, however long the round), its
 * filter histograms, config values and findings.
 */
import { CHARTED, QUANTITY_LABELS, seriesFor } from '../runs/quantities.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GUIDE_ACCURACY, targetOf } from '../detectors/queries.js';
import { BOUNDARY_HIGH, BOUNDARY_LOW } from '../parsers/types.js';
import { resample } from '../stats/rolling.js';
import { SEVERITY_RANK, type Finding, type Severity } from '../detectors/types.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import { signalShares } from '../runs/signal.js';
import { RequestError, sendJson, type Route } from './server.js';
import type { WebSource } from './source.js';

/** Buckets in the rolling window of the band drawn around a curve. */
const BAND_BUCKETS = 8;
/** Points in a sparkline. */
const SPARK = 48;

export type RunHealth = 'healthy' | 'pending' | 'firing';

export interface RunSummaryJSON {
  id: string;
  format: string | null;
  /** Every format its records came in, most first (a simulated run: reward-history and train-log). */
  formats: string[];
  role: string | null;
  round: number | null;
  step: number | null;
  last_write: string | null;
  seconds_since_write: number | null;
  state: RunHealth;
  severity: Severity | null;
  findings: number;
  /** The detectors of the run's findings, most severe first, for the runs list to name them. */
  finding_names: string[];
  finished: boolean;
  /**
   * A round written in whole blocks (W&B), still running: how far behind its file is, in words
   * and in steps (RoundState.behind), and the trainer's time its file reaches.
   */
  behind: { note: string; steps: number; trainer_time: string } | null;
  spark: number[];
}

function latestRound(run: RunState): RoundState | null {
  let best: RoundState | null = null;
  for (const r of run.rounds.values()) if (r.lastSeen !== null && (best === null || r.lastSeen > best.lastSeen!)) best = r;
  return best;
}

function health(run: RunState, src: WebSource): { state: RunHealth; severity: Severity | null; count: number } {
  const alerts = src.alerting().book.alerts;
  let state: RunHealth = 'healthy';
  let severity: Severity | null = null;
  let count = 0;
  const consider = (s: RunHealth, sev: Severity): void => {
    count++;
    if (s === 'firing' || state !== 'firing') state = s;
    if (severity === null || SEVERITY_RANK[sev] > SEVERITY_RANK[severity]) severity = sev;
  };
  for (const a of alerts.values()) if (a.finding.run === run.id && a.state !== 'resolved') consider(a.state, a.finding.severity);
  return { state, severity, count };
}

function behindOf(r: RoundState | null, finished: boolean): RunSummaryJSON['behind'] {
  const note = r === null ? null : r.behind(finished);
  if (note === null || r?.reach == null) return null;
  return { note, steps: r.reach.block.steps, trainer_time: new Date(r.reach.time).toISOString() };
}

export function runSummary(run: RunState, src: WebSource): RunSummaryJSON {
  const latest = latestRound(run);
  const now = src.now();
  const h = health(run, src);
  const selectors = run.orderedRounds().filter((r) => r.role === 'selector' && r.series.has('boundary'));
  const spark = selectors.length > 0 ? resample(selectors[selectors.length - 1]!.series.get('boundary')!.curve.means(), SPARK) : [];
  return {
    id: run.id,
    format: run.format,
    formats: run.formatsByRecords(),
    role: latest?.role ?? null,
    round: latest?.round ?? null,
    step: latest?.lastStep ?? null,
    last_write: latest?.lastSeen != null ? new Date(latest.lastSeen).toISOString() : null,
    seconds_since_write: latest?.lastSeen != null ? Math.max(0, Math.round((now - latest.lastSeen) / 1000)) : null,
    state: h.state,
    severity: h.severity,
    findings: h.count,
    finding_names: src
      .findings()
      .filter((f) => f.run === run.id)
      .sort((a, b) => SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity])
      .map((f) => `${f.detector}${f.round === null ? '' : ` (round ${f.round})`}`),
    finished: run.finished,
    behind: behindOf(latest, run.finished),
    spark: spark.map((x) => +x.toFixed(4)),
  };
}

const STATE_RANK: Record<RunHealth, number> = { firing: 2, pending: 1, healthy: 0 };

/** Most severe first, then by name. */
export function runList(src: WebSource): RunSummaryJSON[] {
  return src
    .runs()
    .map((r) => runSummary(r, src))
    .sort(
      (a, b) =>
        STATE_RANK[b.state] - STATE_RANK[a.state] ||
        (b.severity === null ? -1 : SEVERITY_RANK[b.severity]) - (a.severity === null ? -1 : SEVERITY_RANK[a.severity]) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}

interface CurveJSONOut {
  step: number[];
  mean: number[];
  roll_mean: number[];
  roll_sd: number[];
  points_per_bucket: number;
}

function curveOf(round: RoundState, name: string): CurveJSONOut | null {
  const s = round.series.get(name);
  if (s === undefined || s.curve.length === 0) return null;
  const buckets = s.curve.buckets();
  const roll = s.curve.rolling(BAND_BUCKETS);
  const r4 = (x: number): number => +x.toFixed(4);
  return {
    step: buckets.map((b) => Math.round((b.firstStep + b.lastStep) / 2)),
    mean: buckets.map((b) => r4(b.mean)),
    roll_mean: roll.mean.map(r4),
    roll_sd: roll.sd.map(r4),
    points_per_bucket: s.curve.pointsPerBucket,
  };
}

function findingJSON(f: Finding): Omit<Finding, 'series'> & { series: Finding['series'] | null } {
  return { ...f, series: f.series ?? null };
}

export function runDetail(run: RunState, src: WebSource): unknown {
  const f = run.filter;
  return {
    ...runSummary(run, src),
    target: targetOf(run),
    guide_accuracy: GUIDE_ACCURACY,
    settings: run.settings,
    rollouts: run.rollouts,
    rounds: run.orderedRounds().map((r) => {
      const share = signalShares(r, run.settings.weights);
      return {
        role: r.role,
        round: r.round,
        steps: r.steps,
        first_step: r.firstStep,
        last_step: r.lastStep,
        boundary: curveOf(r, 'boundary'),
        accuracy: curveOf(r, 'accuracy'),
        // The series the training-health detectors read, for runs of any kind.
        training: CHARTED.flatMap((q) => {
          const found = seriesFor(r, q);
          const curve = found === null ? null : curveOf(r, found.name);
          return curve === null ? [] : [{ quantity: q, label: QUANTITY_LABELS[q], series: found!.name, curve }];
        }),
        signal: share === null ? null : { share: share.share, weights: share.weights },
      };
    }),
    filter: f.empty
      ? null
      : {
          // The boundary zone the shares count, for the page to shade.
          zone: [BOUNDARY_LOW, BOUNDARY_HIGH],
          pre: f.pre,
          post: f.post,
          pre_n: f.preN,
          post_n: f.postN,
          pre_share: f.preShare,
          post_share: f.postShare,
          before: f.before,
          after: f.after,
        },
    findings: src
      .findings()
      .filter((x) => x.run === run.id)
      .map(findingJSON),
  };
}

export function runRoutes(src: WebSource): Route[] {
  return [
    {
      method: 'GET',
      path: /^\/api\/v1\/runs$/,
      handle: (_req: IncomingMessage, res: ServerResponse) => sendJson(res, 200, { runs: runList(src) }),
    },
    {
      method: 'GET',
      path: /^\/api\/v1\/runs\/(.+)$/,
      handle: (_req, res, [id]) => {
        const run = src.run(id!);
        if (run === undefined) throw new RequestError(404, `no run ${id}`);
        sendJson(res, 200, runDetail(run, src));
      },
    },
  ];
}
