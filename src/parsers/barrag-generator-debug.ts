/**
 * BAR-RAG's generator reward debug log (`reward_debug_*.log`, verl/utils/reward_score/generator.py):
 * one block per answer with a line `fmt=<0|1> reward=<r> max_f1=<f1> max_em=<em>`.
 * Exact match is the generator's accuracy. Samples are grouped into steps like the selector log.
 */
import { SampleBuckets, type BucketState } from './buckets.js';
import { keyValues } from './train-log.js';
import { cleanLine } from './text.js';
import type { FormatId, LineParser, LineResult, ParsedRecord, ParserOptions } from './types.js';
import { defineInput } from './types.js';
import { NOTHING } from './types.js';

const NAMES: Record<string, string> = { fmt: 'format', reward: 'reward', max_f1: 'f1', max_em: 'accuracy' };

export class BarragGeneratorDebugParser implements LineParser {
  readonly kind = 'lines';
  private readonly buckets: SampleBuckets;
  private readonly byTime: boolean;

  constructor(opts: ParserOptions) {
    this.buckets = new SampleBuckets(opts.debugSamplesPerStep, opts.debugStepGapMs);
    this.byTime = opts.samplesByTime === true;
  }

  format(): FormatId {
    return 'barrag-generator-debug';
  }

  line(raw: string): LineResult {
    const { text, time } = cleanLine(raw);
    if (!text.startsWith('fmt=')) return NOTHING;
    const sample: Record<string, number> = {};
    for (const [key, v] of keyValues(text)) {
      const name = NAMES[key];
      if (name !== undefined) sample[name] = v;
    }
    if (sample['reward'] === undefined) return { error: 'generator debug line without reward' };
    if (this.byTime && time !== undefined) return [{ kind: 'sample', values: sample, time }];
    const closed = this.buckets.add(sample, time ?? null);
    return closed === null ? NOTHING : [closed];
  }

  flush(): ParsedRecord[] {
    const r = this.buckets.close();
    return r === null ? [] : [r];
  }

  snapshot(): unknown {
    return this.buckets.snapshot();
  }

  restore(state: unknown): void {
    this.buckets.restore(state as BucketState);
  }
}

export const barragGeneratorDebugInput = defineInput({
  id: 'barrag-generator-debug',
  read: 'lines',
  named: (base) => /^reward_debug.*\.log$/.test(base),
  create: (opts) => new BarragGeneratorDebugParser(opts),
  role: 'generator',
  idleFlush: true,
  samples: true,
});
