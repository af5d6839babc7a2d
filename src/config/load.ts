/**
 * Loading the configuration: YAML (js-yaml), strict validation (schema.ts), then the checks that
 * span keys, relative paths resolved against the config file, durations into milliseconds and
 * secrets from `*_file` or the environment. Every problem names the file and the key path.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as yaml from 'js-yaml';
import cron from 'node-cron';
import type { z } from 'zod';
import type { ParserOptions } from '../parsers/types.js';
import type { StatsOptions } from '../runs/series.js';
import type { TailOptions } from '../sources/tailer.js';
import { DETECTORS } from '../detectors/index.js';
import type { Params } from '../detectors/types.js';
import { parseDuration } from '../util/duration.js';
import { configSchema, type RawConfig } from './schema.js';
import { Secret } from './secret.js';

export interface ConfigProblem {
  file: string;
  /** Dotted key path, `watch.poll_interval`, `notify.email.to[0]`; empty for the whole file. */
  key: string;
  message: string;
}

export function formatProblem(p: ConfigProblem): string {
  return p.key === '' ? `${p.file}: ${p.message}` : `${p.file}: ${p.key}: ${p.message}`;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
  }
}

export interface Config {
  /** The file it came from; null for the built-in defaults. */
  file: string | null;
  watch: {
    roots: string[];
    poll: boolean;
    pollIntervalMs: number;
    statusIntervalMs: number;
    checkpointIntervalMs: number;
    sweepIntervalMs: number;
  };
  stateDir: string;
  parser: ParserOptions;
  tail: TailOptions;
  stats: StatsOptions;
  alerting: {
    forMs: number;
    keepFiringForMs: number;
    groupWaitMs: number;
    groupIntervalMs: number;
    repeatIntervalMs: number;
    resolveNotify: boolean;
  };
  notify: {
    slack?: { webhookUrl: Secret };
    email?: {
      smtp: { host: string; port: number; secure: boolean; user?: string; pass?: Secret };
      from: string;
      to: string[];
    };
    alertmanager?: { url: string };
    timeoutMs: number;
  };
  summary: { cron: string; timezone: string; channels: ('email' | 'slack')[] };
  http: { listen?: { host: string; port: number }; expose: boolean };
  log: { level: string; format: 'auto' | 'json' | 'pretty' };
  /** Every detector's parameters: its defaults with the config's values over them. */
  detectors: Record<string, Params>;
  raw: RawConfig;
}

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Base for relative paths when there is no config file. */
  cwd?: string;
}

const DEFAULTS_NAME = '<defaults>';

function keyPath(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

function valueAt(doc: unknown, parts: readonly PropertyKey[]): unknown {
  let v = doc;
  for (const p of parts) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p as string];
  }
  return v;
}

function typeName(v: unknown): string {
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
  int: 'an integer',
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

function unwrap(s: z.ZodType): z.ZodType {
  let cur = s as unknown as { _zod: { def: { innerType?: z.ZodType } } };
  for (let i = 0; i < 8 && cur._zod.def.innerType !== undefined; i++) cur = cur._zod.def.innerType as unknown as typeof cur;
  return cur as unknown as z.ZodType;
}

function issueProblems(file: string, doc: unknown, issue: z.core.$ZodIssue): ConfigProblem[] {
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
        const near = knownKeys(at).filter((c) => levenshtein(c, k) <= 2 || (k.length >= 4 && c.startsWith(k)));
        const hint = near.length > 0 ? ` (did you mean ${near[0]}?)` : '';
        return { file, key: keyPath([...at, k]), message: `unknown key${hint}` };
      });
    case 'invalid_type': {
      const v = valueAt(doc, at);
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      const message = v === undefined ? `is required (${expected})` : `must be ${expected}, not ${typeName(v)}`;
      return [{ file, key: keyPath(at), message }];
    }
    case 'invalid_value':
      return [{ file, key: keyPath(at), message: `must be one of ${issue.values.map(String).join(', ')}` }];
    case 'too_small': {
      const unit = issue.origin === 'array' ? ' item(s)' : issue.origin === 'string' ? ' character(s)' : '';
      return [{ file, key: keyPath(at), message: `must be at least ${String(issue.minimum)}${unit}` }];
    }
    case 'too_big':
      return [{ file, key: keyPath(at), message: `must be at most ${String(issue.maximum)}` }];
    case 'invalid_format':
      return [{ file, key: keyPath(at), message: issue.format === 'url' ? 'must be a URL' : issue.message }];
    default:
      return [{ file, key: keyPath(at), message: issue.message }];
  }
}

