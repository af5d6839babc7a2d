/** What the daemon reports about itself: the /healthz and /metrics snapshot and the status line. */
import type { Alerting } from '../alerting/service.js';
import type { Finding } from '../detectors/types.js';
import { isLoopback, type Config } from '../config/load.js';
import { HealthServer, type HealthSnapshot } from '../http/server.js';
import type { Logger } from '../util/log.js';
import type { Pipeline, Totals } from '../pipeline/pipeline.js';

export interface HealthParts {
  pipeline: Pipeline;
  alerting: Alerting | null;
  findings: readonly Finding[];
  /** When the read that has waited longest was queued (ms), or null. */
  oldestQueuedAt: number | null;
  saveError: string | null;
  alertLogError: string | null;
  now: number;
}

export function healthSnapshot(h: HealthParts): HealthSnapshot {
  const p = h.pipeline;
  const t = p.totals();
  const malformed = new Map<string, number>();
  for (const [f, s] of p.sources) if (s.counters.malformed > 0) malformed.set(f, s.counters.malformed);
  const failing = [...p.failures()].map(([f, code]) => `${f}: ${code}`)[0] ?? null;
  return {
    runs: t.runs,
    files: t.files,
    lines: t.lines,
    records: t.records,
    malformedByFile: malformed,
    ingestLagSeconds: h.oldestQueuedAt === null ? 0 : (h.now - h.oldestQueuedAt) / 1000,
    outboxDepth: h.alerting?.outbox.depth ?? 0,
    activeAlerts: h.findings.map((f) => ({ detector: f.detector, severity: f.severity })),
    sent: h.alerting?.outbox.counters.sent ?? new Map<string, number>(),
    failed: h.alerting?.outbox.counters.failed ?? new Map<string, number>(),
    lastError:
      h.saveError !== null
        ? `cannot save state (${h.saveError})`
        : h.alertLogError !== null
          ? `cannot write alerts.jsonl (${h.alertLogError})`
          : failing,
  };
}

/**
 * The periodic status line: its fields and its message. `outbox` (notifications waiting) and
 * `sent` (delivered since start) let a reader see alerting settle: equal on consecutive lines,
 * nothing was sent in between.
 */
export function statusLine(t: Totals, queued: number, alerting: Alerting | null): [Record<string, number>, string] {
  let sent = 0;
  for (const n of alerting?.outbox.counters.sent.values() ?? []) sent += n;
  return [
    { ...t, queued, outbox: alerting?.outbox.depth ?? 0, sent },
    `status: ${t.runs} run(s), ${t.files} file(s), ${t.records} record(s) from ${t.lines} line(s), ${t.malformed} malformed, ${t.longLines} over-long`,
  ];
}

/** /healthz and /metrics; watching matters more than the endpoint, so a failure is logged and watching goes on. */
export async function serveHealth(config: Config, snapshot: () => HealthSnapshot, log: Logger): Promise<HealthServer | null> {
  if (config.http.listen === undefined) return null;
  const { host, port } = config.http.listen;
  const server = new HealthServer(snapshot);
  try {
    const at = await server.start(host, port);
    const where = `serving /healthz and /metrics on ${at.host}:${at.port}`;
    if (isLoopback(host)) log.info({ host: at.host, port: at.port }, where);
    else log.warn({ host: at.host, port: at.port }, `${where}, beyond this machine (http.expose is true)`);
    return server;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    log.error({ host, port, code }, `cannot serve /healthz and /metrics on ${host}:${port} (${code}); watching continues without them`);
    return null;
  }
}
