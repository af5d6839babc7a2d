/**
 * The configuration: every key optional, defaults in this one file, unknown keys errors. Each
 * section's transform gives it the shape the code takes (durations in milliseconds), so the
 * Config type is this schema's output (load.ts resolves paths, secrets and the listen address).
 */
import { z } from 'zod';
import { DETECTORS } from '../detectors/index.js';
import { detectorSchema } from '../detectors/params.js';
import { boundedDuration, boundedInt, durationSchema } from '../util/schema.js';
import { DEFAULT_REACH, FOLLOW_SYMLINKS, type ReachOptions } from '../sources/reach.js';
import type { TailOptions } from '../sources/tailer.js';
import type { ParserOptions } from '../parsers/types.js';
import type { StatsOptions } from '../runs/series.js';
import type { DispatchOptions } from '../alerting/dispatch.js';
import type { LifecycleOptions } from '../alerting/lifecycle.js';
import type { ActionSpec } from '../alerting/actions.js';
import { parseDuration } from '../util/duration.js';
import { NOTIFY_SHAPE, SUMMARY_CHANNELS, type ChannelId } from '../notifiers/index.js';

const duration = durationSchema;
const ms = (s: string): number => parseDuration(s)!;

const watch = z
  .strictObject({
    roots: z.array(z.string().min(1)).min(1).default(['.']),
    poll: z.boolean().default(false),
    poll_interval: boundedDuration('100ms', '1h').default('1s'),
    /** How often the daemon logs its one-line status. */
    status_interval: boundedDuration('100ms').default('60s'),
    /** How often offsets and statistics are saved. */
    checkpoint_interval: boundedDuration('100ms', '1h').default('30s'),
    /** How often every file is re-checked (a missed event) and time-based detectors (stale-run) run. */
    sweep_interval: boundedDuration('100ms').default('30s'),
    /** Least time between two reads of one file: the writes of a faster writer are read together. */
    read_spacing: boundedDuration('0s', '10s').default('250ms'),
    /**
     * A run that writes nothing for this long is judged once with everything read, as analyze judges
     * a finished run: verdicts that wait for a second evaluation fire or resolve then.
     */
    settle_after: boundedDuration('100ms', '7d').default('5m'),
    /** Which symlinks under a root are followed: inside (targets inside a root), all, none. */
    follow_symlinks: z.enum(FOLLOW_SYMLINKS).default(DEFAULT_REACH.follow),
    /** At most this many files, and folders, followed under each root. */
    max_files: boundedInt(1, 10_000_000).default(DEFAULT_REACH.maxFiles),
    max_folders: boundedInt(1, 1_000_000).default(DEFAULT_REACH.maxFolders),
  })
  .transform((w) => ({
    roots: w.roots,
    poll: w.poll,
    pollIntervalMs: ms(w.poll_interval),
    statusIntervalMs: ms(w.status_interval),
    checkpointIntervalMs: ms(w.checkpoint_interval),
    sweepIntervalMs: ms(w.sweep_interval),
    readSpacingMs: ms(w.read_spacing),
    settleAfterMs: ms(w.settle_after),
    reach: { follow: w.follow_symlinks, maxFiles: w.max_files, maxFolders: w.max_folders } satisfies ReachOptions,
  }));

const parse = z
  .strictObject({
    /** Lines longer than this are skipped and counted (bytes). */
    max_line_bytes: boundedInt(64, 256 * 1024 * 1024).default(1 << 20),
    /** Raw key -> series name, applied before the built-in aliases. */
    key_map: z.record(z.string(), z.string().min(1)).default({}),
    /** BAR-RAG debug logs: samples per training step (0: a pause in writing starts a new step). */
    debug_samples_per_step: boundedInt(0, 1_000_000).default(0),
    debug_step_gap: duration.default('5s'),
  })
  .transform((p) => ({
    parser: {
      keyMap: p.key_map,
      debugSamplesPerStep: p.debug_samples_per_step,
      debugStepGapMs: ms(p.debug_step_gap),
    } satisfies ParserOptions,
    tail: { maxLineBytes: p.max_line_bytes } satisfies TailOptions,
  }));

const stats = z
  .strictObject({
    window: boundedInt(2, 100_000).default(64),
    history: boundedInt(8, 1_000_000).default(256),
    ewma_half_life: z.number().positive().max(1_000_000).default(16),
    curve_buckets: boundedInt(8, 4096)
      .refine((n) => n % 2 === 0, { message: 'must be even' })
      .default(128),
    max_series: boundedInt(1, 100_000).default(256),
  })
  .transform((s): StatsOptions => ({
    window: s.window,
    history: Math.max(s.history, s.window),
    ewmaHalfLife: s.ewma_half_life,
    curveBuckets: s.curve_buckets,
    maxSeries: s.max_series,
  }));

const alerting = z
  .strictObject({
    /** A finding must hold this long before its alert fires. */
    for: duration.default('0s'),
    /** A firing alert resolves only after its finding has stopped holding this long. */
    keep_firing_for: duration.default('0s'),
    group_wait: duration.default('10s'),
    /** Wait before notifying changes to a group that was already notified. */
    group_interval: boundedDuration('0s').default('1m'),
    repeat_interval: boundedDuration('1m').default('4h'),
    resolve_notify: z.boolean().default(true),
  })
  .transform((a) => ({
    lifecycle: { forMs: ms(a.for), keepFiringForMs: ms(a.keep_firing_for) } satisfies LifecycleOptions,
    dispatch: {
      groupWaitMs: ms(a.group_wait),
      groupIntervalMs: ms(a.group_interval),
      repeatIntervalMs: ms(a.repeat_interval),
      resolveNotify: a.resolve_notify,
    } satisfies DispatchOptions,
  }));