/** Reads and validates a config file, or the defaults when `file` is null. Throws ConfigError. */
export function loadConfig(file: string | null, opts: LoadOptions = {}): Config {
  if (file === null) return resolveConfig(null, {}, opts);
  const abs = path.resolve(opts.cwd ?? process.cwd(), file);
  let text: string;
  try {
    text = readFileSync(abs, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([{ file: abs, key: '', message: `cannot read the file (${code})` }]);
  }
  return parseConfig(text, abs, opts);
}

/** Validates config text; `file` names it in messages and anchors relative paths. */
export function parseConfig(text: string, file: string, opts: LoadOptions = {}): Config {
  let doc: unknown;
  try {
    doc = yaml.load(text, { filename: file, maxDepth: 32 });
  } catch (err) {
    const e = err as { reason?: string; mark?: { line: number; column: number }; message: string };
    const where = e.mark !== undefined ? `line ${e.mark.line + 1}, column ${e.mark.column + 1}: ` : '';
    throw new ConfigError([{ file, key: '', message: `not valid YAML: ${where}${e.reason ?? e.message}` }]);
  }
  if (doc === undefined || doc === null) doc = {};
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new ConfigError([{ file, key: '', message: `must be a mapping of keys, not ${typeName(doc)}` }]);
  }
  return resolveConfig(file, dropEmpty(doc), opts);
}

/** `key:` with nothing after it (often everything below was commented out) means the default. */
function dropEmpty(doc: unknown): unknown {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return doc;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(doc as Record<string, unknown>)) if (v !== null) out[k] = dropEmpty(v);
  return out;
}

