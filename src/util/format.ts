/** Numbers and places as barwatch writes them in messages, reports and notifications. */

/** `34%`, or `-` when there is no number. */
export function pct(x: number | null | undefined): string {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : `${(x * 100).toFixed(0)}%`;
}

/** Three decimals, exponent notation for very large or small values, `-` when there is no number. */
export function fmt(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || !Number.isFinite(x)) return '-';
  const a = Math.abs(x);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(2);
  return x.toFixed(digits);
}

/** Rounded to three decimals, for evidence values. */
export function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** `round 2, step 340` (either part left out when unknown). */
export function where(a: { round: number | null; step: number | null }): string {
  return [a.round !== null ? `round ${a.round}` : null, a.step !== null ? `step ${a.step}` : null].filter(Boolean).join(', ');
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/**
 * Text for a terminal that came from outside (folder names, log text): control characters are
 * shown escaped (`\r`, `\n`, `\x1b`), so a run folder named `run\r\nBcc: ...` cannot forge a line
 * and `\x1b]0;title\x07` cannot drive the terminal.
 */
export function printable(s: string): string {
  // eslint-disable-next-line no-control-regex
  return s.replace(/[\x00-\x1f\x7f-\x9f]/g, (c) =>
    c === '\n' ? '\\n' : c === '\r' ? '\\r' : c === '\t' ? '\\t' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/** A duration for people: 850ms, 4.2s, 95s, 12m, 3h 5m, 2d 4h. */
export function humanDuration(ms: number): string {
  // Below a second (a replay, a backlog), seconds would print 0s.
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}
