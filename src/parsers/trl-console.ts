/**
 * TRL / transformers console: the Trainer prints each log as a Python dict repr, often on the same
 * physical line as tqdm output separated by `\r`. Values are numbers or quoted `.4g` strings.
 * There is no step key: the step is the training progress bar's count drawn before the dict
 * (TextLogParser), else entries are numbered 1, 2, 3... in the order they appear.
 */
import { flattenValues, toNumber } from './keys.js';
import { parsePythonLiteral } from './pydict.js';
import type { MetricRecord } from './types.js';

const SKIP: ReadonlySet<string> = new Set(['step', 'global_step', 'epoch']);
/** Keys of the final summary entry, which is not a training step. */
const SUMMARY_KEYS = ['train_runtime', 'train_samples_per_second'];
const METRIC_HINT = /^\{\s*['"](?:loss|reward|rewards\/|eval_|learning_rate|grad_norm|train_runtime|kl|completions\/)/;

export function looksLikeTrlDict(text: string): boolean {
  return text.charCodeAt(0) === 123 /* { */ && METRIC_HINT.test(text);
}

export type TrlEntry =
  | { kind: 'train'; record: Omit<MetricRecord, 'step'> & { step: number | null } }
  | { kind: 'eval'; values: Record<string, number> }
  | { kind: 'summary' };

/** Reads a TRL dict line. Eval entries (only `eval_*` keys) are returned apart: they belong to the current step. */
export function parseTrlDict(text: string, keyMap: Record<string, string>): TrlEntry | { error: string } {
  const dict = parsePythonLiteral(text.trim());
  if (dict === undefined || dict === null || typeof dict !== 'object' || Array.isArray(dict)) {
    return { error: 'TRL log dict that does not parse' };
  }
  const obj = dict as Record<string, unknown>;
  if (SUMMARY_KEYS.some((k) => k in obj)) return { kind: 'summary' };
  const keys = Object.keys(obj);
  const evalOnly = keys.every((k) => k.startsWith('eval_') || k === 'epoch' || k === 'step');
  if (evalOnly) {
    const values: Record<string, number> = {};
    for (const k of keys) {
      if (!k.startsWith('eval_')) continue;
      const v = toNumber(obj[k]);
      if (v !== undefined) values[`eval/${k.slice(5)}`] = v;
    }
    return { kind: 'eval', values };
  }
  const train: Record<string, unknown> = {};
  for (const k of keys) if (!k.startsWith('eval_')) train[k] = obj[k];
  const stepRaw = toNumber(obj['step'] ?? obj['global_step']);
  return {
    kind: 'train',
    record: { kind: 'metrics', step: stepRaw ?? null, values: flattenValues(train, keyMap, SKIP) },
  };
}
