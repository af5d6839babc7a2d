/**
 * Free-text training logs (SPEC 3.3): `train.log` and any console capture. Each physical line is
 * cleaned (ANSI, Ray and time prefixes), split on `\r` (tqdm), and each piece is tried against
 * the line kinds barwatch knows: verl console, OpenRLHF, TRL dicts, `[filter]`, `[eval]`, rollout
 * counts, and numeric key=value pairs on a line that carries a step. Lines that match nothing are
 * counted by the reader, not reported as errors.
 */
import { FatalReader, parsePlan } from './fatal.js';
import { canonicalKey, toNumber } from './keys.js';
import { looksLikeOpenRlhf, parseOpenRlhf } from './openrlhf.js';
import { cleanLine } from './text.js';
import { looksLikeTrlDict, parseTrlDict } from './trl-console.js';
import type { FormatId, LineParser, LineResult, Malformed, MetricRecord, ParsedRecord, ParserOptions, PlanRecord } from './types.js';
import { defineInput } from './types.js';
import { NOTHING } from './types.js';
import { looksLikeVerlConsole, VerlConsoleReader } from './verl-console.js';

const NUM = String.raw`(?:np\.float64\()?([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|NaN|-?inf|-?Infinity)\)?`;
/** `key=value`, `key: value`, `key:value`; the key starts with a letter so times do not match. */
const KV = new RegExp(String.raw`(?<![\w/.-])([A-Za-z_][\w/.@-]*)\s*(?:=|:)\s*` + NUM + String.raw`(?![\w.])`, 'g');
/** Lines by which trainers say they are done. */
const FINISHED = /\b(?:training (?:is )?(?:finished|completed?|done)|finished training|final validation metrics)\b/i;
const STEP_KEYS = new Set(['step', 'global_step', 'global_steps', 'iteration', 'iter']);

/** Rollout counts, SPEC 3.3: `rollouts=10`, `K_ROLLOUTS=10`, `K Rollouts: 10`, `n_rollouts`, `rollout.n=8`, `GENERATOR ROLLOUTS (K=10)`. */
const ROLLOUTS = [
  /\b(?:n_rollouts|rollouts|k_rollouts|generator_rollouts|rollout\.n)\s*[=:]\s*(\d+)\b/i,
  /\bK Rollouts:\s*(\d+)/i,
  /ROLLOUTS \(K=(\d+)\)/i,
];

export function parseRollouts(text: string): number | null {
  for (const re of ROLLOUTS) {
    const m = re.exec(text);
    if (m !== null) return Number(m[1]);
  }
  return null;
}

export function keyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  KV.lastIndex = 0;
  for (let m = KV.exec(text); m !== null; m = KV.exec(text)) {
    const v = toNumber(m[2]);
    if (v !== undefined) out.set(m[1]!, v);
  }
  return out;
}

const FILTER_ID = /\bid=(\S+)/;
const FILTER_KEPT = /\bkept=(true|false|True|False|1|0|yes|no)\b/;
const FILTER_ACC_LIST = /\bacc_list=\[([^\]]*)\]/;

/** `[filter] id=q123 acc=0.45 kept=true`, `acc_list=[...]`, or `[filter] before=12000 after=7300`. */
export function parseFilterLine(text: string): ParsedRecord | Malformed {
  const kv = keyValues(text.replace(FILTER_ACC_LIST, ''));
  const before = kv.get('before');
  const after = kv.get('after');
  if (before !== undefined && after !== undefined) return { kind: 'filter-summary', before, after };
  let acc = kv.get('acc') ?? kv.get('accuracy') ?? kv.get('mean_acc');
  const list = FILTER_ACC_LIST.exec(text);
  if (acc === undefined && list !== null) {
    const xs = list[1]!
      .split(',')
      .map((s) => toNumber(s))
      .filter((x): x is number => x !== undefined);
    if (xs.length > 0) acc = xs.reduce((a, b) => a + b, 0) / xs.length;
  }
  if (acc === undefined || !Number.isFinite(acc)) return { error: '[filter] line without a readable accuracy' };
  const keptMatch = FILTER_KEPT.exec(text);
  const kept = keptMatch === null ? null : /^(true|1|yes)$/i.test(keptMatch[1]!);
  const id = FILTER_ID.exec(text);
  return { kind: 'filter-question', id: id === null ? null : id[1]!, acc, kept };
}

type Kind = 'verl-console' | 'openrlhf' | 'trl-console' | 'train-log';

interface Bar {
  n: number;
  done: number;
  back: boolean;
}

/** Progress bars told apart per log (the training bar among eval and loading bars). */
const MAX_BARS = 8;
/** Clears kept waiting for their entries (a buffered stdout holds a few; a log whose entries never come, no more than this). */
const MAX_CLEARS = 4096;
/** A run of spaces between carriage returns: tqdm clearing its bar to print a message. */
const CLEAR = /^ {8,}$/;

