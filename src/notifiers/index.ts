/** Every notifier, built from the config in one place. Console and alerts.jsonl are always on (console.ts). */
import type { Config } from '../config/load.js';
import { createAlertmanagerNotifier } from './alertmanager/index.js';
import { createEmailNotifier } from './email/index.js';
import { createSlackNotifier } from './slack/index.js';
import { endpointOf, type Notifier } from './types.js';

export interface NotifierOverrides {
  /** Tests against a loopback SMTP server with a self-signed certificate. */
  emailTls?: { rejectUnauthorized: boolean };
}

export function buildNotifiers(config: Config, o: NotifierOverrides = {}): Notifier[] {
  const out: Notifier[] = [];
  const n = config.notify;
  const timeoutMs = n.timeoutMs;
  if (n.slack !== undefined) out.push(createSlackNotifier({ webhookUrl: n.slack.webhookUrl, timeoutMs }));
  if (n.email !== undefined)
    out.push(createEmailNotifier({ ...n.email, timeoutMs, ...(o.emailTls !== undefined ? { tls: o.emailTls } : {}) }));
  const am = n.alertmanager;
  // One channel per peer, each with its own queue, retries and record of what was sent.
  if (am !== undefined)
    for (const url of am.urls)
      out.push(
        createAlertmanagerNotifier({
          url,
          timeoutMs,
          refreshMs: am.resendMs,
          ...(am.auth !== undefined ? { auth: am.auth } : {}),
          ...(am.urls.length > 1 ? { name: `alertmanager@${endpointOf(url)}` } : {}),
          ...(config.http.externalUrl !== undefined ? { dashboardUrl: config.http.externalUrl } : {}),
        }),
      );
  return out;
}
