/** Durations as the config writes them: `500ms`, `10s`, `5m`, `4h`, `1d`, or combined (`1h30m`). */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const WHOLE = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Milliseconds, or null when the text is not a duration. */
export function parseDuration(text: string): number | null {
  const t = text.trim();
  if (!WHOLE.test(t)) return null;
  let ms = 0;
  for (const m of t.matchAll(PART)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms;
}
