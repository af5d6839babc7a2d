/**
 * Loading the configuration: YAML (js-yaml), strict validation (schema.ts), then the checks that
 * span keys, relative paths resolved against the config file, durations into milliseconds and
 * secrets from `*_file` or the environment. Every problem names the file and the key path.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type * as Yaml from 'js-yaml';
import type Cron from 'node-cron';
import { lazy, nodeCrypto } from '../util/lazy.js';
import { DETECTORS } from '../detectors/index.js';
import type { Params } from '../detectors/types.js';
import { parseDuration } from '../util/duration.js';
import { configSchema, type RawConfig } from './schema.js';
import { ConfigError, issueProblems, typeName, valueAt, type ConfigProblem } from './problems.js';
import { Secret } from '../util/secret.js';
import { CHANNELS, type ChannelSettings } from '../notifiers/index.js';
import type { ChannelCommon, ChannelSpec } from '../notifiers/channel.js';

/** Loaded by the first YAML document read: most runs and the built-in config have none. */
const yaml = lazy<typeof Yaml>('js-yaml');

/** Loaded when a config names its own summary.cron: the default one is known to be valid. */
const cron = lazy<typeof Cron>('node-cron');

export { ConfigError, formatProblem, type ConfigProblem } from './problems.js';

/**
 * The configuration as the code uses it: the schema's output (schema.ts says every key once, with
 * its default and bounds), with paths absolute, secrets read, the listen address parsed and every
 * detector's parameters complete.
 */
export type Config = Omit<RawConfig, 'notify' | 'http' | 'detectors'> & {
  /** The file it came from; null for the built-in defaults. */
  file: string | null;
  /** Which of the places barwatch must find the file itself set (the rest are defaults). */
  given: { stateDir: boolean; roots: boolean };
  /**
   * Each key the file sets (dotted: `alerting.group_wait`) with a fingerprint of its value, keyed
   * with a secret of this process (a reload compares them; a secret's value is never kept).
   */
  written: Record<string, string>;
  /** Each configured channel's settings, resolved (notifiers/<channel>/channel.ts). */
  notify: ChannelSettings & { timeoutMs: number };
  http: Omit<RawConfig['http'], 'listen' | 'authTokenFile'> & {
    listen?: { host: string; port: number };
    /** Needed for every change (silences) made through the page or API; required when exposed. */
    token?: Secret;
  };
  /** Every detector's parameters: its defaults with the config's values over them. */
  detectors: Record<string, Params>;
};

export interface LoadOptions {
  env?: NodeJS.ProcessEnv;
  /** Base for relative paths when there is no config file. */
  cwd?: string;
}

const DEFAULTS_NAME = '<defaults>';

/**
 * Reads a config or secret file without blocking: opened non-blocking and read only when it is a
 * regular file (a FIFO given as the config froze the daemon at SIGHUP until a writer came).
 */
function readRegularFile(file: string): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'not a regular file' });
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

