/**
 * What every parser produces. Parsers are pure: a line (or a whole document) in, records out.
 * Multi-line formats keep a small, serialisable state between lines (see `LineParser.snapshot`).
 */

export type Role = 'selector' | 'generator' | 'unknown';

/** Formats barwatch reads out of the box (SPEC 3.2-3.5). */
/** The formats barwatch reads; a run is labelled by the first of its most-read ones. */
export const FORMAT_IDS = [
  'reward-history',
  'verl-jsonl',
  'trainer-state',
  'log-history',
  'metrics-csv',
  'tensorboard',
  'wandb',
  'barrag-selector-debug',
  'barrag-generator-debug',
  'barrag-filter',
  'verl-console',
  'trl-console',
  'openrlhf',
  'train-log',
  'run-config',
] as const;
export type FormatId = (typeof FORMAT_IDS)[number];

/** One training step's numbers. `step` is null when the format has no step (the reader numbers it). */
export interface MetricRecord {
  kind: 'metrics';
  step: number | null;
  values: Record<string, number>;
  /** Wall-clock time the trainer wrote, epoch milliseconds, when the line carries one. */
  time?: number;
  /**
   * Series whose value the record gives as JSON `null` (orjson, which verl's file logger uses from
   * 0.8, writes NaN and Inf as null): read as missing, counted per file (FileSource.nulls).
   */
  nulls?: string[];
  /** The log says no step: `step` is the entry's number in the file (a TRL console without a progress bar). */
  counted?: true;
}

/** One question of the pre-training filter: its accuracy and whether it was kept. */
export interface FilterQuestion {
  kind: 'filter-question';
  id: string | null;
  acc: number;
  kept: boolean | null;
  /** Known only as a kept question (a list of the kept samples): not in the histogram before the filter. */
  keptOnly?: true;
}

/** `[filter] before=12000 after=7300`; null where the source does not say (a list of the kept samples only). */
export interface FilterSummary {
  kind: 'filter-summary';
  before: number | null;
  after: number | null;
}

/** A number of generator rollouts per evidence set (K) announced by a log line. */
export interface RolloutCount {
  kind: 'rollouts';
  k: number;
}

/** Settings read from the run's own configs (filter_config.yaml, reward_config.yaml). */
export interface RunSettings {
  weights?: Partial<Record<Component, number>>;
  targetAccuracy?: number;
  rollouts?: number;
  easyThreshold?: number;
  unsolvableThreshold?: number;
  varMin?: number;
  countMax?: number;
}

export interface SettingsRecord {
  kind: 'settings';
  settings: RunSettings;
}

/** The trainer said it finished (TRL's final summary, "training finished"...): silence is expected. */
export interface FinishedRecord {
  kind: 'finished';
}

/**
 * The trainer printed a fatal error: the last line of a Python traceback (`torch.OutOfMemoryError:
 * CUDA out of memory...`), an NCCL timeout, a Ray actor that died, a segfault, a scheduler's kill.
 */
export interface FatalRecord {
  kind: 'fatal';
  message: string;
  /** Wall-clock time the line carried, epoch ms. */
  time?: number;
}

/**
 * How long the trainer plans to train, in steps: stated (verl's `Total training steps: N`, a
 * trainer_state's `max_steps`, a progress bar named for training) or read off an unnamed progress
 * bar (Hugging Face's main bar: `20/400 [...]`), with how far the bar has got.
 */
export interface PlanRecord {
  kind: 'plan';
  total: number;
  /** Steps done, where the line says so (a progress bar, a trainer_state's global_step). */
  done?: number;
  /** `stated`: the trainer said it; `bar`: an unnamed progress bar, one among others (eval bars). */
  source: 'stated' | 'bar';
}

/**
 * One sample of a per-sample log (a BAR-RAG debug block) whose step is the trainer's: the step
 * logged next after its time (runs/debug-steps.ts). Emitted instead of grouped steps where the run
 * also has a log whose rows carry the trainer's time (ParserOptions.samplesByTime).
 */
export interface SampleRecord {
  kind: 'sample';
  values: Record<string, number>;
  /** The time the block carried, epoch ms as written (the trainer's local clock, read as UTC). */
  time: number;
}

