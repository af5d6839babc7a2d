/**
 * Series names. Trainers spell the same quantity many ways (SPEC 3.2); barwatch folds the known
 * spellings of the reward components onto one canonical name and keeps every other key verbatim.
 */
import type { Component, MetricRecord } from './types.js';

const ALIASES: Record<string, string> = {
  boundary: 'boundary',
  bdy: 'boundary',
  unc: 'boundary',
  unc_reward: 'boundary',
  boundary_reward: 'boundary',
  r_bdy: 'boundary',
  relevance: 'relevance',
  rel: 'relevance',
  rel_reward: 'relevance',
  relevance_reward: 'relevance',
  format: 'format',
  fmt: 'format',
  format_bonus: 'format',
  format_reward: 'format',
  count: 'count',
  cnt: 'count',
  count_penalty: 'count',
  total: 'total',
  accuracy: 'accuracy',
  acc: 'accuracy',
  boundary_share: 'boundary_share',
  rollouts: 'rollouts',
  reward: 'reward',
};

/** Prefixes that only say "this is a reward" (verl, TRL, reproductions). */
const REWARD_PREFIXES = new Set(['reward', 'rewards', 'reward_extra_info']);

/** Components a reward-function name may mention (TRL `rewards/<fn>/mean`). */
const COMPONENT_WORDS: readonly [string, Component][] = [
  ['boundary', 'boundary'],
  ['format', 'format'],
  ['relevance', 'relevance'],
  ['count', 'count'],
];

/** A configured key map as a Map, or null when it is empty (the usual case: no lookup at all). */
const keyMaps = new WeakMap<Record<string, string>, Map<string, string> | null>();
function mapOf(keyMap: Record<string, string>): Map<string, string> | null {
  let m = keyMaps.get(keyMap);
  if (m === undefined) {
    const entries = Object.entries(keyMap);
    m = entries.length === 0 ? null : new Map(entries);
    keyMaps.set(keyMap, m);
  }
  return m;
}

const cache = new Map<string, string>();
const CACHE_LIMIT = 4096;

/**
 * The series name for a raw key. `rewards/boundary_reward/mean` -> `boundary`,
 * `reward/format_std` -> `format_std`, `rewards/format_reward_fn/std` -> `format_std`,
 * `critic/score/mean` -> `critic/score/mean` (unknown: kept verbatim).
 */
export function canonicalKey(raw: string, keyMap?: Record<string, string>): string {
  if (keyMap !== undefined) {
    const mapped = mapOf(keyMap)?.get(raw);
    if (mapped !== undefined) return mapped;
  }
  const hit = cache.get(raw);
  if (hit !== undefined) return hit;
  const name = computeCanonical(raw);
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(raw, name);
  return name;
}

function computeCanonical(raw: string): string {
  const parts = raw.split('/');
  let prefixed = false;
  if (parts.length > 1 && REWARD_PREFIXES.has(parts[0]!.toLowerCase())) {
    parts.shift();
    prefixed = true;
  }
  let suffix = '';
  if (parts.length > 1) {
    const last = parts[parts.length - 1]!.toLowerCase();
    if (last === 'mean') parts.pop();
    else if (last === 'std') {
      parts.pop();
      suffix = '_std';
    }
  }
  if (parts.length !== 1) return raw;
  let base = parts[0]!.toLowerCase();
  if (suffix === '' && base.endsWith('_std')) {
    base = base.slice(0, -4);
    suffix = '_std';
  }
  // Own keys only: a log key named `constructor` or `toString` is a series of that name, not a
  // property every object inherits.
  const alias = Object.hasOwn(ALIASES, base) ? ALIASES[base] : undefined;
  if (alias !== undefined) return alias + suffix;
  if (prefixed) {
    for (const [word, component] of COMPONENT_WORDS) {
      if (base.includes(word)) return component + suffix;
    }
  }
  return raw;
}

/** Accepts numbers, and strings that are numbers (TRL prints `.4g` strings), NaN and infinities. */
/**
 * Hugging Face / TRL prefix training metrics with `train/` in TensorBoard and W&B (`train/reward`,
 * `train/rewards/<fn>/mean`): without it they are the names the other formats use. `eval/`
 * stays: evaluation is not training.
 */
export function trainTag(tag: string): string {
  return tag.startsWith('train/') ? tag.slice(6) : tag;
}

/**
 * The end-of-training summary Hugging Face's Trainer logs once, at the last step, when `train()`
 * returns (`train/train_runtime`, ...): the finish line, not series.
 */
export const END_OF_TRAINING: ReadonlySet<string> = new Set([
  'train_runtime',
  'train_samples_per_second',
  'train_steps_per_second',
  'total_flos',
  'train_loss',
]);

export function toNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const s = v.trim();
    if (s === '') return undefined;
    const n = Number(s);
    if (!Number.isNaN(n)) return n;
    const lower = s.toLowerCase();
    if (lower === 'nan') return NaN;
    if (lower === 'inf' || lower === 'infinity' || lower === '+inf') return Infinity;
    if (lower === '-inf' || lower === '-infinity') return -Infinity;
  }
  return undefined;
}

/**
 * Flattens a nested record into series values: `{rewards: {bdy: 0.4}}` -> `{boundary: 0.4}`.
 * Nested keys are joined with `/` before canonicalisation. Non-numeric leaves are dropped.
 */