function resolveConfig(file: string | null, doc: unknown, opts: LoadOptions): Config {
  const name = file ?? DEFAULTS_NAME;
  const parsed = configSchema.safeParse(doc);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.flatMap((i) => issueProblems(name, doc, i)));
  }
  const raw = parsed.data;
  const problems: ConfigProblem[] = [];
  const env = opts.env ?? process.env;
  const base = file === null ? path.resolve(opts.cwd ?? process.cwd()) : path.dirname(file);
  const abs = (p: string): string => path.resolve(base, p);
  const ms = (s: string): number => parseDuration(s)!;

  const readSecretFile = (key: string, p: string): Secret | undefined => {
    const where = abs(p);
    try {
      const v = readFileSync(where, 'utf8').trim();
      if (v === '') {
        problems.push({ file: name, key, message: `the file ${where} is empty` });
        return undefined;
      }
      return new Secret(v, `file ${where}`);
    } catch (err) {
      problems.push({ file: name, key, message: `cannot read ${where} (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
      return undefined;
    }
  };

  /**
   * A secret from exactly one place: the config itself (`key`), a file (`key_file`), or the
   * environment variable `envName`. `required` adds a problem when none of them is set.
   */
  const secret = (
    section: string,
    key: string,
    direct: string | undefined,
    file: string | undefined,
    envName: string,
    required: boolean,
  ): Secret | undefined => {
    if (direct !== undefined && file !== undefined) {
      problems.push({ file: name, key: section, message: `at most one of ${key} and ${key}_file may be set` });
      return undefined;
    }
    if (direct !== undefined) return new Secret(direct, 'config');
    if (file !== undefined) return readSecretFile(`${section}.${key}_file`, file);
    const fromEnv = env[envName];
    if (fromEnv) return new Secret(fromEnv, `env ${envName}`);
    if (required) problems.push({ file: name, key: section, message: `needs ${key}, ${key}_file or the environment variable ${envName}` });
    return undefined;
  };

  const notify: Config['notify'] = { timeoutMs: ms(raw.notify.timeout) };
  const slack = raw.notify.slack;
  if (slack !== undefined) {
    const url = secret('notify.slack', 'webhook_url', slack.webhook_url, slack.webhook_url_file, 'BARWATCH_SLACK_WEBHOOK_URL', true);
    if (url !== undefined) notify.slack = { webhookUrl: url };
  }
  const email = raw.notify.email;
  if (email !== undefined) {
    const smtp = email.smtp;
    const pass = secret('notify.email.smtp', 'pass', smtp.pass, smtp.pass_file, 'BARWATCH_SMTP_PASS', false);
    if (pass !== undefined && smtp.user === undefined) {
      problems.push({ file: name, key: 'notify.email.smtp.user', message: 'is required when a password is given' });
    }
    notify.email = {
      smtp: {
        host: smtp.host,
        port: smtp.port,
        secure: smtp.secure,
        ...(smtp.user !== undefined ? { user: smtp.user } : {}),
        ...(pass !== undefined ? { pass } : {}),
      },
      from: email.from,
      to: email.to,
    };
  }
  if (raw.notify.alertmanager !== undefined) notify.alertmanager = { url: raw.notify.alertmanager.url };

  if (!cron.validate(raw.summary.cron))
    problems.push({ file: name, key: 'summary.cron', message: 'is not a valid cron expression (e.g. "0 23 * * *")' });
  try {
    new Intl.DateTimeFormat('en', { timeZone: raw.summary.timezone });
  } catch {
    problems.push({ file: name, key: 'summary.timezone', message: 'is not a known time zone (e.g. UTC, Europe/Paris)' });
  }

  // Channels the file lists explicitly must be configured (the default [email] is quietly unused).
  if (Array.isArray(valueAt(doc, ['summary', 'channels']))) {
    for (const [i, ch] of raw.summary.channels.entries()) {
      if (raw.notify[ch] === undefined) {
        problems.push({ file: name, key: `summary.channels[${i}]`, message: `${ch} is listed but notify.${ch} is not configured` });
      }
    }
  }

  let listen: { host: string; port: number } | undefined;
  if (raw.http.listen !== undefined) {
    const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(raw.http.listen)!;
    const port = Number(m[2]);
    if (port > 65535) problems.push({ file: name, key: 'http.listen', message: 'port must be between 0 (any free port) and 65535' });
    listen = { host: m[1]!, port };
    if (!isLoopback(listen.host) && !raw.http.expose) {
      problems.push({
        file: name,
        key: 'http.listen',
        message: `${listen.host} is not a loopback address; set http.expose: true to serve /healthz and /metrics beyond this machine`,
      });
    }
  }

  const detectors: Record<string, Params> = {};
  for (const d of DETECTORS) {
    const given = (raw.detectors as Record<string, Partial<Params> | undefined>)[d.id];
    detectors[d.id] = { ...d.defaults, ...given } as Params;
  }

  if (problems.length > 0) throw new ConfigError(problems);

  return {
    file,
    watch: {
      roots: raw.watch.roots.map(abs),
      poll: raw.watch.poll,
      pollIntervalMs: ms(raw.watch.poll_interval),
      statusIntervalMs: ms(raw.watch.status_interval),
      checkpointIntervalMs: ms(raw.watch.checkpoint_interval),
      sweepIntervalMs: ms(raw.watch.sweep_interval),
    },
    stateDir: abs(raw.state_dir),
    parser: {
      keyMap: raw.parse.key_map,
      debugSamplesPerStep: raw.parse.debug_samples_per_step,
      debugStepGapMs: ms(raw.parse.debug_step_gap),
    },
    tail: { maxLineBytes: raw.parse.max_line_bytes },
    stats: {
      window: raw.stats.window,
      history: Math.max(raw.stats.history, raw.stats.window),
      ewmaHalfLife: raw.stats.ewma_half_life,
      curveBuckets: raw.stats.curve_buckets,
      maxSeries: raw.stats.max_series,
    },
    alerting: {
      forMs: ms(raw.alerting.for),
      keepFiringForMs: ms(raw.alerting.keep_firing_for),
      groupWaitMs: ms(raw.alerting.group_wait),
      groupIntervalMs: ms(raw.alerting.group_interval),
      repeatIntervalMs: ms(raw.alerting.repeat_interval),
      resolveNotify: raw.alerting.resolve_notify,
    },
    notify,
    summary: raw.summary,
    http: listen === undefined ? { expose: raw.http.expose } : { listen, expose: raw.http.expose },
    log: raw.log,
    detectors,
    raw,
  };
}

/** localhost, 127.0.0.0/8 and ::1: addresses no other machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
