/**
 * The pre-training filter as the logs tell it: accuracy histograms of the questions before and
 * after filtering (100 bins of 0.01), and the share of boundary questions (accuracy in [0.4, 0.6]).
 */
import type { FilterQuestion, FilterSummary } from '../parsers/types.js';

export const BINS = 100;
export const BOUNDARY_LOW = 0.4;
export const BOUNDARY_HIGH = 0.6;

export interface FilterJSON {
  pre: number[];
  post: number[];
  preN: number;
  postN: number;
  boundaryPre: number;
  boundaryPost: number;
  keptUnknown: number;
  before: number | null;
  after: number | null;
}

export function isBoundary(acc: number): boolean {
  return acc >= BOUNDARY_LOW && acc <= BOUNDARY_HIGH;
}

export class FilterStats {
  pre = new Array<number>(BINS).fill(0);
  post = new Array<number>(BINS).fill(0);
  preN = 0;
  postN = 0;
  boundaryPre = 0;
  boundaryPost = 0;
  /** Questions whose line did not say whether they were kept. */
  keptUnknown = 0;
  /** Counts from `[filter] before=N after=M`. */
  before: number | null = null;
  after: number | null = null;

  static bin(acc: number): number {
    return Math.min(BINS - 1, Math.max(0, Math.floor(acc * BINS + 1e-9)));
  }

  addQuestion(q: FilterQuestion): void {
    const b = FilterStats.bin(q.acc);
    const boundary = isBoundary(q.acc);
    this.pre[b]!++;
    this.preN++;
    if (boundary) this.boundaryPre++;
    if (q.kept === null) this.keptUnknown++;
    else if (q.kept) {
      this.post[b]!++;
      this.postN++;
      if (boundary) this.boundaryPost++;
    }
  }

  addSummary(s: FilterSummary): void {
    this.before = s.before;
    this.after = s.after;
  }

  /** Share of boundary questions before filtering (null without questions). */
  get preShare(): number | null {
    return this.preN > 0 ? this.boundaryPre / this.preN : null;
  }

  get postShare(): number | null {
    return this.postN > 0 ? this.boundaryPost / this.postN : null;
  }

  get empty(): boolean {
    return this.preN === 0 && this.before === null;
  }

  toJSON(): FilterJSON {
    const { pre, post, preN, postN, boundaryPre, boundaryPost, keptUnknown, before, after } = this;
    return { pre: [...pre], post: [...post], preN, postN, boundaryPre, boundaryPost, keptUnknown, before, after };
  }

  static from(j: FilterJSON): FilterStats {
    const f = new FilterStats();
    Object.assign(f, { ...j, pre: [...j.pre], post: [...j.post] });
    return f;
  }
}
