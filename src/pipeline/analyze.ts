/** `barwatch analyze`: one pass over finished or running output with the daemon's own read path. */
import path from 'node:path';
import type { Config } from '../config/load.js';
import type { Logger } from '../util/log.js';
import { Pipeline } from './pipeline.js';
import { DetectorEngine } from '../detectors/engine.js';
import { SEVERITY_RANK, type Finding } from '../detectors/types.js';
import type { RunState } from '../runs/run.js';
import { discover } from '../sources/discover.js';
import { Reach } from '../sources/reach.js';
import { NULL_VALUES, type FileSource, type NullCount } from '../sources/file-source.js';

/** Input that was not read, or not read whole, and why. */
export interface NotRead {
  path: string;
  /** The run it belongs to, when a file of a run. */
  run: string | null;
  reason: string;
}

export interface AnalyzeResult {
  runs: RunState[];
  /** Everything that could not be read (folders, files, files whose every line was malformed). */
  notRead: NotRead[];
  filesByRun: Map<string, FileSource[]>;
  findings: Finding[];
  problems: { path: string; message: string }[];
  pipeline: Pipeline;
}

export class InputError extends Error {
  override readonly name = 'InputError';
}

/** Why a log with lines gave nothing. */
const NO_STEP_LINES =
  'no step lines (no metrics barwatch reads): the trainer may log its metrics only to W&B or TensorBoard; point barwatch at those';

/** Null values of a file, per series: how many and where, the series with most first. */
function nullsReason(nulls: ReadonlyMap<string, NullCount>): string {
  const listed = [...nulls].sort((a, b) => b[1].count - a[1].count || (a[0] < b[0] ? -1 : 1));
  const steps = (n: NullCount): string =>
    n.first === null ? '' : n.first === n.last ? ` at step ${n.first}` : ` at steps ${n.first}-${n.last}`;
  const shown = listed.slice(0, 8).map(([name, n]) => `${name} ${n.count}${steps(n)}`);
  const more = listed.length > 8 ? ` and ${listed.length - 8} more series` : '';
  return `${NULL_VALUES}: ${shown.join(', ')}${more}`;
}

export async function analyzePaths(
  paths: string[],
  config: Config,
  log: Logger,
  now: () => number = Date.now,
  /** Called after each file is read: files read so far, of how many. */
  progress?: (done: number, total: number) => void,
): Promise<AnalyzeResult> {
  let found;
  try {
    // The paths given are the roots: symlinks and limits as `watch` has them, the state folder never read.
    const reach = new Reach(
      paths.map((p) => path.resolve(p)),
      [config.stateDir],
      config.watch.reach,
    );
    found = await discover(paths, undefined, reach);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new InputError(`${e.path ?? paths.join(', ')}: ${e.code === 'ENOENT' ? 'no such file or folder' : `cannot read (${e.code})`}`);
  }
  if (found.files.length === 0 && found.problems.length > 0) {
    throw new InputError(
      `nothing could be read under ${paths.join(', ')}: ${found.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
  }
  if (found.files.length === 0) {
    throw new InputError(
      `no training logs found under ${paths.join(', ')} (looked for *.jsonl, *.log, *.txt, *.out, *.err, trainer_state.json, *log*.json lists of log dicts, wandb_export_*.csv, W&B's run-*.wandb, events.out.tfevents.*, BAR-RAG's *_debug_*.log and filtered_data/filtered_*.json[l], configs/*.yaml)`,
    );
  }
  const engine = new DetectorEngine(config.detectors);
  // Lines are read with synchronous reads, as the daemon reads local files: one pass has nothing to
  // do while a read is under way, and a read through the thread pool left the thread idle between
  // 256 KiB chunks (88 ms of a 1M-line file's 1.3 s; BENCHMARKS.md, session 32).
  const pipeline = new Pipeline({ parser: config.parser, tail: { ...config.tail, sync: true }, stats: config.stats, now, log, engine });
  // Every file is known before the first is read, so each run is read in the order training
  // wrote it (earlier rounds first, Pipeline.readEarlierRounds), as watch reads it.
  for (const f of found.files) pipeline.track(f.file, f.kind, f.place);
  let done = 0;
  for (const f of found.files) {
    await pipeline.drain(f.file);
    progress?.(++done, found.files.length);
  }
  pipeline.finish();
  await pipeline.close();
  // With everything read: cross-file conditions and the clock (stale-run).
  for (const run of pipeline.registry.all()) engine.evaluate(run, pipeline.detectContext(true));
  const findings = engine
    .findings()
    .sort(
      (a, b) =>
        (a.run < b.run ? -1 : a.run > b.run ? 1 : 0) ||
        SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] ||
        (a.round ?? 0) - (b.round ?? 0) ||
        (a.detector < b.detector ? -1 : 1),
    );
  const filesByRun = new Map<string, FileSource[]>();
  for (const src of pipeline.sources.values()) {
    const list = filesByRun.get(src.place.run) ?? [];
    list.push(src);
    filesByRun.set(src.place.run, list);
  }
  for (const [file, code] of pipeline.failures()) found.problems.push({ path: file, message: `cannot read (${code})` });
  const notRead: NotRead[] = found.problems.map((p) => ({
    path: p.path,
    run: pipeline.sources.get(p.path)?.place.run ?? null,
    reason: p.message,
  }));
  for (const src of pipeline.sources.values()) {
    const c = src.counters;
    if (src.refused !== null) notRead.push({ path: src.file, run: src.place.run, reason: src.refused });
    else if (c.lines > 0 && c.records === 0 && c.malformed === c.lines) {
      const why = src.lastMalformed === null ? '' : ` (${src.lastMalformed})`;
      const reason = src.input.read === 'document' ? `not read${why}` : `every line (${c.lines}) was malformed${why}`;
      notRead.push({ path: src.file, run: src.place.run, reason });
    } else if (c.records === 0 && c.malformed === 0 && src.input.wholeRun === true) {
      // A console log beside the run files whose steps were read (BAR-RAG's official scripts log to W&B only).
      const logged =
        pipeline.registry
          .get(src.place.run)
          ?.formatsByRecords()
          .filter((f) => f === 'wandb' || f === 'tensorboard') ?? [];
      const reason =
        c.lines === 0
          ? 'empty'
          : logged.length > 0
            ? `no step lines: the run's steps were read from its ${logged.map((f) => (f === 'wandb' ? 'W&B' : 'TensorBoard')).join(' and ')} files`
            : NO_STEP_LINES;
      notRead.push({ path: src.file, run: src.place.run, reason });
    } else if (c.longLines > 0) {
      notRead.push({ path: src.file, run: src.place.run, reason: `${c.longLines} line(s) over parse.max_line_bytes skipped` });
    }
    if (src.partial !== null) notRead.push({ path: src.file, run: src.place.run, reason: src.partial });
    if (src.nulls.size > 0) notRead.push({ path: src.file, run: src.place.run, reason: nullsReason(src.nulls) });
  }
  for (const file of found.unknown) notRead.push({ path: file, run: null, reason: 'not a format barwatch reads' });
  const records = [...pipeline.sources.values()].reduce((n, s) => n + s.counters.records, 0);
  if (records === 0 && notRead.length > 0) {
    throw new InputError(`nothing could be read: ${notRead.map((p) => `${p.path}: ${p.reason}`).join('; ')}`);
  }
  return { runs: pipeline.registry.all(), notRead, filesByRun, findings, problems: found.problems, pipeline };
}
