/**
 * Per-sample logs (BAR-RAG's reward debug logs write one block per evidence set) become per-step
 * series by grouping samples: a fixed number of samples per step, or a new step after a pause in
 * writing (a training step computes its rewards in one burst), or (runs/debug-steps.ts) the
 * samples written before the trainer logged each step.
 */
import { isBoundary, type MetricRecord } from './types.js';

interface Acc {
  n: number;
  sum: number;
  sumSq: number;
}

/** Samples taken together: per field its count, sum and sum of squares; the boundary hits. */
export interface SampleSetJSON {
  n: number;
  fields: Record<string, Acc>;
  boundaryHits: number;
  accN: number;
}

export function emptySet(): SampleSetJSON {
  return { n: 0, fields: {}, boundaryHits: 0, accN: 0 };
}

/** Adds one sample (non-finite values are left out of their field). */
export function addSample(s: SampleSetJSON, sample: Record<string, number>): void {
  s.n++;
  for (const key in sample) {
    const v = sample[key]!;
    if (!Number.isFinite(v)) continue;
    const a = (s.fields[key] ??= { n: 0, sum: 0, sumSq: 0 });
    a.n++;
    a.sum += v;
    a.sumSq += v * v;
  }
  const p = sample['accuracy'];
  if (p !== undefined && Number.isFinite(p)) {
    s.accN++;
    if (isBoundary(p)) s.boundaryHits++;
  }
}

/** Adds the samples of `b` to `a`. */
export function mergeSets(a: SampleSetJSON, b: SampleSetJSON): void {
  a.n += b.n;
  for (const key in b.fields) {
    const x = b.fields[key]!;
    const y = (a.fields[key] ??= { n: 0, sum: 0, sumSq: 0 });
    y.n += x.n;
    y.sum += x.sum;
    y.sumSq += x.sumSq;
  }
  a.boundaryHits += b.boundaryHits;
  a.accN += b.accN;
}

/**
 * A step's values from its samples: `samples`, each field's mean and (from two samples) its
 * standard deviation as `<field>_std`, and with `boundaryShare` the share of samples whose
 * accuracy is in the boundary zone.
 */
export function setValues(s: SampleSetJSON, boundaryShare: boolean): Record<string, number> {
  const values: Record<string, number> = { samples: s.n };
  for (const key in s.fields) {
    const a = s.fields[key]!;
    const mean = a.sum / a.n;
    values[key] = mean;
    // Values are bounded rewards in [-2, 2]: the sum-of-squares form is exact enough here.
    if (a.n > 1) values[`${key}_std`] = Math.sqrt(Math.max(0, (a.sumSq - a.n * mean * mean) / (a.n - 1)));
  }
  if (boundaryShare && s.accN > 0) values['boundary_share'] = s.boundaryHits / s.accN;
  return values;
}

export interface BucketState extends SampleSetJSON {
  step: number;
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
    return { step, ...emptySet(), firstTime: null, lastTime: null };
  }

  /** Adds one sample; returns the previous step's record when this sample starts a new step. */
  add(sample: Record<string, number>, time: number | null): MetricRecord | null {
    let closed: MetricRecord | null = null;
    const s = this.s;
    const full = this.samplesPerStep > 0 && s.n >= this.samplesPerStep;
    const paused = this.samplesPerStep <= 0 && time !== null && s.lastTime !== null && time - s.lastTime > this.gapMs;
    if (s.n > 0 && (full || paused)) closed = this.close();
    const b = this.s;
    if (time !== null) {
      b.firstTime ??= time;
      b.lastTime = time;
    }
    addSample(b, sample);
    return closed;
  }

  /** Emits the open step, if any. */
  close(): MetricRecord | null {
    const b = this.s;
    if (b.n === 0) return null;
    const rec: MetricRecord = { kind: 'metrics', step: b.step + 1, values: setValues(b, this.boundaryShare) };
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
