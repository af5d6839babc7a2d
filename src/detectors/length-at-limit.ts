/**
 * length-at-limit: most completions are cut at the generation limit, sustained: the reward is
 * computed on truncated answers (often scored 0 or graded on a prefix) and the policy learns to
 * ramble. Read from the clipped ratio (verl `response_length/clip_ratio`, TRL
 * `completions/clipped_ratio`), or, where none is logged, from a mean length pinned at the
 * maximum length.
 */
import { seriesFor } from '../runs/quantities.js';
import { r4, recentMedian, type Recent } from './levels.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  window: number;
  /** The median clipped ratio over the window at or above this fires. */
  clipped: number;
  /** Without a clipped ratio: the mean length at or above this fraction of the max length. */
  pinned: number;
}

export const lengthAtLimit: Detector<P> = {
  id: 'length-at-limit',
  cleared: 'most completions are no longer cut at the length limit',
  scope: 'round',
  description: 'Most completions are cut at the generation limit (clipped ratio >= 0.8, or the mean length pinned at the max), sustained.',
  defaults: { enabled: true, severity: 'warning', window: 5, clipped: 0.8, pinned: 0.98 },
  counts: ['window'],
  every: () => 1,
  reads: ['clip_ratio', 'response_length'],
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const clip = seriesFor(r, 'clip_ratio');
      const len = seriesFor(r, 'response_length');
      // Read only where a finding needs it: most evaluations end at the first test.
      let lenNow: Recent | null = null;
      let evidence: Record<string, unknown>;
      let what: string;
      let step: number;
      let name: string;
      if (clip !== null) {
        const now = recentMedian(clip.stats, p.window);
        if (now === null || !(now.median >= p.clipped)) continue;
        name = clip.name;
        step = now.lastStep;
        what = `${Math.round(now.median * 100)}% of completions are cut at the length limit (${clip.name}, median of the last ${p.window} steps)`;
        evidence = { series: clip.name, clipped_ratio: r4(now.median), window: p.window, threshold: p.clipped };
      } else {
        const max = seriesFor(r, 'response_length_max');
        const maxNow = max === null ? null : recentMedian(max.stats, p.window);
        lenNow = len === null ? null : recentMedian(len.stats, p.window);
        if (len === null || lenNow === null || max === null || maxNow === null) continue;
        const limit = max.stats.summary.max;
        if (!(limit > 0) || !(lenNow.median >= p.pinned * limit)) continue;
        name = len.name;
        step = lenNow.lastStep;
        what = `the mean length ${lenNow.median.toFixed(0)} sits at the longest completion seen (${limit.toFixed(0)}): nearly every completion is cut`;
        evidence = { series: len.name, mean_length: r4(lenNow.median), max_length: limit, window: p.window, threshold: p.pinned };
      }
      lenNow ??= len === null ? null : recentMedian(len.stats, p.window);
      if (lenNow !== null) evidence['mean_length'] = r4(lenNow.median);
      out.push({
        round: r.round,
        step,
        severity: p.severity,
        message: `${what[0]!.toUpperCase()}${what.slice(1)}: rewards are computed on truncated answers.`,
        evidence,
        recommendation:
          'Raise the generation limit (verl data.max_response_length, TRL max_completion_length) or penalise overlong answers (DAPO overlong reward shaping, or mask truncated completions from the loss); check a sample for repetition loops.',
        series: { role: r.role, round: r.round, name },
      });
    }
    return out;
  },
};
