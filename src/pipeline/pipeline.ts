/**
 * The read path shared by `watch` and `analyze`: files -> parsers -> run statistics.
 * It owns the file sources and the run registry, reports each file problem once (then counts),
 * and saves and restores both together (the sections of the state file it owns: ReadState).
 */
import type { FileKind } from '../parsers/index.js';
import type { FormatId, ParsedRecord, ParserOptions } from '../parsers/types.js';
import { RunRegistry } from '../runs/registry.js';
import type { StatsOptions } from '../runs/series.js';
import { STATE_VERSION, type StateEnvelope } from '../state/file.js';
import {
  NULL_VALUES,
  openSource,
  type Batch,
  type FileCheckpoint,
  type FileCounters,
  type FileProblem,
  type FileSource,
  type Sink,
} from '../sources/file-source.js';
import { roundOrder, type FilePlace } from '../sources/place.js';
import type { ReadOutcome, TailOptions } from '../sources/tailer.js';
import type { Logger } from '../util/log.js';
import type { PieceSink } from '../util/pieces.js';
import type { DetectorEngine, EngineJSON, Transition } from '../detectors/engine.js';
import type { RunJSON } from '../runs/run.js';
import type { DetectContext } from '../detectors/types.js';
import { FailureReport } from '../util/failures.js';
import path from 'node:path';
import { firstRecords } from '../sources/record-tailer.js';
import {
  mayBeOneOfSeveral,
  openingOf,
  ownRun,
  placeRuns,
  placeWandbRuns,
  wandbConsoleOf,
  wandbRoot,
  type Opening,
  type WandbHead,
} from '../sources/runs.js';
import { decodeWandbRecord, WANDB_FRAMING } from '../parsers/wandb-log.js';
import { breathe, breatheDue } from '../util/breathe.js';
import { inputOf } from '../parsers/index.js';
import { existsSync } from 'node:fs';

/**
 * Whether a run folder holds a log of the trainer's steps with their times (W&B's `wandb/`), so
 * the samples of its debug logs are matched to those steps by time (runs/debug-steps.ts).
 */
function timedSteps(run: string): boolean {
  return existsSync(path.join(run, 'wandb'));
}

/** Series names listed in a 'discovered series' log entry (a verl step line has ~70). */
const SERIES_LOGGED = 12;

/** Bytes read from one file at a time while files of a round are merged by step (Pipeline.drain). */
const MERGE_BYTES = 1 << 18;

/**
 * A file alone in its round is looked beside on disk at each read while its round has fewer steps
 * than this (see read), at most YOUNG_LOOKS times: long enough for a trainer's second file of a
 * round to appear, bounded so a run with one file per round costs nothing more after it starts.
 */
const YOUNG_STEPS = 8;
const YOUNG_LOOKS = 32;

/**
 * A daemon holds a file's steps past where the round's other files stand (see drainRound) while
 * such a file read something within HOLD_MS (a trainer writes a step to all its files within
 * moments; one whose other files went quiet, a sparse validation log or a crash, waits no longer),
 * a file that has shown no step yet only in its first HOLD_MS (it may never show one), and no
 * record waits more than HOLD_MAX_MS in all (files whose steps never meet).
 */
const HOLD_MS = 5_000;
const HOLD_MAX_MS = 30_000;

/**
 * The step past which `o`, a file of the round read to its end, holds back the records of the
 * round's other files now (see drainRound): its last step while it read something within HOLD_MS,
 * -Infinity while it shows no step yet in its first HOLD_MS, else Infinity (no wait).
 */
function capBy(o: FileSource, now: number): number {
  if (o.lastData === null || now - o.lastData >= HOLD_MS) return Infinity;
  // A log written in whole blocks (W&B) is behind by design: the others do not wait for it.
  if (o.input.late === true) return Infinity;
  if (o.lastStep !== null) return o.lastStep;
  return o.firstData !== null && now - o.firstData < HOLD_MS ? -Infinity : Infinity;
}

/** Whether two files belong to the same round of the same run (the same role and round). */
function sameRound(a: FilePlace, b: FilePlace): boolean {
  return a.run === b.run && a.role === b.role && a.round === b.round;
}

/** Each place's round key, made once: a key made afresh at every read was hashed and compared character by character. */
const roundKeys = new WeakMap<FilePlace, string>();

/** The key of a file's round: run, role and round (a run path never holds a NUL). */
function roundOf(p: FilePlace): string {
  let key = roundKeys.get(p);
  if (key === undefined) roundKeys.set(p, (key = `${p.run}\0${p.role}\0${p.round}`));
  return key;
}

export interface PipelineOptions {
  parser: ParserOptions;
  tail: TailOptions;
  stats: StatsOptions;
  now: () => number;
  log: Logger;
  /** Detectors run as records arrive; their transitions go to `onTransitions`. */
  engine?: DetectorEngine;
  live?: boolean;
  onTransitions?: (t: Transition[]) => void;
  /**
   * The files of a run folder as they are on disk now (watch: a round's folder can reach the
   * watcher after a later round's; see readEarlierRounds). Absent in analyze, which knows every file.
   */
  findRunFiles?: (run: string) => Promise<{ file: string; kind: FileKind; place: FilePlace }[]>;
  /** A batch of records was applied to a run. */
  onRead?: (run: string) => void;
}

