/**
 * reward_history.jsonl (SPEC 3.2): one JSON object per line with a required `step`; components
 * under their aliases, possibly nested under `rewards`, the whole record possibly under `data`
 * (verl's file logger, see verl-jsonl.ts). The parser reports which of the two the file is.
 */
import { parseJsonLenient } from './json.js';
import { Flattener, toNumber } from './keys.js';
import { unwrapVerlRecord } from './verl-jsonl.js';
import type { FormatId, LineParser, LineResult, MetricRecord, ParserOptions } from './types.js';
import { defineInput } from './types.js';
import { NOTHING } from './types.js';

const META_KEYS: ReadonlySet<string> = new Set(['step', 'time', 'timestamp', 'data', 'global_step', '_step']);

export function parseTime(v: unknown): number | undefined {
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  if (typeof v === 'number' && Number.isFinite(v)) return v < 1e11 ? v * 1000 : v; // seconds or ms
  return undefined;
}

/** Reads one JSONL record into a metric record; `wrapped` says whether it came under `data`. */
export function readJsonRecord(
  text: string,
  keyMap: Record<string, string>,
  flattener = new Flattener(keyMap, META_KEYS),
): { record: MetricRecord; wrapped: boolean } | { error: string } | null {
  // JSON.parse skips surrounding whitespace itself: no copy of every line just to trim it.
  if (text.length === 0 || (text.charCodeAt(0) <= 32 && text.trim() === '')) return null;
  let obj: unknown;
  try {
    obj = parseJsonLenient(text);
  } catch {
    return { error: 'not valid JSON' };
  }
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return { error: 'not a JSON object' };
  const unwrapped = unwrapVerlRecord(obj as Record<string, unknown>);
  const wrapped = unwrapped !== null;
  const rec = unwrapped ?? (obj as Record<string, unknown>);
  const step = toNumber(rec['step'] ?? rec['global_step'] ?? rec['_step']);
  if (step === undefined || !Number.isFinite(step)) return { error: 'no numeric "step"' };
  // The common line (the keys of the line before, numbers) is read through the shape: no values object.
  const record = flattener.record(step, rec);
  const time = parseTime(rec['time'] ?? rec['timestamp']);
  if (time !== undefined) record.time = time;
  return { record, wrapped };
}

export class RewardHistoryParser implements LineParser {
  readonly kind = 'lines';
  private wrapped = 0;
  private plain = 0;
  private readonly flattener: Flattener;

  constructor(private readonly opts: ParserOptions) {
    this.flattener = new Flattener(opts.keyMap, META_KEYS);
  }

  format(): FormatId {
    return this.wrapped > this.plain ? 'verl-jsonl' : 'reward-history';
  }

  line(text: string): LineResult {
    const r = readJsonRecord(text, this.opts.keyMap, this.flattener);
    if (r === null) return NOTHING;
    if ('error' in r) return r;
    if (r.wrapped) this.wrapped++;
    else this.plain++;
    return [r.record];
  }
}

/** JSON lines: BAR-RAG's reward_history.jsonl, verl's file logger, any trainer's metrics JSONL. */
export const jsonlInput = defineInput({
  id: 'jsonl',
  read: 'lines',
  named: (base) => base.endsWith('.jsonl'),
  sniffed: (head) => {
    const t = head.trimStart();
    return t.startsWith('{"') || t.startsWith('{ "');
  },
  create: (opts) => new RewardHistoryParser(opts),
  wholeRun: true,
});
