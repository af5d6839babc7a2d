/**
 * The daemon: builds the read path from the config, follows the watched roots, saves its state
 * periodically and on stop, and logs a one-line status. Detectors and alerting plug in here.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { FSWatcher } from 'chokidar';
import { isLoopback, type Config } from './config/load.js';
import type { Logger } from './log.js';
import { AlertLog } from './alerting/console.js';
import { Alerting } from './alerting/service.js';
import { buildNotifiers } from './notifiers/index.js';
import type { Notifier } from './notifiers/types.js';
import { findingSparkline } from './report/text.js';
import cron, { type ScheduledTask } from 'node-cron';
import { sendSummary, summaryOf } from './summary/send.js';
import { HealthServer, type HealthSnapshot } from './http/server.js';
import { DetectorEngine, type Transition } from './detectors/engine.js';
import { classifyFile } from './parsers/index.js';
import { Pipeline } from './pipeline.js';
import { loadState, writeAtomic } from './sources/checkpoint.js';
import { placeFile } from './sources/place.js';
import { discover } from './sources/discover.js';
import { startWatcher, type WatchEvent, type WatchRoot } from './sources/watcher.js';

/** Folders of a run that `barwatch watch` follows when started in the run with no config. */
export const DEFAULT_RUN_FOLDERS = ['outputs', 'configs', 'logs', 'debug_logs'] as const;

export interface DaemonOptions {
  config: Config;
  log: Logger;
  now?: () => number;
  /** Watch the single run in `config.watch.roots[0]`: only its DEFAULT_RUN_FOLDERS. */
  singleRun?: boolean;
  /** Re-check every followed file this often, in case a file event was missed; time-based detectors run then too. */
  sweepIntervalMs?: number;
  /** Where console alerts go (stdout). */
  alertStream?: NodeJS.WritableStream;
  /** Channels; by default built from the config. */
  notifiers?: Notifier[];
  /** How often alerts are advanced and the outbox pumped. */
  alertTickMs?: number;
}

export const STATE_FILE = 'state.json';
/** Longer than chokidar's change-event throttle (50 ms), and than the gap between a steady writer's appends (100 ms at 10 Hz), so steady writers cost no extra reads; see Daemon.recheck. */
const RECHECK_MS = 150;
/**
 * A timed save waits at least this many times as long as the last save took, so saving the state
 * costs at most about 2% of the time however many runs it holds (200 busy runs: a 28 MB state).
 */
const SAVE_SPACING = 50;

export class Daemon {
  private pipeline: Pipeline | null = null;
  private watcher: FSWatcher | null = null;
  private readonly queue = new Set<string>();
  private working: Promise<void> | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private checkpointError: string | null = null;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly engine: DetectorEngine;
  private readonly alerts: AlertLog;
  private alertError: string | null = null;
  private alerting: Alerting | null = null;
  private alertTicking: Promise<void> = Promise.resolve();
  private saving: Promise<void> = Promise.resolve();
  /** What the last save held (counts), to skip saves that would write the same state. */
  private savedMark = '';
  /** How long the last save took and when it ended (performance.now() ms): timed saves are spaced by it. */
  private lastSave = { ms: 0, endedAt: -Infinity };
  /** Alert transitions so far (part of savedMark). */
  private transitions = 0;
  private summaryTask: ScheduledTask | null = null;
  private health: HealthServer | null = null;
  private readonly rechecks = new Map<string, NodeJS.Timeout>();
  /** When each queued file was queued (ms): the ingest lag. */
  private readonly queuedAt = new Map<string, number>();
  private notifierList: Notifier[] = [];

  constructor(private opts: DaemonOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
    this.engine = new DetectorEngine(opts.config.detectors);
    this.alerts = new AlertLog(opts.config.stateDir, opts.alertStream ?? process.stdout, this.now);
  }

  /** Findings that hold now. */
  findings(): ReturnType<DetectorEngine['findings']> {
    return this.engine.findings();
  }

