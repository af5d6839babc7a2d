/**
 * The message formats of the chat services teams use for alerts, each as its own documentation
 * gives it: how a notification becomes a request (body, signature), how the service's answer is
 * judged (these services answer HTTP 200 with an error code in the body), and the service's
 * limits (message length, messages a minute). `json` posts the notification itself, or a
 * template over it. Where each rule comes from is named beside it.
 */
import type { Notification, NotifiedAlert, SendResult } from '../../alerting/types.js';
import type { Summary } from '../../summary/build.js';
import { where } from '../../util/format.js';
import { keyEvidence, messageOf, plainText, title } from '../render.js';
import { nodeCrypto } from '../../util/lazy.js';

export const PRESET_IDS = ['json', 'feishu', 'dingtalk', 'wecom', 'discord', 'teams'] as const;
export type PresetId = (typeof PRESET_IDS)[number];

/** A request to make: the URL (a signature may add to its query), the body, headers of the preset's own. */
export interface Outgoing {
  url: string;
  body: string;
  headers: Record<string, string>;
}

export interface PresetContext {
  url: string;
  /** The signing secret, for the presets that sign (Feishu, DingTalk). */
  secret?: string;
  /** When the request is made, epoch ms (signatures carry it). */
  now: number;
  /** A link to the run's page (http.external_url). */
  link?: (run: string) => string;
  /** `json` with a template: the body, `{{field}}` filled from the notification. */
  template?: string;
}

/** A rate limit: at most `count` messages within `ms`. */
export interface Rate {
  count: number;
  ms: number;
}