/** The read path's sections of the state file: what was read of each file, and what it meant. */
export interface ReadState extends StateEnvelope {
  files: Record<string, FileCheckpoint>;
  runs: RunJSON[];
  /** Findings that hold, and when each detector last ran. */
  engine?: EngineJSON;
  /** Counters of files that were removed (kept so totals never go down). */
  retired?: Record<string, FileCounters>;
}

export interface Totals {
  runs: number;
  files: number;
  lines: number;
  records: number;
  malformed: number;
  longLines: number;
}

export class Pipeline {
  readonly registry: RunRegistry;
  readonly sources = new Map<string, FileSource>();
  /** W&B run files' run records, once read (sources/runs.ts placeWandbRuns). */
  private readonly wandbHeads = new Map<string, WandbHead>();
  private readonly saved: ReadState['files'];
  /** Problems already logged, by `file|kind`: each is logged once, then only counted. */
  private readonly reported = new FailureReport();
  /**
   * While true, detectors judge the records as they are applied, as analyze does, but their
   * transitions are not passed on: a daemon catching up on a backlog reports what holds at its
   * end, with the steps at which each finding first held (see catchUp).
   */
  holdAlerts = false;
  /** Files whose reads fail, with the error code: logged once until the code changes or the file reads again. */
  private readonly failing = new FailureReport();
  /** Files read at least once (see readEarlierRounds). */
  private readonly opened = new WeakSet<FileSource>();
  /** Per run: the role, round and step of the last metrics record applied (see sink). */
  private readonly stepOf = new Map<string, { role: string; round: number | null; step: number | null }>();
  /** The files followed, by run, role and round (see read: the files read together). */
  private readonly byRound = new Map<string, Set<FileSource>>();
  /** byRound's files of each round in order (groupOf), made at the round's first read after a change. */
  private readonly groups = new Map<string, FileSource[]>();
  /** How often a young file alone in its round was looked beside on disk (see isYoung). */
  private readonly looks = new WeakMap<FileSource, number>();
  /** Counters of files no longer followed (removed), by path. */
  private readonly retired = new Map<string, FileCounters>();
  /** Where each file's path places it (its run may be its own instead: sources/runs.ts). */
  private readonly byPath = new Map<string, FilePlace>();
  /** How the logs that may be one of several runs in a folder begin, once they show a step. */
  private readonly openings = new Map<string, Opening>();

  constructor(
    private readonly opts: PipelineOptions,
    restored: ReadState | null = null,
  ) {
    this.registry = restored === null ? new RunRegistry(opts.stats) : RunRegistry.from(restored.runs, opts.stats);
    this.saved = restored?.files ?? {};
    for (const [f, c] of Object.entries(restored?.retired ?? {})) this.retired.set(f, c);
    opts.engine?.restore(restored?.engine);
  }

  detectContext(final = false): DetectContext {
    return { now: this.opts.now(), live: this.opts.live === true, final };
  }

  has(file: string): boolean {
    return this.sources.has(file);
  }

  /** Starts following a file (from its saved offset when the state knows it). */
  track(file: string, kind: FileKind, place: FilePlace): FileSource {
    const existing = this.sources.get(file);
    if (existing !== undefined) return existing;
    this.byPath.set(file, place);
    // A log found to be a run of its own before stays one (its first lines do not change).
    const saved = this.saved[file];
    // A W&B run placed by its run record before (a round of the official layout) stays there.
    if (saved !== undefined && kind === 'wandb' && saved.kind === 'wandb') return this.trackAt(file, kind, saved.place);
    // W&B's console copy goes where its run file went.
    const runFile = this.wandbFileOf(file);
    if (runFile !== null) return this.trackAt(file, kind, runFile.place);
    const own = ownRun({ file, place });
    return this.trackAt(file, kind, saved !== undefined && saved.place.run === own.run && mayBeOneOfSeveral(kind, place) ? own : place);
  }

  private trackAt(file: string, kind: FileKind, place: FilePlace): FileSource {
    const saved = this.saved[file];
    const usable = saved !== undefined && saved.kind === kind && saved.place.run === place.run ? saved : null;
    const parser =
      inputOf(kind).samples === true && timedSteps(place.run) ? { ...this.opts.parser, samplesByTime: true } : this.opts.parser;
    const src = openSource(file, kind, place, { parser, tail: this.opts.tail, problem: (p) => this.problem(p) }, usable);
    // A path deleted and recreated keeps counting from where it was: counters never go down.
    const before = this.retired.get(file);
    if (before !== undefined && usable === null) {
      Object.assign(src.counters, before);
      this.retired.delete(file);
    }
    this.sources.set(file, src);
    const key = roundOf(place);
    const same = this.byRound.get(key) ?? new Set<FileSource>();
    same.add(src);
    this.byRound.set(key, same);
    this.groups.delete(key);
    this.opts.log.debug({ file, kind, run: place.run, role: place.role, round: place.round, resumed: usable !== null }, 'following file');
    return src;
  }