export function loadConfig(file: string | null, opts: LoadOptions = {}): Config {
  if (file === null) return resolveConfig(null, {}, opts);
  const abs = path.resolve(opts.cwd ?? process.cwd(), file);
  let text: string;
  try {
    text = readRegularFile(abs);
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
    doc = yaml().load(text, { filename: file, maxDepth: 32 });
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

/** What the sections of resolveConfig share: where problems go and how paths and durations read. */
interface Resolving {
  /** The file's name in messages. */
  name: string;
  doc: unknown;
  raw: RawConfig;
  problems: ConfigProblem[];
  env: NodeJS.ProcessEnv;
  abs: (p: string) => string;
}

function resolveConfig(file: string | null, doc: unknown, opts: LoadOptions): Config {
  const name = file ?? DEFAULTS_NAME;
  const parsed = configSchema.safeParse(doc);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.flatMap((i) => issueProblems(name, doc, i)));
  }
  const raw = parsed.data;
  const base = file === null ? path.resolve(opts.cwd ?? process.cwd()) : path.dirname(file);
  const r: Resolving = { name, doc, raw, problems: [], env: opts.env ?? process.env, abs: (p) => path.resolve(base, p) };
  const notify = resolveNotify(r);
  checkSummary(r);
  const listen = resolveListen(r);
  // Before the problems are counted: an empty or unreadable auth_token_file is one of them.
  const http = resolveHttp(r, listen);
  const problems = r.problems;
  const abs = r.abs;

  const detectors: Record<string, Params> = {};
  for (const d of DETECTORS) {
    const given = (raw.detectors as Record<string, Partial<Params> | undefined>)[d.id];
    detectors[d.id] = { ...d.defaults, ...given } as Params;
  }

  if (problems.length > 0) throw new ConfigError(problems);

  const top = (doc ?? {}) as Record<string, unknown>;
  const watch = top['watch'] as Record<string, unknown> | undefined;
  return {
    ...raw,
    file,
    written: fingerprints(top),
    given: { stateDir: 'state_dir' in top, roots: watch !== null && typeof watch === 'object' && 'roots' in watch },
    watch: { ...raw.watch, roots: raw.watch.roots.map(abs) },
    stateDir: abs(raw.stateDir),
    notify,
    http,
    detectors,
  };
}

/** This process's key for the fingerprints, made with the first one. */
let fingerprintKey: Buffer | null = null;

/** The file's keys, dotted (a list is one value), each with an HMAC of its value. */
function fingerprints(doc: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
    for (const [k, v] of Object.entries(doc)) fingerprints(v, prefix === '' ? k : `${prefix}.${k}`, out);
  } else if (prefix !== '') {
    fingerprintKey ??= nodeCrypto().randomBytes(32);
    out[prefix] = nodeCrypto().createHmac('sha256', fingerprintKey).update(JSON.stringify(doc)).digest('base64url').slice(0, 16);
  }
  return out;
}

