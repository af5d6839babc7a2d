/**
 * `barwatch compare`: did a fix work? Two selector rounds (by default each run's last complete
 * one) side by side on the guide's criteria, each with the test behind it: the boundary reward's
 * mean (Welch) and noise (F-test on detrended values, relative to the mean), the accuracy on the selected
 * evidence against c (and the guide's 48% at c = 0.5), the post-filter boundary share against
 * its band (25-35% by default), the boundary's share of the signal against its floor (40%), and
 * the findings of each side.
 */
import { GUIDE_ACCURACY, recent, roundsOf, targetOf } from '../detectors/queries.js';
import { SEVERITY_RANK, type Finding, type Params } from '../detectors/types.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import { signalShares } from '../runs/signal.js';
import { detrend, fUpper, moments, welch } from '../stats/inference.js';

const ALPHA = 0.05;

/**
 * The guide's targets, as the detectors that watch them are configured: the boundary share's band
 * (boundary-share-low's band_low/band_high) and the boundary's least share of the signal
 * (format-dominance's min_share), so `compare` and the alerts never disagree on what is healthy.
 */
export interface Targets {
  band: [number, number];
  minSignalShare: number;
}

export function targetsOf(detectors: Record<string, Params>): Targets {
  const share = detectors['boundary-share-low'];
  const format = detectors['format-dominance'];
  return {
    band: [Number(share?.['band_low'] ?? 0.25), Number(share?.['band_high'] ?? 0.35)],
    minSignalShare: Number(format?.['min_share'] ?? 0.4),
  };
}

export interface Side {
  run: string;
  round: number | null;
  /** Why this round: the one asked for, or the last complete selector round. */
  chosen: string;
  steps: number;
  boundary_mean: number | null;
  boundary_n: number;
  boundary_noise_variance: number | null;
  accuracy: number | null;
  target: number;
  accuracy_distance: number | null;
  reached_guide: boolean | null;
  boundary_share: number | null;
  signal_share: number | null;
  findings: { detector: string; severity: string; round: number | null; message: string }[];
}

export interface Criterion {
  name: string;
  before: number | boolean | null;
  after: number | boolean | null;
  test: string;
  p: number | null;
  /** better, held, worse, or unknown (a side lacks the data). */
  outcome: 'better' | 'held' | 'worse' | 'unknown';
}

export interface Comparison {
  before: Side;
  after: Side;
  criteria: Criterion[];
  verdict: 'improved' | 'not improved';
  worse: string[];
}

/** The selector round to compare: `wanted`, or the last one that is complete (a later round began, or the run finished). */
export function pickRound(run: RunState, wanted: number | null): { round: RoundState; chosen: string } | string {
  const sel = roundsOf(run, 'selector').filter((r) => r.series.has('boundary'));
  if (sel.length === 0) return `${run.id} has no selector round with a boundary reward`;
  if (wanted !== null) {
    const r = sel.find((x) => x.round === wanted);
    return r === undefined
      ? `${run.id} has no selector round ${wanted} (it has ${sel.map((x) => x.round).join(', ')})`
      : { round: r, chosen: 'as asked' };
  }
  const last = sel[sel.length - 1]!;
  const later = [...run.rounds.values()].some(
    (r) => r !== last && r.round !== null && last.round !== null && r.round >= last.round && r.role === 'generator',
  );
  if (run.finished || later || sel.length === 1)
    return {
      round: last,
      chosen: run.finished || later ? 'its last complete selector round' : 'its only selector round (still being written)',
    };
  return { round: sel[sel.length - 2]!, chosen: `its last complete selector round (round ${last.round ?? '-'} is still being written)` };
}

