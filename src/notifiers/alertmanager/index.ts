/**
 * Prometheus Alertmanager (POST /api/v2/alerts): many machines running barwatch share one
 * dedup, silence and routing layer. Labels: alertname (the detector id), run, round, severity.
 */
import type { Notification, SendResult } from '../../alerting/types.js';
import { redact, type Secret } from '../../util/secret.js';
import { keyEvidence } from '../render.js';
import { boundedAnswer, causeOf, classifyStatus, endpointOf, retryAfterMs } from '../answers.js';
import { type Notifier } from '../types.js';

export interface AlertmanagerOptions {
  /** The Alertmanager's base URL, without credentials; a path prefix (`http://host/am`) is kept. */
  url: string;
  timeoutMs?: number;
  /** HTTP basic auth. */
  auth?: { user: string; pass: Secret };
  /** The channel's name: `alertmanager`, or `alertmanager@host:port` for one peer of several. */
  name?: string;
  /**
   * How often firing alerts are sent again (below Alertmanager's resolve_timeout, 5m by default);
   * notify.alertmanager.resend_interval. Without it nothing is sent again and firing alerts hold
   * for four minutes.
   */
  refreshMs?: number;
  /** http.external_url: alerts link to their run's page. */
  dashboardUrl?: string;
  now?: () => number;
}

/** `<base>/api/v2/alerts`, keeping the base's path (a route prefix such as /alertmanager). */
export function alertsEndpoint(base: string): string {
  const u = new URL(base);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/api/v2/alerts`;
  u.search = '';
  u.hash = '';
  return u.toString();
}

/** How long a firing alert holds in Alertmanager without news: four refresh intervals (as Prometheus does). */
export const VALID_REFRESHES = 4;

export interface PayloadOptions {
  /** Now (ms): firing alerts hold until now + validMs. */
  now: number;
  validMs: number;
  /** The web page's address (http.external_url): each alert links to its run there. */
  dashboardUrl?: string;
}

export function alertmanagerPayload(
  n: Notification,
  o: PayloadOptions = { now: Date.now(), validMs: 4 * 60_000 },
): Record<string, unknown>[] {
  if (n.test === true) {
    return [
      {
        labels: { alertname: 'barwatch-test', severity: 'info' },
        annotations: { summary: 'barwatch test notification' },
        startsAt: new Date(o.now).toISOString(),
        endsAt: new Date(o.now + 60_000).toISOString(),
      },
    ];
  }
  return n.alerts.map((a) => {
    const evidence = keyEvidence(a, 12);
    return {
      labels: { alertname: a.detector, run: a.run, round: a.round === null ? '' : String(a.round), severity: a.severity },
      annotations: {
        summary: a.message,
        ...(evidence.length > 0 ? { description: evidence.join('; ') } : {}),
        ...(a.recommendation ? { recommendation: a.recommendation } : {}),
        ...(a.step !== null ? { step: String(a.step) } : {}),
        ...(o.dashboardUrl !== undefined ? { dashboard: `${o.dashboardUrl}/#/run/${encodeURIComponent(a.run)}` } : {}),
      },
      startsAt: a.startsAt,
      // Firing: holds until the next refreshes are due, so it lapses only if barwatch stops.
      endsAt: a.status === 'firing' || a.endsAt === null ? new Date(o.now + o.validMs).toISOString() : a.endsAt,
    };
  });
}

export function createAlertmanagerNotifier(opts: AlertmanagerOptions): Notifier {
  const endpoint = alertsEndpoint(opts.url);
  const validMs = VALID_REFRESHES * (opts.refreshMs ?? 60_000);
  const now = opts.now ?? Date.now;
  const where = endpointOf(opts.url);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const secrets = opts.auth !== undefined ? [opts.auth.pass] : [];
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.auth !== undefined)
    headers['authorization'] = `Basic ${Buffer.from(`${opts.auth.user}:${opts.auth.pass.reveal()}`).toString('base64')}`;
  return {
    name: opts.name ?? 'alertmanager',
    ...(opts.refreshMs !== undefined ? { refreshMs: opts.refreshMs } : {}),
    async send(n: Notification): Promise<SendResult> {
      try {
        const res = await fetch(endpoint, {
          method: 'POST',
          headers,
          body: JSON.stringify(
            alertmanagerPayload(n, {
              now: now(),
              validMs,
              ...(opts.dashboardUrl !== undefined ? { dashboardUrl: opts.dashboardUrl } : {}),
            }),
          ),
          signal: AbortSignal.timeout(timeoutMs),
          // A POST is never followed to another address: fetch would follow a 301 or 302 as a GET
          // without the alerts, the target's 200 would read as delivered, and nothing would arrive.
          redirect: 'manual',
        });
        await boundedAnswer(res).catch(() => undefined);
        if (res.status >= 300 && res.status < 400) return { ok: false, retry: false, error: redirected(where, endpoint, res) };
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

/** A redirect answered to a POST: where it leads (scheme, host and path: no query, no credentials), and what to configure. */
function redirected(where: string, endpoint: string, res: Response): string {
  const location = res.headers.get('location');
  let to = 'another address';
  if (location !== null) {
    try {
      const u = new URL(location, endpoint);
      to = `${u.protocol}//${u.host}${u.pathname}`;
    } catch {
      to = 'an address that is not a URL';
    }
  }
  return `Alertmanager at ${where} answered HTTP ${res.status}, a redirect to ${to}; barwatch does not follow a redirect with alerts (they would be lost): set notify.alertmanager.url to the address it leads to`;
}
