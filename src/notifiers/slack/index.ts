/**
 * Slack through an incoming webhook (@slack/webhook): a Block Kit message per notification with
 * severity, run, round, step, the message, key evidence, the recommendation and a sparkline.
 * Log-derived text is escaped (&, <, >). The webhook URL is a secret: errors never carry it.
 */
import { IncomingWebhook, IncomingWebhookHTTPError, IncomingWebhookRequestError, type FetchFunction } from '@slack/webhook';
import type { Notification, SendResult } from '../../alerting/types.js';
import { redact, type Secret } from '../../config/secret.js';
import type { Summary } from '../../summary/build.js';
import { escapeSlack, keyEvidence, plainText, title } from '../render.js';
import { causeOf, classifyStatus, endpointOf, retryAfterMs, type Notifier } from '../types.js';
import { where } from '../../util/format.js';

export interface SlackOptions {
  webhookUrl: Secret;
  timeoutMs?: number;
}

type Block = Record<string, unknown>;

export function slackPayload(n: Notification): { text: string; blocks: Block[] } {
  const text = escapeSlack(title(n));
  const blocks: Block[] = [{ type: 'header', text: { type: 'plain_text', text: title(n).slice(0, 150) } }];
  if (n.test === true) {
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: 'This is a test notification from barwatch: this channel works.' } });
    return { text, blocks };
  }
  for (const a of n.alerts.slice(0, 10)) {
    const head =
      a.status === 'resolved'
        ? ':white_check_mark: *RESOLVED*'
        : a.severity === 'critical'
          ? ':rotating_light: *CRITICAL*'
          : a.severity === 'warning'
            ? ':warning: *WARNING*'
            : ':information_source: *INFO*';
    const at = where(a);
    blocks.push({
      type: 'section',
      text: {
        type: 'mrkdwn',
        text: `${head} \`${a.detector}\`\n*Run* ${escapeSlack(a.run)}${at ? `  *Where* ${at}` : ''}\n${escapeSlack(a.status === 'resolved' ? `No longer holds: ${a.message}` : a.message)}`,
      },
    });
    if (a.status === 'firing') {
      const ev = keyEvidence(a);
      if (ev.length > 0) blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(ev.join(' | ')).slice(0, 2900) }] });
      if (a.sparkline) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `\`${escapeSlack(a.sparkline)}\`` } });
      if (a.recommendation)
        blocks.push({
          type: 'section',
          text: { type: 'mrkdwn', text: `*Recommendation* ${escapeSlack(a.recommendation)}`.slice(0, 2900) },
        });
    }
    blocks.push({ type: 'divider' });
  }
  return { text, blocks };
}

export function createSlackNotifier(opts: SlackOptions): Notifier {
  let retryAfter: string | null = null;
  // Wraps fetch to read Retry-After, which the webhook client does not expose.
  const fetchFn: FetchFunction = async (url, init) => {
    const res = await fetch(url, init);
    retryAfter = res.headers.get('retry-after');
    return res;
  };
  const where = endpointOf(opts.webhookUrl.reveal());
  const hook = new IncomingWebhook(opts.webhookUrl.reveal(), { fetch: fetchFn, timeout: opts.timeoutMs ?? 10_000 });
  const post = async (payload: unknown): Promise<SendResult> => {
    retryAfter = null;
    try {
      await hook.send(payload as Parameters<IncomingWebhook['send']>[0]);
      return { ok: true };
    } catch (err) {
      if (err instanceof IncomingWebhookHTTPError) {
        const r = classifyStatus(err.statusCode, retryAfterMs(retryAfter));
        return r.ok ? r : { ...r, error: `Slack at ${where} answered ${r.error}` };
      }
      const cause = err instanceof IncomingWebhookRequestError ? err.original : (err as Error);
      return {
        ok: false,
        retry: true,
        error: redact(`Slack webhook at ${where} unreachable: ${causeOf(cause, opts.timeoutMs ?? 10_000)}`, [opts.webhookUrl]),
      };
    }
  };
  return {
    name: 'slack',
    send: (n: Notification) => post(slackPayload(n)),
    // Slack webhooks take no images: the summary goes as text.
    sendSummary: (s: Summary) =>
      post({
        text: escapeSlack(s.subject),
        blocks: [
          {
            type: 'section',
            text: { type: 'mrkdwn', text: `*${escapeSlack(s.subject)}*\n\`\`\`${escapeSlack(s.text).slice(0, 2800)}\`\`\`` },
          },
        ],
      }),
  };
}

export { plainText };