/** A secret read from a `*_file`: trimmed, never empty. */
function readSecretFile(r: Resolving, key: string, p: string): Secret | undefined {
  const where = r.abs(p);
  try {
    const v = readRegularFile(where).trim();
    if (v === '') {
      r.problems.push({ file: r.name, key, message: `the file ${where} is empty` });
      return undefined;
    }
    return new Secret(v, `file ${where}`);
  } catch (err) {
    r.problems.push({ file: r.name, key, message: `cannot read ${where} (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
    return undefined;
  }
}

/**
 * A secret from exactly one place: the config itself (`key`), a file (`key_file`), or the
 * environment variable `envName`. `required` adds a problem when none of them is set.
 */
function secret(
  r: Resolving,
  section: string,
  key: string,
  direct: string | undefined,
  file: string | undefined,
  envName: string,
  required: boolean,
): Secret | undefined {
  if (direct !== undefined && file !== undefined) {
    r.problems.push({ file: r.name, key: section, message: `at most one of ${key} and ${key}_file may be set` });
    return undefined;
  }
  if (direct !== undefined) return new Secret(direct, 'config');
  if (file !== undefined) return readSecretFile(r, `${section}.${key}_file`, file);
  const fromEnv = r.env[envName];
  if (fromEnv) return new Secret(fromEnv, `env ${envName}`);
  if (required)
    r.problems.push({ file: r.name, key: section, message: `needs ${key}, ${key}_file or the environment variable ${envName}` });
  return undefined;
}

/** The channels, each resolving its own settings (secrets, checks across its keys). */
function resolveNotify(r: Resolving): Config['notify'] {
  const notify: Record<string, unknown> = {};
  const given = r.raw.notify as Record<string, unknown>;
  for (const c of CHANNELS as readonly ChannelSpec[]) {
    const raw = given[c.id];
    if (raw === undefined) continue;
    const section = `notify.${c.id}`;
    const under = (key: string): string => (key === '' ? section : `${section}.${key}`);
    const s = c.settings(raw, {
      secret: (key, direct, file, envName, required) => {
        const at = under(key);
        const dot = at.lastIndexOf('.');
        return secret(r, at.slice(0, dot), at.slice(dot + 1), direct, file, envName, required);
      },
      problem: (key, message) => r.problems.push({ file: r.name, key: under(key), message }),
    });
    if (s !== undefined) notify[c.id] = s;
  }
  return { ...(notify as ChannelSettings), timeoutMs: parseDuration(r.raw.notify.timeout)! };
}

/** What every channel is made with, from the config (notifiers/channel.ts). */
export function channelCommon(config: Config): ChannelCommon {
  return { timeoutMs: config.notify.timeoutMs, ...(config.http.externalUrl !== undefined ? { externalUrl: config.http.externalUrl } : {}) };
}

/** The summary's schedule, time zone and channels. */
function checkSummary(r: Resolving): void {
  // The defaults are valid; checking them would load the cron parser and the time-zone data at every start.
  if (valueAt(r.doc, ['summary', 'cron']) !== undefined && !cron().validate(r.raw.summary.cron))
    r.problems.push({ file: r.name, key: 'summary.cron', message: 'is not a valid cron expression (e.g. "0 23 * * *")' });
  if (valueAt(r.doc, ['summary', 'timezone']) !== undefined) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: r.raw.summary.timezone });
    } catch {
      r.problems.push({ file: r.name, key: 'summary.timezone', message: 'is not a known time zone (e.g. UTC, Europe/Paris)' });
    }
  }

  // Channels the file lists explicitly must be configured (the default [email] is quietly unused).
  if (Array.isArray(valueAt(r.doc, ['summary', 'channels']))) {
    for (const [i, ch] of r.raw.summary.channels.entries()) {
      if ((r.raw.notify as Record<string, unknown>)[ch] === undefined) {
        r.problems.push({ file: r.name, key: `summary.channels[${i}]`, message: `${ch} is listed but notify.${ch} is not configured` });
      }
    }
  }
}

/**
 * `host:port` (or `[v6]:port`, or `off`) as http.listen and `watch --listen` take it: the address,
 * null for off, or the reason it cannot be used.
 */
export function listenAddress(text: string, expose: boolean): { host: string; port: number } | null | string {
  if (text === 'off') return null;
  const m = /^(?:\[([0-9a-fA-F:]+)\]|([\w.-]+)):(\d{1,5})$/.exec(text);
  if (m === null) return 'must be host:port, e.g. 127.0.0.1:9464, or off';
  const host = (m[1] ?? m[2])!;
  const port = Number(m[3]);
  if (port > 65535) return 'port must be between 0 (any free port) and 65535';
  if (!isLoopback(host) && !expose) {
    return `${host} is not a loopback address; set http.expose: true to serve the page, /healthz and /metrics beyond this machine`;
  }
  return { host, port };
}

/** http.listen as host and port; beyond loopback only with http.expose. */
function resolveListen(r: Resolving): { host: string; port: number } | undefined {
  const l = listenAddress(r.raw.http.listen, r.raw.http.expose);
  if (typeof l === 'string') {
    r.problems.push({ file: r.name, key: 'http.listen', message: l });
    return undefined;
  }
  return l ?? undefined;
}

/** The HTTP section: where it listens, and the token changes need (from auth_token_file or BARWATCH_HTTP_TOKEN). */
function resolveHttp(r: Resolving, listen: { host: string; port: number } | undefined): Config['http'] {
  const { listen: _text, authTokenFile, ...h } = r.raw.http;
  const token = secret(r, 'http', 'auth_token', undefined, authTokenFile, 'BARWATCH_HTTP_TOKEN', false);
  // Exposed without a token, the page is read-only (changes are refused with a message saying why).
  return { ...h, ...(listen !== undefined ? { listen } : {}), ...(token !== undefined ? { token } : {}) };
}

/** localhost, 127.0.0.0/8 and ::1: addresses no other machine can reach. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}
