/**
 * What a run is where one folder holds several logs that each hold a whole training
 * (InputFormat.wholeRun: console logs, metrics JSONL). A sweep keeps its runs so, one log per
 * seed or setting side by side (`logs/<run>.log`), each starting over from its first step.
 *
 * The rule, from the layout and the steps each log shows where it begins and where it ends:
 * - Logs of one format in one folder (not placed in a role or round by their folders or names)
 *   are looked at together. Those that start at the earliest first step start over, each a run.
 * - A log starting later continues a log whose steps reach its first step (a resumed run starts
 *   again at or before the last step logged: its checkpoint), the one that ended closest after
 *   it; one that continues none (it starts past the end of every other) is a run too.
 * - When that gives two or more runs, each is a run of its own, named by its first file.
 *   Otherwise everything keeps the folder's run: one log, a log and its continuation, logs of
 *   different formats (a train.log beside its reward_history.jsonl), logs that show no step (a
 *   stderr log, a config), the files of rounds.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { isWandbRunDir } from './discover.js';
import { createParser, inputOf, type FileKind } from '../parsers/index.js';
import { isMalformed, type FormatId, type LineParser, type ParserOptions } from '../parsers/types.js';
import type { FilePlace } from './place.js';

/** How a log begins and where it stands: the format its lines turned out to be, its first and last steps. */
export interface Opening {
  format: FormatId;
  first: number;
  /** Null where the format numbers entries (TRL console dicts) and the end was not read. */
  last: number | null;
}

/** Bytes of a log looked at for its first step (a verl console log prints its whole config first), and for its last. */
const OPENING_BYTES = 1 << 20;
/** A document (trainer_state.json) is read whole, up to this size. */
const DOCUMENT_BYTES = 64 << 20;

/** Whether a file's run may be one of several in its folder (see the rule above). */
export function mayBeOneOfSeveral(kind: FileKind, place: FilePlace): boolean {
  return inputOf(kind).wholeRun === true && place.round === null;
}

