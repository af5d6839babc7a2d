/**
 * Prometheus Alertmanager (POST /api/v2/alerts): many machines running barwatch share one
 * dedup, silence and routing layer. Labels: alertname (the detector id), run, round, severity.
 */
import type { Notification, SendResult } from '../../alerting/types.js';
import { causeOf, classifyStatus, endpointOf, retryAfterMs, type Notifier } from '../types.js';

export interface AlertmanagerOptions {
  url: string;
  timeoutMs?: number;
}

export function alertmanagerPayload(n: Notification): Record<string, unknown>[] {
  if (n.test === true) {
    const now = new Date();
    return [
      {
        labels: { alertname: 'barwatch-test', severity: 'info' },
        annotations: { summary: 'barwatch test notification' },
        startsAt: now.toISOString(),
        endsAt: new Date(now.getTime() + 60_000).toISOString(),
      },
    ];
  }
  return n.alerts.map((a) => ({
    labels: { alertname: a.detector, run: a.run, round: a.round === null ? '' : String(a.round), severity: a.severity },
    annotations: {
      summary: a.message,
      ...(a.recommendation ? { recommendation: a.recommendation } : {}),
      ...(a.step !== null ? { step: String(a.step) } : {}),
    },
    startsAt: a.startsAt,
    ...(a.endsAt !== null ? { endsAt: a.endsAt } : {}),
  }));
}

export function createAlertmanagerNotifier(opts: AlertmanagerOptions): Notifier {
  const endpoint = new URL('/api/v2/alerts', opts.url).toString();
  const where = endpointOf(opts.url);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return {
    name: 'alertmanager',
    async send(n: Notification): Promise<SendResult> {
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(alertmanagerPayload(n)),
          signal: AbortSignal.timeout(timeoutMs),
        });
        await res.arrayBuffer().catch(() => undefined);
        const r = classifyStatus(res.status, retryAfterMs(res.headers.get('retry-after')));
        return r.ok ? r : { ...r, error: `Alertmanager at ${where} answered ${r.error}` };
      } catch (err) {
        return { ok: false, retry: true, error: `Alertmanager at ${where} unreachable: ${causeOf(err, timeoutMs)}` };
      }
    },
  };
}
