/**
 * The daemon (`barwatch watch`): builds the parts from the config and wires them together. The
 * parts do the work: the read path (pipeline/), the read queue, the state saver, the detector
 * engine, alerting and its channels, the HTTP endpoints and the nightly summary.
 *
 * It is built, then run: `Daemon.open` takes the state folder and builds every part from the saved
 * state (nothing is read, served or sent yet); `run` serves the page, reads the backlog, then
 * follows the roots. What only exists while it runs (the page's server, the watcher, the nightly
 * task) belongs to its phase, not to fields that wait to be filled.
 */
import { promises as fsp } from 'node:fs';
import type { ScheduledTask } from 'node-cron';
import { Alerting } from '../alerting/service.js';
import { channelCommon, type Config } from '../config/load.js';
import { DetectorEngine, type Transition } from '../detectors/engine.js';
import type { Finding } from '../detectors/types.js';
import { EventHub } from '../http/events.js';
import { connectionCaps } from '../http/limits.js';
import type { HealthSnapshot } from '../http/metrics.js';
import type { WebSource } from '../http/source.js';
import { AlertLog } from '../notifiers/console.js';
import { buildNotifiers } from '../notifiers/index.js';
import type { Notifier } from '../notifiers/types.js';
import { classifyFile } from '../parsers/index.js';
import { Pipeline } from '../pipeline/pipeline.js';
import { findingSparkline } from '../report/text.js';
import { placeFile } from '../sources/place.js';
import { Reach } from '../sources/reach.js';
import type { Unwatched } from '../sources/tree-watcher.js';
import type { WatchEvent, WatchRoot } from '../sources/watcher.js';
import { followFor, type Follow, type Watching } from '../sources/follow.js';
import { stateLayout, type StateLayout } from '../state/layout.js';
import { FailureReport } from '../util/failures.js';
import { forPeople, type Logger } from '../util/log.js';
import { catchUp, filesUnder } from './catch-up.js';
import { healthSnapshot, limitRemedy, limitText, statusLine } from './health.js';
import { serveWeb, type Serving } from './web.js';
import { scheduleNightly, sendNightly } from './nightly.js';
import { TransitionRecord } from './transitions.js';
import { ReadQueue } from './read-queue.js';
import { planReload } from './reload.js';
import { lockState, openState, StateSaver, type DaemonState } from './state.js';
import type { StateLock } from '../state/lock.js';

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

/** Where a daemon is in its life; the parts that only exist while it runs belong to their phase. */
type Phase =
  | { name: 'opened' }
  /** Reading the backlog (see catchUp): the page answers, /healthz says so. */
  | { name: 'catching-up'; web: Serving | null }
  | { name: 'following'; web: Serving | null; watcher: Watching; summary: ScheduledTask | null }
  | { name: 'stopped' };

export class Daemon {
  private phase: Phase = { name: 'opened' };
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly now: () => number;
  private readonly log: Logger;
  private readonly layout: StateLayout;
  private readonly lock: StateLock | null;
  private readonly roots: WatchRoot[];
  private readonly reach: Reach;
  private readonly way: Follow;
  private readonly engine: DetectorEngine;
  private readonly pipeline: Pipeline;
  private readonly queue: ReadQueue;
  private readonly saver: StateSaver;
  private readonly record: TransitionRecord;
  /** Rebuilt by a reload (its channels may change), its state carried over. */
  private alerting: Alerting;
  private notifierList: Notifier[];
  private alertTicking: Promise<void> = Promise.resolve();
  /** Finding transitions so far (part of what makes a save necessary). */
  private transitions = 0;
  /** The HTTP server's share of the descriptors (see http/limits.ts). */
  private readonly caps = connectionCaps();
  /** What changed, for open web pages. */
  readonly events = new EventHub(this.caps.streams);
  /** The alert book's revision after the last tick: a change is news for open pages. */
  private alertsSeen = -1;
  /** A walk of the roots under way (see lookForMissed). */
  private looking: Promise<void> | null = null;
  /** Per run: the records it had read at a sweep, and since when it has had that many. */
  private readonly readAtSweep = new Map<string, { read: number; since: number }>();
  /** Per run: the records it had read when it was last judged decisively (a catch-up, a settle). */
  private readonly settledAt = new Map<string, number>();