  async untrack(file: string): Promise<void> {
    const src = this.sources.get(file);
    if (src === undefined) return;
    // What it held for its round's other files is its run's all the same.
    for (const b of src.held.splice(0)) this.sink(b.records, b.format, src);
    await this.drop(src);
    this.byPath.delete(file);
    this.openings.delete(file);
  }

  private problem(p: FileProblem): void {
    if (!this.reported.failed(`${p.file}|${p.kind}`, p.kind)) return;
    const level = p.kind === 'malformed' || p.kind === 'long-line' || p.kind === 'too-large' || p.kind === 'binary' ? 'warn' : 'info';
    this.opts.log[level](
      { file: p.file, problem: p.kind, offset: p.offset },
      `${p.message}; further ${p.kind} problems in this file are only counted`,
    );
  }

  private readonly sink = (records: ParsedRecord[], format: FormatId, src: FileSource): void => {
    const now = this.opts.now();
    const { run, created } = this.registry.ensure(src.place.run);
    const log = this.opts.log;
    if (created) log.info({ run: run.id }, 'discovered run');
    // The files of a stream (a TensorBoard writer's folder: a restart starts a new file) own their
    // series together, so the newer file's values are not taken for a second file logging them.
    // A W&B run file and its console copy (files/output.log) write the same steps: one source, whose
    // steps written again are copies (the newer of the two for each step counts: RoundState.apply).
    const copyOf = src.kind === 'wandb' ? path.dirname(src.file) : wandbConsoleOf(src.file);
    const source = copyOf ?? (src.input.stream !== undefined ? path.dirname(src.file) : src.file);
    const ctx = {
      role: src.place.role,
      round: src.place.round,
      format,
      file: source,
      clock: src.input.stepClock === true,
      copies: copyOf !== null,
    };
    if (src.input.samples === true && src.parser.kind === 'lines' && records.some((r) => r.kind === 'metrics')) {
      const p = this.opts.parser;
      run.debug.groupedBy(
        src.place.role,
        p.debugSamplesPerStep > 0 ? { by: 'count', samples: p.debugSamplesPerStep } : { by: 'pause', ms: p.debugStepGapMs },
      );
    }
    const engine = this.opts.engine;
    for (const rec of records) {
      if (rec.kind === 'metrics' && rec.step !== null) src.lastStep = rec.step;
      if (rec.kind === 'metrics' && rec.nulls !== undefined) {
        const fresh = src.countNulls(rec.nulls, rec.step);
        if (fresh.length > 0)
          log.warn(
            { file: src.file, series: fresh.slice(0, SERIES_LOGGED), step: rec.step },
            `${NULL_VALUES}: ${fresh.slice(0, SERIES_LOGGED).join(', ')}; further nulls of these series in this file are only counted`,
          );
      }
      // Detectors judge whole steps: before the first record of another step (or round), the
      // records of the step before are all in, whichever of the round's files came first.
      if (engine !== undefined && rec.kind === 'metrics') {
        const last = this.stepOf.get(run.id);
        if (rec.step === null || last === undefined || last.step !== rec.step || last.round !== ctx.round || last.role !== ctx.role) {
          this.stepOf.set(run.id, { role: ctx.role, round: ctx.round, step: rec.step });
          const t = engine.onRecord(run, { now, live: this.opts.live === true, final: false });
          if (t.length > 0 && !this.holdAlerts) this.opts.onTransitions?.(t);
        }
      }
      const d = run.apply(rec, ctx, now);
      if (d === null) continue;
      if (d.round !== undefined) log.info({ run: run.id, role: d.round.role, round: d.round.round, format }, 'discovered round');
      if (d.series !== undefined)
        log.info(
          { run: run.id, role: ctx.role, round: ctx.round, series: d.series.slice(0, SERIES_LOGGED), series_count: d.series.length },
          `discovered ${d.series.length} series${d.series.length > SERIES_LOGGED ? ` (the first ${SERIES_LOGGED} listed)` : ''}`,
        );
    }
    this.opts.onRead?.(run.id);
  };

  /**
   * Reads what is new in one file. Errors are logged once per file and kind, and survived.
   * `into` takes the records instead of the run (drainRound merges them first).
   */
  async poll(file: string, into: Sink = this.sink, maxBytes?: number): Promise<ReadOutcome> {
    const src = this.sources.get(file);
    if (src === undefined) return 'idle';
    if (!this.opened.has(src)) await this.open(src);
    // Cleared before the read: an event that comes while it is under way marks the file again.
    src.unread = false;
    try {
      const out = await src.poll(into, this.opts.now(), maxBytes);
      if (this.failing.recovered(file)) this.opts.log.info({ file }, 'file readable again');
      return out;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      if (this.failing.failed(file, code)) {
        this.opts.log.warn({ file, code }, `cannot read file (${code}); will retry when it changes`);
      }
      return 'idle';
    }
  }

  /**
   * Whether a sweep may pass over a file (Daemon.sweep): read before, with records, nothing held
   * back for its round, not one whose reads look for more (a young file alone in its round, a file
   * cut short by a newer one's first step), and unchanged on disk by one stat. Its read would stat
   * the path and find nothing; a sweep of 800 idle files made 800 such reads, each through the
   * merge of its round (BENCHMARKS.md, session 37).
   */
  unchangedOnDisk(src: FileSource): boolean {
    if (!this.opened.has(src) || src.counters.records === 0 || src.held.length > 0 || src.input.stepClock === true) return false;
    return !this.looksBeside(src) && src.unchangedOnDisk();
  }

