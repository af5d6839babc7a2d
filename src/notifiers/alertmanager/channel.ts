/** `notify.alertmanager`: one Alertmanager or every peer of a cluster, each its own channel. */
import { z } from 'zod';
import { Secret } from '../../util/secret.js';
import { parseDuration } from '../../util/duration.js';
import { boundedDuration, httpUrl } from '../../util/schema.js';
import { defineChannel } from '../channel.js';
import { endpointOf } from '../answers.js';
import { createAlertmanagerNotifier } from './index.js';

export const alertmanagerChannel = defineChannel({
  id: 'alertmanager',
  schema: z.strictObject({
    /** One Alertmanager, or every peer of a cluster: each alert goes to each. A path prefix is kept. */
    url: z.union([httpUrl, z.array(httpUrl).min(1)]),
    /** HTTP basic auth: here with password_file (or BARWATCH_ALERTMANAGER_PASSWORD), or as user:pass@ in the URL. */
    username: z.string().min(1).optional(),
    password_file: z.string().min(1).optional(),
    /** Firing alerts are sent again this often, below Alertmanager's resolve_timeout (5m by default). */
    resend_interval: boundedDuration('1s', '1h').default('1m'),
  }),
  /**
   * Credentials in a URL (`http://user:pass@host:9093`) are taken out of it (fetch refuses such
   * URLs, and a URL is logged) and sent as basic auth; `username` with `password_file` or
   * BARWATCH_ALERTMANAGER_PASSWORD does the same without a secret in the config.
   */
  settings: (am, ctx) => {
    const urls: string[] = [];
    let auth: { user: string; pass: Secret } | undefined;
    const list = typeof am.url === 'string' ? [am.url] : am.url;
    list.forEach((raw, i) => {
      const u = new URL(raw);
      if (u.username !== '' || u.password !== '') {
        const found = { user: decodeURIComponent(u.username), pass: new Secret(decodeURIComponent(u.password), 'notify.alertmanager.url') };
        if (auth !== undefined && (auth.user !== found.user || auth.pass.reveal() !== found.pass.reveal()))
          ctx.problem(`url${typeof am.url === 'string' ? '' : `[${i}]`}`, 'every peer must take the same credentials');
        auth = found;
        u.username = '';
        u.password = '';
      }
      urls.push(u.toString());
    });
    if (am.username !== undefined) {
      if (auth !== undefined) ctx.problem('username', 'give the user in the URL or in username, not both');
      else {
        const pass = ctx.secret('password', undefined, am.password_file, 'BARWATCH_ALERTMANAGER_PASSWORD', true);
        if (pass !== undefined) auth = { user: am.username, pass };
      }
    } else if (am.password_file !== undefined) ctx.problem('password_file', 'needs username');
    return { urls, resendMs: parseDuration(am.resend_interval)!, ...(auth !== undefined ? { auth } : {}) };
  },
  // One channel per peer, each with its own queue, retries and record of what was sent.
  create: (am, common) =>
    am.urls.map((url) =>
      createAlertmanagerNotifier({
        url,
        timeoutMs: common.timeoutMs,
        refreshMs: am.resendMs,
        ...(am.auth !== undefined ? { auth: am.auth } : {}),
        ...(am.urls.length > 1 ? { name: `alertmanager@${endpointOf(url)}` } : {}),
        ...(common.externalUrl !== undefined ? { dashboardUrl: common.externalUrl } : {}),
      }),
    ),
  summary: false,
});
