/**
 * verl's console logger: `step:120 - critic/score/mean:0.610 - val-core/nq/acc/mean@1:0.47`.
 * Values come with 3, 6 or full decimals, or wrapped as `np.float64(0.1)`.
 */
import { canonicalKey, toNumber } from './keys.js';
import type { MetricRecord } from './types.js';

const STEP_LINE = /(?:^|\s)step:\s*(\d+)\s+-\s+/;
const WRAPPED = /^(?:np\.)?(?:float|int)\d*\((.*)\)$/;

export function looksLikeVerlConsole(text: string): boolean {
  return text.includes('step:') && STEP_LINE.test(text);
}

/** Returns the record, null when the line is not a verl step line, or an error. */
export function parseVerlConsole(text: string, keyMap: Record<string, string>): MetricRecord | null | { error: string } {
  const m = STEP_LINE.exec(text);
  if (m === null) return null;
  const step = Number(m[1]);
  const values: Record<string, number> = {};
  let n = 0;
  const body = text.slice(m.index + m[0].length);
  for (const part of body.split(' - ')) {
    const colon = part.lastIndexOf(':');
    if (colon <= 0) continue;
    const key = part.slice(0, colon).trim();
    let raw = part.slice(colon + 1).trim();
    // np.float64(0.1), float(0.1), int(3): only a value that starts with a letter can be wrapped.
    const c0 = raw.charCodeAt(0);
    if (c0 >= 97 && c0 <= 122) {
      const w = WRAPPED.exec(raw);
      if (w !== null) raw = w[1]!;
    }
    const v = toNumber(raw);
    if (v === undefined || key === '') continue;
    values[canonicalKey(key, keyMap)] = v;
    n++;
  }
  if (n === 0) return { error: 'verl step line without values' };
  return { kind: 'metrics', step, values };
}
