/** What the daemon reports about itself: the /healthz and /metrics snapshot and the status line. */
import type { Alerting } from '../alerting/service.js';
import type { Finding } from '../detectors/types.js';
import type { HealthSnapshot } from '../http/metrics.js';
import type { Pipeline, Totals } from '../pipeline/pipeline.js';
import type { Unwatched } from '../sources/tree-watcher.js';

export interface HealthParts {
  pipeline: Pipeline;
  alerting: Alerting;
  findings: readonly Finding[];
  /** When the read that has waited longest was queued (ms), or null. */
  oldestQueuedAt: number | null;
  saveError: string | null;
  alertLogError: string | null;
  /** Folders a limit keeps from being watched, said as limitText does, or null; and how many. */
  unwatched: string | null;
  unwatchedFolders: number;
  catchingUp: boolean;
  now: number;
}

/** What a limit of the machine does to the watch (see sources/tree-watcher.ts LIMITS). */
export function limitText(u: Unwatched): string {
  const what =
    u.code === 'ENOSPC'
      ? 'the inotify watch limit is reached (fs.inotify.max_user_watches)'
      : `too many open files or inotify instances (${u.code ?? 'a limit'})`;
  return `${what}: ${u.folders} folder${u.folders === 1 ? ' is' : 's are'} listed at each sweep until the limit allows watching ${u.folders === 1 ? 'it' : 'them'} again`;
}

/** How to raise that limit. */
export function limitRemedy(code: string | null): string {
  return code === 'ENOSPC'
    ? 'raise it: sysctl fs.inotify.max_user_watches=524288, and in a file of /etc/sysctl.d/ to keep it after a reboot'
    : 'raise the descriptor limit (LimitNOFILE= in the systemd unit, ulimit -n elsewhere) or fs.inotify.max_user_instances';
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
    outboxDepth: h.alerting.outbox.depth,
    activeAlerts: h.findings.map((f) => ({ detector: f.detector, severity: f.severity })),
    sent: h.alerting.outbox.counters.sent,
    failed: h.alerting.outbox.counters.failed,
    unwatchedFolders: h.unwatchedFolders,
    catchingUp: h.catchingUp,
    backingOff: h.alerting.outbox.backingOff(),
    lastError:
      h.saveError !== null
        ? `cannot save state (${h.saveError})`
        : h.alertLogError !== null
          ? `cannot write alerts.jsonl (${h.alertLogError})`
          : (h.unwatched ?? failing),
  };
}

/**
 * The periodic status line: its fields and its message. `outbox` (notifications waiting) and
 * `sent` (delivered since start) let a reader see alerting settle: equal on consecutive lines,
 * nothing was sent in between.
 */
export function statusLine(
  t: Totals,
  queued: number,
  alerting: Alerting,
  findings: readonly Finding[] = [],
  /** Runs that read records since they were last judged with everything read (watch.settle_after). */
  unsettled = 0,
): [Record<string, number>, string] {
  let sent = 0;
  for (const n of alerting.outbox.counters.sent.values()) sent += n;
  const by = { critical: 0, warning: 0, info: 0 };
  for (const f of findings) by[f.severity]++;
  const active =
    by.critical + by.warning + by.info === 0
      ? 'no active finding'
      : `active: ${by.critical} critical, ${by.warning} warning, ${by.info} info`;
  return [
    { ...t, queued, outbox: alerting.outbox.depth, sent, critical: by.critical, warning: by.warning, info: by.info, unsettled },
    `status: ${t.runs} run(s), ${t.files} file(s), ${t.records} record(s) from ${t.lines} line(s), ${t.malformed} malformed, ${t.longLines} over-long; ${active}`,
  ];
}
