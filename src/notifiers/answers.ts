/**
 * How a channel's answer is read and judged: at most MAX_ANSWER_BYTES of it, its HTTP status and
 * Retry-After as a retry decision, its endpoint named without secrets, a failed connection's cause
 * in words. The outbox (alerting/outbox.ts) acts on the decision.
 */
import type { SendResult } from '../alerting/types.js';

/** How much of a channel's answer is read: Slack says "ok", Alertmanager nothing; the rest is dropped unread. */
export const MAX_ANSWER_BYTES = 64 << 10;

/**
 * The answer with its body cut to MAX_ANSWER_BYTES: the stream is read up to the bound and then
 * cancelled, so an endless or huge answer (1.5 GB took the daemon to 3 GB on every retry) costs
 * at most that much memory and ends the request.
 */
export async function boundedAnswer(res: Response, max = MAX_ANSWER_BYTES): Promise<Response> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = (res.body as ReadableStream<Uint8Array> | null)?.getReader();
  if (reader !== undefined) {
    try {
      while (size < max) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value.subarray(0, max - size));
        size += value.length;
      }
    } finally {
      await reader.cancel().catch(() => undefined);
    }
  }
  // A status without a body (204, 304) takes none.
  const empty = res.status === 204 || res.status === 304 || (res.status >= 100 && res.status < 200);
  return new Response(empty ? null : Buffer.concat(chunks), { status: res.status, statusText: res.statusText, headers: res.headers });
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

/** Where a channel sends: host and port of a URL (never its path or query, which may hold a secret). */
export function endpointOf(url: string): string {
  try {
    const u = new URL(url);
    const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '';
    return port === '' ? u.hostname : `${u.hostname}:${port}`;
  } catch {
    return '(invalid URL)';
  }
}

const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'DNS lookup failed for now',
  ETIMEDOUT: 'timed out',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  EPIPE: 'connection closed',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: self-signed certificate',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: certificate not verifiable',
  CERT_HAS_EXPIRED: 'TLS: certificate expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: certificate is for another host',
  EPROTO: 'TLS or protocol error',
};

/**
 * The underlying cause of a failed connection, in words with its code: `connection refused
 * (ECONNREFUSED)`, `host not found (DNS) (ENOTFOUND)`, `no answer within 10 s`. Looks through the
 * error's causes (fetch wraps the socket error) and its message (nodemailer puts it there).
 */
export function causeOf(err: unknown, timeoutMs?: number): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== null && typeof e === 'object'; depth++) {
    const x = e as { name?: string; code?: string; message?: string; cause?: unknown };
    if (x.name === 'TimeoutError' || x.name === 'AbortError' || x.code === 'ETIMEDOUT' || x.code === 'UND_ERR_CONNECT_TIMEOUT')
      return timeoutMs !== undefined ? `no answer within ${timeoutMs / 1000} s` : 'timed out';
    const code = x.code !== undefined && x.code in CAUSES ? x.code : /\b(E[A-Z_]{3,}|[A-Z_]*CERT[A-Z_]*)\b/.exec(x.message ?? '')?.[1];
    if (code !== undefined && code in CAUSES) return `${CAUSES[code]} (${code})`;
    if (x.message === 'bad port') return 'the port is one fetch refuses to use (bad port): pick another';
    if (x.cause === undefined || x.cause === null) {
      // The innermost error says it best; its code when it has one, else its first words.
      const words = (x.message ?? '').split('\n')[0]!.slice(0, 120);
      return x.code !== undefined ? `${words} (${x.code})` : words !== '' ? words : (x.name ?? 'unknown error');
    }
    e = x.cause;
  }
  const x = err as { code?: string; name?: string };
  return x.code ?? x.name ?? 'unknown error';
}
