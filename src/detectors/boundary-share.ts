/**
 * The two boundary-share detectors look at the same numbers: the share of questions with
 * accuracy in [0.4, 0.6] before and after the pre-training filter (from `[filter]` lines).
 */
import type { RunState } from '../runs/run.js';
import { describeSuggestion, suggestThresholds } from './filter-thresholds.js';
import { pct } from '../util/format.js';

export interface ShareParams {
  /** Post-filter questions needed before judging. */
  min_questions: number;
  band_low: number;
  band_high: number;
}

export interface ShareFacts {
  pre: number | null;
  post: number;
  preN: number;
  postN: number;
  evidence: Record<string, unknown>;
  recommendation: string;
}

export function shareFacts(run: RunState, p: ShareParams): ShareFacts | null {
  const f = run.filter;
  const post = f.postShare;
  if (post === null || f.postN < p.min_questions) return null;
  const pre = f.preShare;
  const current = { easy: run.settings.easyThreshold, unsolvable: run.settings.unsolvableThreshold };
  const s = suggestThresholds(f, [p.band_low, p.band_high], current);
  const evidence: Record<string, unknown> = {
    boundary_share_before: pre === null ? null : +pre.toFixed(4),
    boundary_share_after: +post.toFixed(4),
    questions_before: f.preN,
    questions_after: f.postN,
    band: [p.band_low, p.band_high],
    thresholds: current,
  };
  if (f.before !== null) evidence['filter_summary'] = { before: f.before, after: f.after };
  if (s !== null)
    evidence['suggested'] = {
      easy_threshold: s.easy,
      unsolvable_threshold: s.unsolvable,
      boundary_share: +s.share.toFixed(4),
      kept: s.kept,
    };
  const recommendation =
    s !== null
      ? describeSuggestion(s, current)
      : f.preN === 0
        ? `Only the kept questions' accuracies are known (the filter's output lists the kept samples): to have thresholds computed from this run's data, keep every question's mean accuracy with the filter's output (or log \`[filter] id=... acc=... kept=...\` lines); meanwhile check that the thresholds keep the boundary zone whole (mean_min below 0.4, mean_max above 0.6).`
        : `No easy/unsolvable pair reaches a ${pct(p.band_low)}-${pct(p.band_high)} boundary share on this run's pre-filter accuracies; check the filter code and the accuracy it computes.`;
  return { pre, post, preN: f.preN, postN: f.postN, evidence, recommendation };
}