  /**
   * Takes the state folder (StateDirInUse when another daemon holds it), reads the saved state and
   * builds the read path and alerting from it. Nothing is read, served or sent until `run`.
   */
  static async open(opts: DaemonOptions): Promise<Daemon> {
    const now = opts.now ?? Date.now;
    const layout = stateLayout(opts.config.stateDir);
    const lock = lockState(layout, opts.log);
    try {
      const loaded = await openState(layout, now(), opts.log);
      const daemon = new Daemon(opts, layout, lock, loaded);
      await daemon.alerting.init(loaded?.alerting);
      const { channels } = daemon.alerting;
      if (channels.length > 0) opts.log.info({ channels }, 'notification channels');
      return daemon;
    } catch (err) {
      lock?.release();
      throw err;
    }
  }

  private constructor(
    private opts: DaemonOptions,
    layout: StateLayout,
    lock: StateLock | null,
    loaded: DaemonState | null,
  ) {
    const { config } = opts;
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
    this.layout = layout;
    this.lock = lock;
    this.roots = config.watch.roots.map((p, i) =>
      opts.singleRun === true && i === 0 ? { path: p, only: DEFAULT_RUN_FOLDERS } : { path: p },
    );
    this.reach = new Reach(
      this.roots.map((r) => r.path),
      [layout.dir],
      config.watch.reach,
    );
    this.way = followFor(config.watch.poll);
    this.engine = new DetectorEngine(config.detectors);
    this.notifierList = opts.notifiers ?? buildNotifiers(config.notify, channelCommon(config));
    this.alerting = this.buildAlerting(config);
    const { roots, reach } = this;
    this.pipeline = new Pipeline(
      {
        parser: config.parser,
        // Local folders are read with synchronous calls, and the folder watcher's events spare the
        // stat of a path before each read; polled ones (NFS) are not (sources/tailer.ts).
        tail: { ...config.tail, sync: this.way.sync, trustEvents: this.way.trustEvents },
        stats: config.stats,
        now: this.now,
        log: this.log,
        engine: this.engine,
        live: true,
        onTransitions: (t) => this.onTransitions(t),
        findRunFiles: (run) => filesUnder(run, roots, reach),
        onRead: (run) => this.events.run(run),
      },
      loaded,
    );
    this.record = new TransitionRecord(
      new AlertLog(this.layout.alerts, opts.alertStream ?? (forPeople(opts.config.log) ? process.stdout : null), this.now),
      this.log,
      forPeople(opts.config.log),
    );
    this.queue = new ReadQueue({
      read: (file) => this.pipeline.read(file),
      gone: async (file) => {
        this.log.info({ file }, 'file removed; stopped following it');
        await this.pipeline.untrack(file);
        // A new file may have taken the name while the old one was closed (a rotation read between
        // the rename and the creation): its events came while the old one was still followed.
        const st = await fsp.stat(file).catch(() => null);
        if (st?.isFile() === true) this.onEvent('add', file);
      },
      now: this.now,
      spacingMs: opts.config.watch.readSpacingMs,
    });
    this.saver = new StateSaver({
      file: this.layout.state,
      log: this.log,
      pieces: (sink) => this.pipeline.statePieces(sink, { alerting: this.alerting.toJSON() }),
      mark: () => {
        const t = this.pipeline.totals();
        const o = this.alerting.outbox;
        return [t.files, t.lines, t.records, this.transitions, o.depth, total(o.counters.sent), total(o.counters.failed)];
      },
    });
  }

  /** Findings that hold now. */
  findings(): Finding[] {
    return this.engine.findings();
  }

  /** Whether a run has been judged with everything it has read (quiet for watch.settle_after, or caught up). */
  settled(runId: string): boolean {
    const run = this.pipeline.registry.get(runId);
    return run !== undefined && this.settledAt.get(runId) === run.recordsRead();
  }

  /** The alerting stages (the demo reads its channels). */
  get alerter(): Alerting {
    return this.alerting;
  }

