/**
 * GET /api/v1/alerts: alerts pending and firing, those resolved in the last 24 h, the silence
 * covering each, every group's latest delivery per channel, and the outbox depth.
 */
import type { Alert } from '../alerting/types.js';
import { sendJson, type Route } from './server.js';
import type { WebSource } from './source.js';

const DAY_MS = 86_400_000;

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

export function alertsJSON(src: WebSource): unknown {
  const a = src.alerting();
  const now = src.now();
  const silenced = src.silences().matcher(now);
  const view = (x: Alert): unknown => ({
    key: x.key,
    state: x.state,
    detector: x.finding.detector,
    severity: x.finding.severity,
    run: x.finding.run,
    round: x.finding.round,
    step: x.finding.step,
    message: x.finding.message,
    recommendation: x.finding.recommendation,
    active_since: iso(x.activeSince),
    firing_since: iso(x.firingSince),
    resolved_at: iso(x.resolvedAt),
    silenced_by: silenced(x)?.id ?? null,
  });
  const all = [...a.book.alerts.values()];
  return {
    active: all.filter((x) => x.state !== 'resolved').map(view),
    resolved: all.filter((x) => x.state === 'resolved' && x.resolvedAt !== null && now - x.resolvedAt <= DAY_MS).map(view),
    deliveries: a.outbox.deliveries(),
    // What the configured actions did (alerting/actions.ts), newest first.
    actions: a.actions
      .all()
      .sort((x, y) => (x.startedAt < y.startedAt ? 1 : -1))
      .map((r) => ({
        action: r.action,
        run: r.run,
        detector: r.detector,
        round: r.round,
        command: r.command,
        state: r.state,
        started_at: r.startedAt,
        ended_at: r.endedAt ?? null,
        exit_code: r.exitCode ?? null,
        output: r.output ?? '',
        error: r.error ?? null,
      })),
    outbox_depth: a.outbox.depth,
    channels: a.channels,
  };
}

export function alertRoutes(src: WebSource): Route[] {
  return [{ method: 'GET', path: /^\/api\/v1\/alerts$/, handle: (_req, res) => sendJson(res, 200, alertsJSON(src)) }];
}
