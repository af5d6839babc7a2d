/**
 * frozen-generator: the generator was not updated between rounds, so selector round k+1 aims at
 * an old boundary. Three signs: generator round k is missing or empty (or stopped far short of
 * round k-1) while selector round k+1 trains; selector round k+1's smoothed boundary curve
 * matches round k's within the within-round noise (and so does its accuracy on the selected
 * evidence, where it is logged); or the generator's accuracy curve repeats the previous round's,
 * starting over rather than carrying on. "Within the noise" is an NRMSE: the RMS difference of
 * the two curves' segment means over the RMS difference noise alone gives (the segment means' own
 * noise, from neighbour differences), and means that Welch's test cannot tell apart.
 *
 * The selector's curves are second-hand evidence, and count only when the selector started over
 * (a selector at a plateau repeats itself whatever the generator did). Where generator round k
 * has logs they decide: a repeat of its own (critical), or a move (its accuracy differs from the
 * round before without starting over, or, with no earlier round, it trained within its round),
 * against which a repeating selector is only a warning asking whether the selector's rollouts load
 * the new checkpoint; logs that say neither leave the selector's repeat unreported.
 */
import type { RoundState } from '../runs/round.js';
import { periodic } from './boundary-oscillation.js';
import { recent, roundsOf, segmentMeans, seriesSpan } from './queries.js';
import { mannKendall, moments, noiseSd, normalCdf, theilSen, welch } from '../stats/inference.js';
import { SEVERITY_RANK, type Detector, type Draft, type Params } from './types.js';
import { round3 } from '../util/format.js';

interface P extends Params {
  /** Steps each round needs before curves are compared (and before a missing round counts). */
  min_steps: number;
  /** Segments the common span is cut into. */
  segments: number;
  /** NRMSE at or below this: the curves are the same. */
  max_nrmse: number;
  /** A generator round shorter than this fraction of the previous one stopped short. */
  short_fraction: number;
  /** Means that differ at this two-sided level are not "the same curve" (an improvement, or a change). */
  alpha: number;
}

export interface CurveMatch {
  nrmse: number;
  rmse: number;
  /** Two-sided p-value that the two rounds' means differ (Welch, on segment means). */
  p_means_differ: number;
  /** The noise of one segment mean, from the differences of neighbouring segment means. */
  segment_noise: number;
  span_steps: number;
  segments: number;
  /** Mean of b's segment means minus a's: 0 when b starts over, a's own move when b carries on. */
  shift: number;
  /** How far a's curve moved within its round (Theil-Sen slope of its segment means x span). */
  move_within: number;
}

/** Means of `parts` equal slices of a series' first `span` steps, from the kept points, or null when they are no longer kept. */
function rawSegmentMeans(r: RoundState, name: string, span: number, parts: number): number[] | null {
  const s = r.series.get(name);
  const first = s === undefined ? undefined : seriesSpan(r, name)?.first;
  if (s === undefined || first === undefined) return null;
  const p = s.history.points();
  if (p.steps[0] !== first) return null;
  const sums = new Array<number>(parts).fill(0);
  const counts = new Array<number>(parts).fill(0);
  for (let i = 0; i < p.steps.length; i++) {
    const at = p.steps[i]! - first;
    if (at >= span) break;
    const j = Math.min(parts - 1, Math.floor((at / span) * parts));
    sums[j]! += p.values[i]!;
    counts[j]!++;
  }
  if (counts.some((c) => c === 0)) return null;
  return sums.map((x, i) => x / counts[i]!);
}

/**
 * How closely round b's curve of `name` repeats round a's over their common span: the RMS
 * difference of their segment means over the RMS difference noise alone would give. Noise is
 * measured at the scale of a segment, so autocorrelated training noise is accounted for.
 */
