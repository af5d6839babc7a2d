/** OpenRLHF: `Global step 12: {'policy_loss': 0.1, 'reward': 0.5, ...}` (Python or JSON dict). */
import { flattenValues, toNumber } from './keys.js';
import { parsePythonLiteral } from './pydict.js';
import type { MetricRecord } from './types.js';

const GLOBAL_STEP = /Global step (\d+):\s*(\{.*\})\s*$/;
/** Keys that are the step itself, not series. */
const STEP_KEYS: ReadonlySet<string> = new Set(['step', 'global_step']);

export function looksLikeOpenRlhf(text: string): boolean {
  return text.includes('Global step ');
}

export function parseOpenRlhf(text: string, keyMap: Record<string, string>): MetricRecord | null | { error: string } {
  const m = GLOBAL_STEP.exec(text);
  if (m === null) return null;
  const dict = parsePythonLiteral(m[2]!);
  if (dict === undefined || dict === null || typeof dict !== 'object' || Array.isArray(dict)) {
    return { error: 'OpenRLHF step line with an unreadable dict' };
  }
  const step = toNumber(m[1]) ?? 0;
  return { kind: 'metrics', step, values: flattenValues(dict, keyMap, STEP_KEYS) };
}