  private onTransitions(ts: Transition[]): void {
    this.transitions += ts.length;
    for (const t of ts) {
      const f = t.finding;
      const level = t.kind === 'resolved' ? 'info' : f.severity === 'info' ? 'info' : 'warn';
      this.log[level](
        { run: f.run, round: f.round, step: f.step, detector: f.detector, severity: f.severity, transition: t.kind },
        `${t.kind}: ${f.detector}: ${f.message}`,
      );
    }
    void this.alertTick();
    const err = this.alerts.record(ts);
    const code = err === null ? null : ((err as NodeJS.ErrnoException).code ?? 'error');
    if (code !== this.alertError) {
      if (code !== null)
        this.log.error({ file: this.alerts.file, code }, `cannot append to the alert log (${code}); alerts still go to the console`);
      this.alertError = code;
    }
  }

  get statePath(): string {
    return path.join(this.opts.config.stateDir, STATE_FILE);
  }

  /** The read path (for tests and the status line); null before start. */
  get reader(): Pipeline | null {
    return this.pipeline;
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    await fsp.mkdir(config.stateDir, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      this.log.warn({ stateDir: config.stateDir, code: err.code }, 'cannot create the state folder; state will not be saved');
    });
    const loaded = await loadState(this.statePath, this.now());
    for (const p of loaded.problems) this.log.warn({ stateDir: config.stateDir }, p);
    if (loaded.state !== null)
      this.log.info(
        { files: Object.keys(loaded.state.files).length, runs: loaded.state.runs.length, savedAt: loaded.state.savedAt },
        'resuming from saved state',
      );
    this.alerting = this.buildAlerting(config);
    await this.alerting.init(loaded.state?.alerting);
    if (this.alerting.channels.length > 0) this.log.info({ channels: this.alerting.channels }, 'notification channels');
    this.pipeline = new Pipeline(
      {
        parser: config.parser,
        tail: config.tail,
        stats: config.stats,
        now: this.now,
        log: this.log,
        engine: this.engine,
        live: true,
        onTransitions: (t) => this.onTransitions(t),
      },
      loaded.state,
    );