  /** Serves the page, reads the backlog, then follows the roots until `stop`. */
  async run(): Promise<void> {
    if (this.phase.name !== 'opened') throw new Error(`the daemon is ${this.phase.name}; it runs once`);
    const { config } = this.opts;
    const { pipeline, roots, reach } = this;
    // The page, /healthz and /metrics answer during the catch-up (a weekend's backlog takes minutes).
    const web = await serveWeb(config, this.webSource(), this.events, () => this.snapshot(), this.log, this.caps);
    this.phase = { name: 'catching-up', web };
    await catchUp(pipeline, this.engine, roots, reach, this.log, (t) => this.onTransitions(t));
    // A stop during the catch-up closed the server already; nothing more starts.
    if (this.stopped()) return;
    for (const run of pipeline.registry.all()) this.settledAt.set(run.id, run.recordsRead());
    this.log.info(
      {
        roots: roots.map((r) => (r.only ? `${r.path} (${r.only.join(', ')})` : r.path)),
        poll: config.watch.poll,
        stateDir: config.stateDir,
      },
      'watching',
    );
    const watcher = await this.startWatcher();
    if (this.stopped()) {
      await watcher.close();
      return;
    }
    this.phase = { name: 'following', web, watcher, summary: scheduleNightly(config, () => this.sendSummary(), this.log) };
    // A line written after its file was caught up on but before the watcher covered its folder
    // raised no event: one more look at every file now that the watcher is ready closes that gap.
    for (const file of pipeline.sources.keys()) this.queue.schedule(file);
    await this.queue.idle();
    if (this.stopped()) return;
    await this.saver.save();
    if (this.stopped()) return;
    this.every(config.watch.checkpointIntervalMs, () => (this.saver.due() ? this.saver.save() : undefined));
    this.every(config.watch.statusIntervalMs, () => this.status());
    this.every(this.opts.alertTickMs ?? 1000, () => this.alertTick());
    void this.alertTick();
    this.every(this.opts.sweepIntervalMs ?? config.watch.sweepIntervalMs, () => this.sweep());
    this.status();
  }

  /** Whether `stop` was called (the run's steps check it after each wait). */
  private stopped(): boolean {
    return this.phase.name === 'stopped';
  }

  private startWatcher(): Promise<Watching> {
    const { watch } = this.opts.config;
    const errors = new FailureReport();
    const options = {
      roots: this.roots,
      poll: watch.poll,
      pollIntervalMs: watch.pollIntervalMs,
      exclude: [this.layout.dir],
      reach: this.reach,
    };
    const onEvent = (event: WatchEvent, file: string): void => this.onEvent(event, file);
    const onError = (err: Error): void => {
      const e = err as NodeJS.ErrnoException;
      if (errors.failed(`${e.code}|${e.path}`, e.message)) this.log.warn({ code: e.code, path: e.path }, `watch error: ${e.message}`);
    };
    return this.way.start(options, onEvent, onError, (u) => this.onLimit(u));
  }

  /** Folders a limit of the machine keeps from being watched: said once when it starts, and when it ends. */
  private onLimit(u: Unwatched): void {
    if (u.folders === 0) {
      this.log.info('every folder is watched again');
      return;
    }
    this.log.warn({ code: u.code, folders: u.folders }, `${limitText(u)}; ${limitRemedy(u.code)}`);
  }

  private every(ms: number, fn: () => unknown): void {
    const t = setInterval(() => void fn(), ms);
    t.unref();
    this.timers.push(t);
  }

  private onEvent(event: WatchEvent, reported: string): void {
    const p = this.pipeline;
    if (this.stopped()) return;
    const src = p.sources.get(reported);
    // The pipeline's own string for the path from here on: the maps of the pipeline and the read
    // queue, keyed by it, find it by identity instead of comparing some 80 characters in each.
    const file = src?.file ?? reported;
    if (event === 'renamed') src?.suspectPath();
    if (src === undefined) {
      if (event === 'unlink') return;
      const kind = classifyFile(file);
      if (kind === null) return;
      p.track(file, kind, placeFile(file, kind));
    }
    p.changed(file);
    this.queue.schedule(file);
    // chokidar drops a file's change events for 50 ms after one it emits: one more read a little
    // later. The folder watcher reports every inotify event; an append after a read raises its own.
    if (this.way.chokidar) this.queue.recheck(file);
  }