  /** A watcher's event or a sweep says `file` may have grown (FileSource.unread). */
  changed(file: string): void {
    const src = this.sources.get(file);
    if (src !== undefined) src.unread = true;
  }

  /**
   * Training writes a run's rounds one after another, but their files can reach the reader out of
   * order (a change event dropped in a burst, a queue that holds several files, a new round's
   * folder seen by the watcher after the next round's). Before the first read of a round's file,
   * the run's earlier rounds are read to their end, files not yet followed included, so no
   * detector judges a round before the rounds it follows (watch then finds what analyze finds).
   */
  private async readEarlierRounds(src: FileSource): Promise<void> {
    const at = roundOrder(src.place);
    if (at === null) return;
    await this.lookOnDisk(src, (place) => {
      const o = roundOrder(place);
      return o !== null && (o < at || sameRound(place, src.place));
    });
    const earlier: string[] = [];
    for (const [f, other] of this.sources) {
      if (other.place.run !== src.place.run) continue;
      const o = roundOrder(other.place);
      if (o !== null && o < at) earlier.push(f);
    }
    for (const f of earlier) await this.drain(f);
  }

  /**
   * Follows the files of the run on disk that `wanted` picks and are not followed yet. A backlog's
   * files are all tracked before the first is read: then there is no need to look.
   */
  private async lookOnDisk(src: FileSource, wanted: (place: FilePlace) => boolean): Promise<void> {
    await this.followOnDisk(src.place.run, (f) => f.place.run === src.place.run && wanted(f.place));
  }

  /** Follows the files under `dir` on disk that `wanted` picks and are not followed yet (watch only: see lookOnDisk). */
  private async followOnDisk(dir: string, wanted: (f: { file: string; kind: FileKind; place: FilePlace }) => boolean): Promise<void> {
    if (this.opts.findRunFiles === undefined || this.holdAlerts) return;
    const onDisk = await this.opts.findRunFiles(dir).catch(() => []);
    for (const f of onDisk) if (wanted(f) && !this.sources.has(f.file)) this.track(f.file, f.kind, f.place);
  }

  /**
   * A restarted trainer writes a new event file in the same folder whose steps start again lower.
   * As TensorBoard does, the newer file's steps replace the older file's from its first step on:
   * an older file is read only up to the first step of the next newer one (by name, which starts
   * with the writer's start time). In watch, steps of an older file read before the newer file
   * appeared are replaced as the newer one writes them again (SeriesStats.rewind); the restart is
   * reported once.
   */
  private async supersede(src: FileSource): Promise<void> {
    const dir = path.dirname(src.file);
    const siblings = [...this.sources.values()]
      .filter((s) => s.kind === src.kind && path.dirname(s.file) === dir)
      .sort((a, b) => (a.file < b.file ? -1 : 1));
    for (let i = 0; i + 1 < siblings.length; i++) {
      const older = siblings[i]!;
      if (older.stepLimit !== null) continue;
      const first = src.input.stream!.firstStep(await firstRecords(siblings[i + 1]!.file, src.input.framing!));
      if (first === null) continue;
      older.stepLimit = first;
      const run = this.registry.get(older.place.run);
      const seen = run?.round(older.place.role, older.place.round)?.lastStep ?? null;
      if (seen !== null && seen >= first) {
        this.opts.log.warn(
          { file: older.file, newer: siblings[i + 1]!.file, step: first },
          `the trainer restarted: ${path.basename(siblings[i + 1]!.file)} rewrites steps from ${first}; its values replace the older file's from there`,
        );
      }
    }
  }

  /**
   * Reads a file until it has nothing new, together with the other files of its round (same run,
   * role and round): their records reach the run merged by step, as training wrote them (step 1
   * of each file, then step 2...), not file after file. Live, a daemon following files as they
   * grow reads them about so; a backlog or `analyze` read this way evaluates every detector on the
   * same states, so a finding first holds at the same step whichever way the files were read.
   */
  async drain(file: string): Promise<void> {
    while ((await this.readRound(file, false)) === 'more') await breathe();
  }

