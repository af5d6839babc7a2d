/**
 * The pre-training filter as the logs tell it: accuracy histograms of the questions before and
 * after filtering (100 bins of 0.01), and the share of boundary questions (accuracy in [0.4, 0.6]).
 */
import type { FilterQuestion, FilterSummary } from '../parsers/types.js';
import { BOUNDARY_HIGH, BOUNDARY_LOW, isBoundary } from '../parsers/types.js';

export const BINS = 100;

/** Threshold candidates lie on this grid; values exactly on it are counted apart (see addQuestion). */
export const GRID = 20;

export interface FilterJSON {
  prePoints?: number[];
  preOff?: number[];
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

export class FilterStats {
  pre = new Array<number>(BINS).fill(0);
  post = new Array<number>(BINS).fill(0);
  preN = 0;
  postN = 0;
  boundaryPre = 0;
  boundaryPost = 0;
  /** Questions whose line did not say whether they were kept. */
  keptUnknown = 0;
  /**
   * For exact threshold arithmetic: values exactly on the 0.05 grid (`prePoints`, 21 of them) and
   * the 0.01 bins of every other value (`preOff`). A filter keeps unsolvable < acc < easy, so with
   * thresholds on the grid a question is kept or dropped as a whole bin or point.
   */
  prePoints = new Array<number>(GRID + 1).fill(0);
  preOff = new Array<number>(BINS).fill(0);
  /** Counts from `[filter] before=N after=M`. */
  before: number | null = null;
  after: number | null = null;

  static bin(acc: number): number {
    return Math.min(BINS - 1, Math.max(0, Math.floor(acc * BINS + 1e-9)));
  }

  addQuestion(q: FilterQuestion): void {
    const b = FilterStats.bin(q.acc);
    const boundary = isBoundary(q.acc);
    if (q.keptOnly === true) {
      this.post[b]!++;
      this.postN++;
      if (boundary) this.boundaryPost++;
      return;
    }
    this.pre[b]!++;
    this.preN++;
    const g = Math.round(q.acc * GRID);
    if (Math.abs(q.acc * GRID - g) < 1e-9 && g >= 0 && g <= GRID) this.prePoints[g]!++;
    else this.preOff[b]!++;
    if (boundary) this.boundaryPre++;
    if (q.kept === null) this.keptUnknown++;
    else if (q.kept) {
      this.post[b]!++;
      this.postN++;
      if (boundary) this.boundaryPost++;
    }
  }

  /** Counts of questions before and after; a source that gives one leaves the other as it was. */
  addSummary(s: FilterSummary): void {
    this.before = s.before ?? this.before;
    this.after = s.after ?? this.after;
  }

  /** Share of boundary questions before filtering (null without questions). */
  get preShare(): number | null {
    return this.preN > 0 ? this.boundaryPre / this.preN : null;
  }

  get postShare(): number | null {
    return this.postN > 0 ? this.boundaryPost / this.postN : null;
  }

  get empty(): boolean {
    return this.preN === 0 && this.postN === 0 && this.before === null && this.after === null;
  }

  /** Questions a filter keeping unsolvable < acc < easy would keep, and how many are boundary; thresholds on the grid. */
  keptWith(unsolvable: number, easy: number): { kept: number; boundary: number } {
    const u = Math.round(unsolvable * GRID);
    const e = Math.round(easy * GRID);
    let kept = 0;
    let boundary = 0;
    for (let g = u + 1; g < e; g++) {
      kept += this.prePoints[g]!;
      if (isBoundary(g / GRID)) boundary += this.prePoints[g]!;
    }
    const per = BINS / GRID;
    for (let i = u * per; i < e * per; i++) {
      kept += this.preOff[i]!;
      if (i >= BOUNDARY_LOW * BINS && i < BOUNDARY_HIGH * BINS) boundary += this.preOff[i]!;
    }
    return { kept, boundary };
  }

  toJSON(): FilterJSON {
    const { pre, post, preN, postN, boundaryPre, boundaryPost, keptUnknown, before, after, prePoints, preOff } = this;
    return {
      pre: [...pre],
      post: [...post],
      preN,
      postN,
      boundaryPre,
      boundaryPost,
      keptUnknown,
      before,
      after,
      prePoints: [...prePoints],
      preOff: [...preOff],
    };
  }

  static from(j: FilterJSON): FilterStats {
    const f = new FilterStats();
    Object.assign(f, { ...j, pre: [...j.pre], post: [...j.post] });
    f.prePoints = j.prePoints !== undefined ? [...j.prePoints] : new Array<number>(GRID + 1).fill(0);
    f.preOff = j.preOff !== undefined ? [...j.preOff] : [...j.pre];
    return f;
  }
}