/** `notify`: each channel's own settings (notifiers/<channel>/channel.ts), and the timeout they share. */
const notify = z.strictObject({
  ...NOTIFY_SHAPE,
  /** How long one send may take (connect, answer) before it counts as failed and is retried. */
  timeout: boundedDuration('100ms', '10m').default('10s'),
});

const summary = z.strictObject({
  cron: z.string().min(9).default('0 23 * * *'),
  timezone: z.string().min(1).default('UTC'),
  channels: z.array(z.enum(SUMMARY_CHANNELS as [ChannelId, ...ChannelId[]])).default(['email']),
});

const http = z
  .strictObject({
    /** The web page, its API, /healthz and /metrics; `off` for none. */
    listen: z
      .string()
      .regex(/^(off|(\[[0-9a-fA-F:]+\]|[\w.-]+):\d{1,5})$/, { message: 'must be host:port, e.g. 127.0.0.1:9464, or off' })
      .default('127.0.0.1:9464'),
    /** Must be true to listen on an address other than loopback (/metrics names runs and files). */
    expose: z.boolean().default(false),
    /** The address people reach the page at, when it is not the listen address (a proxy): links and the Host check use it. */
    external_url: z.url().optional(),
    /** A file holding the token that changes (silences) need when exposed (BARWATCH_HTTP_TOKEN also works); exposed without one, the page is read-only. */
    auth_token_file: z.string().min(1).optional(),
    /** Runs silent for longer than this drop out of /metrics' per-run series. */
    metrics_retention: boundedDuration('1m').default('6h'),
    /** At most this many runs in /metrics' per-run series (the most recently written). */
    metrics_max_runs: boundedInt(1, 100_000).default(500),
  })
  .transform((h) => ({
    /** As written: load.ts checks it against `expose` and makes it host and port. */
    listen: h.listen,
    expose: h.expose,
    ...(h.external_url !== undefined ? { externalUrl: h.external_url.replace(/\/+$/, '') } : {}),
    ...(h.auth_token_file !== undefined ? { authTokenFile: h.auth_token_file } : {}),
    metricsRetentionMs: ms(h.metrics_retention),
    metricsMaxRuns: h.metrics_max_runs,
  }));

const log = z.strictObject({
  level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('info'),
  /** json for journald and log shippers; pretty for a terminal; auto picks pretty on a TTY. */
  format: z.enum(['auto', 'json', 'pretty']).default('auto'),
});

/** `detectors.<id>`, built from each detector's own declaration (detectors/params.ts). */
const detectors = z.strictObject(Object.fromEntries(DETECTORS.map((d) => [d.id, detectorSchema(d).optional()])));

/**
 * `actions`: commands run when an alert fires (alerting/actions.ts). Off unless listed; each
 * names the detector (or `*`) and the least severity it acts on.
 */
const DETECTOR_IDS: readonly string[] = DETECTORS.map((d) => d.id);
const actions = z
  .array(
    z
      .strictObject({
        name: z
          .string()
          .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (at most 64)')
          .optional(),
        detector: z
          .string()
          .refine((d) => d === '*' || DETECTOR_IDS.includes(d), { message: `must be a detector id (${DETECTOR_IDS.join(', ')}) or *` }),
        severity: z.enum(['info', 'warning', 'critical']).default('warning'),
        /** The command's words (no shell; `{{run}}`, `{{detector}}`... filled in a word), or with shell: true one line for /bin/sh -c. */
        command: z.union([z.array(z.string().min(1)).min(1), z.string().min(1)]),
        shell: z.boolean().default(false),
        timeout: boundedDuration('1s', '1h').default('60s'),
        dry_run: z.boolean().default(false),
      })
      .superRefine((a, ctx) => {
        if (typeof a.command === 'string' && !a.shell)
          ctx.addIssue({
            code: 'custom',
            path: ['command'],
            message: 'is one line: give it as a list of words (run without a shell), or set shell: true',
          });
        if (Array.isArray(a.command) && a.shell)
          ctx.addIssue({ code: 'custom', path: ['command'], message: 'with shell: true, give the command as one line' });
      }),
  )
  .default([])
  .transform((list) =>
    list.map((a, i): ActionSpec => ({
      name: a.name ?? `action-${i + 1}`,
      detector: a.detector,
      severity: a.severity,
      command: a.command,
      shell: a.shell,
      timeoutMs: parseDuration(a.timeout)!,
      dryRun: a.dry_run,
    })),
  );

export const configSchema = z
  .strictObject({
    watch: watch.prefault({}),
    state_dir: z.string().min(1).default('./.barwatch'),
    parse: parse.prefault({}),
    stats: stats.prefault({}),
    alerting: alerting.prefault({}),
    notify: notify.prefault({}),
    summary: summary.prefault({}),
    http: http.prefault({}),
    log: log.prefault({}),
    detectors: detectors.prefault({}),
    actions,
  })
  .transform(({ state_dir, parse, ...rest }) => ({ ...rest, stateDir: state_dir, parser: parse.parser, tail: parse.tail }));

/** The config as the schema gives it: durations in ms, names as the code uses them; paths, secrets and the listen address still to resolve (load.ts). */
export type RawConfig = z.output<typeof configSchema>;
