/** Every notifier has this shape: a reader who knows one knows them all. */
import type { Channel, SendResult } from '../alerting/types.js';
import type { Summary } from '../summary/build.js';
import type { SummaryChannel } from '../summary/send.js';

/** A channel for alerts (alerting's Channel) that may also carry the nightly summary. */
export interface Notifier extends Channel, SummaryChannel {
  sendSummary?(s: Summary): Promise<SendResult>;
}

/** Retry-After as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined || value.trim() === '') return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const t = Date.parse(value);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

/** HTTP status -> retry decision: 5xx and 429 retry, other 4xx do not. */
export function classifyStatus(status: number, retryAfter?: number): SendResult {
  if (status >= 200 && status < 300) return { ok: true };
  if (status === 429)
    return {
      ok: false,
      retry: true,
      ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      error: 'HTTP 429 Too Many Requests',
    };
  if (status >= 500)
    return { ok: false, retry: true, ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}), error: `HTTP ${status}` };
  return { ok: false, retry: false, error: `HTTP ${status} (not retried)` };
}