  /**
   * Before a file's first read, where its folder holds other logs that may be runs of their own:
   * the run of each, by sources/runs.ts. A file that moves before it was read just moves; a run
   * already read with a file that moves (a sweep's second log appeared while the daemon watched
   * the first) is forgotten, its findings cleared, and its files read again under their runs.
   */
  private async settleRuns(file: string): Promise<void> {
    const src = this.sources.get(file);
    // W&B's console copy is its run file's (copyPlaced), never a run of its own.
    if (src === undefined || !mayBeOneOfSeveral(src.kind, this.pathOf(src)) || wandbConsoleOf(file) !== null) return;
    const dir = path.dirname(file);
    const here = [...this.sources.values()].filter((s) => path.dirname(s.file) === dir && mayBeOneOfSeveral(s.kind, this.pathOf(s)));
    if (here.length < 2 && src.place === this.pathOf(src)) return;
    const candidates = [];
    for (const s of here) candidates.push({ file: s.file, place: this.pathOf(s), opening: await this.openingOf(s) });
    const placed = placeRuns(candidates);
    const moving = here.filter((s) => placed.get(s.file)!.run !== s.place.run);
    if (moving.length === 0) return;
    const read = new Set(moving.map((s) => s.place.run).filter((run) => this.registry.get(run) !== undefined));
    const again = [...this.sources.values()].filter((s) => read.has(s.place.run));
    for (const run of read) {
      this.registry.remove(run);
      this.stepOf.delete(run);
      const t = this.opts.engine?.forgetRun(run) ?? [];
      if (t.length > 0 && !this.holdAlerts) this.opts.onTransitions?.(t);
    }
    const retrack = [...new Set([...moving, ...again])];
    for (const s of retrack) {
      await this.drop(s);
      delete this.saved[s.file];
      this.trackAt(s.file, s.kind, placed.get(s.file) ?? this.pathOf(s));
    }
    const runs = [...new Set(moving.map((s) => placed.get(s.file)!.run))];
    this.opts.log.info(
      { folder: dir, runs },
      `${dir} holds ${runs.length} separate run(s), one log each from its first step${read.size > 0 ? '; what was read of them is read again' : ''}`,
    );
    // Files read before under another run are read again now (analyze will not come back to them).
    for (const s of again) if (s.file !== file) await this.drain(s.file);
  }

  /**
   * Before a W&B run file gives its first record: its place by its run record (sources/runs.ts
   * placeWandbRuns), together with the other runs of its `wandb/` folder. A live run's file holds
   * nothing until its first 32 KiB block is written, and that block starts with the run record:
   * until then the file is looked at again at each read.
   */
  private async settleWandb(src: FileSource): Promise<void> {
    const root = wandbRoot(src.file);
    if (root === null) return;
    // The other runs on disk take part (the watcher may report a run's file after a later one's).
    await this.followOnDisk(root, (f) => f.kind === 'wandb' && wandbRoot(f.file) === root);
    const here = [...this.sources.values()].filter((s) => s.kind === 'wandb' && wandbRoot(s.file) === root);
    const candidates = [];
    for (const s of here) candidates.push({ file: s.file, place: s.place, head: await this.wandbHead(s.file) });
    const placed = placeWandbRuns(candidates);
    for (const s of here) {
      const p = placed.get(s.file)!;
      if (s.counters.records > 0 || (p.run === s.place.run && p.role === s.place.role && p.round === s.place.round)) continue;
      const copies = [...this.sources.values()].filter((c) => wandbConsoleOf(c.file) === path.dirname(s.file) && c.counters.records === 0);
      await Promise.all([s, ...copies].map((x) => this.move(x, p)));
      this.opts.log.info(
        { file: s.file, run: p.run, role: p.role, round: p.round },
        `W&B run ${path.basename(path.dirname(s.file))} is ${p.role} round ${p.round} of ${p.run}`,
      );
    }
  }

  /** The run record of a W&B run file, from its first 64 KiB; null until it is written. */
  private async wandbHead(file: string): Promise<WandbHead | null> {
    return (await this.wandbOpening(file)) ?? null;
  }

  /** The run record of a W&B run file: undefined while the file holds no complete record yet, null when its records hold none. */
  private async wandbOpening(file: string): Promise<WandbHead | null | undefined> {
    const known = this.wandbHeads.get(file);
    if (known !== undefined) return known;
    const recs = await firstRecords(file, WANDB_FRAMING);
    if (recs.length === 0) return undefined;
    for (const rec of recs) {
      let r;
      try {
        r = decodeWandbRecord(rec);
      } catch {
        continue;
      }
      if (r.kind !== 'run') continue;
      const head = { project: r.project, name: r.name, start: r.startTime };
      this.wandbHeads.set(file, head);
      return head;
    }
    return null;
  }

  /** The followed W&B run file of a console copy (`<run folder>/files/output.log`), or null (not a copy, or its run file not followed). */
  private wandbFileOf(file: string): FileSource | null {
    const run = wandbConsoleOf(file);
    if (run === null) return null;
    for (const s of this.sources.values()) if (s.kind === 'wandb' && path.dirname(s.file) === run) return s;
    return null;
  }

  /**
   * Whether a file may be read now: any file but W&B's console copy; the copy once its run file's
   * run record was read (then the copy was placed with it: settleWandb), so its steps go to the
   * run file's round and never to a run of their own.
   */
  private async copyPlaced(src: FileSource): Promise<boolean> {
    const run = wandbConsoleOf(src.file);
    if (run === null) return true;
    let runFile = this.wandbFileOf(src.file);
    if (runFile === null) {
      await this.followOnDisk(run, (f) => f.kind === 'wandb' && path.dirname(f.file) === run);
      runFile = this.wandbFileOf(src.file);
    }
    if (runFile === null) return false;
    if ((await this.wandbHead(runFile.file)) === null) return false;
    if (runFile.counters.records === 0) await this.settleWandb(runFile);
    const placed = this.wandbFileOf(src.file)!.place;
    const copy = this.sources.get(src.file);
    if (copy !== undefined && (copy.place.run !== placed.run || copy.place.role !== placed.role || copy.place.round !== placed.round))
      await this.move(copy, placed);
    return true;
  }

