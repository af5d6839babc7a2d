/**
 * boundary-share-high: the training set holds too many hard questions (post-filter boundary share
 * above 40%). Critical when the generator's accuracy is also falling.
 */
import { shareFacts, type ShareParams } from './boundary-share.js';
import { accuracyDecline } from './generator-regression.js';
import type { Detector, Params } from './types.js';
import { pct } from '../util/format.js';

interface P extends Params, ShareParams {
  max_share: number;
}

export const boundaryShareHigh: Detector<P> = {
  id: 'boundary-share-high',
  cleared: 'the post-filter boundary share is back at 40% or less',
  scope: 'run',
  immediate: true,
  description: 'Post-filter share of boundary questions above max_share; critical with falling accuracy.',
  defaults: { enabled: true, severity: 'warning', max_share: 0.4, min_questions: 50, band_low: 0.25, band_high: 0.35 },
  counts: ['min_questions'],
  every: () => 8,
  detect(run, p) {
    const f = shareFacts(run, p);
    if (f === null || !(f.post > p.max_share)) return [];
    const decline = accuracyDecline(run);
    const falling = decline !== null;
    return [
      {
        round: null,
        step: null,
        severity: falling ? 'critical' : p.severity,
        message: `${pct(f.post)} of the questions left after the filter are boundary questions (above ${pct(p.max_share)})${falling ? ' and the generator accuracy is falling' : ''}: the training set holds too many hard questions.`,
        evidence: {
          ...f.evidence,
          max_share: p.max_share,
          accuracy_falling: falling,
          ...(decline !== null ? { accuracy_decline: decline } : {}),
        },
        recommendation: f.recommendation,
      },
    ];
  },
};
