/**
 * What /healthz and /metrics say. Metrics follow Prometheus naming
 * (barwatch_..._total for counters, base units) and come from prom-client, whose default metrics
 * add the event-loop lag (nodejs_eventloop_lag_seconds) and process figures.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { printable } from '../util/format.js';
import { registerRunMetrics, type RunMetricsOptions, type RunMetricsSource } from './run-metrics.js';

const EVENT_LOOP_SAMPLE_MS = 250;

export interface HealthSnapshot {
  runs: number;
  files: number;
  lines: number;
  records: number;
  malformedByFile: Map<string, number>;
  /** Seconds the oldest queued read has waited (0 when idle). */
  ingestLagSeconds: number;
  outboxDepth: number;
  activeAlerts: { detector: string; severity: string }[];
  sent: Map<string, number>;
  failed: Map<string, number>;
  lastError: string | null;
  /** Folders followed without a watch because of a limit of the machine (listed at each sweep). */
  unwatchedFolders: number;
  /** The daemon is reading the backlog it found at start. */
  catchingUp: boolean;
  /** Channels waiting to try again after a failure (a Retry-After, a backoff). */
  backingOff: { channel: string; retryAt: number; error: string | null }[];
}

/** The pipeline is stuck when a queued read has waited this long. */
export const STUCK_AFTER_S = 60;

export class Metrics {
  readonly registry = new Registry();
  private readonly last = new Map<string, number>();

  /** `runs`: the training statistics per run (run-metrics.ts), left out when not given. */
  constructor(
    private readonly snapshot: () => HealthSnapshot,
    runs?: { source: RunMetricsSource; options: RunMetricsOptions },
  ) {
    // The event-loop lag histogram samples with a timer: prom-client's default of 10 ms woke the
    // idle daemon 100 times a second (most of its idle CPU); at 250 ms, 4 times.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    // Gauges that prom-client names like counters (`promtool check metrics` flags them); the same
    // figures stay as nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
      this.registry.removeSingleMetric(name);
    if (runs !== undefined) registerRunMetrics(this.registry, runs.source, runs.options);
    const last = this.last;
    const counter = (
      name: string,
      help: string,
      labels: string[],
      read: (s: HealthSnapshot) => [Record<string, string>, number][],
    ): void => {
      new Counter({
        name,
        help,
        labelNames: labels,
        registers: [this.registry],
        collect() {
          for (const [lab, v] of read(snapshot())) {
            const key = `${name}|${JSON.stringify(lab)}`;
            const d = v - (last.get(key) ?? 0);
            if (d > 0) this.inc(lab, d);
            last.set(key, v);
          }
        },
      });
    };
    counter('barwatch_lines_read_total', 'Lines read from training logs.', [], (s) => [[{}, s.lines]]);
    counter('barwatch_records_ingested_total', 'Records parsed and applied to run statistics.', [], (s) => [[{}, s.records]]);
    counter('barwatch_parse_errors_total', 'Malformed lines skipped, per file.', ['file'], (s) =>
      // Escaped: a file name may hold a carriage return or any control character.
      [...s.malformedByFile].map(([file, n]) => [{ file: printable(file) }, n]),
    );
    counter('barwatch_notifications_sent_total', 'Notifications a channel accepted.', ['channel'], (s) =>
      [...s.sent].map(([channel, n]) => [{ channel }, n]),
    );
    counter('barwatch_notifications_failed_total', 'Notifications a channel refused for good.', ['channel'], (s) =>
      [...s.failed].map(([channel, n]) => [{ channel }, n]),
    );
    const gauge = (name: string, help: string, read: (s: HealthSnapshot) => number): void => {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          this.set(read(snapshot()));
        },
      });
    };
    gauge('barwatch_ingest_lag_seconds', 'How long the oldest queued read has waited.', (s) => s.ingestLagSeconds);
    gauge('barwatch_outbox_depth', 'Notifications waiting in the outbox.', (s) => s.outboxDepth);
    gauge('barwatch_runs', 'Runs followed.', (s) => s.runs);
    gauge(
      'barwatch_unwatched_folders',
      'Folders followed without an inotify watch because of a limit of the machine (listed at each sweep instead).',
      (s) => s.unwatchedFolders,
    );
    new Gauge({
      name: 'barwatch_active_alerts',
      help: 'Findings that hold now, by detector and severity.',
      labelNames: ['detector', 'severity'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const a of snapshot().activeAlerts) this.inc({ detector: a.detector, severity: a.severity });
      },
    });
  }

  /** The body and status of /healthz. */
  healthz(): { status: number; body: string } {
    const s = this.snapshot();
    const stuck = s.ingestLagSeconds > STUCK_AFTER_S;
    const body = JSON.stringify({
      status: stuck ? 'stuck' : 'ok',
      runs: s.runs,
      files: s.files,
      ingest_lag_seconds: s.ingestLagSeconds,
      outbox_depth: s.outboxDepth,
      last_error: s.lastError,
      unwatched_folders: s.unwatchedFolders,
      catching_up: s.catchingUp,
      channels_waiting: s.backingOff.map((b) => ({
        channel: b.channel,
        retry_at: new Date(b.retryAt).toISOString(),
        error: b.error,
      })),
    });
    return { status: stuck ? 503 : 200, body };
  }
}
