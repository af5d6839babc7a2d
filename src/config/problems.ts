/**
 * Configuration problems and how they read: every problem names the file and the key path, and
 * a schema violation (zod's issue) becomes a sentence a user can act on ("unknown key (did you
 * mean ...?)", "must be a number, not a string").
 */
import type { z } from 'zod';
import { DETECTORS } from '../detectors/index.js';
import { configSchema } from './schema.js';

export interface ConfigProblem {
  file: string;
  /** Dotted key path, `watch.poll_interval`, `notify.email.to[0]`; empty for the whole file. */
  key: string;
  message: string;
}

/** What a problem at `key` would break when it bites: a notification channel, the nightly summary. */
export function breaks(key: string): string | null {
  const channel = /^notify\.(slack|email|alertmanager)\b/.exec(key)?.[1];
  if (channel !== undefined) return `the ${channel} channel`;
  if (key.startsWith('summary.')) return 'the nightly summary';
  return null;
}

export function formatProblem(p: ConfigProblem): string {
  if (p.key === '') return `${p.file}: ${p.message}`;
  const what = breaks(p.key);
  return `${p.file}: ${p.key}: ${p.message}${what !== null && !p.message.includes(what) ? ` (breaks ${what})` : ''}`;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
  }
}

function keyPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

export function valueAt(doc: unknown, parts: readonly PropertyKey[]): unknown {
  let v = doc;
  for (const p of parts) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p as string];
  }
  return v;
}

export function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'number') return 'a number';
  if (typeof v === 'boolean') return 'a boolean';
  return typeof v;
}

const EXPECTED: Record<string, string> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  boolean: 'true or false',
  int: 'a whole number',
};

function levenshtein(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++)
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
  return d[a.length]![b.length]!;
}

/** Known keys of the mapping at `parts`, for "did you mean" hints. */
function knownKeys(parts: readonly PropertyKey[]): string[] {
  let schema: z.ZodType = configSchema;
  for (const p of parts) {
    const def = unwrap(schema);
    const shape = (def as unknown as { shape?: Record<string, z.ZodType> }).shape;
    if (shape === undefined || typeof p !== 'string' || shape[p] === undefined) return [];
    schema = shape[p]!;
  }
  const shape = (unwrap(schema) as unknown as { shape?: Record<string, z.ZodType> }).shape;
  return shape === undefined ? [] : Object.keys(shape);
}

/** The object schema under defaults, optionals and transforms (a transform's input is what the file writes). */
function unwrap(s: z.ZodType): z.ZodType {
  let cur = s as unknown as { _zod: { def: { innerType?: z.ZodType; in?: z.ZodType } } };
  for (let i = 0; i < 8; i++) {
    const next = cur._zod.def.innerType ?? cur._zod.def.in;
    if (next === undefined) break;
    cur = next as unknown as typeof cur;
  }
  return cur as unknown as z.ZodType;
}

export function issueProblems(file: string, doc: unknown, issue: z.core.$ZodIssue): ConfigProblem[] {
  const at = issue.path;
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((k) => {
        const detector = at.length === 2 && at[0] === 'detectors' ? DETECTORS.find((d) => d.id === at[1]) : undefined;
        if (detector !== undefined) {
          return {
            file,
            key: keyPath([...at, k]),
            message: `unknown parameter (${detector.id} takes: ${Object.keys(detector.defaults).join(', ')})`,
          };
        }
        if (k === '<<') return { file, key: keyPath([...at, k]), message: 'YAML merge keys (<<) are not supported: write the keys out' };
        const near = knownKeys(at).filter((c) => levenshtein(c, k) <= 2 || (k.length >= 4 && c.startsWith(k)));
        const hint = near.length > 0 ? ` (did you mean ${near[0]}?)` : '';
        return { file, key: keyPath([...at, k]), message: `unknown key${hint}` };
      });
    case 'invalid_type': {
      const v = valueAt(doc, at);
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      // A fraction where a count goes: the value says more than its type.
      const given = issue.expected === 'int' && typeof v === 'number' ? String(v) : typeName(v);
      const message = v === undefined ? `is required (${expected})` : `must be ${expected}, not ${given}`;
      return [{ file, key: keyPath(at), message }];
    }
    case 'invalid_value':
      return [{ file, key: keyPath(at), message: `must be one of ${issue.values.map(String).join(', ')}` }];
    case 'too_small': {
      // A bound the schema words itself (a range: boundedInt) is given as it is.
      if (issue.message.startsWith('must ')) return [{ file, key: keyPath(at), message: issue.message }];
      const unit = issue.origin === 'array' ? ' item(s)' : issue.origin === 'string' ? ' character(s)' : '';
      const bound = issue.inclusive === false ? 'greater than' : 'at least';
      return [{ file, key: keyPath(at), message: `must be ${bound} ${String(issue.minimum)}${unit}` }];
    }
    case 'too_big': {
      if (issue.message.startsWith('must ')) return [{ file, key: keyPath(at), message: issue.message }];
      return [
        { file, key: keyPath(at), message: `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${String(issue.maximum)}` },
      ];
    }
    case 'invalid_format':
      return [{ file, key: keyPath(at), message: issue.format === 'url' ? 'must be a URL' : issue.message }];
    default:
      return [{ file, key: keyPath(at), message: issue.message }];
  }
}

/** Reads and validates a config file, or the defaults when `file` is null. Throws ConfigError. */