function side(run: RunState, picked: { round: RoundState; chosen: string }, findings: Finding[]): Side {
  const r = picked.round;
  const b = r.series.get('boundary')!;
  const values = recent(r, 'boundary').values;
  const noise = values.length >= 8 ? moments(detrend(values)).variance : null;
  const acc = r.series.get('accuracy');
  const accuracy = acc !== undefined && acc.window.n > 0 ? acc.window.mean : null;
  const { c } = targetOf(run);
  const shares = signalShares(r, run.settings.weights);
  return {
    run: run.id,
    round: r.round,
    chosen: picked.chosen,
    steps: r.steps,
    boundary_mean: b.summary.n > 0 ? b.summary.mean : null,
    boundary_n: b.summary.n,
    boundary_noise_variance: noise,
    accuracy,
    target: c,
    accuracy_distance: accuracy === null ? null : Math.abs(accuracy - c),
    reached_guide: accuracy === null || c !== 0.5 ? null : accuracy >= GUIDE_ACCURACY,
    boundary_share: run.filter.postShare,
    signal_share: shares?.share.boundary ?? null,
    findings: findings
      .filter((f) => f.run === run.id && SEVERITY_RANK[f.severity] >= SEVERITY_RANK.warning)
      .map((f) => ({ detector: f.detector, severity: f.severity, round: f.round, message: f.message })),
  };
}

function pctBand(band: [number, number]): string {
  return `${Math.round(band[0] * 100)}-${Math.round(band[1] * 100)}%`;
}

function bandDistance(x: number, band: [number, number]): number {
  return x < band[0] ? band[0] - x : x > band[1] ? x - band[1] : 0;
}