  private pathOf(src: FileSource): FilePlace {
    return this.byPath.get(src.file) ?? src.place;
  }

  private async openingOf(src: FileSource): Promise<Opening | null> {
    const known = this.openings.get(src.file);
    if (known !== undefined) return known;
    const o = await openingOf(src.file, src.kind, this.opts.parser);
    if (o !== null) this.openings.set(src.file, o);
    return o;
  }

  /** Stops following a file to follow it again under another run: what it held is read again. */
  private async drop(src: FileSource): Promise<void> {
    this.forget(src);
    await src.close();
  }

  private forget(src: FileSource): void {
    this.sources.delete(src.file);
    const key = roundOf(src.place);
    this.byRound.get(key)?.delete(src);
    if (this.byRound.get(key)?.size === 0) this.byRound.delete(key);
    this.groups.delete(key);
    this.retired.set(src.file, { ...src.counters });
  }

  /**
   * Follows a file not read yet under another place, read from its start: the old source is
   * replaced at once (no read or watcher event in between sees the file untracked), then closed.
   */
  private async move(src: FileSource, place: FilePlace): Promise<FileSource> {
    this.forget(src);
    delete this.saved[src.file];
    const moved = this.trackAt(src.file, src.kind, place);
    await src.close();
    return moved;
  }

  /**
   * Before a file's first read: the rounds before it are read, its restarted event files ordered,
   * and for a log of timed steps (W&B) the debug logs of its role read first: their samples wait
   * for the rows (runs/debug-steps.ts), as they do live, where the trainer writes a step's samples
   * before its row.
   */
  private async open(src: FileSource): Promise<void> {
    if (this.opened.has(src)) return;
    this.opened.add(src);
    await this.readEarlierRounds(src);
    if (src.input.stream !== undefined) await this.supersede(src);
    if (src.input.stepClock === true) {
      const run = src.place.run;
      await this.followOnDisk(run, (f) => inputOf(f.kind).samples === true && f.place.run === run && f.place.role === src.place.role);
      await this.readSamplesOf(src);
    }
  }

  /**
   * The debug logs of a log of timed steps' role, read to their end: a step's samples are written
   * before its row (runs/debug-steps.ts), so they are read before the rows at every read, not only
   * the first, and a debug log whose read waits (watch.read_spacing, an event behind the row's)
   * never leaves a row without its samples.
   */
  private async readSamplesOf(src: FileSource): Promise<void> {
    const samples = [...this.sources.values()].filter(
      (s) => s.input.samples === true && s.place.run === src.place.run && s.place.role === src.place.role,
    );
    for (const s of samples) await this.drain(s.file);
  }

  /**
   * The daemon's read of a file that changed: what is new in it, merged by step with what is new
   * in the other files of its round (see drain), so a daemon that reads a burst late (a backlog,
   * a writer faster than its events) applies it in the order training wrote it. Returns how the
   * file itself ended: 'more' only for a file alone in its round (the others are read to their end).
   * Live, steps of one file past where its round's other files stand wait for them (drainRound).
   */
  read(file: string): Promise<ReadOutcome> {
    return this.readRound(file, this.opts.live === true && !this.holdAlerts);
  }

  private async readRound(file: string, hold: boolean): Promise<ReadOutcome> {
    const before = this.sources.get(file);
    if (before !== undefined && !this.opened.has(before)) await this.settleRuns(file);
    if (before !== undefined && before.kind === 'wandb' && before.counters.records === 0) {
      // Not read before its first block is on disk: that block holds the run record that places it,
      // and a read would otherwise take the rows a writer adds meanwhile to the file's path.
      if ((await this.wandbOpening(before.file)) === undefined) return 'idle';
      await this.settleWandb(before);
    }
    // W&B's console copy is read once its run file is placed (its first block holds the run record).
    if (before !== undefined && before.counters.records === 0 && !(await this.copyPlaced(before))) return 'idle';
    const src = this.sources.get(file);
    if (src === undefined) return 'idle';
    // Opened first: that finds the round's other files on disk, so they are merged from the start.
    if (this.opened.has(src)) {
      if (src.input.stepClock === true) await this.readSamplesOf(src);
    } else await this.open(src);
    // A round's second file can appear a moment after its first was read (a trainer opens its log
    // and writes its first metrics elsewhere): while a file alone in its round is young, each read
    // looks for the others, so they are merged from their first step whatever the watcher's delay.
    const key = roundOf(src.place);
    if (this.looksBeside(src)) {
      this.looks.set(src, (this.looks.get(src) ?? 0) + 1);
      await this.lookOnDisk(src, (place) => sameRound(place, src.place));
    }
    const group = this.groupOf(key) ?? [src];
    const out =
      group.length === 1 && src.held.length === 0
        ? await this.poll(file)
        : this.unmerged(group, hold, src)
          ? await this.drainAlone(src)
          : await this.drainRound(group, hold, src);
    // What was read is judged at once by the detectors of facts (a NaN, a crash).
    const run = this.registry.get(src.place.run);
    if (this.opts.engine !== undefined && run !== undefined) {
      const t = this.opts.engine.afterRead(run, this.detectContext());
      if (t.length > 0 && !this.holdAlerts) this.opts.onTransitions?.(t);
    }
    return out;
  }