export function curveMatch(a: RoundState, b: RoundState, name: string, segments: number, maxSpan = Infinity): CurveMatch | null {
  const spanA = seriesSpan(a, name);
  const spanB = seriesSpan(b, name);
  if (spanA === null || spanB === null) return null;
  const span = Math.min(spanA.steps, spanB.steps, maxSpan);
  // Over a short span the kept points give exact segment means that never change as the round
  // grows (the whole-round curve merges its buckets as it grows); the curve serves longer spans.
  const ma = (span <= maxSpan ? rawSegmentMeans(a, name, span, segments) : null) ?? segmentMeans(a, name, span, segments);
  const mb = (span <= maxSpan ? rawSegmentMeans(b, name, span, segments) : null) ?? segmentMeans(b, name, span, segments);
  if (ma === null || mb === null) return null;
  // Noise of a segment mean: sd of neighbour differences / sqrt(2), blind to smooth trends.
  const noise = Math.sqrt(noiseSd(ma) ** 2 + noiseSd(mb) ** 2);
  if (!(noise > 0)) return null;
  let ss = 0;
  for (let i = 0; i < segments; i++) ss += (ma[i]! - mb[i]!) ** 2;
  const rmse = Math.sqrt(ss / segments);
  const t = welch(moments(ma), moments(mb));
  const pDiffer = 2 * Math.min(t.pLower, t.pHigher);
  const shift = moments(mb).mean - moments(ma).mean;
  const moveWithin = theilSen(ma) * (segments - 1);
  return {
    nrmse: round3(rmse / noise),
    rmse: round3(rmse),
    p_means_differ: +pDiffer.toPrecision(3),
    segment_noise: round3(noise / Math.SQRT2),
    span_steps: span,
    segments,
    shift: round3(shift),
    move_within: round3(moveWithin),
  };
}

/**
 * Whether generator round b started over from where round a started rather than carrying on from
 * where a ended: both rounds moved within themselves the same way (Stouffer's combination of
 * their serial-corrected Mann-Kendall z), and b's level is nearer a's than a's level plus a's move.
 */
function startedOver(a: RoundState, b: RoundState, m: CurveMatch, alpha: number, name = 'accuracy', bSteps = Infinity): boolean {
  const z = (mannKendall(recent(a, name).values, true).z + mannKendall(recent(b, name).values.slice(0, bSteps), true).z) / Math.SQRT2;
  return 2 * normalCdf(-Math.abs(z)) < alpha && Math.abs(m.shift) < Math.abs(m.shift - m.move_within);
}

/**
 * What the generator's own logs say about rounds k-2 -> k-1: it moved when its accuracy differs
 * from the round before without starting over, or when it trained within round k-1 (a
 * significant trend of its accuracy) and there is no round k-2 it could have started over from.
 */
function generatorMoved(
  before: RoundState | undefined,
  g: RoundState | undefined,
  m: CurveMatch | null,
  p: P,
): { reason: string; evidence: Record<string, unknown> } | null {
  if (g === undefined || g.steps < p.min_steps || !g.series.has('accuracy')) return null;
  if (m !== null && before !== undefined) {
    if (m.p_means_differ < p.alpha && !startedOver(before, g, m, p.alpha))
      return {
        reason: `generator round ${g.round}'s accuracy differs from round ${before.round}'s by ${m.shift} (p=${m.p_means_differ})`,
        evidence: { kind: 'between-rounds', rounds: [before.round, g.round], shift: m.shift, p_means_differ: m.p_means_differ },
      };
    return null;
  }
  if (before !== undefined) return null;
  const values = recent(g, 'accuracy').values;
  const mk = mannKendall(values, true);
  const pTrend = 2 * Math.min(mk.pUp, mk.pDown);
  if (pTrend >= p.alpha) return null;
  const change = round3(theilSen(values) * (values.length - 1));
  return {
    reason: `its accuracy moved by ${change} within generator round ${g.round} (Mann-Kendall z=${mk.z.toFixed(1)})`,
    evidence: { kind: 'within-round', round: g.round, theil_sen_change: change, mann_kendall_z: round3(mk.z) },
  };
}

function iso(t: number | null): string | null {
  return t === null ? null : new Date(t).toISOString();
}