export function compare(
  before: { run: RunState; round: number | null; findings: Finding[] },
  after: { run: RunState; round: number | null; findings: Finding[] },
  targets: Targets,
): Comparison | string {
  const pb = pickRound(before.run, before.round);
  if (typeof pb === 'string') return pb;
  const pa = pickRound(after.run, after.round);
  if (typeof pa === 'string') return pa;
  const a = side(before.run, pb, before.findings);
  const b = side(after.run, pa, after.findings);
  const criteria: Criterion[] = [];
  const sb = pb.round.series.get('boundary')!.summary;
  const sa = pa.round.series.get('boundary')!.summary;
  // Boundary mean: Welch on the rounds' values.
  const w = welch({ n: sb.n, mean: sb.mean, variance: sb.variance }, { n: sa.n, mean: sa.mean, variance: sa.variance });
  criteria.push({
    name: 'boundary reward mean',
    before: a.boundary_mean,
    after: b.boundary_mean,
    test: `Welch t=${w.t.toFixed(2)}, ${w.dof.toFixed(0)} dof`,
    // The one-sided p of the direction the mean moved.
    p: w.t >= 0 ? w.pHigher : w.pLower,
    outcome: w.pHigher < ALPHA ? 'better' : w.pLower < ALPHA ? 'worse' : 'held',
  });
  // Noise: the detrended variance relative to the squared mean (the boundary reward is bounded
  // near 0, where a stuck run is quiet because it is stuck), F-test on the scaled variances.
  const va = a.boundary_noise_variance;
  const vb = b.boundary_noise_variance;
  const ma = a.boundary_mean ?? 0;
  const mb = b.boundary_mean ?? 0;
  if (va !== null && vb !== null && va > 0 && ma > 0 && mb > 0) {
    const na = recent(pb.round, 'boundary').values.length;
    const nb = recent(pa.round, 'boundary').values.length;
    const ratio = vb / (mb * mb) / (va / (ma * ma));
    const pUp = fUpper(ratio, nb - 2, na - 2);
    const pDown = fUpper(1 / ratio, na - 2, nb - 2);
    criteria.push({
      name: 'boundary noise (detrended sd / mean)',
      before: Math.sqrt(va) / ma,
      after: Math.sqrt(vb) / mb,
      test: `F=${ratio.toFixed(2)} (${nb - 2}, ${na - 2} dof)`,
      p: ratio >= 1 ? pUp : pDown,
      outcome: pUp < ALPHA ? 'worse' : pDown < ALPHA ? 'better' : 'held',
    });
  } else
    criteria.push({ name: 'boundary noise (detrended sd / mean)', before: null, after: null, test: 'F-test', p: null, outcome: 'unknown' });
  const moved = (x: number | null, y: number | null, tol: number): Criterion['outcome'] =>
    x === null || y === null ? 'unknown' : y < x - tol ? 'better' : y > x + tol ? 'worse' : 'held';
  const d3 = (x: number | null): string => (x === null ? '-' : x.toFixed(3));
  criteria.push({
    name: `accuracy on the selected evidence (target c = ${b.target})`,
    before: a.accuracy,
    after: b.accuracy,
    // Better is closer to c, not higher: the values are the accuracies, the test their distances.
    test: `distance to c ${d3(a.accuracy_distance)} -> ${d3(b.accuracy_distance)}, better when closer by 0.01 or more`,
    p: null,
    outcome: moved(a.accuracy_distance, b.accuracy_distance, 0.01),
  });
  if (a.reached_guide !== null && b.reached_guide !== null) {
    criteria.push({
      name: "accuracy reached the guide's 48%",
      before: a.reached_guide,
      after: b.reached_guide,
      test: `accuracy >= ${GUIDE_ACCURACY} at c = 0.5`,
      p: null,
      outcome: a.reached_guide === b.reached_guide ? 'held' : b.reached_guide ? 'better' : 'worse',
    });
  }
  const da = a.boundary_share === null ? null : bandDistance(a.boundary_share, targets.band);
  const db = b.boundary_share === null ? null : bandDistance(b.boundary_share, targets.band);
  criteria.push({
    name: `post-filter boundary share (healthy ${pctBand(targets.band)})`,
    before: a.boundary_share,
    after: b.boundary_share,
    test: `distance to the band ${d3(da)} -> ${d3(db)}`,
    p: null,
    outcome: moved(da, db, 0.01),
  });
  criteria.push({
    name: `boundary's share of the signal (at least ${Math.round(targets.minSignalShare * 100)}%)`,
    before: a.signal_share,
    after: b.signal_share,
    test: 'abs(w) x sd shares',
    p: null,
    outcome:
      a.signal_share === null || b.signal_share === null
        ? 'unknown'
        : b.signal_share < targets.minSignalShare && b.signal_share < a.signal_share - 0.01
          ? 'worse'
          : b.signal_share >= targets.minSignalShare && a.signal_share < targets.minSignalShare
            ? 'better'
            : 'held',
  });
  const newFindings = b.findings.filter((f) => !a.findings.some((x) => x.detector === f.detector));
  criteria.push({
    name: 'findings (warning or critical)',
    before: a.findings.length,
    after: b.findings.length,
    test: newFindings.length > 0 ? `new: ${[...new Set(newFindings.map((f) => f.detector))].join(', ')}` : 'no new detector',
    p: null,
    outcome: newFindings.length > 0 ? 'worse' : b.findings.length < a.findings.length ? 'better' : 'held',
  });
  const worse = criteria.filter((c) => c.outcome === 'worse').map((c) => c.name);
  // Accuracy must move toward c, unless it is already there (or neither side logs it).
  const acc = criteria.find((c) => c.name.startsWith('accuracy on'))!;
  const accuracyOk = acc.outcome === 'better' || acc.outcome === 'unknown' || (b.accuracy_distance ?? 1) <= 0.02;
  if (!accuracyOk && !worse.includes(acc.name))
    worse.push(
      `${acc.name} (${d3(a.accuracy)} -> ${d3(b.accuracy)}: its distance to c went ${d3(a.accuracy_distance)} -> ${d3(b.accuracy_distance)}, not closer by 0.01 or more, nor within 0.02 of c)`,
    );
  const improved = worse.length === 0;
  return { before: a, after: b, criteria, verdict: improved ? 'improved' : 'not improved', worse };
}
