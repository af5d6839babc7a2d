/**
 * Per-sample logs (BAR-RAG's reward debug logs write one block per evidence set) become per-step
 * series by grouping consecutive samples: a fixed number of samples per step, or a new step
 * after a pause in writing (a training step computes its rewards in one burst).
 */
import { isBoundary, type MetricRecord } from './types.js';

interface Acc {
  n: number;
  sum: number;
  sumSq: number;
}

export interface BucketState {
  step: number;
  n: number;
  fields: Record<string, Acc>;
  boundaryHits: number;
  accN: number;
  firstTime: number | null;
  lastTime: number | null;
}

export class SampleBuckets {
  private s: BucketState = SampleBuckets.empty(0);

  constructor(
    private readonly samplesPerStep: number,
    private readonly gapMs: number,
    /** Selector samples: also report the share of samples with accuracy in [0.4, 0.6]. */
    private readonly boundaryShare = false,
  ) {}

  private static empty(step: number): BucketState {
    return { step, n: 0, fields: {}, boundaryHits: 0, accN: 0, firstTime: null, lastTime: null };
  }

  /** Adds one sample; returns the previous step's record when this sample starts a new step. */
  add(sample: Record<string, number>, time: number | null): MetricRecord | null {
    let closed: MetricRecord | null = null;
    const s = this.s;
    const full = this.samplesPerStep > 0 && s.n >= this.samplesPerStep;
    const paused = this.samplesPerStep <= 0 && time !== null && s.lastTime !== null && time - s.lastTime > this.gapMs;
    if (s.n > 0 && (full || paused)) closed = this.close();
    const b = this.s;
    b.n++;
    if (time !== null) {
      b.firstTime ??= time;
      b.lastTime = time;
    }
    for (const key in sample) {
      const v = sample[key]!;
      if (!Number.isFinite(v)) continue;
      const a = (b.fields[key] ??= { n: 0, sum: 0, sumSq: 0 });
      a.n++;
      a.sum += v;
      a.sumSq += v * v;
    }
    const p = sample['accuracy'];
    if (p !== undefined && Number.isFinite(p)) {
      b.accN++;
      if (isBoundary(p)) b.boundaryHits++;
    }
    return closed;
  }

  /** Emits the open step, if any. */
  close(): MetricRecord | null {
    const b = this.s;
    if (b.n === 0) return null;
    const values: Record<string, number> = { samples: b.n };
    for (const key in b.fields) {
      const a = b.fields[key]!;
      const mean = a.sum / a.n;
      values[key] = mean;
      // Values are bounded rewards in [-2, 2]: the sum-of-squares form is exact enough here.
      if (a.n > 1) values[`${key}_std`] = Math.sqrt(Math.max(0, (a.sumSq - a.n * mean * mean) / (a.n - 1)));
    }
    if (this.boundaryShare && b.accN > 0) values['boundary_share'] = b.boundaryHits / b.accN;
    const rec: MetricRecord = { kind: 'metrics', step: b.step + 1, values };
    if (b.lastTime !== null) rec.time = b.lastTime;
    this.s = SampleBuckets.empty(b.step + 1);
    this.s.lastTime = b.lastTime;
    return rec;
  }

  snapshot(): BucketState {
    return this.s;
  }

  restore(state: BucketState): void {
    if (state !== null && typeof state === 'object' && typeof state.step === 'number') this.s = state;
  }
}
