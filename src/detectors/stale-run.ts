/**
 * stale-run: a run that was writing goes silent for much longer than its usual interval
 * (max(min_silence, factor x the median interval between steps)) and has not said it finished.
 * In `watch` the clock is barwatch's own: when records arrived (a record arriving now is news that
 * the run is alive, whatever time it carries; a backlog read at start-up gives no usual pace, so
 * min_silence applies). In `analyze` it is the trainer's: the times its records carry; without
 * them nothing can be said. Resolves when writing resumes. In `analyze`, a run silent for longer
 * than assume_finished_after most likely finished: reported as info.
 */
import { parseDuration } from '../util/duration.js';
import type { RoundState } from '../runs/round.js';
import { crashOf } from './run-crashed.js';
import { median } from '../stats/inference.js';
import type { Detector, Params } from './types.js';

interface P extends Params {
  /** Never stale before this much silence (a duration). */
  min_silence: string;
  factor: number;
  /** Intervals needed to know the usual pace. */
  min_intervals: number;
  /** In analyze, longer silence than this means the run most likely finished (a duration). */
  assume_finished_after: string;
}

export function humanDuration(ms: number): string {
  // Below a second (a replay, a backlog), seconds would print 0s.
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

function lastActivity(r: RoundState, live: boolean): number | null {
  return live ? r.lastSeen : r.lastTime;
}

export const staleRun: Detector<P> = {
  id: 'stale-run',
  cleared: 'the run writes steps again, or said it finished',
  scope: 'run',
  description: 'A run stops writing for much longer than its usual interval and has not finished.',
  defaults: { enabled: true, severity: 'warning', min_silence: '10m', factor: 10, min_intervals: 5, assume_finished_after: '24h' },
  counts: ['min_intervals'],
  every: () => 1,
  timeBased: true,
  detect(run, p, ctx) {
    // A run that crashed is run-crashed's to report, with the error.
    if (run.finished || crashOf(run, ctx.live) !== null) return [];
    let latest: RoundState | null = null;
    let at = -Infinity;
    for (const r of run.rounds.values()) {
      const t = lastActivity(r, ctx.live);
      if (t !== null && t > at) {
        at = t;
        latest = r;
      }
    }
    if (latest === null) return [];
    const times = (ctx.live ? latest.arrivals : latest.stepTimes).points().values;
    if (times.length < p.min_intervals + 1) return [];
    const gaps: number[] = [];
    for (let i = 1; i < times.length; i++) gaps.push(times[i]! - times[i - 1]!);
    const usual = median(gaps);
    const threshold = Math.max(parseDuration(p.min_silence) ?? 600_000, p.factor * usual);
    const silence = ctx.now - at;
    if (!(silence > threshold)) return [];
    const longGone = !ctx.live && silence > (parseDuration(p.assume_finished_after) ?? 86_400_000);
    const where = `${latest.role === 'unknown' ? 'the run' : `${latest.role} round ${latest.round ?? '-'}`}`;
    return [
      {
        round: latest.round,
        step: latest.lastStep,
        severity: longGone ? 'info' : p.severity,
        message: longGone
          ? `The run stopped writing ${humanDuration(silence)} ago at step ${latest.lastStep} of ${where} without saying it finished; if it did not finish, it died there.`
          : `No new step from ${where} for ${humanDuration(silence)} (it usually writes every ${humanDuration(usual)}); the last was step ${latest.lastStep} at ${new Date(at).toISOString()}, and the run has not said it finished.`,
        evidence: {
          role: latest.role,
          last_step: latest.lastStep,
          last_write: new Date(at).toISOString(),
          silence_s: Math.round(silence / 1000),
          usual_interval_s: Math.round(usual / 100) / 10,
          threshold_s: Math.round(threshold / 1000),
          time_source: ctx.live ? 'arrival' : 'trainer',
        },
        recommendation:
          'Check the training job (scheduler state, out-of-memory kills, a hung NCCL collective, a full disk) and resume from its last checkpoint.',
      },
    ];
  },
};