/**
 * How far a log written in blocks reaches in the trainer's time (W&B: its latest row or system
 * stats record), and how much is written at once: a block holds about `block.steps` rows and
 * `block.ms` of the trainer's time, which is about how late its newest rows reach the disk.
 */
export interface ReachRecord {
  kind: 'reach';
  time: number;
  block: { steps: number; ms: number };
}

export type ParsedRecord =
  | MetricRecord
  | FilterQuestion
  | FilterSummary
  | RolloutCount
  | SettingsRecord
  | FinishedRecord
  | FatalRecord
  | PlanRecord
  | SampleRecord
  | ReachRecord;

/** A line that should have been a record and could not be read. Counted per file and skipped. */
export interface Malformed {
  error: string;
}

/** Records (possibly none: the line carried nothing of interest) or why the line was malformed. */
export type LineResult = ParsedRecord[] | Malformed;

export const NOTHING: ParsedRecord[] = Object.freeze([]) as unknown as ParsedRecord[];

export function isMalformed(r: LineResult): r is Malformed {
  return !Array.isArray(r);
}

export type Component = 'boundary' | 'relevance' | 'format' | 'count';
export const COMPONENTS: readonly Component[] = ['boundary', 'relevance', 'format', 'count'];

/** A parser for a line-oriented file. One instance per file; it may keep state between lines. */
export interface LineParser {
  readonly kind: 'lines';
  /** The format this file turned out to be (may be refined by what the lines look like). */
  format(): FormatId;
  line(text: string): LineResult;
  /**
   * A line whose keys and numbers the decode thread read (InputFormat.linesAhead), its values
   * `values[from...]` in the keys' order: what line() gives for its text, or null to have line()
   * read the text.
   */
  fromValues?(keys: readonly string[], values: Float64Array, from: number): LineResult | null;
  /** Records still held (a multi-line block not yet closed), emitted at end of input. */
  flush?(): ParsedRecord[];
  snapshot?(): unknown;
  restore?(state: unknown): void;
}

/** A parser for a file that is rewritten whole (trainer_state.json, YAML configs). */
export interface DocumentParser {
  readonly kind: 'document';
  format(): FormatId;
  /** Records new since the last call; the parser remembers what it already emitted. */
  document(text: string): LineResult;
  /** What of the document the last read left out (a W&B export of several runs), or null. */
  unreadPart?(): string | null;
  snapshot?(): unknown;
  restore?(state: unknown): void;
}

/** A parser for a file of binary records (TensorBoard event files), fed complete records in order. */
export interface RecordParser {
  readonly kind: 'records';
  format(): FormatId;
  /** The records of `data`; `ahead`: what AheadFraming.receive gave for them, when they were decoded ahead. */
  records(data: readonly Uint8Array[], ahead?: unknown): ParsedRecord[];
  /** Records that did not decode, and values skipped (not scalars), since start. */
  counts(): { undecodable: number; skipped: number };
  snapshot?(): unknown;
  restore?(state: unknown): void;
}

export type Parser = LineParser | DocumentParser | RecordParser;

/**
 * One input format: how its files are recognised, read and placed. Each parser file exports its
 * own; parsers/index.ts lists them, and nothing outside parsers/ names a format.
 */
