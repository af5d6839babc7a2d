/**
 * The run's own configs (SPEC 3.4): `configs/filter_config.yaml`, `configs/reward_config.yaml`,
 * in barwatch's canonical names or BAR-RAG's (`lambda_unc`, `target_center`, `mean_max`...).
 * Keys are matched by their last name at any depth, so nested trainer configs work too.
 * Re-read whenever the file changes; each read emits the settings it found.
 */
import type * as Yaml from 'js-yaml';
import { lazy } from '../util/lazy.js';
import { canonicalKey, toNumber } from './keys.js';
import type { Component, DocumentParser, FormatId, LineResult, RunSettings } from './types.js';
import { defineInput } from './types.js';

/** Loaded by the first YAML document read: most runs and the built-in config have none. */
const yaml = lazy<typeof Yaml>('js-yaml');

type Setter = (s: RunSettings, v: number) => void;

const weight =
  (c: Component): Setter =>
  (s, v) => {
    s.weights = { ...s.weights, [c]: v };
  };

const SETTERS: Record<string, Setter> = {
  easy_threshold: (s, v) => (s.easyThreshold = v),
  mean_max: (s, v) => (s.easyThreshold = v),
  m_max: (s, v) => (s.easyThreshold = v),
  unsolvable_threshold: (s, v) => (s.unsolvableThreshold = v),
  mean_min: (s, v) => (s.unsolvableThreshold = v),
  m_min: (s, v) => (s.unsolvableThreshold = v),
  var_min: (s, v) => (s.varMin = v),
  rollouts: (s, v) => (s.rollouts = v),
  generator_rollouts: (s, v) => (s.rollouts = v),
  k_rollouts: (s, v) => (s.rollouts = v),
  target_accuracy: (s, v) => (s.targetAccuracy = v),
  target_center: (s, v) => (s.targetAccuracy = v),
  lambda_unc: weight('boundary'),
  lambda_bdy: weight('boundary'),
  lambda_rel: weight('relevance'),
  format_reward: weight('format'),
  format_bonus: weight('format'),
  format_weight: weight('format'),
  wrong_count_penalty: weight('count'),
  count_penalty: weight('count'),
  max_count_penalty: (s, v) => (s.countMax = v),
};

function walk(node: unknown, path: string[], s: RunSettings): void {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return;
  for (const [key, v] of Object.entries(node as Record<string, unknown>)) {
    const lower = key.toLowerCase();
    if (lower === 'weights' && v !== null && typeof v === 'object') {
      for (const [wk, wv] of Object.entries(v as Record<string, unknown>)) {
        const n = toNumber(wv);
        const c = canonicalKey(wk) as Component;
        if (n !== undefined && (c === 'boundary' || c === 'relevance' || c === 'format' || c === 'count')) weight(c)(s, n);
      }
      continue;
    }
    if (v !== null && typeof v === 'object') {
      walk(v, [...path, key], s);
      continue;
    }
    const n = toNumber(v);
    const set = SETTERS[lower];
    if (n !== undefined && set !== undefined) set(s, n);
  }
}

/** The settings a parsed config holds (a W&B run's config, a YAML document). */
export function settingsOf(doc: unknown): RunSettings {
  const s: RunSettings = {};
  walk(doc, [], s);
  return s;
}

/** Reads the settings a run config holds; unknown keys are the run's business and are ignored. */
export function readRunSettings(text: string): RunSettings | { error: string } {
  let doc: unknown;
  try {
    doc = yaml().load(text, { maxDepth: 64 });
  } catch (err) {
    return { error: `YAML does not parse: ${(err as Error).message.split('\n')[0]}` };
  }
  if (doc === undefined || doc === null) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) return { error: 'YAML is not a mapping' };
  return settingsOf(doc);
}

export class RunConfigParser implements DocumentParser {
  readonly kind = 'document';

  format(): FormatId {
    return 'run-config';
  }

  document(text: string): LineResult {
    const s = readRunSettings(text);
    if ('error' in s) return s;
    return Object.keys(s).length === 0 ? [] : [{ kind: 'settings', settings: s }];
  }
}

/** BAR-RAG's own configs (`configs/filter_config.yaml`, `configs/reward_config.yaml`). */
export const runConfigInput = defineInput({
  id: 'run-config',
  read: 'document',
  named: (base, folder) => (base.endsWith('.yaml') || base.endsWith('.yml')) && folder === 'configs',
  create: () => new RunConfigParser(),
});