async function readAt(file: string, start: 'head' | 'tail', bytes: number): Promise<string | null> {
  try {
    const fh = await fsp.open(file, 'r');
    try {
      const size = (await fh.stat()).size;
      const at = start === 'head' ? 0 : Math.max(0, size - bytes);
      const buf = Buffer.alloc(Math.min(bytes, size));
      const { bytesRead } = await fh.read(buf, 0, buf.length, at);
      return buf.toString('utf8', 0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
}

/** The steps of the metric records in `lines`, through a parser of its own (an entry without a step is null). */
function stepsOf(parser: LineParser, lines: readonly string[]): (number | null)[] {
  const out: (number | null)[] = [];
  for (const raw of lines) {
    const res = parser.line(raw.endsWith('\r') ? raw.slice(0, -1) : raw);
    if (isMalformed(res)) continue;
    for (const r of res) if (r.kind === 'metrics') out.push(r.step);
  }
  return out;
}

/**
 * Where a log's steps start and end: its first OPENING_BYTES and its last (a document whole).
 * Entries without a step are numbered from 1, as the reader numbers them. Null when no step
 * shows yet.
 */
export async function openingOf(file: string, kind: FileKind, opts: ParserOptions): Promise<Opening | null> {
  const parser = createParser(kind, opts);
  if (parser.kind === 'document') {
    const text = await readAt(file, 'head', DOCUMENT_BYTES);
    const res = text === null ? [] : parser.document(text);
    const steps = isMalformed(res) ? [] : res.flatMap((r) => (r.kind === 'metrics' && r.step !== null ? [r.step] : []));
    return steps.length === 0 ? null : { format: parser.format(), first: Math.min(...steps), last: Math.max(...steps) };
  }
  if (parser.kind !== 'lines') return null;
  const head = await readAt(file, 'head', OPENING_BYTES);
  if (head === null) return null;
  // Complete lines only: the last one may be cut by the read.
  const lines = head.split('\n');
  lines.pop();
  const firstSteps = stepsOf(parser, lines);
  if (firstSteps.length === 0) return null;
  const format = parser.format();
  const first = firstSteps[0] ?? 1;
  const tail = await readAt(file, 'tail', OPENING_BYTES);
  const tailLines = (tail ?? '').split('\n');
  // The tail's first line may be cut by the read, and its last may not be complete yet.
  tailLines.shift();
  tailLines.pop();
  const lastSteps = stepsOf(createParser(kind, opts) as LineParser, tailLines).filter((x) => x !== null);
  return { format, first, last: lastSteps.length > 0 ? Math.max(...lastSteps) : null };
}

/** One log the rule looks at: its place by its path, and how it begins. */
export interface Candidate {
  file: string;
  place: FilePlace;
  opening: Opening | null;
}

/** The run of a log that is a run of its own. */
export function ownRun(c: Pick<Candidate, 'file' | 'place'>): FilePlace {
  return { run: c.file, role: c.place.role, round: null };
}

/**
 * The place of each candidate, by the rule above. Candidates are the files of one folder that
 * mayBeOneOfSeveral, each with the place its path gives.
 */
export function placeRuns(candidates: readonly Candidate[]): Map<string, FilePlace> {
  const out = new Map<string, FilePlace>();
  const byFormat = new Map<string, (Candidate & { opening: Opening })[]>();
  for (const c of candidates) {
    out.set(c.file, c.place);
    if (c.opening === null) continue;
    const key = `${path.dirname(c.file)}\0${c.place.run}\0${c.place.role}\0${c.opening.format}`;
    const list = byFormat.get(key);
    if (list === undefined) byFormat.set(key, [{ ...c, opening: c.opening }]);
    else list.push({ ...c, opening: c.opening });
  }
  for (const list of byFormat.values()) {
    if (list.length < 2) continue;
    // Earliest first step first, then by name: a log is judged after every log it may continue.
    list.sort((a, b) => a.opening.first - b.opening.first || (a.file < b.file ? -1 : 1));
    const start = list[0]!.opening.first;
    const runOf = new Map<string, Candidate>();
    for (const c of list) {
      if (c.opening.first === start) {
        runOf.set(c.file, c);
        continue;
      }
      // A resumed run starts again at or before the step its last log reached (its checkpoint).
      const continues = list.filter(
        (d) => d.opening.first < c.opening.first && d.opening.last !== null && d.opening.last + 1 >= c.opening.first && runOf.has(d.file),
      );
      // The log that ended closest after its checkpoint (on a tie, the earlier by name).
      const from = continues.sort((a, b) => a.opening.last! - b.opening.last! || (a.file < b.file ? -1 : 1))[0];
      runOf.set(c.file, from === undefined ? c : runOf.get(from.file)!);
    }
    const heads = new Set([...runOf.values()]);
    if (heads.size < 2) continue;
    for (const c of list) out.set(c.file, ownRun(runOf.get(c.file)!));
  }
  return out;
}

/** What a W&B run file says of itself in its run record: enough to place it. */
export interface WandbHead {
  project: string;
  name: string;
  /** Start time, epoch ms (null when the record has none). */
  start: number | null;
}

/** The training folder of a W&B run file (`<root>/wandb/<run folder>/run-<id>.wandb`), or null. */
export function wandbRoot(file: string): string | null {
  const wandb = path.dirname(path.dirname(file));
  return path.basename(wandb) === 'wandb' ? path.dirname(wandb) : null;
}

/** The W&B run folder whose console copy (`<run folder>/files/output.log`) a file is, or null. */
export function wandbConsoleOf(file: string): string | null {
  if (path.basename(file) !== 'output.log' || path.basename(path.dirname(file)) !== 'files') return null;
  const run = path.dirname(path.dirname(file));
  return isWandbRunDir(run) ? run : null;
}

const NAMED_ROUND = /round[_-]?(\d+)/i;

/**
 * The official BAR-RAG layout: one W&B run per invocation of `selector_training.sh` or
 * `generator_training.sh`, each a round of one training, whose project or name says the role
 * (`verl-selector-training`, `selector_round2`). Such a run file goes to the training folder
 * above `wandb/`, with its role and its round: the one its name carries, else its place among
 * that role's runs by start time (then by folder, which starts with the time). A W&B run that
 * names no role stays a run of its own, named by its folder. `heads`: the run records known
 * (null: not written yet).
 */
export function placeWandbRuns(candidates: readonly { file: string; place: FilePlace; head: WandbHead | null }[]): Map<string, FilePlace> {
  const out = new Map<string, FilePlace>();
  const roleOf = (h: WandbHead): 'selector' | 'generator' | null => {
    const text = `${h.project} ${h.name}`;
    return /selector/i.test(text) ? 'selector' : /generator/i.test(text) ? 'generator' : null;
  };
  const byRole = new Map<string, { file: string; start: number; folder: string }[]>();
  for (const c of candidates) {
    const root = wandbRoot(c.file);
    const role = c.head === null ? null : roleOf(c.head);
    if (root === null || role === null) continue;
    const list = byRole.get(role) ?? [];
    list.push({ file: c.file, start: c.head!.start ?? Infinity, folder: path.basename(path.dirname(c.file)).replace(/^offline-/, '') });
    byRole.set(role, list);
  }
  for (const [role, list] of byRole) {
    list.sort((a, b) => a.start - b.start || (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
    list.forEach((x, i) => {
      const c = candidates.find((k) => k.file === x.file)!;
      const named = NAMED_ROUND.exec(c.head!.name);
      out.set(x.file, {
        run: wandbRoot(x.file)!,
        role: role as 'selector' | 'generator',
        round: named !== null ? Number(named[1]) : i + 1,
      });
    });
  }
  for (const c of candidates) if (!out.has(c.file)) out.set(c.file, c.place);
  return out;
}