export const frozenGenerator: Detector<P> = {
  id: 'frozen-generator',
  cleared: 'the rounds no longer repeat each other and no generator round is missing',
  scope: 'round',
  description: 'The generator did not change between rounds (missing round, repeated curves).',
  defaults: { enabled: true, severity: 'critical', min_steps: 64, segments: 16, max_nrmse: 1.5, short_fraction: 0.5, alpha: 0.01 },
  counts: ['min_steps', 'segments'],
  every: () => 8,
  detect(run, p) {
    const out: Draft[] = [];
    const selectors = roundsOf(run, 'selector').filter((r) => r.round !== null);
    const generators = roundsOf(run, 'generator').filter((r) => r.round !== null);
    const gen = new Map(generators.map((g) => [g.round!, g]));
    const sel = new Map(selectors.map((s) => [s.round!, s]));
    // Selector round k is judged once, on its first min_steps steps against round k-1's: the
    // verdict then never changes as the round grows, so watch gives what analyze gives (a basis
    // that grew with the round flipped near the threshold). Generator rounds k-2 and k-1 are
    // complete by the time selector round k runs: they are compared whole.
    const curves = (list: RoundState[], name: string, k: number, maxSpan = Infinity): CurveMatch | null => {
      const a = list.find((r) => r.round === k - 1);
      const b = list.find((r) => r.round === k);
      if (a === undefined || b === undefined) return null;
      // The series' own steps, not the round's: a train.log read ahead of the reward_history.jsonl
      // of the same steps makes the round longer than the series compared.
      if ((seriesSpan(a, name)?.steps ?? 0) < p.min_steps || (seriesSpan(b, name)?.steps ?? 0) < p.min_steps) return null;
      // The smoothed curve of a swinging series is the swing, not the level: not comparable.
      if (periodic(recent(a, name).values) || periodic(recent(b, name).values.slice(0, maxSpan))) return null;
      return curveMatch(a, b, name, p.segments, maxSpan);
    };
    const rounds = new Set<number>([...selectors.map((s) => s.round!), ...generators.map((g) => g.round! + 1)]);
    for (const k of [...rounds].sort((a, b) => a - b)) {
      if (k < 2) continue;
      const s = sel.get(k);
      const signs: string[] = [];
      const evidence: Record<string, unknown> = {};
      let since: number | null = null;
      let step: number | null = null;
      // 1. The artifact: generator round k-1 while selector round k trains.
      if (s !== undefined && s.steps >= p.min_steps && generators.length > 0) {
        const g = gen.get(k - 1);
        const prev = gen.get(k - 2);
        if (g === undefined || g.steps === 0) {
          signs.push(
            `generator round ${k - 1} ${g === undefined ? 'has no output' : 'is empty'} while selector round ${k} has trained ${s.steps} steps`,
          );
          evidence['generator_round'] = { round: k - 1, state: g === undefined ? 'missing' : 'empty' };
          const last = prev ?? generators.filter((x) => x.round! < k).pop();
          since = last?.lastTime ?? last?.lastSeen ?? null;
          step = s.firstStep! + p.min_steps - 1;
        } else if (
          prev !== undefined &&
          prev.steps > 0 &&
          g.steps < p.short_fraction * prev.steps &&
          (g.lastSeen ?? 0) <= (s.firstSeen ?? 0)
        ) {
          signs.push(
            `generator round ${k - 1} stopped after ${g.steps} steps (round ${k - 2} ran ${prev.steps}) before selector round ${k} started`,
          );
          evidence['generator_round'] = { round: k - 1, state: 'stopped short', steps: g.steps, previous_steps: prev.steps };
          since = g.lastTime ?? g.lastSeen;
          step = s.firstStep! + p.min_steps - 1;
        }
      }
      // The generator's side: did it move between selector rounds k-1 and k? Its own accuracy
      // differs from the round before (and did not start over), or it trained in round k-1 (a
      // trend within the round) and carried on from its round k-2 rather than starting over.
      const gm = curves(generators, 'accuracy', k - 1);
      const moved = s === undefined || s.steps < p.min_steps ? null : generatorMoved(gen.get(k - 2), gen.get(k - 1), gm, p);
      // 2. Selector round k repeats round k-1's boundary curve, and the accuracy on the evidence it
      // picks repeats too (a restarted selector that meets a changed generator gets a different
      // accuracy for the same evidence), and it repeats by starting over: its curve moved within
      // round k-1 and round k begins where k-1 began. A selector that carries on at a plateau
      // repeats its curve within the noise whatever the generator did (it tracks the boundary).
      const sm = s === undefined ? null : curves(selectors, 'boundary', k, p.min_steps);
      const am = sm === null ? null : curves(selectors, 'accuracy', k, p.min_steps);
      const restarted =
        sm === null ||
        s === undefined ||
        sm.nrmse > p.max_nrmse ||
        sm.p_means_differ < p.alpha ||
        (am !== null && am.p_means_differ < p.alpha)
          ? undefined
          : (['accuracy', 'boundary'] as const).find((name) => {
              const m = name === 'boundary' ? sm : am;
              return m !== null && startedOver(sel.get(k - 1)!, s, m, p.alpha, name, p.min_steps);
            });
      if (restarted !== undefined && sm !== null) {
        signs.push(
          `selector round ${k}'s boundary reward curve repeats round ${k - 1}'s (NRMSE ${sm.nrmse} against the within-round noise)` +
            (am !== null ? ` and so does its accuracy on the selected evidence (NRMSE ${am.nrmse})` : '') +
            `, starting over where round ${k - 1} began`,
        );
        evidence['selector_curves'] = { rounds: [k - 1, k], ...sm, max_nrmse: p.max_nrmse, started_over: restarted };
        if (am !== null) evidence['selector_accuracy_curves'] = { rounds: [k - 1, k], ...am };
        step ??= s?.lastStep ?? null;
      }
      // 3. Generator round k-1 repeats round k-2's accuracy curve. A reset generator still learns
      // within each round, the same way twice, and starts each round from the same level: two flat
      // curves at one level, one rising and one falling within the noise, or a decline that carries
      // on from round to round are what an updated generator that does not improve draws.
      const generatorRepeats =
        s !== undefined &&
        s.steps >= p.min_steps &&
        gm !== null &&
        gm.nrmse <= p.max_nrmse &&
        gm.p_means_differ >= p.alpha &&
        startedOver(gen.get(k - 2)!, gen.get(k - 1)!, gm, p.alpha);
      if (generatorRepeats) {
        signs.push(`generator round ${k - 1}'s accuracy curve repeats round ${k - 2}'s (NRMSE ${gm.nrmse})`);
        evidence['generator_curves'] = { rounds: [k - 2, k - 1], ...gm, max_nrmse: p.max_nrmse };
        step ??= s.lastStep ?? null;
      }
      if (signs.length === 0) continue;
      // Only the selector's curves say so: no missing or short generator round, no repeat of its own.
      const repeatOnly = restarted !== undefined && !generatorRepeats && evidence['generator_round'] === undefined;
      // The selector's repeat alone, where the generator's own logs of round k-1 say neither that
      // it moved nor that it repeated itself: they are the better witness, and they do not agree.
      const g = gen.get(k - 1);
      if (repeatOnly && moved === null && g !== undefined && g.steps >= p.min_steps && g.series.has('accuracy')) continue;
      evidence['last_generator_output'] = iso(since);
      // Against a generator that moved, only the accuracy on the selected evidence climbing again
      // from the same start is worth a question. The boundary reward of a noisy selector repeats
      // by chance; and an accuracy that starts high and falls each round is the healthy rhythm
      // (each generator update makes the evidence easy again, and the selector moves on).
      if (repeatOnly && moved !== null && !(restarted === 'accuracy' && am !== null && am.move_within > 0)) continue;
      if (repeatOnly && moved !== null) {
        // The selector's curves alone against the generator's own logs: ask, do not diagnose.
        evidence['generator_moved'] = moved.evidence;
        out.push({
          round: k,
          step,
          severity: SEVERITY_RANK[p.severity] > SEVERITY_RANK.warning ? 'warning' : p.severity,
          message: `Selector round ${k} repeats round ${k - 1}: ${signs.join('; ')}, although the generator's own logs say it changed (${moved.reason}).`,
          evidence,
          recommendation: `Check that selector round ${k} loads generator round ${k - 1}'s checkpoint for its rollouts: the generator trained, but the selector's rollouts answer as before.`,
          series: { role: 'selector', round: k, name: 'boundary' },
        });
        continue;
      }
      const what =
        evidence['generator_round'] !== undefined
          ? `generator round ${k - 1}'s output`
          : `the generator after round ${k - 2 > 0 ? k - 2 : k - 1}`;
      out.push({
        round: k,
        step,
        severity: p.severity,
        message: `The generator looks frozen: ${signs.join('; ')}. Selector round ${k} is aiming at an old boundary.`,
        evidence,
        recommendation: `Check that generator round ${k - 1} ran and saved a new checkpoint, and that selector round ${k} loads it for its rollouts; ${what} has not changed${since !== null ? ` since ${iso(since)}` : ''}.`,
        series: { role: 'selector', round: k, name: 'boundary' },
      });
    }
    return out;
  },
};