  /** Re-reads every followed file (a missed event costs at most one sweep), closes idle debug-log steps, runs time-based detectors. */
  private sweep(): void {
    const p = this.pipeline;
    const now = this.now();
    p.tick(this.opts.config.parser.debugStepGapMs);
    for (const [file, src] of p.sources) {
      // A missed write or rename costs at most one sweep: every path is looked at again, with one
      // stat where that shows the file as it was read (its read would find nothing).
      if (p.unchangedOnDisk(src)) continue;
      src.suspectPath();
      p.changed(file);
      this.queue.schedule(file);
    }
    for (const run of p.registry.all()) {
      const t = this.engine.evaluate(run, p.detectContext(), true);
      // A run quiet for settle_after is judged once with everything read, decisively, as analyze
      // judges a finished run.
      const read = run.recordsRead();
      const seen = this.readAtSweep.get(run.id);
      if (seen === undefined || seen.read !== read) this.readAtSweep.set(run.id, { read, since: now });
      else if (now - seen.since >= this.opts.config.watch.settleAfterMs && this.settledAt.get(run.id) !== read) {
        const quiet = this.engine.evaluate(run, p.detectContext());
        this.settledAt.set(run.id, read);
        // Said, because a finding that first holds here is placed at the step the run paused at,
        // which a judgement on the records' schedule (analyze's) may not have looked at.
        const held = quiet.flatMap((x) =>
          x.kind === 'held' ? [{ detector: x.finding.detector, round: x.finding.round, step: x.finding.step }] : [],
        );
        this.log.debug({ run: run.id, records: read, held }, 'a quiet run judged with everything read');
        t.push(...quiet);
      }
      if (t.length > 0) this.onTransitions(t);
    }
    // The folder watcher looks for roots it waits for (and lists a tenth of the folders again at
    // each sweep, every folder once in ten, against a lost inotify event); chokidar's missed files
    // are found by a walk.
    const w = this.phase.name === 'following' ? this.phase.watcher : null;
    this.looking ??= (w?.rescan !== undefined ? w.rescan() : this.lookForMissed()).finally(() => (this.looking = null));
  }

  /**
   * Walks the roots for files the watcher did not report: chokidar can miss a file in a folder
   * created just before it (a burst of new round folders), and without this such a file would
   * never be read. Costs a directory walk per sweep.
   */
  private async lookForMissed(): Promise<void> {
    const p = this.pipeline;
    for (const root of this.roots) {
      for (const f of await filesUnder(root.path, this.roots, this.reach)) {
        if (p.has(f.file) || this.stopped()) continue;
        this.log.info({ file: f.file }, 'found a file the watcher did not report; following it');
        p.track(f.file, f.kind, f.place);
        this.queue.schedule(f.file);
      }
    }
  }

  private onTransitions(ts: Transition[]): void {
    this.transitions += ts.length;
    this.record.record(ts);
    this.events.alerts();
    void this.alertTick();
  }

  /** The page's address, once it is served (null when http.listen is off or the port was taken). */
  get url(): string | null {
    const p = this.phase;
    return p.name === 'catching-up' || p.name === 'following' ? (p.web?.url ?? null) : null;
  }

  private webSource(): WebSource {
    return {
      now: this.now,
      runs: () => this.pipeline.registry.all(),
      run: (id) => this.pipeline.registry.get(id),
      findings: () => this.engine.findings(),
      alerting: () => this.alerting,
      silences: () => this.alerting.silences,
      silencesChanged: () => {
        this.events.silences();
        void this.alertTick();
      },
      summaryFile: () => this.layout.summary,
    };
  }

  /** Alerting over the channels, with the daemon's state folder; a finding's sparkline from its run. */
  private buildAlerting(config: Config): Alerting {
    return new Alerting({
      layout: this.layout,
      ...config.alerting,
      notifiers: this.notifierList,
      actions: config.actions,
      log: this.log,
      now: this.now,
      sparkline: (a) => {
        const run = this.pipeline.registry.get(a.finding.run);
        return run === undefined ? null : findingSparkline(run, a.finding);
      },
    });
  }

