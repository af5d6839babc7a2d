/**
 * boundary-oscillation: the selector's boundary reward swings instead of converging. Direction
 * changes mean nothing (healthy runs change direction on 56%-71% of steps), so the detector
 * looks for what persists: a spectral peak (a local maximum of the spectrum) at periods
 * min_period-max_period steps holding more than min_share of the non-DC power of the detrended
 * series, of sd min_amplitude or more, in `windows` consecutive windows of `window` steps (hop
 * window/2), with a consistent period; and, since overlapping windows share their noise, the
 * same peak over the whole span, coherent (min_span_share) and standing out from red noise
 * (min_contrast: autocorrelated training noise piles its power at long periods). Or a detrended
 * spread that stays above high_sd in every window, does not fall, while the mean does not rise.
 * False-positive rates on long white and AR(1) noise: scripts/noise-fp.ts.
 */
import { roundsOf } from './queries.js';
import { detrend, mannKendall, median, moments, spectralPeak, theilSen, type SpectralPeak } from '../stats/inference.js';
import type { Detector, Draft, Params } from './types.js';
import { pct, round3 } from '../util/format.js';
import type { History } from '../stats/rolling.js';

interface P extends Params {
  window: number;
  windows: number;
  min_period: number;
  max_period: number;
  min_share: number;
  /** The periodic component must be at least this large (sd, reward units). */
  min_amplitude: number;
  /** Over the whole span: the peak's power over what autocorrelated (AR(1), red) noise would put in its band. */
  min_contrast: number;
  /** Over the whole span: the share of the detrended power the coherent peak must hold. */
  min_span_share: number;
  /** Detrended sd at or above this in every window counts as "stays high". */
  high_sd: number;
}

/** True when the last `window` values carry a strong periodic component (the spectral criterion, one window). */
export function periodic(
  values: readonly number[],
  p: Pick<P, 'window' | 'min_period' | 'max_period' | 'min_share' | 'min_amplitude'> = boundaryOscillationDefaults,
): boolean {
  if (values.length < p.window) return false;
  return strongPeak(spectralPeak(values.slice(-p.window), p.min_period, p.max_period), p);
}

/** A spectral peak that holds enough of the detrended power and is large enough to matter. */
function strongPeak(k: SpectralPeak | null, p: Pick<P, 'min_share' | 'min_amplitude'>): k is SpectralPeak {
  return k !== null && k.share > p.min_share && k.amplitude >= p.min_amplitude;
}

export const boundaryOscillationDefaults: P = {
  enabled: true,
  severity: 'warning',
  window: 64,
  windows: 3,
  min_period: 4,
  max_period: 32,
  min_share: 0.3,
  // A swing smaller than this (sd 0.05, +-0.07 at its peaks) hides in healthy noise of sd 0.07:
  // AR(1) noise of that size drew "peaks" of sd 0.03-0.045 (scripts/noise-fp.ts).
  min_amplitude: 0.05,
  min_contrast: 3,
  min_span_share: 0.3,
  high_sd: 0.15,
};

export interface SpanVerdict {
  cyclic: boolean;
  peaks: (SpectralPeak | null)[];
  sds: number[];
  mk: ReturnType<typeof mannKendall>;
  rise: number;
}

/** What one window of a span comes to: its detrended sd, and its spectral peak once worked out. */
interface WindowFacts {
  /** The window's first point, counted in points pushed to its history. */
  start: number;
  sd: number;
  /** Undefined until a judgement needs it. */
  peak: SpectralPeak | null | undefined;
}

/**
 * The windows judged before in one series' history. The detector judges every window/4 steps and
 * a window moves on by window/2, so with the defaults each window is in the spans of three
 * judgements: two of a judgement's three windows were judged before (issue 32: the judgement of
 * 200 swinging runs was the largest piece of a daemon following them). A window is known by where
 * it starts in the history's pushes, which names the same points while nothing is taken back.
 */