export interface Preset {
  id: PresetId;
  /** The service's documentation of the format and its limits. */
  doc: string;
  /** Its limits (a message beyond them is cut, never refused). */
  rates: readonly Rate[];
  build(n: Notification, ctx: PresetContext): Outgoing;
  summary?(s: Summary, ctx: PresetContext): Outgoing;
  /**
   * The service's answer as a send result: HTTP status first (classifyStatus), then the error
   * code of a 200's body. Undefined: judged by the HTTP status alone.
   */
  judge?(status: number, body: string): SendResult | undefined;
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' };

/** `s` cut to at most `max` UTF-8 bytes (a character is never cut in half), with an ellipsis when cut. */
export function fitBytes(s: string, max: number): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let lo = 0;
  let hi = s.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (Buffer.byteLength(s.slice(0, mid), 'utf8') + 3 <= max) lo = mid;
    else hi = mid - 1;
  }
  let cut = s.slice(0, lo);
  // A lone high surrogate at the end would be half a character.
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/** `s` cut to at most `max` characters (UTF-16 units, as Discord counts), with an ellipsis when cut. */
function fitChars(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

/** Markdown for the services that render it (DingTalk, WeCom): log text with its markup characters escaped. */
function escapeMarkdown(s: string): string {
  return s.replace(/([\\`*_{}[\]()#+!|>~<])/g, '\\$1');
}

function severityWord(a: NotifiedAlert): string {
  return a.status === 'resolved' ? 'RESOLVED' : a.severity.toUpperCase();
}

/** The alerts as markdown lines: what each is, where, what it says, and what to do. */
function markdown(n: Notification, ctx: PresetContext): string {
  if (n.test === true) return '**barwatch test notification**\n\nThis is a test notification from barwatch: this channel works.';
  // "barwatch" in the heading: a robot whose security setting is a keyword check takes the keyword barwatch.
  const lines = [`**barwatch: ${escapeMarkdown(title(n))}**`];
  for (const a of n.alerts) {
    const at = where(a);
    lines.push('', `**${severityWord(a)}** \`${a.detector}\`${at ? ` (${at})` : ''}`, `Run: ${escapeMarkdown(a.run)}`);
    lines.push(escapeMarkdown(messageOf(a, n.alerts)));
    if (a.status === 'firing') {
      const ev = keyEvidence(a);
      if (ev.length > 0) lines.push(`> ${escapeMarkdown(ev.join('; '))}`);
      if (a.recommendation) lines.push(`Recommendation: ${escapeMarkdown(a.recommendation)}`);
    }
    if (ctx.link !== undefined) lines.push(`[Open the run](${ctx.link(a.run)})`);
  }
  return lines.join('\n');
}

/** A JSON body's error code as a send result (its error says what the service answered; the notifier names the service): `ok` when it is 0, else failed, retried for the codes that say "too fast". */
function codeResult(code: unknown, msg: unknown, tooFast: readonly number[], retryMs: number): SendResult | undefined {
  if (code === undefined || code === null) return undefined;
  if (code === 0) return { ok: true };
  const text = `HTTP 200 with error ${typeof code === 'number' || typeof code === 'string' ? code : JSON.stringify(code)}${typeof msg === 'string' && msg !== '' ? `: ${msg.slice(0, 200)}` : ''}`;
  if (typeof code === 'number' && tooFast.includes(code)) return { ok: false, retry: true, retryAfterMs: retryMs, error: text };
  return { ok: false, retry: false, error: `${text} (not retried)` };
}

function parseBody(body: string): Record<string, unknown> | null {
  try {
    const j = JSON.parse(body) as unknown;
    return j !== null && typeof j === 'object' && !Array.isArray(j) ? (j as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/**
 * Feishu/Lark custom bot. Format, signature and codes: open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
 * ("custom bot usage guide"): POST {msg_type, content}; with signature verification on, the body
 * also carries `timestamp` (seconds) and `sign` = base64(HmacSHA256 keyed with
 * "<timestamp>\n<secret>" over an empty message); the answer is {code, msg} with code 0 on success
 * (19021: signature mismatch, 19024: keyword mismatch, 11232 and 9499: too frequent). Limits: 100
 * messages a minute and 5 a second per bot; a request body of at most 20 KB.
 */
export function feishuSign(secret: string, timestampS: number): string {
  return nodeCrypto().createHmac('sha256', `${timestampS}\n${secret}`).update('').digest('base64');
}

const feishu: Preset = {
  id: 'feishu',
  doc: 'https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot',
  rates: [
    { count: 5, ms: 1000 },
    { count: 100, ms: 60_000 },
  ],
  build(n, ctx) {
    const text = fitBytes(plainText(n).trimEnd() + linksOf(n, ctx), 18_000);
    return signedFeishu({ msg_type: 'text', content: { text: `barwatch: ${title(n)}\n\n${text}` } }, ctx);
  },
  summary(s, ctx) {
    return signedFeishu({ msg_type: 'text', content: { text: fitBytes(`${s.subject}\n\n${s.text}`, 18_000) } }, ctx);
  },
  judge(status, body) {
    if (status !== 200) return undefined;
    const j = parseBody(body);
    return j === null ? undefined : codeResult(j['code'] ?? j['StatusCode'], j['msg'] ?? j['StatusMessage'], [11232, 9499], 1000);
  },
};

function signedFeishu(msg: Record<string, unknown>, ctx: PresetContext): Outgoing {
  const body: Record<string, unknown> = { ...msg };
  if (ctx.secret !== undefined) {
    const ts = Math.floor(ctx.now / 1000);
    body['timestamp'] = String(ts);
    body['sign'] = feishuSign(ctx.secret, ts);
  }
  return { url: ctx.url, body: JSON.stringify(body), headers: JSON_HEADERS };
}

function linksOf(n: Notification, ctx: PresetContext): string {
  if (ctx.link === undefined || n.test === true) return '';
  const runs = [...new Set(n.alerts.map((a) => a.run))];
  return `\n\n${runs.map((r) => ctx.link!(r)).join('\n')}`;
}

/**
 * DingTalk custom robot. Format, signature and codes: open.dingtalk.com/document/robots/custom-robot-access
 * and .../customize-robot-security-settings: POST {msgtype: markdown, markdown: {title, text}};
 * with "加签" (signing) on, the URL takes `timestamp` (ms) and `sign` = urlEncode(base64(HmacSHA256
 * keyed with the secret over "<timestamp>\n<secret>")); the answer is {errcode, errmsg}, errcode 0
 * on success (130101: sending too fast, 310000: signature, keyword or IP check failed, 300001: bad
 * token). Limit: 20 messages a minute per robot (more are refused for 10 minutes); markdown text
 * of at most 20,000 bytes.
 */
export function dingtalkSign(secret: string, timestampMs: number): string {
  return nodeCrypto().createHmac('sha256', secret).update(`${timestampMs}\n${secret}`).digest('base64');
}

const dingtalk: Preset = {
  id: 'dingtalk',
  doc: 'https://open.dingtalk.com/document/robots/custom-robot-access',
  rates: [{ count: 20, ms: 60_000 }],
  build(n, ctx) {
    return dingtalkOut(
      { msgtype: 'markdown', markdown: { title: fitBytes(`barwatch: ${title(n)}`, 200), text: fitBytes(markdown(n, ctx), 19_000) } },
      ctx,
    );
  },
  summary(s, ctx) {
    return dingtalkOut(
      {
        msgtype: 'markdown',
        markdown: {
          title: fitBytes(s.subject, 200),
          text: fitBytes(`**${escapeMarkdown(s.subject)}**\n\n${escapeMarkdown(s.text)}`, 19_000),
        },
      },
      ctx,
    );
  },
  judge(status, body) {
    if (status !== 200) return undefined;
    const j = parseBody(body);
    return j === null ? undefined : codeResult(j['errcode'], j['errmsg'], [130101], 60_000);
  },
};

function dingtalkOut(msg: Record<string, unknown>, ctx: PresetContext): Outgoing {
  let url = ctx.url;
  if (ctx.secret !== undefined) {
    const u = new URL(ctx.url);
    u.searchParams.set('timestamp', String(ctx.now));
    u.searchParams.set('sign', dingtalkSign(ctx.secret, ctx.now));
    url = u.toString();
  }
  return { url, body: JSON.stringify(msg), headers: JSON_HEADERS };
}

/**
 * WeCom (企业微信) group robot. Format and codes: developer.work.weixin.qq.com/document/path/91770
 * ("群机器人配置说明"): POST {msgtype: markdown, markdown: {content}}, content at most 4096 bytes of
 * UTF-8; the answer is {errcode, errmsg}, errcode 0 on success (45009: over the frequency limit,
 * 93000: invalid webhook URL). Limit: 20 messages a minute per robot.
 */
const wecom: Preset = {
  id: 'wecom',
  doc: 'https://developer.work.weixin.qq.com/document/path/91770',
  rates: [{ count: 20, ms: 60_000 }],
  build(n, ctx) {
    return {
      url: ctx.url,
      body: JSON.stringify({ msgtype: 'markdown', markdown: { content: fitBytes(markdown(n, ctx), 4096) } }),
      headers: JSON_HEADERS,
    };
  },
  summary(s, ctx) {
    const content = fitBytes(`**${escapeMarkdown(s.subject)}**\n${escapeMarkdown(s.text)}`, 4096);
    return { url: ctx.url, body: JSON.stringify({ msgtype: 'markdown', markdown: { content } }), headers: JSON_HEADERS };
  },
  judge(status, body) {
    if (status !== 200) return undefined;
    const j = parseBody(body);
    return j === null ? undefined : codeResult(j['errcode'], j['errmsg'], [45009], 60_000);
  },
};

/**
 * Discord webhook. Format and limits: discord.com/developers/docs/resources/webhook#execute-webhook
 * and .../resources/message#embed-object-embed-limits: POST {content, embeds}; at most 10 embeds,
 * a title of 256 characters, a description of 4096, 25 fields of 1024, 6000 characters in all the
 * embeds of a message. Success is 204 (200 with ?wait=true); 429 carries Retry-After and a JSON
 * `retry_after` in seconds (docs/topics/rate-limits). Webhooks take about 30 messages a minute.
 */
const COLOURS = { critical: 0xd32f2f, warning: 0xf9a825, info: 0x1976d2, resolved: 0x2e7d32 } as const;

const discord: Preset = {
  id: 'discord',
  doc: 'https://discord.com/developers/docs/resources/webhook#execute-webhook',
  rates: [{ count: 30, ms: 60_000 }],
  build(n, ctx) {
    if (n.test === true) return discordOut({ content: 'This is a test notification from barwatch: this channel works.' }, ctx);
    const embeds: Record<string, unknown>[] = [];
    let total = 0;
    for (const a of n.alerts) {
      if (embeds.length === 10) break;
      const at = where(a);
      const embed: Record<string, unknown> = {
        title: fitChars(`${severityWord(a)} ${a.detector}${at ? ` (${at})` : ''}`, 256),
        description: fitChars(`${a.run}\n\n${messageOf(a, n.alerts)}`, 2000),
        color: a.status === 'resolved' ? COLOURS.resolved : COLOURS[a.severity],
      };
      const fields: { name: string; value: string }[] = [];
      if (a.status === 'firing') {
        const ev = keyEvidence(a);
        if (ev.length > 0) fields.push({ name: 'Evidence', value: fitChars(ev.join('\n'), 1024) });
        if (a.recommendation) fields.push({ name: 'Recommendation', value: fitChars(a.recommendation, 1024) });
      }
      if (fields.length > 0) embed['fields'] = fields;
      if (ctx.link !== undefined) embed['url'] = ctx.link(a.run);
      const size =
        (embed['title'] as string).length +
        (embed['description'] as string).length +
        fields.reduce((x, f) => x + f.name.length + f.value.length, 0);
      if (total + size > 6000) break;
      total += size;
      embeds.push(embed);
    }
    const left = n.alerts.length - embeds.length;
    return discordOut(
      {
        content: fitChars(title(n) + (left > 0 ? ` (${left} more alert(s) on barwatch's page)` : ''), 2000),
        embeds,
        allowed_mentions: { parse: [] },
      },
      ctx,
    );
  },
  summary(s, ctx) {
    return discordOut(
      {
        content: fitChars(s.subject, 2000),
        embeds: [{ title: fitChars(s.subject, 256), description: fitChars(s.text, 4000) }],
        allowed_mentions: { parse: [] },
      },
      ctx,
    );
  },
  judge(status, body) {
    if (status !== 429) return undefined;
    const j = parseBody(body);
    const ra = j?.['retry_after'];
    const after = typeof ra === 'number' ? Math.ceil(ra * 1000) : undefined;
    return {
      ok: false,
      retry: true,
      ...(after !== undefined ? { retryAfterMs: after } : {}),
      error: 'HTTP 429 Too Many Requests',
    };
  },
};

function discordOut(msg: Record<string, unknown>, ctx: PresetContext): Outgoing {
  return { url: ctx.url, body: JSON.stringify(msg), headers: JSON_HEADERS };
}

/**
 * Microsoft Teams through a Workflows webhook ("Post to a channel when a webhook request is
 * received"; learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using
 * and adaptivecards.io): POST {type: message, attachments: [{contentType:
 * application/vnd.microsoft.card.adaptive, content: AdaptiveCard 1.4}]}; 202 Accepted on success;
 * a message of at most 28 KB. Teams' rate limit for a channel is about 4 messages a second.
 */
const teams: Preset = {
  id: 'teams',
  doc: 'https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using',
  rates: [{ count: 4, ms: 1000 }],
  build(n, ctx) {
    const body: Record<string, unknown>[] = [{ type: 'TextBlock', text: title(n), weight: 'Bolder', size: 'Medium', wrap: true }];
    if (n.test === true)
      body.push({ type: 'TextBlock', text: 'This is a test notification from barwatch: this channel works.', wrap: true });
    else
      for (const a of n.alerts) {
        const at = where(a);
        body.push(
          {
            type: 'TextBlock',
            text: `${severityWord(a)} ${a.detector}${at ? ` (${at})` : ''}`,
            weight: 'Bolder',
            color: a.status === 'resolved' ? 'Good' : a.severity === 'info' ? 'Accent' : 'Attention',
            wrap: true,
            separator: true,
          },
          { type: 'TextBlock', text: a.run, isSubtle: true, wrap: true },
          { type: 'TextBlock', text: messageOf(a, n.alerts), wrap: true },
        );
        if (a.status === 'firing' && a.recommendation)
          body.push({ type: 'TextBlock', text: `Recommendation: ${a.recommendation}`, wrap: true });
      }
    const actions =
      ctx.link !== undefined && n.test !== true
        ? [...new Set(n.alerts.map((a) => a.run))]
            .slice(0, 5)
            .map((r) => ({ type: 'Action.OpenUrl', title: 'Open the run', url: ctx.link!(r) }))
        : [];
    return teamsOut(body, actions, ctx);
  },
  summary(s, ctx) {
    return teamsOut(
      [
        { type: 'TextBlock', text: s.subject, weight: 'Bolder', size: 'Medium', wrap: true },
        { type: 'TextBlock', text: fitBytes(s.text, 20_000), wrap: true, fontType: 'Monospace' },
      ],
      [],
      ctx,
    );
  },
};

function teamsOut(body: Record<string, unknown>[], actions: Record<string, unknown>[], ctx: PresetContext): Outgoing {
  const card: Record<string, unknown> = {
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    type: 'AdaptiveCard',
    version: '1.4',
    body,
  };
  if (actions.length > 0) card['actions'] = actions;
  const msg = {
    type: 'message',
    attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }],
  };
  let text = JSON.stringify(msg);
  // 28 KB in all: the longest text blocks are cut until it fits.
  while (Buffer.byteLength(text, 'utf8') > 27_000) {
    const longest = body.reduce((a, b) => (String(b['text']).length > String(a['text']).length ? b : a));
    longest['text'] = fitChars(String(longest['text']), Math.max(20, Math.floor(String(longest['text']).length / 2)));
    text = JSON.stringify(msg);
  }
  return { url: ctx.url, body: text, headers: JSON_HEADERS };
}

/** The fields a template can name, from a notification (its most severe firing alert first). */
export function templateFields(n: Notification, ctx: PresetContext): Record<string, string> {
  const firing = n.alerts.filter((a) => a.status === 'firing');
  const a = firing[0] ?? n.alerts[0];
  const str = (v: string | number | null | undefined): string => (v === null || v === undefined ? '' : String(v));
  return {
    title: title(n),
    text: plainText(n).trimEnd(),
    status: n.test === true ? 'test' : firing.length > 0 ? 'firing' : 'resolved',
    detector: str(a?.detector),
    severity: str(a?.severity),
    run: str(a?.run),
    round: str(a?.round),
    step: str(a?.step),
    message: a === undefined ? '' : messageOf(a, n.alerts),
    recommendation: str(a?.recommendation),
    evidence: a === undefined ? '{}' : JSON.stringify(a.evidence),
    link: a !== undefined && ctx.link !== undefined ? ctx.link(a.run) : '',
    count: String(n.alerts.length),
    alerts: JSON.stringify(n.alerts),
  };
}

/**
 * A template filled: `{{name}}` becomes the field, escaped as a JSON string's inside (so a
 * template that is JSON stays JSON whatever the run's path or message holds); `{{{name}}}` the
 * field as it is (for `evidence` and `alerts`, which are JSON already). Unknown names are left
 * empty.
 */
export function fillTemplate(template: string, fields: Record<string, string>): string {
  return template.replace(/\{\{\{\s*(\w+)\s*\}\}\}|\{\{\s*(\w+)\s*\}\}/g, (_, raw: string | undefined, esc: string | undefined) => {
    if (raw !== undefined) return fields[raw] ?? '';
    return JSON.stringify(fields[esc!] ?? '').slice(1, -1);
  });
}

/** Plain JSON: the notification as barwatch holds it (version 1), or the configured template over it. */
const json: Preset = {
  id: 'json',
  doc: 'README: notify.webhook',
  rates: [],
  build(n, ctx) {
    if (ctx.template !== undefined)
      return { url: ctx.url, body: fillTemplate(ctx.template, templateFields(n, ctx)), headers: JSON_HEADERS };
    const alerts = n.alerts.map((a) => ({ ...a, ...(ctx.link !== undefined ? { link: ctx.link(a.run) } : {}) }));
    return {
      url: ctx.url,
      body: JSON.stringify({
        version: 1,
        source: 'barwatch',
        title: title(n),
        status: templateFields(n, ctx)['status'],
        reason: n.reason,
        test: n.test === true,
        alerts,
      }),
      headers: JSON_HEADERS,
    };
  },
  summary(s, ctx) {
    return {
      url: ctx.url,
      body: JSON.stringify({ version: 1, source: 'barwatch', summary: { subject: s.subject, text: s.text } }),
      headers: JSON_HEADERS,
    };
  },
};

export const PRESETS: Record<PresetId, Preset> = { json, feishu, dingtalk, wecom, discord, teams };
