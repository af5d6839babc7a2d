/**
 * `notify.webhook`: a list of webhooks, each a channel of its own (`webhook:<name>`), shaped for
 * its service by a preset (Feishu/Lark, DingTalk, WeCom, Discord, Microsoft Teams, plain JSON)
 * or by a template. URL, signing secret and header values may come from files; they are secrets.
 */
import { z } from 'zod';
import { httpUrl } from '../../util/schema.js';
import type { Secret } from '../../util/secret.js';
import { defineChannel } from '../channel.js';
import { createWebhookNotifier, type WebhookOptions } from './index.js';
import { PRESET_IDS } from './presets.js';

const entry = z.strictObject({
  /** Its name in logs, the outbox and the page: `webhook:<name>` (default: the preset, numbered when two share one). */
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)')
    .optional(),
  preset: z.enum(PRESET_IDS).default('json'),
  url: httpUrl.optional(),
  url_file: z.string().min(1).optional(),
  /** Feishu's and DingTalk's signing secret (their "signature verification" / "加签"). */
  secret: z.string().min(1).optional(),
  secret_file: z.string().min(1).optional(),
  method: z.enum(['POST', 'PUT', 'PATCH']).default('POST'),
  /** Extra headers; a value `{file: PATH}` is read from the file (a token). Values are never logged. */
  headers: z
    .record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), z.union([z.string(), z.strictObject({ file: z.string().min(1) })]))
    .optional(),
  /** The body for the json preset: `{{field}}` filled JSON-escaped, `{{{field}}}` as it is (README: notify.webhook). */
  template: z.string().min(1).optional(),
});

/** A webhook's settings as its notifier takes them (the rest comes from ChannelCommon). */
export type WebhookSettings = Omit<WebhookOptions, 'timeoutMs' | 'externalUrl' | 'now'>;

export const webhookChannel = defineChannel({
  id: 'webhook',
  schema: z.array(entry).min(1),
  settings: (list, ctx) => {
    const out: WebhookSettings[] = [];
    const names = new Set<string>();
    let ok = true;
    list.forEach((w, i) => {
      const at = (k: string): string => `${i}.${k}`;
      const url = ctx.secret(at('url'), w.url, w.url_file, `BARWATCH_WEBHOOK_URL_${i}`, true);
      const secret = ctx.secret(at('secret'), w.secret, w.secret_file, `BARWATCH_WEBHOOK_SECRET_${i}`, false);
      if (secret !== undefined && w.preset !== 'feishu' && w.preset !== 'dingtalk')
        ctx.problem(at('secret'), `only the feishu and dingtalk presets sign their messages; ${w.preset} takes no secret`);
      if (w.template !== undefined && w.preset !== 'json')
        ctx.problem(at('template'), `only the json preset takes a template; ${w.preset} has its service's format`);
      const headers: Record<string, Secret> = {};
      for (const [k, v] of Object.entries(w.headers ?? {})) {
        const s =
          typeof v === 'string'
            ? ctx.secret(at(`headers.${k}`), v, undefined, '', true)
            : ctx.secret(at(`headers.${k}`), undefined, v.file, '', true);
        if (s !== undefined) headers[k] = s;
        else ok = false;
      }
      const sameKind = list.filter((x) => x.preset === w.preset).length;
      const name = w.name ?? (sameKind > 1 ? `${w.preset}-${list.slice(0, i + 1).filter((x) => x.preset === w.preset).length}` : w.preset);
      if (names.has(name)) ctx.problem(at('name'), `two webhooks are named ${name}: give each its own name`);
      names.add(name);
      if (url === undefined) {
        ok = false;
        return;
      }
      out.push({
        name: `webhook:${name}`,
        preset: w.preset,
        url,
        method: w.method,
        headers,
        ...(secret !== undefined ? { secret } : {}),
        ...(w.template !== undefined ? { template: w.template } : {}),
      });
    });
    return ok ? out : undefined;
  },
  create: (list, common) =>
    list.map((w) =>
      createWebhookNotifier({
        ...w,
        timeoutMs: common.timeoutMs,
        ...(common.externalUrl !== undefined ? { externalUrl: common.externalUrl } : {}),
      }),
    ),
  summary: true,
});