  /**
   * The files of a round in the order of their paths, as analyze finds them: on a tie of steps the
   * same file goes first (and owns a series both log) whichever the watcher reported first. Kept
   * until a file joins or leaves the round (track, forget): it serves every read of the round.
   */
  private groupOf(key: string): readonly FileSource[] | undefined {
    let group = this.groups.get(key);
    if (group === undefined) {
      const same = this.byRound.get(key);
      if (same === undefined) return undefined;
      group = [...same].sort((a, b) => (a.file < b.file ? -1 : 1));
      this.groups.set(key, group);
    }
    return group;
  }

  /** Whether a read of the file looks on disk for its round's other files: young and alone in its round (see read, which counts the looks). */
  private looksBeside(src: FileSource): boolean {
    return this.byRound.get(roundOf(src.place))?.size === 1 && this.isYoung(src);
  }

  /** Whether a file is still young enough to be looked beside on disk (looksBeside). */
  private isYoung(src: FileSource): boolean {
    if ((this.looks.get(src) ?? 0) >= YOUNG_LOOKS) return false;
    const last = this.registry.get(src.place.run)?.round(src.place.role, src.place.round)?.lastStep ?? null;
    return last === null || last < YOUNG_STEPS;
  }

  /**
   * The usual read of a daemon, where drainRound has nothing to merge: only the asked file has
   * something new (the others raised no event since their last read, see drainRound), and no other
   * file of the round holds its steps back (capBy).
   */
  private unmerged(group: readonly FileSource[], hold: boolean, asked: FileSource): boolean {
    if (!hold || this.opts.tail.trustEvents !== true || asked.held.length > 0) return false;
    const now = this.opts.now();
    for (const o of group) if (o !== asked && (o.unread || o.held.length > 0 || capBy(o, now) !== Infinity)) return false;
    return true;
  }

  /** drainRound of a read that has nothing to merge (unmerged): the asked file read as drainRound reads it. */
  private async drainAlone(asked: FileSource): Promise<ReadOutcome> {
    for (;;) {
      if (breatheDue()) await breathe();
      const out = await this.poll(asked.file, this.sink, MERGE_BYTES);
      if (out !== 'more') return out;
    }
  }

