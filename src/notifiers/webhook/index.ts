/**
 * A generic webhook: one URL, a preset that shapes the message for its service (presets.ts) or a
 * template, headers (tokens among them), the service's rate limits kept on our side, and its
 * answer judged as the service means it (an HTTP 200 may carry an error code). Each configured
 * webhook is a channel of its own: its queue, retries and record of what was sent. The URL,
 * the signing secret and the header values are secrets: no log line or error carries them.
 */
import type { Notification, SendResult } from '../../alerting/types.js';
import type { Summary } from '../../summary/build.js';
import { redact, type Secret } from '../../util/secret.js';
import { boundedAnswer, causeOf, classifyStatus, endpointOf, retryAfterMs } from '../answers.js';
import type { Notifier } from '../types.js';
import { PRESETS, type Outgoing, type PresetContext, type PresetId, type Rate } from './presets.js';

export interface WebhookOptions {
  /** The channel's name: `webhook:<name>`. */
  name: string;
  preset: PresetId;
  url: Secret;
  secret?: Secret;
  method: 'POST' | 'PUT' | 'PATCH';
  headers: Record<string, Secret>;
  template?: string;
  timeoutMs: number;
  /** http.external_url: links to a run's page. */
  externalUrl?: string;
  now?: () => number;
}

/**
 * The sends within each of a service's rate windows: a send that would pass a limit is not made;
 * the outbox keeps it and tries again when the window has room (a refused message at DingTalk
 * blocks the robot for ten minutes, so waiting on our side is cheaper than being refused).
 */
export class RateWindows {
  private readonly sent: number[] = [];

  constructor(private readonly rates: readonly Rate[]) {}

  /** Milliseconds until a send fits every window (0: now). */
  wait(now: number): number {
    let wait = 0;
    for (const r of this.rates) {
      const inWindow = this.sent.filter((t) => t > now - r.ms);
      if (inWindow.length >= r.count) wait = Math.max(wait, inWindow[inWindow.length - r.count]! + r.ms - now);
    }
    return wait;
  }

  record(now: number): void {
    this.sent.push(now);
    const longest = Math.max(0, ...this.rates.map((r) => r.ms));
    while (this.sent.length > 0 && this.sent[0]! <= now - longest) this.sent.shift();
  }
}

export function createWebhookNotifier(o: WebhookOptions): Notifier {
  const preset = PRESETS[o.preset];
  const now = o.now ?? Date.now;
  const windows = new RateWindows(preset.rates);
  const secrets = [o.url, ...(o.secret !== undefined ? [o.secret] : []), ...Object.values(o.headers)];
  const where = endpointOf(o.url.reveal());
  const label = `${o.name} (${o.preset}) at ${where}`;
  const ctx = (): PresetContext => ({
    url: o.url.reveal(),
    now: now(),
    ...(o.secret !== undefined ? { secret: o.secret.reveal() } : {}),
    ...(o.template !== undefined ? { template: o.template } : {}),
    ...(o.externalUrl !== undefined
      ? { link: (run: string) => `${o.externalUrl!.replace(/\/$/, '')}/#/run/${encodeURIComponent(run)}` }
      : {}),
  });
  const post = async (make: (c: PresetContext) => Outgoing): Promise<SendResult> => {
    const t = now();
    const wait = windows.wait(t);
    if (wait > 0)
      return {
        ok: false,
        retry: true,
        retryAfterMs: wait,
        error: `${label}: held back ${Math.ceil(wait / 1000)} s to stay within the service's limit of ${preset.rates.map((r) => `${r.count} messages per ${r.ms / 1000} s`).join(' and ')}`,
      };
    let out: Outgoing;
    try {
      out = make(ctx());
    } catch (err) {
      return { ok: false, retry: false, error: redact(`${label}: the message could not be made: ${(err as Error).message}`, secrets) };
    }
    const headers: Record<string, string> = { ...out.headers };
    for (const [k, v] of Object.entries(o.headers)) headers[k.toLowerCase()] = v.reveal();
    windows.record(t);
    try {
      const res = await boundedAnswer(
        await fetch(out.url, { method: o.method, headers, body: out.body, redirect: 'error', signal: AbortSignal.timeout(o.timeoutMs) }),
      );
      const text = await res.text();
      const judged = preset.judge?.(res.status, text) ?? classifyStatus(res.status, retryAfterMs(res.headers.get('retry-after')));
      if (judged.ok) return judged;
      const after = judged.retryAfterMs ?? retryAfterMs(res.headers.get('retry-after'));
      return {
        ...judged,
        ...(after !== undefined ? { retryAfterMs: after } : {}),
        error: redact(`${label} answered ${judged.error}`, secrets),
      };
    } catch (err) {
      return { ok: false, retry: true, error: redact(`${label} unreachable: ${causeOf(err, o.timeoutMs)}`, secrets) };
    }
  };
  return {
    name: o.name,
    send: (n: Notification) => post((c) => preset.build(n, c)),
    ...(preset.summary !== undefined ? { sendSummary: (s: Summary) => post((c) => preset.summary!(s, c)) } : {}),
  };
}