export function flattenValues(
  obj: Record<string, unknown>,
  keyMap: Record<string, string> | undefined,
  skip: ReadonlySet<string>,
  out: Record<string, number> = {},
  prefix = '',
  /** Collects the series names of `null` leaves. */
  nulls?: string[],
): Record<string, number> {
  for (const key in obj) {
    if (prefix === '' && skip.has(key)) continue;
    const v = obj[key];
    const path = prefix === '' ? key : `${prefix}/${key}`;
    if (v !== null && typeof v === 'object') {
      if (!Array.isArray(v)) flattenValues(v as Record<string, unknown>, keyMap, skip, out, path, nulls);
      continue;
    }
    if (v === null) {
      nulls?.push(canonicalKey(path, keyMap));
      continue;
    }
    const n = toNumber(v);
    if (n !== undefined) out[canonicalKey(path, keyMap)] = n;
  }
  return out;
}

/** The series name of each key of a flat record, in order; null for a key that is not a series. */
export type Shape = readonly (string | null)[];

/** A metric record whose object of values is built only when something asks for it. */
abstract class LazyRecord implements MetricRecord {
  readonly kind = 'metrics';
  declare time?: number;
  private built: Record<string, number> | null = null;

  constructor(readonly step: number) {}

  get values(): Record<string, number> {
    return (this.built ??= this.build());
  }

  protected abstract build(): Record<string, number>;
}

/**
 * A metric record read through a learned shape: the parsed object and its shape, with no object
 * of values built for it. The statistics read `raw` through `shape` (RoundState.apply).
 */
export class ShapedRecord extends LazyRecord {
  constructor(
    step: number,
    readonly raw: Readonly<Record<string, unknown>>,
    readonly shape: Shape,
  ) {
    super(step);
  }

  protected build(): Record<string, number> {
    const out: Record<string, number> = {};
    let i = 0;
    for (const key in this.raw) {
      const name = this.shape[i++];
      if (name !== null && name !== undefined) out[name] = this.raw[key] as number;
    }
    return out;
  }
}

/**
 * A metric record as a list: the series names (shared by every record of the same shape) and one
 * number per name. Text formats that repeat one line shape (verl's step lines) are read into it
 * without an object of values per line; RoundState.apply reads the list.
 */
export class ListedRecord extends LazyRecord {
  constructor(
    step: number,
    readonly names: readonly string[],
    readonly nums: readonly number[],
  ) {
    super(step);
  }

  protected build(): Record<string, number> {
    const out: Record<string, number> = {};
    for (let i = 0; i < this.names.length; i++) out[this.names[i]!] = this.nums[i]!;
    return out;
  }
}

/**
 * flattenValues for a stream of records that mostly share one flat shape (a reward_history.jsonl
 * writes the same keys in the same order on every line): the shape of the last flat record is
 * kept, and a record with the same keys in the same order whose leaves are numbers is read
 * through it without re-deriving any name (a ShapedRecord). Anything else goes through
 * flattenValues, with the same result.
 */
export class Flattener {
  private keys: string[] = [];
  /** Series name per key, or null for a skipped key. */
  private names: (string | null)[] = [];

  constructor(
    private readonly keyMap: Record<string, string> | undefined,
    private readonly skip: ReadonlySet<string>,
  ) {}

  /** The keys of the learned shape in order (empty: none); a new array whenever the shape changes. */
  get shapeKeys(): readonly string[] {
    return this.keys;
  }

  /** The series name of each key of the learned shape, null for a skipped key. */
  get shapeNames(): Shape {
    return this.names;
  }

  /** The metric record of `obj` at `step`: read through the shape when it matches, else flattened (and learned). */
  record(step: number, obj: Record<string, unknown>): MetricRecord {
    if (this.matches(obj)) return new ShapedRecord(step, obj, this.names);
    const nulls: string[] = [];
    const rec: MetricRecord = { kind: 'metrics', step, values: this.learn(obj, nulls) };
    if (nulls.length > 0) rec.nulls = nulls;
    return rec;
  }

  /** Whether `obj` has the learned shape's keys in its order, with numbers where it reads series. */
  private matches(obj: Record<string, unknown>): boolean {
    const keys = this.keys;
    const names = this.names;
    let i = 0;
    for (const key in obj) {
      if (keys[i] !== key) return false;
      if (names[i++] !== null && typeof obj[key] !== 'number') return false;
    }
    return i === keys.length && i > 0;
  }

  /**
   * A flat record (number leaves, skipped keys) becomes the new shape and is read in the same
   * pass; any other (nested, strings, nulls) goes to flattenValues and leaves the shape as it was.
   * The shape is a new array each time (a ShapedRecord keeps the one it was read with).
   */
  private learn(obj: Record<string, unknown>, nulls: string[]): Record<string, number> {
    const keys: string[] = [];
    const names: (string | null)[] = [];
    const out: Record<string, number> = {};
    for (const key in obj) {
      keys.push(key);
      if (this.skip.has(key)) {
        names.push(null);
        continue;
      }
      const v = obj[key];
      if (typeof v !== 'number') return flattenValues(obj, this.keyMap, this.skip, {}, '', nulls);
      const name = canonicalKey(key, this.keyMap);
      names.push(name);
      out[name] = v;
    }
    // Two keys folding onto one name (`bdy` and `boundary`): the object keeps the last value, which
    // reading through the shape would not; such a record is never read through it.
    const shapeable = Object.keys(out).length === names.filter((n) => n !== null).length;
    this.keys = shapeable ? keys : [];
    this.names = shapeable ? names : [];
    return out;
  }
}
