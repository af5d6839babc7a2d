/**
 * Slack through an incoming webhook (@slack/webhook): a Block Kit message per notification with
 * severity, run, round, step, the message, key evidence, the recommendation and a sparkline.
 * Log-derived text is escaped (&, <, >). The webhook URL is a secret: errors never carry it.
 */
import type * as SlackWebhook from '@slack/webhook';
import type { FetchFunction } from '@slack/webhook';
import { lazy } from '../../util/lazy.js';
import type { Notification, SendResult } from '../../alerting/types.js';
import { redact, type Secret } from '../../util/secret.js';
import type { Summary } from '../../summary/build.js';
import { escapeSlack, keyEvidence, messageOf, title } from '../render.js';
import { boundedAnswer, causeOf, classifyStatus, endpointOf, retryAfterMs } from '../answers.js';

/** Loaded by the first Slack notifier, not by every command. */
const slackWebhook = lazy<typeof SlackWebhook>('@slack/webhook');
import { type Notifier } from '../types.js';
import { where } from '../../util/format.js';

export interface SlackOptions {
  webhookUrl: Secret;
  timeoutMs?: number;
}

type Block = Record<string, unknown>;

/** Slack's limits: characters of a section's text, of a header, of a context element; blocks in a message. */
export const SLACK_LIMITS = { section: 3000, header: 150, context: 2000, blocks: 50 } as const;

/**
 * `raw` escaped for Slack and cut to at most `max` characters after escaping (an entity is never
 * cut in half). `keep: 'tail'` keeps the end, for a run's path, whose last folders name it.
 */
export function fitSlack(raw: string, max: number, keep: 'head' | 'tail' = 'head'): string {
  let budget = raw.length;
  for (;;) {
    const cut = budget >= raw.length ? raw : keep === 'head' ? `${raw.slice(0, budget)}…` : `…${raw.slice(raw.length - budget)}`;
    const out = escapeSlack(cut);
    if (out.length <= max) return out;
    budget -= Math.max(1, out.length - max);
  }
}

/**
 * Text from the logs (run paths, messages, evidence, recommendations) goes out as plain_text, so
 * Slack renders `*`, `_`, `~` and backticks in it as they are, never as formatting; only the
 * labels barwatch writes itself use mrkdwn.
 */
const plain = (text: string): Block => ({ type: 'plain_text', text, emoji: false });

function alertBlocks(a: Notification['alerts'][number], all: Notification['alerts']): Block[] {
  const head =
    a.status === 'resolved'
      ? ':white_check_mark: *RESOLVED*'
      : a.severity === 'critical'
        ? ':rotating_light: *CRITICAL*'
        : a.severity === 'warning'
          ? ':warning: *WARNING*'
          : ':information_source: *INFO*';
  const at = where(a);
  const out: Block[] = [{ type: 'section', text: { type: 'mrkdwn', text: `${head} \`${a.detector}\`${at ? `  *Where* ${at}` : ''}` } }];
  const run = `Run ${fitSlack(a.run, 600, 'tail')}`;
  const message = fitSlack(messageOf(a, all), SLACK_LIMITS.section - run.length - 1);
  out.push({ type: 'section', text: plain(`${run}\n${message}`) });
  if (a.status === 'firing') {
    const ev = keyEvidence(a);
    if (ev.length > 0) out.push({ type: 'context', elements: [plain(fitSlack(ev.join(' | '), SLACK_LIMITS.context))] });
    if (a.sparkline)
      out.push({ type: 'section', text: { type: 'mrkdwn', text: `\`${fitSlack(a.sparkline, SLACK_LIMITS.section - 2)}\`` } });
    if (a.recommendation) out.push({ type: 'section', text: plain(fitSlack(`Recommendation: ${a.recommendation}`, SLACK_LIMITS.section)) });
  }
  out.push({ type: 'divider' });
  return out;
}

/** The header, escaped: the title with the run's path cut from the front so its last folders stay in view. */
function header(n: Notification): string {
  const t = title(n);
  if (escapeSlack(t).length <= SLACK_LIMITS.header) return escapeSlack(t);
  const top = n.alerts.find((a) => a.status === 'firing') ?? n.alerts[0];
  if (top === undefined) return fitSlack(t, SLACK_LIMITS.header);
  const [before, after] = [t.slice(0, t.indexOf(top.run)), t.slice(t.indexOf(top.run) + top.run.length)];
  const fixed = escapeSlack(before).length + escapeSlack(after).length;
  return escapeSlack(before) + fitSlack(top.run, Math.max(10, SLACK_LIMITS.header - fixed), 'tail') + escapeSlack(after);
}

export function slackPayload(n: Notification): { text: string; blocks: Block[] } {
  const text = fitSlack(title(n), SLACK_LIMITS.section);
  const blocks: Block[] = [{ type: 'header', text: plain(header(n)) }];
  if (n.test === true) {
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: 'This is a test notification from barwatch: this channel works.' } });
    return { text, blocks };
  }
  // Whole alerts only, and room kept for the line that counts the ones left out.
  let shown = 0;
  for (const a of n.alerts) {
    const more = alertBlocks(a, n.alerts);
    if (blocks.length + more.length > SLACK_LIMITS.blocks - 1) break;
    blocks.push(...more);
    shown++;
  }
  if (shown < n.alerts.length)
    blocks.push({ type: 'context', elements: [plain(`and ${n.alerts.length - shown} more alert(s): see the web page or barwatch's log`)] });
  return { text, blocks };
}

export function createSlackNotifier(opts: SlackOptions): Notifier {
  let retryAfter: string | null = null;
  // Wraps fetch to read Retry-After, which the webhook client does not expose, and to read at
  // most MAX_ANSWER_BYTES of the answer.
  const fetchFn: FetchFunction = async (url, init) => {
    const res = await fetch(url, init);
    retryAfter = res.headers.get('retry-after');
    return boundedAnswer(res);
  };
  const where = endpointOf(opts.webhookUrl.reveal());
  const { IncomingWebhook, IncomingWebhookHTTPError, IncomingWebhookRequestError } = slackWebhook();
  const hook = new IncomingWebhook(opts.webhookUrl.reveal(), { fetch: fetchFn, timeout: opts.timeoutMs ?? 10_000 });
  const post = async (payload: unknown): Promise<SendResult> => {
    retryAfter = null;
    try {
      await hook.send(payload as Parameters<SlackWebhook.IncomingWebhook['send']>[0]);
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
            text: { type: 'mrkdwn', text: `*${fitSlack(s.subject, 150)}*\n\`\`\`${fitSlack(s.text, SLACK_LIMITS.section - 160)}\`\`\`` },
          },
        ],
      }),
  };
}
