/**
 * Prometheus Alertmanager (POST /api/v2/alerts): many machines running barwatch share one
 * dedup, silence and routing layer. Labels: alertname (the detector id), run, round, severity.
 */
import type { Notification, SendResult } from '../../alerting/types.js';
import { redact, type Secret } from '../../config/secret.js';
import { causeOf, classifyStatus, endpointOf, retryAfterMs, type Notifier } from '../types.js';

export interface AlertmanagerOptions {
  /** The Alertmanager's base URL, without credentials; a path prefix (`http://host/am`) is kept. */
  url: string;
  timeoutMs?: number;
  /** HTTP basic auth. */
  auth?: { user: string; pass: Secret };
  /** The channel's name: `alertmanager`, or `alertmanager@host:port` for one peer of several. */
  name?: string;
}

/** `<base>/api/v2/alerts`, keeping the base's path (a route prefix such as /alertmanager). */
export function alertsEndpoint(base: string): string {
  const u = new URL(base);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/v2/alerts`;
  u.search = '';
  u.hash = '';
  return u.toString();
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
  const endpoint = alertsEndpoint(opts.url);
  const where = endpointOf(opts.url);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const secrets = opts.auth !== undefined ? [opts.auth.pass] : [];
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.auth !== undefined)
    headers['authorization'] = `Basic ${Buffer.from(`${opts.auth.user}:${opts.auth.pass.reveal()}`).toString('base64')}`;
  return {
    name: opts.name ?? 'alertmanager',
    async send(n: Notification): Promise<SendResult> {
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify(alertmanagerPayload(n)),
          signal: AbortSignal.timeout(timeoutMs),
        });
        await res.arrayBuffer().catch(() => undefined);
        const r = classifyStatus(res.status, retryAfterMs(res.headers.get('retry-after')));
        if (r.ok) return r;
        const hint = res.status === 401 || res.status === 403 ? ' (check notify.alertmanager credentials)' : '';
        return { ...r, error: `Alertmanager at ${where} answered ${r.error}${hint}` };
      } catch (err) {
        return { ok: false, retry: true, error: redact(`Alertmanager at ${where} unreachable: ${causeOf(err, timeoutMs)}`, secrets) };
      }
    },
  };
}