    const roots: WatchRoot[] = config.watch.roots.map((p, i) =>
      this.opts.singleRun === true && i === 0 ? { path: p, only: DEFAULT_RUN_FOLDERS } : { path: p },
    );
    for (const r of roots) {
      const exists = await fsp.stat(r.path).then(
        () => true,
        () => false,
      );
      if (!exists) this.log.warn({ root: r.path }, 'watched root does not exist yet; waiting for it');
    }
    // Catch up on what is already there, then judge every run once with everything read: a
    // backlog read in any order (a selector round before the generator round it follows) must
    // not raise transient alerts. Files that appear meanwhile are picked up by the watcher.
    this.pipeline.holdDetectors = true;
    for (const r of roots) {
      const found = await discover(
        [r.path],
        r.only === undefined ? undefined : (dir, name) => dir !== r.path || r.only!.includes(name),
      ).catch(() => null);
      for (const f of found?.files ?? []) {
        if (f.file.startsWith(config.stateDir + path.sep)) continue;
        this.pipeline.track(f.file, f.kind, placeFile(f.file, f.kind));
        await this.pipeline.drain(f.file);
      }
    }
    this.pipeline.holdDetectors = false;
    for (const run of this.pipeline.registry.all()) {
      const t = this.engine.evaluate(run, this.pipeline.detectContext());
      if (t.length > 0) this.onTransitions(t);
    }
    this.log.info(
      {
        roots: roots.map((r) => (r.only ? `${r.path} (${r.only.join(', ')})` : r.path)),
        poll: config.watch.poll,
        stateDir: config.stateDir,
      },
      'watching',
    );
    const reportedErrors = new Set<string>();
    this.watcher = await startWatcher(
      { roots, poll: config.watch.poll, pollIntervalMs: config.watch.pollIntervalMs, exclude: [config.stateDir] },
      (event, file) => this.onEvent(event, file),
      (err) => {
        const e = err as NodeJS.ErrnoException;
        const key = `${e.code}|${e.path}`;
        if (reportedErrors.has(key)) return;
        reportedErrors.add(key);
        this.log.warn({ code: e.code, path: e.path }, `watch error: ${e.message}`);
      },
    );
    // A line written after its file was caught up on but before the watcher covered its folder
    // raised no event: one more look at every file now that the watcher is ready closes that gap.
    for (const file of this.pipeline.sources.keys()) this.schedule(file);
    await this.idle();
    await this.checkpoint();
    this.every(config.watch.checkpointIntervalMs, () => {
      if (performance.now() - this.lastSave.endedAt >= SAVE_SPACING * this.lastSave.ms) void this.checkpoint();
    });
    this.every(config.watch.statusIntervalMs, () => this.status());
    this.every(this.opts.alertTickMs ?? 1000, () => this.alertTick());
    if (config.http.listen !== undefined) {
      const { host, port } = config.http.listen;
      this.health = new HealthServer(() => this.snapshot());
      try {
        const at = await this.health.start(host, port);
        if (isLoopback(host)) this.log.info({ host: at.host, port: at.port }, `serving /healthz and /metrics on ${at.host}:${at.port}`);
        else
          this.log.warn(
            { host: at.host, port: at.port },
            `serving /healthz and /metrics on ${at.host}:${at.port}, beyond this machine (http.expose is true)`,
          );
      } catch (err) {
        // Watching matters more than the endpoint: keep going, say so.
        this.health = null;
        this.log.error(
          { host, port, code: (err as NodeJS.ErrnoException).code },
          `cannot serve /healthz and /metrics on ${host}:${port} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); watching continues without them`,
        );
      }
    }
    if (config.summary.channels.some((c) => config.notify[c] !== undefined)) {
      this.summaryTask = cron.schedule(config.summary.cron, () => void this.sendSummary(), { timezone: config.summary.timezone });
      this.log.info(
        { cron: config.summary.cron, timezone: config.summary.timezone, channels: config.summary.channels },
        'nightly summary scheduled',
      );
    }
    void this.alertTick();
    this.every(this.opts.sweepIntervalMs ?? config.watch.sweepIntervalMs, () => this.sweep());
    this.status();
  }

  private every(ms: number, fn: () => unknown): void {
    const t = setInterval(() => void fn(), ms);
    t.unref();
    this.timers.push(t);
  }

  private onEvent(event: WatchEvent, file: string): void {
    const p = this.pipeline;
    if (p === null || this.stopping) return;
    if (!p.has(file)) {
      if (event === 'unlink') return;
      const kind = classifyFile(file);
      if (kind === null) return;
      p.track(file, kind, placeFile(file, kind));
    }
    this.schedule(file);
    this.recheck(file);
  }

  /**
   * chokidar drops a file's change events for 50 ms after one it emits (leading edge only), so a
   * write inside that window raises nothing. One more read RECHECK_MS after a file's latest event
   * picks such a write up without waiting for the sweep.
   */
  private recheck(file: string): void {
    clearTimeout(this.rechecks.get(file));
    const t = setTimeout(() => {
      this.rechecks.delete(file);
      if (!this.stopping) this.schedule(file);
    }, RECHECK_MS);
    t.unref();
    this.rechecks.set(file, t);
  }

  /** Queues a file for reading; one reader works through the queue. */
  schedule(file: string): void {
    this.queue.add(file);
    if (!this.queuedAt.has(file)) this.queuedAt.set(file, this.now());
    this.working ??= this.work().finally(() => {
      this.working = null;
    });
  }

  private async work(): Promise<void> {
    const p = this.pipeline!;
    while (this.queue.size > 0) {
      const file = this.queue.values().next().value as string;
      this.queue.delete(file);
      const out = await p.poll(file);
      if (out !== 'more') this.queuedAt.delete(file);
      if (out === 'more') this.queue.add(file);
      else if (out === 'gone') {
        this.log.info({ file }, 'file removed; stopped following it');
        await p.untrack(file);
      }
    }
  }

  /** Resolves when every queued read is done. */
  async idle(): Promise<void> {
    while (this.working !== null) await this.working;
  }

  /** Re-reads every followed file (a missed event costs at most one sweep) and closes idle debug-log steps. */
  private sweep(): void {
    const p = this.pipeline;
    if (p === null) return;
    const now = this.now();
    for (const [file, src] of p.sources) {
      if (
        src.parser.kind === 'lines' &&
        src.parser.flush !== undefined &&
        src.lastData !== null &&
        now - src.lastData > this.opts.config.parser.debugStepGapMs
      ) {
        p.finish(file);
        src.lastData = null;
      }
      this.schedule(file);
    }
    for (const run of p.registry.all()) {
      const t = this.engine.evaluate(run, p.detectContext(), true);
      if (t.length > 0) this.onTransitions(t);
    }
  }

  private buildAlerting(config: Config): Alerting {
    return new Alerting({
      stateDir: config.stateDir,
      lifecycle: { forMs: config.alerting.forMs, keepFiringForMs: config.alerting.keepFiringForMs },
      dispatch: {
        groupWaitMs: config.alerting.groupWaitMs,
        groupIntervalMs: config.alerting.groupIntervalMs,
        repeatIntervalMs: config.alerting.repeatIntervalMs,
        resolveNotify: config.alerting.resolveNotify,
      },
      notifiers: (this.notifierList = this.opts.notifiers ?? buildNotifiers(config)),
      log: this.log,
      now: this.now,
      sparkline: (a) => {
        const run = this.pipeline?.registry.get(a.finding.run);
        return run === undefined ? null : findingSparkline(run, a.finding);
      },
    });
  }

  /** Advances alerts and sends what is due; one tick at a time. */
  alertTick(): Promise<void> {
    const a = this.alerting;
    if (a === null) return Promise.resolve();
    this.alertTicking = this.alertTicking
      .then(() => a.tick(this.engine.findings()))
      .catch((err: unknown) => {
        this.log.error({ err: (err as Error).message }, 'alerting tick failed');
      });
    return this.alertTicking;
  }

  /**
   * Applies a new, already validated config without losing state or re-sending alerts: detector
   * parameters, alerting options and channels, and the log level. Watched roots, state_dir and
   * http.listen need a restart (said in the log).
   */
  async reload(config: Config): Promise<void> {
    const old = this.opts.config;
    const needRestart: string[] = [];
    if (JSON.stringify(old.watch.roots) !== JSON.stringify(config.watch.roots) && this.opts.singleRun !== true)
      needRestart.push('watch.roots');
    if (old.stateDir !== config.stateDir) needRestart.push('state_dir');
    if (JSON.stringify(old.http) !== JSON.stringify(config.http)) needRestart.push('http.listen');
    // Keep what cannot change live as it was.
    const applied: Config = { ...config, watch: { ...config.watch, roots: old.watch.roots }, stateDir: old.stateDir, http: old.http };
    this.opts = { ...this.opts, config: applied };
    this.log.level = config.log.level;
    const t = this.engine.setParams(applied.detectors);
    if (t.length > 0) this.onTransitions(t);
    await this.alertTicking;
    const state = this.alerting?.toJSON();
    await this.alerting?.close();
    this.alerting = this.buildAlerting(applied);
    await this.alerting.init(state);
    this.log.info(
      { channels: this.alerting.channels, restartNeededFor: needRestart },
      needRestart.length > 0
        ? `configuration reloaded; ${needRestart.join(', ')} take effect at the next restart`
        : 'configuration reloaded',
    );
    void this.alertTick();
  }

  /** What /healthz and /metrics report. */
  snapshot(): HealthSnapshot {
    const p = this.pipeline!;
    const t = p.totals();
    const now = this.now();
    let oldest = now;
    for (const at of this.queuedAt.values()) oldest = Math.min(oldest, at);
    const malformed = new Map<string, number>();
    for (const [f, s] of p.sources) if (s.counters.malformed > 0) malformed.set(f, s.counters.malformed);
    const failing = [...p.failures()].map(([f, code]) => `${f}: ${code}`)[0] ?? null;
    return {
      runs: t.runs,
      files: t.files,
      lines: t.lines,
      records: t.records,
      malformedByFile: malformed,
      ingestLagSeconds: (now - oldest) / 1000,
      outboxDepth: this.alerting?.outbox.depth ?? 0,
      activeAlerts: this.engine.findings().map((f) => ({ detector: f.detector, severity: f.severity })),
      sent: this.alerting?.outbox.counters.sent ?? new Map(),
      failed: this.alerting?.outbox.counters.failed ?? new Map(),
      lastError:
        this.checkpointError !== null
          ? `cannot save state (${this.checkpointError})`
          : this.alertError !== null
            ? `cannot write alerts.jsonl (${this.alertError})`
            : failing,
    };
  }

  /** Builds the summary from the live state and sends it to summary.channels. */
  async sendSummary(): Promise<void> {
    const p = this.pipeline;
    if (p === null) return;
    const s = summaryOf(this.opts.config, p.registry.all(), this.now());
    for (const r of await sendSummary(this.opts.config, this.notifierList, s)) {
      if (r.ok) this.log.info({ notifier: r.channel }, `summary sent to ${r.channel}`);
      else this.log.warn({ notifier: r.channel }, `summary not sent to ${r.channel}: ${r.error}`);
    }
  }

  /** The alerting stages (for tests and test-alert). */
  get alerter(): Alerting | null {
    return this.alerting;
  }

  status(): void {
    const p = this.pipeline;
    if (p === null) return;
    const t = p.totals();
    this.log.info(
      { ...t, queued: this.queue.size },
      `status: ${t.runs} run(s), ${t.files} file(s), ${t.records} record(s) from ${t.lines} line(s), ${t.malformed} malformed, ${t.longLines} over-long`,
    );
  }

  /** Saves offsets and statistics together, one save at a time. A failure is logged once until it changes. */
  checkpoint(): Promise<void> {
    this.saving = this.saving.then(() => this.saveOnce());
    return this.saving;
  }

  private async saveOnce(): Promise<void> {
    const p = this.pipeline;
    if (p === null) return;
    // Nothing read, no alert moved, nothing sent since the last save: the saved state is current.
    const t = p.totals();
    const o = this.alerting?.outbox;
    const mark = `${t.files}|${t.lines}|${t.records}|${this.transitions}|${o?.depth ?? 0}|${[...(o?.counters.sent.values() ?? [])].join(',')}|${[...(o?.counters.failed.values() ?? [])].join(',')}`;
    if (mark === this.savedMark && this.checkpointError === null && !this.stopping) return;
    const start = performance.now();
    try {
      await writeAtomic(this.statePath, p.statePieces(this.alerting !== null ? { alerting: this.alerting.toJSON() } : {}));
      this.savedMark = mark;
      const end = performance.now();
      this.lastSave = { ms: end - start, endedAt: end };
      if (this.checkpointError !== null) {
        this.log.info({ stateDir: this.opts.config.stateDir }, 'state saved again');
        this.checkpointError = null;
      }
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (this.checkpointError !== code) {
        this.checkpointError = code;
        this.log.error(
          { stateDir: this.opts.config.stateDir, code },
          `cannot save state (${code}); a restart will re-read the logs from the last saved point`,
        );
      }
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    for (const t of this.rechecks.values()) clearTimeout(t);
    await this.summaryTask?.stop();
    await this.health?.stop();
    await this.watcher?.close();
    this.queue.clear();
    await this.idle();
    await this.alertTick();
    await this.checkpoint();
    await this.alerting?.close();
    await this.pipeline?.close();
    this.log.info('stopped; state saved');
  }
}