export interface InputFormat<Id extends string = string> {
  /**
   * Its name in checkpoints and logs: the format's own where its files hold one format
   * (`tensorboard`), the container's where the lines tell the format (`jsonl`: reward-history or
   * verl-jsonl; `text`: train-log, verl, TRL or OpenRLHF console).
   */
  id: Id;
  /** How its files are read: tailed by lines, re-read whole when they change, or as framed records. */
  read: Parser['kind'];
  /** Whether a file is of this format by its name (lower case) and its folder's name. */
  named(base: string, folder: string): boolean;
  /** For a file named on the command line whose name says nothing: whether its first bytes are this format's. */
  sniffed?(head: string): boolean;
  create(opts: ParserOptions): Parser;
  /** The role of its files where their folders do not say (BAR-RAG's selector and generator debug logs). */
  role?: Role;
  /**
   * The files of one folder are one writer's stream (TensorBoard): a series logged by several is
   * owned by the stream, and a newer file (by name) rewrites the steps from its first one on, as a
   * restarted writer does. `firstStep`: the first step of a file, from its first records.
   */
  stream?: { firstStep(records: readonly Uint8Array[]): number | null };
  /** Files read as framed records: how the frames are split (TFRecord, W&B's LevelDB-log blocks). */
  framing?: Framing;
  /** Files read by lines: what of a backlog's lines the decode thread reads ahead (the parser's LineParser.fromValues takes it). */
  linesAhead?: AheadFraming;
  /** Its records span lines and end when the writer pauses (Parser.flush after parser.debug_step_gap). */
  idleFlush?: boolean;
  /**
   * Its records are samples (one debug block each) grouped into steps: by time, where its run has
   * a `wandb/` folder (ParserOptions.samplesByTime), else by count or by a pause in writing.
   */
  samples?: true;
  /** Its rows are whole steps with the trainer's time (W&B's `_timestamp`): samples written before a row are of its step. */
  stepClock?: true;
  /** Written in whole blocks while the run goes on (W&B): behind the run's other files by design, so they never wait for it. */
  late?: true;
  /**
   * A file of it holds a whole training's log (a console log, a metrics JSONL), so files of it
   * side by side in one folder may be separate runs: a sweep's logs, each from its first step
   * (sources/runs.ts).
   */
  wholeRun?: boolean;
}

/** Complete records split from bytes of a file, and how far they reach. */
export interface Frames {
  /** Complete records whose CRC matched, in order (views into the input). */
  records: Uint8Array[];
  /** Bytes consumed, to the end of the last complete record: a record cut at the end waits for its rest. */
  consumed: number;
  /** Records skipped because a CRC did not match. */
  badData: number;
  /** Set where a length did not match its CRC: nothing after it can be trusted. */
  corruptAt: number | null;
  /** What the decode thread decoded of the records (AheadFraming.receive), when it split them. */
  ahead?: unknown;
}

export interface Framing {
  /** The complete records in `buf`, which starts at byte `at` of the file (framings with blocks count from the file's start). */
  split(buf: Buffer, at: number): Frames;
  /** Fewer bytes than this past the last record cannot hold another. */
  minBytes: number;
  /** Splitting and decoding a backlog's next part on another thread while this one is read (sources/decode-ahead.ts). */
  ahead?: AheadFraming;
}

/**
 * A framing's work on the decode thread: split() and whatever of the records' decoding needs no
 * parser, its results in arrays that move between threads without a copy.
 */
export interface AheadFraming {
  /**
   * On the decode thread: split(buf, at), and the decoding done of the first `share` (0 to 1) of
   * its records (ArrayBuffers in `transfer`); the rest are left to the parser on the reading thread,
   * and so are the records not decoded yet once `hurry()` is true (the reading thread waits).
   */
  decode(buf: Buffer, at: number, share: number, hurry?: () => boolean): { frames: Frames; decoded: unknown; transfer: ArrayBuffer[] };
  /**
   * On the reading thread, for every part decode() did, in the order it did them (a dropped part
   * too): the decoding as RecordParser.records takes it beside the records.
   */
  receive(decoded: unknown): unknown;
}

/** A format's declaration, its id kept as a literal type (FileKind is the union of the listed ids). */
export function defineInput<const Id extends string>(f: InputFormat<Id>): InputFormat<Id> {
  return f;
}

export interface ParserOptions {
  /** User key mapping: raw key -> series name (applied before the built-in aliases). */
  keyMap: Record<string, string>;
  /** BAR-RAG debug logs: samples per step (0: split steps by time gaps instead). */
  debugSamplesPerStep: number;
  /** BAR-RAG debug logs: a pause longer than this (ms) between samples starts a new step. */
  debugStepGapMs: number;
  /**
   * Per-sample logs give their samples with their times (SampleRecord) instead of grouping them
   * into steps: set per file where its run has a log of timed steps (a `wandb/` folder).
   */
  samplesByTime?: boolean;
}

/**
 * The boundary zone ("Goldilocks zone"): questions the generator answers correctly 40%-60% of the
 * time, where BAR-RAG's selector learns most. Inclusive at both ends.
 */
export const BOUNDARY_LOW = 0.4;
export const BOUNDARY_HIGH = 0.6;

export function isBoundary(acc: number): boolean {
  return acc >= BOUNDARY_LOW && acc <= BOUNDARY_HIGH;
}