export class TextLogParser implements LineParser {
  readonly kind = 'lines';
  private readonly seen: Record<Kind, number> = { 'verl-console': 0, openrlhf: 0, 'trl-console': 0, 'train-log': 0 };
  /** The step of the last TRL entry: the training bar's count, else the entry's number. */
  private trlEntries = 0;
  /** Progress bars by total: how often drawn, how far, and whether the count went back (a resumed run). */
  private bars: Record<string, Bar> = {};
  /** The total the trainer stated (`Total optimization steps = 200`): its bar is the training bar. */
  private stated: number | null = null;
  /** The total of the bar drawn last. */
  private lastBar: number | null = null;
  /**
   * The training bar's count each time tqdm cleared it to print a message (tqdm.write: a run of
   * spaces between carriage returns), not yet matched to the TRL entry printed then. The entries
   * go to stdout, which a redirected Python buffers, so they reach the file later, in bursts; the
   * clears go to stderr at once. The n-th clear is the n-th entry's step.
   */
  private clears: number[] = [];
  private readonly verl: VerlConsoleReader;
  private readonly fatal = new FatalReader();

  constructor(private readonly opts: ParserOptions) {
    this.verl = new VerlConsoleReader(opts.keyMap);
  }

  format(): FormatId {
    let best: Kind = 'train-log';
    for (const k of Object.keys(this.seen) as Kind[]) if (this.seen[k] > this.seen[best]) best = k;
    return best;
  }

  snapshot(): unknown {
    return {
      seen: this.seen,
      trlEntries: this.trlEntries,
      traceback: this.fatal.snapshot(),
      bars: this.bars,
      stated: this.stated,
      lastBar: this.lastBar,
      clears: this.clears,
    };
  }

  restore(state: unknown): void {
    const s = state as {
      seen?: Record<Kind, number>;
      trlEntries?: number;
      traceback?: number;
      bars?: Record<string, Bar>;
      stated?: number | null;
      lastBar?: number | null;
      clears?: number[];
    };
    if (s.seen !== undefined) Object.assign(this.seen, s.seen);
    this.fatal.restore(s.traceback);
    if (typeof s.trlEntries === 'number') this.trlEntries = s.trlEntries;
    if (s.bars !== undefined && typeof s.bars === 'object' && s.bars !== null) this.bars = { ...s.bars };
    if (typeof s.stated === 'number') this.stated = s.stated;
    if (typeof s.lastBar === 'number') this.lastBar = s.lastBar;
    if (Array.isArray(s.clears)) this.clears = s.clears.filter((x) => typeof x === 'number').slice(-MAX_CLEARS);
  }

  /** A progress bar or a stated plan was drawn: the training bar's count is the step of the TRL entry after it. */
  private noteBar(plan: PlanRecord): void {
    if (plan.done === undefined) {
      this.stated = plan.total;
      return;
    }
    const key = String(plan.total);
    this.lastBar = plan.total;
    const bar = this.bars[key];
    if (bar === undefined) {
      if (Object.keys(this.bars).length >= MAX_BARS) return;
      this.bars[key] = { n: 1, done: plan.done, back: false };
    } else {
      bar.n++;
      if (plan.done < bar.done) bar.back = true;
      bar.done = plan.done;
    }
  }

  /** The total of the training bar: the stated one, else the bar drawn most often. */
  private trainingTotal(): number | null {
    if (this.stated !== null && this.bars[String(this.stated)] !== undefined) return this.stated;
    let best: [string, Bar] | null = null;
    for (const e of Object.entries(this.bars)) if (best === null || e[1].n > best[1].n) best = e;
    return best === null ? null : Number(best[0]);
  }

  /** tqdm cleared a bar to print a message: if it was the training bar, the message is logged at its count. */
  private noteClear(): void {
    const total = this.trainingTotal();
    if (total === null || this.lastBar !== total) return;
    if (this.clears.length >= MAX_CLEARS) this.clears.shift();
    this.clears.push(this.bars[String(total)]!.done);
  }

  /**
   * The step of a TRL entry that names none: the training bar's count when tqdm cleared it for
   * this entry (see clears), never behind the entry before unless the bar went back (a run resumed
   * from its checkpoint writes its steps again); with no clear to match, the entry's number,
   * marked as such.
   */
  private trlStep(): { step: number; counted: boolean } {
    const at = this.clears.shift();
    if (at === undefined || at <= 0) return { step: ++this.trlEntries, counted: true };
    const bar = this.bars[String(this.trainingTotal())];
    const back = bar?.back === true && at <= this.trlEntries;
    if (back) bar.back = false;
    const step = back ? at : Math.max(at, this.trlEntries + 1);
    this.trlEntries = step;
    return { step, counted: false };
  }

