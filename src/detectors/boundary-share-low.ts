/**
 * boundary-share-low: the filter throws away the questions the method needs. Healthy post-filter
 * boundary share is 25%-35%; below 25% is a warning, and critical when the filter also cut the
 * share by half or more from the pre-filter share (the thresholds are wrong, e.g. an easy
 * threshold that drops everything above 0.45).
 */
import { shareFacts, type ShareParams } from './boundary-share.js';
import type { Detector, Params } from './types.js';
import { pct } from '../util/format.js';

interface P extends Params, ShareParams {
  min_share: number;
}

export const boundaryShareLow: Detector<P> = {
  id: 'boundary-share-low',
  cleared: 'the post-filter boundary share is back at 25% or more',
  scope: 'run',
  immediate: true,
  description: 'Post-filter share of boundary questions (accuracy in [0.4, 0.6]) below min_share.',
  defaults: { enabled: true, severity: 'warning', min_share: 0.25, min_questions: 50, band_low: 0.25, band_high: 0.35 },
  counts: ['min_questions'],
  every: () => 1,
  detect(run, p) {
    const f = shareFacts(run, p);
    if (f === null || !(f.post < p.min_share)) return [];
    const halved = f.pre !== null && f.post <= f.pre / 2;
    const before = f.pre === null ? '' : ` (${pct(f.pre)} before filtering)`;
    return [
      {
        round: null,
        step: null,
        severity: halved ? 'critical' : p.severity,
        message: `Only ${pct(f.post)} of the questions left after the filter are boundary questions${before}: the filter throws away the questions BAR-RAG learns from.`,
        evidence: { ...f.evidence, min_share: p.min_share, halved },
        recommendation: f.recommendation,
      },
    ];
  },
};