export class WindowMemo {
  private dropped = -1;
  /** The window and periods the facts were worked out for. */
  private shape: Pick<P, 'window' | 'min_period' | 'max_period'> = { window: 0, min_period: 0, max_period: 0 };
  private facts: WindowFacts[] = [];
  /** Windows answered from memory. */
  hits = 0;

  /** The memo of `history`'s windows for `p`'s window and periods (emptied when they or the history's points change). */
  static of(history: History, p: Pick<P, 'window' | 'min_period' | 'max_period'>): WindowMemo {
    let memo = windowMemos.get(history);
    if (memo === undefined) windowMemos.set(history, (memo = new WindowMemo()));
    const s = memo.shape;
    if (memo.dropped !== history.dropped || s.window !== p.window || s.min_period !== p.min_period || s.max_period !== p.max_period) {
      memo.dropped = history.dropped;
      memo.shape = { window: p.window, min_period: p.min_period, max_period: p.max_period };
      memo.facts = [];
    }
    return memo;
  }

  /** The facts of the window starting at `start`, worked out from `values` when not known; forgets windows before `from`. */
  window(start: number, from: number, values: () => number[]): WindowFacts {
    if (this.facts.length > 0 && this.facts[0]!.start < from) this.facts = this.facts.filter((f) => f.start >= from);
    const known = this.facts.find((f) => f.start === start);
    if (known !== undefined) {
      this.hits++;
      return known;
    }
    const f = newFacts(start, values());
    this.facts.push(f);
    return f;
  }
}

const windowMemos = new WeakMap<History, WindowMemo>();

function newFacts(start: number, values: number[]): WindowFacts {
  return { start, sd: Math.sqrt(moments(detrend(values)).variance), peak: undefined };
}

/**
 * The two criteria on the last `window + (windows - 1) * hop` values of a round: a consistent
 * strong spectral peak in every window, or a detrended spread that stays high without the mean
 * rising. Null when neither holds (or too few values). `memo` holds windows judged before, `end`
 * the pushes of the history `values` end at (the last value is its point end - 1).
 */
export function judgeSpan(values: readonly number[], p: P, memo?: WindowMemo, end = 0): SpanVerdict | null {
  const hop = Math.max(1, Math.floor(p.window / 2));
  const span = p.window + (p.windows - 1) * hop;
  if (values.length < span) return null;
  const last = values.slice(-span);
  const origin = end - span;
  const windowOf = (i: number): number[] => last.slice(i * hop, i * hop + p.window);
  const facts: WindowFacts[] = [];
  for (let i = 0; i < p.windows; i++) {
    facts.push(memo === undefined ? newFacts(i, windowOf(i)) : memo.window(origin + i * hop, origin, () => windowOf(i)));
  }
  const peakOf = (i: number): SpectralPeak | null => {
    const f = facts[i]!;
    if (f.peak === undefined) f.peak = spectralPeak(windowOf(i), p.min_period, p.max_period);
    return f.peak;
  };
  // The cheap criterion first, and each window's peak only while the earlier ones were strong:
  // most evaluations of a healthy round end after one spectrum and the spreads.
  const sds = facts.map((f) => f.sd);
  const spreadStays = sds.every((s) => s >= p.high_sd) && sds[sds.length - 1]! >= 0.9 * sds[0]!;
  const peaks: (SpectralPeak | null)[] = [];
  for (let i = 0; i < p.windows; i++) {
    const k = peakOf(i);
    peaks.push(k);
    if (!strongPeak(k, p)) break;
  }
  // (A loop that stopped early left a weak peak last: every() fails.)
  const windowsAgree =
    peaks.every((k) => strongPeak(k, p)) && Math.max(...peaks.map((k) => k.period)) / Math.min(...peaks.map((k) => k.period)) <= 1.6;
  // The windows overlap by half, so one noise bump can show in two of them: the swing must also
  // hold over the whole span, one coherent peak at the windows' period (noise does not keep
  // phase). Only worked out when the windows agree, which is rare.
  const whole = windowsAgree ? spectralPeak(last, p.min_period, p.max_period) : null;
  const cyclic =
    whole !== null &&
    whole.share > p.min_span_share &&
    whole.contrast >= p.min_contrast &&
    Math.abs(Math.log(whole.period / median(peaks.map((k) => k!.period)))) <= Math.log(1.6);
  if (!cyclic && !spreadStays) return null;
  const mk = mannKendall(last);
  const rise = mk.pUp < 0.05 ? theilSen(last) * (last.length - 1) : 0;
  const rising = mk.pUp < 0.05 && rise >= 0.02;
  const noisy = spreadStays && !rising;
  if (!cyclic && !noisy) return null;
  for (let i = peaks.length; i < p.windows; i++) peaks.push(peakOf(i));
  return { cyclic, peaks, sds, mk, rise };
}