  /**
   * The merge of read: each file read a little at a time (until it has nothing new), the lowest
   * step first. Returns how the asked file's last read ended.
   *
   * With `hold` (a daemon's read), records at steps past the last step of another file of the
   * round are kept in their file (FileSource.held) for the next read, while that file read
   * something within HOLD_MS: a daemon reads the files of a round one after the other while the
   * trainer writes, so the second can be read to step 26 while the first stood at 8; applied at
   * once, its steps 9 to 26 would be judged without the first file's, a state analyze never sees.
   *
   * With `hold` and a watcher whose events are trusted (the folder watcher: one inotify queue, in
   * the order the writes happened), the round's other files are read only when an event or a
   * sweep marked them (FileSource.unread): one that raised no event since its last read has
   * nothing new, and counts as read to its end. A write whose event comes later is read at that
   * event, and a step read meanwhile past such a file's last step waits for it (the hold), as when
   * the write comes just after the read. At 200 lines/s into one file of each round, this spared
   * every read a second read of a file that had not grown (BENCHMARKS.md, session 19).
   */
  private async drainRound(group: readonly FileSource[], hold: boolean, asked: FileSource): Promise<ReadOutcome> {
    const told = hold && this.opts.tail.trustEvents === true;
    const now = this.opts.now();
    const ended = new Map<FileSource, ReadOutcome>();
    interface Lane {
      src: FileSource;
      /** Its place in the round's files: the earlier file goes first on a tie. */
      index: number;
      /** What its last read gave, batch by batch, and the next record (batch bi, record ri). */
      batches: Batch[];
      bi: number;
      ri: number;
      done: boolean;
      /** The step of the last record taken (a record without a step goes with it). */
      step: number;
    }
    const lanes: Lane[] = group.map((src, index) => ({
      src,
      index,
      batches: src.held.splice(0),
      bi: 0,
      ri: 0,
      done: told && src !== asked && !src.unread,
      step: -Infinity,
    }));
    /**
     * The last step a lane may give now: the lowest step at which another file of the round, read
     * to its end, stands while it may still catch up (Infinity: no wait).
     */
    const capOf = (lane: Lane): number => {
      if (!hold || now - (lane.batches[lane.bi]!.heldAt ?? now) >= HOLD_MAX_MS) return Infinity;
      // A trainer that crashed or finished writes no more steps to the other files.
      if (lane.batches.some((b, i) => i >= lane.bi && b.records.some((r) => r.kind === 'fatal' || r.kind === 'finished'))) return Infinity;
      let cap = Infinity;
      for (const l of lanes) if (l !== lane && l.done && l.bi >= l.batches.length) cap = Math.min(cap, capBy(l.src, now));
      return cap;
    };
    const into =
      (l: Lane): Sink =>
      (records, format) =>
        void l.batches.push({ records, format });
    const fill = async (l: Lane): Promise<void> => {
      while (!l.done && l.bi >= l.batches.length) {
        l.batches = [];
        l.bi = 0;
        l.ri = 0;
        if (breatheDue()) await breathe();
        const out = await this.poll(l.src.file, into(l), MERGE_BYTES);
        ended.set(l.src, out);
        if (out !== 'more') l.done = true;
      }
    };
    const head = (l: Lane): number => {
      const r = l.batches[l.bi]!.records[l.ri]!;
      return r.kind === 'metrics' && r.step !== null ? r.step : l.step;
    };
    /** Whether lane a's next record goes before lane b's. */
    const before = (a: Lane, ha: number, b: Lane | null, hb: number): boolean => b === null || ha < hb || (ha === hb && a.index < b.index);
    for (;;) {
      // Only a lane with nothing left to give and more to read is read (an async call is a promise).
      for (const l of lanes) if (!l.done && l.bi >= l.batches.length) await fill(l);
      // The lane with the lowest step gives its records until another lane has a lower one (or
      // the same one, being an earlier file): the rival's next record does not move meanwhile.
      let lane: Lane | null = null;
      let low = 0;
      let rival: Lane | null = null;
      let rivalAt = 0;
      for (const l of lanes) {
        if (l.bi >= l.batches.length) continue;
        const h = head(l);
        if (before(l, h, lane, low)) {
          rival = lane;
          rivalAt = low;
          lane = l;
          low = h;
        } else if (before(l, h, rival, rivalAt)) {
          rival = l;
          rivalAt = h;
        }
      }
      if (lane === null) return ended.get(asked) ?? 'idle';
      const cap = capOf(lane);
      if (low > cap) {
        // The rest of every file waits for the next read, in order.
        for (const l of lanes) {
          if (l.bi >= l.batches.length) continue;
          const first = l.batches[l.bi]!;
          l.src.held = [{ ...first, records: first.records.slice(l.ri) }, ...l.batches.slice(l.bi + 1)].map((b) => ({
            ...b,
            heldAt: b.heldAt ?? now,
          }));
        }
        return ended.get(asked) ?? 'idle';
      }
      const b = lane.batches[lane.bi]!;
      const from = lane.ri;
      while (lane.ri < b.records.length && (lane.ri === from || before(lane, head(lane), rival, rivalAt)) && head(lane) <= cap) {
        lane.step = head(lane);
        lane.ri++;
      }
      this.sink(from === 0 && lane.ri === b.records.length ? b.records : b.records.slice(from, lane.ri), b.format, lane.src);
      if (lane.ri >= b.records.length) {
        lane.bi++;
        lane.ri = 0;
      }
    }
  }

  /** Time passes (Daemon.sweep): sources whose records end when their writer pauses give them once it has (FileSource.tick). */
  tick(idleMs: number): void {
    const now = this.opts.now();
    for (const src of this.sources.values()) src.tick(now, idleMs, this.sink);
  }

  /** End of input: multi-line parsers emit what they hold. */
  finish(file?: string): void {
    const list = file === undefined ? [...this.sources.values()] : [this.sources.get(file)].filter((s) => s !== undefined);
    for (const src of list) src.finish(this.sink);
  }

  failures(): ReadonlyMap<string, string> {
    return this.failing.failing;
  }

  totals(): Totals {
    const t: Totals = { runs: this.registry.size, files: this.sources.size, lines: 0, records: 0, malformed: 0, longLines: 0 };
    const add = (c: FileCounters): void => {
      t.lines += c.lines;
      t.records += c.records;
      t.malformed += c.malformed;
      t.longLines += c.longLines;
    };
    for (const s of this.sources.values()) add(s.counters);
    for (const c of this.retired.values()) add(c);
    return t;
  }

  state(): ReadState {
    return { ...this.stateHead(), runs: this.registry.toJSON() };
  }

  /**
   * JSON.stringify(state() with `more`) in pieces (keys in another order), pushed into `out` one
   * after the other (the save writes each as it comes): no single string of the whole state is
   * built, and rounds that read nothing since the last call are not serialised again (a saved
   * state is megabytes; most of it rarely changes). Returns `out`.
   */
  statePieces<S extends PieceSink>(out: S, more: Record<string, unknown> = {}): S {
    out.push('{"runs":');
    this.registry.toJSONPieces(out);
    out.push(',', JSON.stringify({ ...this.stateHead(), ...more }).slice(1));
    return out;
  }

  private stateHead(): Omit<ReadState, 'runs'> {
    const files: ReadState['files'] = {};
    for (const [f, s] of this.sources) files[f] = s.checkpoint();
    const head: Omit<ReadState, 'runs'> = { version: STATE_VERSION, savedAt: new Date(this.opts.now()).toISOString(), files };
    if (this.retired.size > 0) head.retired = Object.fromEntries(this.retired);
    if (this.opts.engine !== undefined) head.engine = this.opts.engine.toJSON();
    return head;
  }

  async close(): Promise<void> {
    await Promise.all([...this.sources.values()].map((s) => s.close()));
  }
}