  /** An eval entry is printed with tqdm.write too: the clear for it is dropped when it is at the last entry's step. */
  private evalClear(): void {
    if (this.clears[0] !== undefined && this.clears[0] <= this.trlEntries) this.clears.shift();
  }

  line(raw: string): LineResult {
    if (raw.length === 0) return NOTHING;
    const pieces = raw.includes('\r') ? raw.split('\r') : [raw];
    let out: ParsedRecord[] | null = null;
    let error: Malformed | null = null;
    for (const piece of pieces) {
      const r = this.piece(piece);
      if (Array.isArray(r)) {
        if (r.length > 0) (out ??= []).push(...r);
      } else error ??= r;
    }
    if (out !== null) return out;
    return error ?? NOTHING;
  }

  private piece(raw: string): LineResult {
    if (raw.charCodeAt(0) === 32 && CLEAR.test(raw)) {
      this.noteClear();
      return NOTHING;
    }
    const { text, time } = cleanLine(raw);
    if (text.length === 0 || text.startsWith('wandb:')) return NOTHING;
    const keyMap = this.opts.keyMap;
    const stamp = (r: MetricRecord): MetricRecord => {
      if (time !== undefined && r.time === undefined) r.time = time;
      return r;
    };

    if (looksLikeVerlConsole(text)) {
      const r = this.verl.parse(text);
      if (r !== null) {
        if ('error' in r) return r;
        this.seen['verl-console']++;
        return [stamp(r)];
      }
    }
    if (looksLikeOpenRlhf(text)) {
      const r = parseOpenRlhf(text, keyMap);
      if (r !== null) {
        if ('error' in r) return r;
        this.seen.openrlhf++;
        return [stamp(r)];
      }
    }
    if (looksLikeTrlDict(text)) {
      const r = parseTrlDict(text, keyMap);
      if ('error' in r) return r;
      this.seen['trl-console']++;
      if (r.kind === 'summary') {
        this.evalClear();
        return [{ kind: 'finished' }];
      }
      if (r.kind === 'eval') {
        this.evalClear();
        if (Object.keys(r.values).length === 0) return NOTHING;
        return [stamp({ kind: 'metrics', step: Math.max(this.trlEntries, 0), values: r.values })];
      }
      if (r.record.step !== null) {
        this.trlEntries = r.record.step;
        return [stamp({ kind: 'metrics', step: r.record.step, values: r.record.values })];
      }
      const { step, counted } = this.trlStep();
      const rec: MetricRecord = { kind: 'metrics', step, values: r.record.values };
      if (counted) rec.counted = true;
      return [stamp(rec)];
    }
    if (text.startsWith('[filter]')) {
      const r = parseFilterLine(text);
      if ('error' in r) return r;
      this.seen['train-log']++;
      return [r];
    }
    return this.plainLine(text, time, stamp);
  }

  private plainLine(text: string, time: number | undefined, stamp: (r: MetricRecord) => MetricRecord): LineResult {
    const fatal = this.fatal.line(text);
    if (fatal !== null) {
      if (time !== undefined) fatal.time = time;
      return [fatal];
    }
    const out: ParsedRecord[] = [];
    const plan = parsePlan(text);
    if (plan !== null) {
      out.push(plan);
      this.noteBar(plan);
    }
    if (FINISHED.test(text)) out.push({ kind: 'finished' });
    const k = parseRollouts(text);
    if (k !== null) out.push({ kind: 'rollouts', k });
    if (text.includes('=') || text.includes(':')) {
      const kv = keyValues(text);
      let step: number | undefined;
      for (const [key, v] of kv) {
        if (STEP_KEYS.has(key.toLowerCase()) && Number.isFinite(v)) {
          step = v;
          break;
        }
      }
      if (step !== undefined) {
        const isEval = /^\[eval\]/i.test(text);
        const values: Record<string, number> = {};
        for (const [key, v] of kv) {
          if (STEP_KEYS.has(key.toLowerCase())) continue;
          const name = canonicalKey(key, this.opts.keyMap);
          values[isEval ? `eval/${name}` : name] = v;
        }
        if (Object.keys(values).length > 0) out.push(stamp({ kind: 'metrics', step, values }));
      }
    }
    if (out.length === 0) return NOTHING;
    // A progress bar alone says nothing of the log's format (TRL's console draws hundreds).
    if (out.length > 1 || plan === null) this.seen['train-log']++;
    return out;
  }
}

const TEXT_EXT = /\.(?:log|txt|out|err)$/;

/** Free-text logs and console captures; also what a file named on the command line is when nothing else fits. */
export const textInput = defineInput({
  id: 'text',
  read: 'lines',
  named: (base) => TEXT_EXT.test(base),
  sniffed: () => true,
  create: (opts) => new TextLogParser(opts),
  wholeRun: true,
});
