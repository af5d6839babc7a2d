/**
 * The daemon (`barwatch watch`): builds the parts from the config and wires them together. The
 * parts do the work: the read path (pipeline/), the read queue, the state saver, the detector
 * engine, alerting and its channels, the HTTP endpoints and the nightly summary.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { FSWatcher } from 'chokidar';
import cron, { type ScheduledTask } from 'node-cron';
import { Alerting } from '../alerting/service.js';
import { isLoopback, type Config } from '../config/load.js';
import { DetectorEngine, type Transition } from '../detectors/engine.js';
import type { Finding } from '../detectors/types.js';
import { HealthServer, type HealthSnapshot } from '../http/server.js';
import { AlertLog } from '../notifiers/console.js';
import { buildNotifiers } from '../notifiers/index.js';
import type { Notifier } from '../notifiers/types.js';
import { classifyFile } from '../parsers/index.js';
import { Pipeline } from '../pipeline/pipeline.js';
import { findingSparkline } from '../report/text.js';
import { discover } from '../sources/discover.js';
import { placeFile } from '../sources/place.js';
import { startWatcher, type WatchEvent, type WatchRoot } from '../sources/watcher.js';
import { stateLayout, type StateLayout } from '../state/layout.js';
import { sendSummary, summaryOf } from '../summary/send.js';
import { FailureReport } from '../util/failures.js';
import type { Logger } from '../util/log.js';
import { healthSnapshot, statusLine } from './health.js';
import { ReadQueue } from './read-queue.js';
import { planReload } from './reload.js';
import { loadDaemonState, StateSaver } from './state.js';

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

export class Daemon {
  private pipeline: Pipeline | null = null;
  private watcher: FSWatcher | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private stopping = false;
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly layout: StateLayout;
  private readonly engine: DetectorEngine;
  private readonly queue: ReadQueue;
  private readonly saver: StateSaver;
  private readonly alertLog: AlertLog;
  private readonly alertLogFailure = new FailureReport();
  private alerting: Alerting | null = null;
  private alertTicking: Promise<void> = Promise.resolve();
  /** Alert transitions so far (part of what makes a save necessary). */
  private transitions = 0;
  private summaryTask: ScheduledTask | null = null;
  private health: HealthServer | null = null;
  private notifierList: Notifier[] = [];

  constructor(private opts: DaemonOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
    this.layout = stateLayout(opts.config.stateDir);
    this.engine = new DetectorEngine(opts.config.detectors);
    this.alertLog = new AlertLog(this.layout.alerts, opts.alertStream ?? process.stdout, this.now);
    this.queue = new ReadQueue({
      read: (file) => this.pipeline!.poll(file),
      gone: async (file) => {
        this.log.info({ file }, 'file removed; stopped following it');
        await this.pipeline!.untrack(file);
      },
      now: this.now,
    });
    this.saver = new StateSaver({
      file: this.layout.state,
      log: this.log,
      pieces: () => this.pipeline!.statePieces(this.alerting !== null ? { alerting: this.alerting.toJSON() } : {}),
      mark: () => {
        const t = this.pipeline!.totals();
        const o = this.alerting?.outbox;
        const sent = [...(o?.counters.sent.values() ?? [])].join(',');
        const failed = [...(o?.counters.failed.values() ?? [])].join(',');
        return `${t.files}|${t.lines}|${t.records}|${this.transitions}|${o?.depth ?? 0}|${sent}|${failed}`;
      },
    });
  }

  /** Findings that hold now. */
  findings(): Finding[] {
    return this.engine.findings();
  }

  /** The alerting stages (for tests and test-alert). */
  get alerter(): Alerting | null {
    return this.alerting;
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    await fsp.mkdir(config.stateDir, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
      this.log.warn({ stateDir: config.stateDir, code: err.code }, 'cannot create the state folder; state will not be saved');
    });
    const loaded = await loadDaemonState(this.layout.state, this.now());
    for (const p of loaded.problems) this.log.warn({ stateDir: config.stateDir }, p);
    if (loaded.state !== null) {
      const s = loaded.state;
      this.log.info({ files: Object.keys(s.files).length, runs: s.runs.length, savedAt: s.savedAt }, 'resuming from saved state');
    }
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
    await this.catchUp(roots);
    this.log.info(
      {
        roots: roots.map((r) => (r.only ? `${r.path} (${r.only.join(', ')})` : r.path)),
        poll: config.watch.poll,
        stateDir: config.stateDir,
      },
      'watching',
    );
    this.watcher = await this.startWatcher(roots);
    // A line written after its file was caught up on but before the watcher covered its folder
    // raised no event: one more look at every file now that the watcher is ready closes that gap.
    for (const file of this.pipeline.sources.keys()) this.queue.schedule(file);
    await this.queue.idle();
    await this.saver.save();
    this.every(config.watch.checkpointIntervalMs, () => (this.saver.due() ? this.saver.save() : undefined));
    this.every(config.watch.statusIntervalMs, () => this.status());
    this.every(this.opts.alertTickMs ?? 1000, () => this.alertTick());
    await this.serveHttp(config);
    this.scheduleSummary(config);
    void this.alertTick();
    this.every(this.opts.sweepIntervalMs ?? config.watch.sweepIntervalMs, () => this.sweep());
    this.status();
  }

  /**
   * Reads what is already there, then judges every run once with everything read: a backlog read
   * in any order (a selector round before the generator round it follows) must not raise
   * transient alerts. Files that appear meanwhile are picked up by the watcher.
   */
  private async catchUp(roots: WatchRoot[]): Promise<void> {
    const p = this.pipeline!;
    for (const r of roots) {
      const exists = await fsp.stat(r.path).then(
        () => true,
        () => false,
      );
      if (!exists) this.log.warn({ root: r.path }, 'watched root does not exist yet; waiting for it');
    }
    p.holdDetectors = true;
    for (const r of roots) {
      const only = r.only;
      const found = await discover([r.path], only === undefined ? undefined : (dir, name) => dir !== r.path || only.includes(name)).catch(
        () => null,
      );
      for (const f of found?.files ?? []) {
        if (f.file.startsWith(this.layout.dir + path.sep)) continue;
        p.track(f.file, f.kind, placeFile(f.file, f.kind));
        await p.drain(f.file);
      }
    }
    p.holdDetectors = false;
    for (const run of p.registry.all()) {
      const t = this.engine.evaluate(run, p.detectContext());
      if (t.length > 0) this.onTransitions(t);
    }
  }

  private startWatcher(roots: WatchRoot[]): Promise<FSWatcher> {
    const { watch } = this.opts.config;
    const errors = new FailureReport();
    return startWatcher(
      { roots, poll: watch.poll, pollIntervalMs: watch.pollIntervalMs, exclude: [this.layout.dir] },
      (event, file) => this.onEvent(event, file),
      (err) => {
        const e = err as NodeJS.ErrnoException;
        if (errors.failed(`${e.code}|${e.path}`, e.message)) this.log.warn({ code: e.code, path: e.path }, `watch error: ${e.message}`);
      },
    );
  }

  /** /healthz and /metrics; watching matters more than the endpoint, so a failure is logged and watching goes on. */
  private async serveHttp(config: Config): Promise<void> {
    if (config.http.listen === undefined) return;
    const { host, port } = config.http.listen;
    this.health = new HealthServer(() => this.snapshot());
    try {
      const at = await this.health.start(host, port);
      const where = `serving /healthz and /metrics on ${at.host}:${at.port}`;
      if (isLoopback(host)) this.log.info({ host: at.host, port: at.port }, where);
      else this.log.warn({ host: at.host, port: at.port }, `${where}, beyond this machine (http.expose is true)`);
    } catch (err) {
      this.health = null;
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      this.log.error(
        { host, port, code },
        `cannot serve /healthz and /metrics on ${host}:${port} (${code}); watching continues without them`,
      );
    }
  }

  private scheduleSummary(config: Config): void {
    if (!config.summary.channels.some((c) => config.notify[c] !== undefined)) return;
    this.summaryTask = cron.schedule(config.summary.cron, () => void this.sendSummary(), { timezone: config.summary.timezone });
    this.log.info(
      { cron: config.summary.cron, timezone: config.summary.timezone, channels: config.summary.channels },
      'nightly summary scheduled',
    );
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
    this.queue.schedule(file);
    this.queue.recheck(file);
  }

  /** Re-reads every followed file (a missed event costs at most one sweep), closes idle debug-log steps, runs time-based detectors. */
  private sweep(): void {
    const p = this.pipeline;
    if (p === null) return;
    const now = this.now();
    for (const [file, src] of p.sources) {
      if (src.parser.kind === 'lines' && src.parser.flush !== undefined && src.lastData !== null) {
        if (now - src.lastData > this.opts.config.parser.debugStepGapMs) {
          p.finish(file);
          src.lastData = null;
        }
      }
      this.queue.schedule(file);
    }
    for (const run of p.registry.all()) {
      const t = this.engine.evaluate(run, p.detectContext(), true);
      if (t.length > 0) this.onTransitions(t);
    }
  }

  private onTransitions(ts: Transition[]): void {
    this.transitions += ts.length;
    for (const t of ts) {
      const f = t.finding;
      const level = t.kind === 'resolved' || f.severity === 'info' ? 'info' : 'warn';
      const fields = { run: f.run, round: f.round, step: f.step, detector: f.detector, severity: f.severity, transition: t.kind };
      this.log[level](fields, `${t.kind}: ${f.detector}: ${f.message}`);
    }
    void this.alertTick();
    const err = this.alertLog.record(ts);
    if (err === null) {
      this.alertLogFailure.recovered('append');
      return;
    }
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    if (this.alertLogFailure.failed('append', code)) {
      this.log.error({ file: this.alertLog.file, code }, `cannot append to the alert log (${code}); alerts still go to the console`);
    }
  }

  private buildAlerting(config: Config): Alerting {
    this.notifierList = this.opts.notifiers ?? buildNotifiers(config);
    return new Alerting({
      layout: this.layout,
      lifecycle: { forMs: config.alerting.forMs, keepFiringForMs: config.alerting.keepFiringForMs },
      dispatch: {
        groupWaitMs: config.alerting.groupWaitMs,
        groupIntervalMs: config.alerting.groupIntervalMs,
        repeatIntervalMs: config.alerting.repeatIntervalMs,
        resolveNotify: config.alerting.resolveNotify,
      },
      notifiers: this.notifierList,
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

  /** Applies a new, already validated config without losing state or re-sending alerts (see reload.ts). */
  async reload(config: Config): Promise<void> {
    const { applied, needRestart } = planReload(this.opts.config, config, this.opts.singleRun === true);
    this.opts = { ...this.opts, config: applied };
    this.log.level = config.log.level;
    const t = this.engine.setParams(applied.detectors);
    if (t.length > 0) this.onTransitions(t);
    await this.alertTicking;
    const state = this.alerting?.toJSON();
    await this.alerting?.close();
    this.alerting = this.buildAlerting(applied);
    await this.alerting.init(state);
    const message =
      needRestart.length > 0
        ? `configuration reloaded; ${needRestart.join(', ')} take effect at the next restart`
        : 'configuration reloaded';
    this.log.info({ channels: this.alerting.channels, restartNeededFor: needRestart }, message);
    void this.alertTick();
  }

  /** What /healthz and /metrics report. */
  snapshot(): HealthSnapshot {
    return healthSnapshot({
      pipeline: this.pipeline!,
      alerting: this.alerting,
      findings: this.engine.findings(),
      oldestQueuedAt: this.queue.oldestQueuedAt(),
      saveError: this.saver.error,
      alertLogError: this.alertLogFailure.cause('append'),
      now: this.now(),
    });
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

  status(): void {
    if (this.pipeline === null) return;
    const [fields, message] = statusLine(this.pipeline.totals(), this.queue.size, this.alerting);
    this.log.info(fields, message);
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    await this.summaryTask?.stop();
    await this.health?.stop();
    await this.watcher?.close();
    await this.queue.stop();
    await this.alertTick();
    await this.saver.save(true);
    await this.alerting?.close();
    await this.pipeline?.close();
    this.log.info('stopped; state saved');
  }
}
