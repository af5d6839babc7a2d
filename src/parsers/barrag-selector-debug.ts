/**
 * BAR-RAG's selector reward debug log (`debug_logs/selector_reward_debug_*.log`, written by
 * verl/utils/reward_score/selector.py): one block between `=====` rules per sampled evidence set,
 * with `num_correct=a/K accuracy=p`, `unc_reward` (the boundary reward), `rel_reward`,
 * `format_bonus`, `count_penalty` and `>>> FINAL REWARD: x <<<`. Samples are grouped into steps
 * (buckets.ts), or given with their times to be matched to the trainer's steps (SampleRecord).
 */
import { SampleBuckets, type BucketState } from './buckets.js';
import { cleanLine } from './text.js';
import type { FormatId, LineParser, LineResult, ParsedRecord, ParserOptions, RunSettings } from './types.js';
import { defineInput } from './types.js';
import { NOTHING } from './types.js';

const RULE = /^={20,}\s*$/;
const FIELDS: readonly [RegExp, string][] = [
  [/^unc_reward=([-+\d.eE]+|nan|inf|-inf)/, 'boundary'],
  [/^rel_reward=([-+\d.eE]+|nan|inf|-inf)/, 'relevance'],
  [/^format_bonus=([-+\d.eE]+|nan|inf|-inf)/, 'format'],
  [/^count_penalty=([-+\d.eE]+|nan|inf|-inf)/, 'count'],
];
const ACCURACY = /num_correct=(\d+)\/(\d+)\s+accuracy=([-+\d.eE]+|nan)/;
const FINAL = />>> FINAL REWARD:\s*([-+\d.eE]+|nan|inf|-inf)\s*<<</i;
const K_LINE = /GENERATOR ROLLOUTS \(K=(\d+)\)/;
const CENTER = /\bcenter=([\d.]+)/;
const TOTAL = /^total = ([\d.]+)\*[-\d.]+ \+ ([\d.]+)\*[-\d.]+/;
const FORMAT_VALID = /^format_valid=(True|False)/;
const SELECTED = /^selected_docs=.*\(num=(\d+), target=(\d+)\)/;

function num(s: string): number {
  const l = s.toLowerCase();
  if (l === 'nan') return NaN;
  if (l === 'inf') return Infinity;
  if (l === '-inf') return -Infinity;
  return Number(s);
}

interface Sample {
  values: Record<string, number>;
  time: number | null;
  open: boolean;
}

export class BarragSelectorDebugParser implements LineParser {
  readonly kind = 'lines';
  private readonly buckets: SampleBuckets;
  private sample: Sample = { values: {}, time: null, open: false };
  private k: number | null = null;
  private settings: RunSettings = {};
  private readonly byTime: boolean;

  constructor(opts: ParserOptions) {
    this.buckets = new SampleBuckets(opts.debugSamplesPerStep, opts.debugStepGapMs, true);
    this.byTime = opts.samplesByTime === true;
  }

  format(): FormatId {
    return 'barrag-selector-debug';
  }

  line(raw: string): LineResult {
    const { text: t, time } = cleanLine(raw);
    const text = t.trim();
    if (RULE.test(text)) return this.endSample();
    if (text === '') return NOTHING;
    const s = this.sample;
    s.open = true;
    if (time !== undefined) s.time ??= time;
    const out: ParsedRecord[] = [];
    const k = K_LINE.exec(text);
    if (k !== null) {
      const kv = Number(k[1]);
      s.values['rollouts'] = kv;
      if (kv !== this.k) {
        this.k = kv;
        out.push({ kind: 'rollouts', k: kv });
      }
      return out;
    }
    const acc = ACCURACY.exec(text);
    if (acc !== null) {
      s.values['accuracy'] = num(acc[3]!);
      return NOTHING;
    }
    const fin = FINAL.exec(text);
    if (fin !== null) {
      s.values['total'] = num(fin[1]!);
      return NOTHING;
    }
    if (text === 'FORMAT INVALID') s.values['format_valid'] = 0;
    const fv = FORMAT_VALID.exec(text);
    if (fv !== null) s.values['format_valid'] = fv[1] === 'True' ? 1 : 0;
    const sel = SELECTED.exec(text);
    if (sel !== null) s.values['selected'] = Number(sel[1]);
    for (const [re, name] of FIELDS) {
      const m = re.exec(text);
      if (m === null) continue;
      s.values[name] = num(m[1]!);
      const c = name === 'boundary' ? CENTER.exec(text) : null;
      if (c !== null && this.settings.targetAccuracy !== Number(c[1])) {
        this.settings = { ...this.settings, targetAccuracy: Number(c[1]) };
        out.push({ kind: 'settings', settings: { targetAccuracy: Number(c[1]) } });
      }
      return out;
    }
    const total = TOTAL.exec(text);
    if (total !== null) {
      const weights = { boundary: Number(total[1]), relevance: Number(total[2]) };
      const prev = this.settings.weights;
      if (prev?.boundary !== weights.boundary || prev?.relevance !== weights.relevance) {
        this.settings = { ...this.settings, weights };
        out.push({ kind: 'settings', settings: { weights } });
      }
    }
    return out;
  }

  private endSample(): LineResult {
    const s = this.sample;
    this.sample = { values: {}, time: null, open: false };
    if (!s.open || Object.keys(s.values).length === 0) return NOTHING;
    if (this.byTime && s.time !== null) return [{ kind: 'sample', values: s.values, time: s.time }];
    const closed = this.buckets.add(s.values, s.time);
    return closed === null ? NOTHING : [closed];
  }

  flush(): ParsedRecord[] {
    const r = this.buckets.close();
    return r === null ? [] : [r];
  }

  snapshot(): unknown {
    return { buckets: this.buckets.snapshot(), sample: this.sample, k: this.k, settings: this.settings };
  }

  restore(state: unknown): void {
    const s = state as { buckets: BucketState; sample: Sample; k: number | null; settings: RunSettings };
    this.buckets.restore(s.buckets);
    if (s.sample !== undefined) this.sample = s.sample;
    this.k = s.k ?? null;
    this.settings = s.settings ?? {};
  }
}

export const barragSelectorDebugInput = defineInput({
  id: 'barrag-selector-debug',
  read: 'lines',
  named: (base) => /^selector_reward_debug.*\.log$/.test(base),
  sniffed: (head) => head.includes('REWARD COMPUTATION') || head.includes('FINAL REWARD'),
  create: (opts) => new BarragSelectorDebugParser(opts),
  role: 'selector',
  idleFlush: true,
  samples: true,
});