  /** Advances alerts and sends what is due; one tick at a time. */
  alertTick(): Promise<void> {
    const a = this.alerting;
    this.alertTicking = this.alertTicking
      .then(() => a.tick(this.engine.findings()))
      .then(() => {
        if (a.book.revision !== this.alertsSeen) {
          this.alertsSeen = a.book.revision;
          this.events.alerts();
        }
      })
      .catch((err: unknown) => {
        this.log.error({ err: (err as Error).message }, 'alerting tick failed');
      });
    return this.alertTicking;
  }

  /** Applies a new, already validated config without losing state or re-sending alerts (see reload.ts). */
  async reload(config: Config): Promise<void> {
    const { applied, changed, needRestart } = planReload(this.opts.config, config, this.opts.singleRun === true);
    this.opts = { ...this.opts, config: applied };
    this.log.level = applied.log.level;
    const t = this.engine.setParams(applied.detectors);
    if (t.length > 0) this.onTransitions(t);
    await this.alertTicking;
    const state = this.alerting.toJSON();
    await this.alerting.close();
    this.notifierList = this.opts.notifiers ?? buildNotifiers(applied.notify, channelCommon(applied));
    this.alerting = this.buildAlerting(applied);
    await this.alerting.init(state);
    this.alertsSeen = -1;
    const message =
      `configuration reloaded: ${changed.length > 0 ? `${changed.join(', ')} applied` : 'nothing to apply'}` +
      (needRestart.length > 0 ? `; ${needRestart.join(', ')} take effect at the next restart` : '');
    this.log.info({ channels: this.alerting.channels, applied: changed, restartNeededFor: needRestart }, message);
    void this.alertTick();
  }

  /** What /healthz and /metrics report. */
  snapshot(): HealthSnapshot {
    const watcher = this.phase.name === 'following' ? this.phase.watcher : null;
    const unwatched = watcher?.unwatched?.() ?? { folders: 0, code: null };
    return healthSnapshot({
      pipeline: this.pipeline,
      alerting: this.alerting,
      findings: this.engine.findings(),
      oldestQueuedAt: this.queue.oldestQueuedAt(),
      saveError: this.saver.error,
      alertLogError: this.record.error,
      unwatched: unwatched.folders === 0 ? null : limitText(unwatched),
      unwatchedFolders: unwatched.folders,
      catchingUp: this.phase.name === 'catching-up',
      now: this.now(),
    });
  }

  /** Builds the summary from the live state and sends it to summary.channels. */
  async sendSummary(): Promise<void> {
    await sendNightly(this.opts.config, this.pipeline.registry.all(), this.engine.findings(), this.notifierList, this.now(), this.log);
  }

  /** Runs that read records since they were last judged decisively (see sweep). */
  private unsettled(): number {
    let n = 0;
    for (const run of this.pipeline.registry.all()) if (this.settledAt.get(run.id) !== run.recordsRead()) n++;
    return n;
  }

  status(): void {
    const [fields, message] = statusLine(this.pipeline.totals(), this.queue.size, this.alerting, this.engine.findings(), this.unsettled());
    this.log.info(fields, message);
  }

  /** Stops following, sends what is due, saves the state and gives the state folder back. */
  async stop(): Promise<void> {
    const was = this.phase;
    if (was.name === 'stopped') return;
    this.phase = { name: 'stopped' };
    for (const t of this.timers) clearInterval(t);
    if (was.name === 'following') await was.summary?.stop();
    this.events.close();
    if (was.name === 'catching-up' || was.name === 'following') await was.web?.server.stop();
    if (was.name === 'following') await was.watcher.close();
    await this.looking;
    await this.queue.stop();
    await this.alertTick();
    // A stop before the run saves nothing: nothing was read (the saved state stays as it was).
    if (was.name !== 'opened') await this.saver.save(true);
    await this.alerting.close();
    await this.pipeline.close();
    this.lock?.release();
    this.log.info(was.name === 'opened' ? 'stopped before it ran' : 'stopped; state saved');
  }
}

/** Deliveries (or failures) over every channel. */
function total(counts: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const x of counts.values()) n += x;
  return n;
}
