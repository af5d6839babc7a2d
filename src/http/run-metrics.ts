/**
 * Training statistics on /metrics, so Prometheus and Grafana can chart runs across machines: per
 * run, the current round of each role (not every round: one series per run and role, whatever
 * the run's length) with its boundary reward mean and variance over the rolling window, the
 * accuracy on the selected evidence, the signal share of each reward component, the last step,
 * and the run's boundary share after the filter, last write and active findings. Runs silent for
 * longer than `retentionMs` (finished, or moved away) drop out, and at most `maxRuns` runs are
 * exported, the most recently written first.
 */
import { Gauge, type Registry } from 'prom-client';
import { accuracySources } from '../detectors/accuracy.js';
import { roundsOf } from '../detectors/queries.js';
import type { Finding } from '../detectors/types.js';
import { COMPONENTS, type Role } from '../parsers/types.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import { signalShares } from '../runs/signal.js';
import { printable } from '../util/format.js';

export interface RunMetricsSource {
  now(): number;
  runs(): readonly RunState[];
  findings(): readonly Finding[];
}

export interface RunMetricsOptions {
  retentionMs: number;
  maxRuns: number;
}

export const RUN_METRICS_DEFAULTS: RunMetricsOptions = { retentionMs: 6 * 3_600_000, maxRuns: 500 };

/** When barwatch last received a record of the run (epoch ms), or null. */
export function lastWrite(run: RunState): number | null {
  let t: number | null = null;
  for (const r of run.rounds.values()) if (r.lastSeen !== null && (t === null || r.lastSeen > t)) t = r.lastSeen;
  return t;
}

/** The runs exported now: written within the retention, the most recent first, at most maxRuns. */
export function exportedRuns(
  runs: readonly RunState[],
  now: number,
  o: RunMetricsOptions,
): { runs: { run: RunState; at: number }[]; omitted: number } {
  const recent = runs
    .map((run) => ({ run, at: lastWrite(run) }))
    .filter((x): x is { run: RunState; at: number } => x.at !== null && now - x.at <= o.retentionMs)
    .sort((a, b) => b.at - a.at);
  return { runs: recent.slice(0, o.maxRuns), omitted: Math.max(0, recent.length - o.maxRuns) };
}

const ROLES: Role[] = ['selector', 'generator', 'unknown'];

type Labels = Record<string, string>;

/** The labels of a run's round: label values are escaped (a folder name may hold any character). */
function roundLabels(run: RunState, r: RoundState): Labels {
  return { run: printable(run.id), role: r.role, round: r.round === null ? '' : String(r.round) };
}

/** The latest round of `role` holding `series`, or null. */
function latest(run: RunState, role: Role, series?: string): RoundState | null {
  const rounds = roundsOf(run, role).filter((r) => series === undefined || r.series.has(series));
  return rounds.at(-1) ?? null;
}

export function registerRunMetrics(registry: Registry, source: RunMetricsSource, o: RunMetricsOptions): void {
  // Each gauge selects the runs when it is collected (a pass over the runs, no statistics).
  const selected = (): { runs: { run: RunState; at: number }[]; omitted: number } => exportedRuns(source.runs(), source.now(), o);
  const scope = `Only the current (latest) round of each run and role is exported; runs silent for longer than http.metrics_retention drop out.`;
  const gauge = (name: string, help: string, labelNames: string[], fill: (set: (labels: Labels, v: number) => void) => void): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        fill((labels, v) => {
          if (Number.isFinite(v)) this.set(labels, v);
        });
      },
    });
  };
  const perRound = (name: string, help: string, pick: (run: RunState) => { round: RoundState; value: number }[]): void =>
    gauge(name, `${help} ${scope}`, ['run', 'role', 'round'], (set) => {
      for (const { run } of selected().runs) for (const { round, value } of pick(run)) set(roundLabels(run, round), value);
    });
  const windowOf = (series: string, stat: 'mean' | 'variance') => (run: RunState) =>
    ROLES.flatMap((role) => {
      const r = latest(run, role, series);
      const w = r?.series.get(series)?.window;
      if (r === null || w === undefined || w.n === 0) return [];
      return [{ round: r, value: stat === 'mean' ? w.mean : w.sd * w.sd }];
    });

  perRound(
    'barwatch_run_boundary_mean',
    'Boundary reward, mean over the rolling window (stats.window steps).',
    windowOf('boundary', 'mean'),
  );
  perRound('barwatch_run_boundary_variance', 'Boundary reward, variance over the rolling window.', windowOf('boundary', 'variance'));
  perRound(
    'barwatch_run_accuracy',
    'Generator accuracy on the selected evidence (else the generator accuracy), rolling-window mean; compare with c.',
    (run) => {
      const src = accuracySources(run)[0];
      if (src === undefined) return [];
      const r = latest(run, src.role, src.name);
      const w = r?.series.get(src.name)?.window;
      return r === null || w === undefined || w.n === 0 ? [] : [{ round: r, value: w.mean }];
    },
  );
  perRound('barwatch_run_last_step', 'The last training step read.', (run) =>
    ROLES.flatMap((role) => {
      const r = latest(run, role);
      return r === null || r.lastStep === null ? [] : [{ round: r, value: r.lastStep }];
    }),
  );
  gauge(
    'barwatch_run_signal_share',
    `Share of the reward signal carried by each component (|w| x sd over the rolling window). ${scope}`,
    ['run', 'role', 'round', 'component'],
    (set) => {
      for (const { run } of selected().runs) {
        const r = latest(run, 'selector');
        const s = r === null ? null : signalShares(r, run.settings.weights ?? {});
        if (r === null || s === null) continue;
        for (const c of COMPONENTS) if (s.share[c] !== undefined) set({ ...roundLabels(run, r), component: c }, s.share[c]);
      }
    },
  );
  gauge(
    'barwatch_run_boundary_share',
    'Share of questions in the boundary band after the data filter (from [filter] lines), per run.',
    ['run'],
    (set) => {
      for (const { run } of selected().runs) if (run.filter.postShare !== null) set({ run: printable(run.id) }, run.filter.postShare);
    },
  );
  gauge('barwatch_run_last_write_timestamp_seconds', 'When barwatch last received a record of the run (Unix time).', ['run'], (set) => {
    for (const { run, at } of selected().runs) set({ run: printable(run.id) }, at / 1000);
  });
  gauge(
    'barwatch_finding_active',
    'Findings that hold now, per run, detector and severity (1 while it holds).',
    ['run', 'detector', 'severity'],
    (set) => {
      const shown = new Set(selected().runs.map((x) => x.run.id));
      for (const f of source.findings())
        if (shown.has(f.run)) set({ run: printable(f.run), detector: f.detector, severity: f.severity }, 1);
    },
  );
  gauge(
    'barwatch_run_metrics_omitted_runs',
    'Runs written within the retention but not exported (over http.metrics_max_runs).',
    [],
    (set) => set({}, selected().omitted),
  );
}