export const boundaryOscillation: Detector<P> = {
  id: 'boundary-oscillation',
  cleared: 'the boundary reward no longer swings',
  scope: 'round',
  description: 'Persistent periodic swings of the boundary reward, or a high spread that does not fall.',
  defaults: boundaryOscillationDefaults,
  counts: ['window', 'windows', 'min_period', 'max_period'],
  every: (p) => Math.max(1, Math.floor(p.window / 4)),
  detect(run, p) {
    const out: Draft[] = [];
    const hop = Math.max(1, Math.floor(p.window / 2));
    const span = p.window + (p.windows - 1) * hop;
    for (const r of roundsOf(run, 'selector')) {
      const history = r.series.get('boundary')?.history;
      if (history === undefined || history.length < span) continue;
      const pts = history.points(span);
      const v = judgeSpan(pts.values, p, WindowMemo.of(history, p), history.pushed);
      if (v === null) continue;
      const { peaks, sds, mk, rise, cyclic } = v;
      const step = pts.steps[pts.steps.length - 1]!;
      const evidence: Record<string, unknown> = {
        window: p.window,
        hop,
        windows: p.windows,
        detrended_sd: sds.map(round3),
        mean_trend: { mann_kendall_z: round3(mk.z), theil_sen_change: round3(rise) },
      };
      let message: string;
      let recommendation: string;
      if (cyclic) {
        const ps = peaks as SpectralPeak[]; // every one strong when cyclic
        const period = ps.reduce((a, k) => a + k.period, 0) / ps.length;
        const share = Math.min(...ps.map((k) => k.share));
        const amp = ps.reduce((a, k) => a + k.amplitude, 0) / ps.length;
        evidence['criterion'] = 'spectral';
        evidence['peaks'] = ps.map((k) => ({ period: round3(k.period), power_share: round3(k.share), amplitude: round3(k.amplitude) }));
        evidence['min_share'] = p.min_share;
        message = `The boundary reward of selector round ${r.round ?? '-'} swings with a period of about ${period.toFixed(0)} steps (${pct(share)} or more of its variance, amplitude ${amp.toFixed(2)}) in ${p.windows} consecutive ${p.window}-step windows instead of converging.`;
        recommendation = `Lower the selector learning rate (try half) or raise the KL coefficient: a swing every ${period.toFixed(0)} steps that does not damp is the policy overshooting the boundary; also check that the generator checkpoint used for rollouts is the one the round started with.`;
      } else {
        evidence['criterion'] = 'variance';
        evidence['high_sd'] = p.high_sd;
        message = `The boundary reward of selector round ${r.round ?? '-'} stays erratic: its detrended spread is ${sds.map((s) => s.toFixed(2)).join(', ')} in ${p.windows} consecutive ${p.window}-step windows and does not fall, while its mean does not rise.`;
        recommendation =
          'Lower the selector learning rate and check the rollout count K (the boundary reward of a small K is mostly noise) and the batch size per step.';
      }
      out.push({
        round: r.round,
        step,
        severity: p.severity,
        message,
        evidence,
        recommendation,
        series: { role: 'selector', round: r.round, name: 'boundary' },
      });
    }
    return out;
  },
};
