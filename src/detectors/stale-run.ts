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
import { humanDuration } from '../util/format.js';
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

/**
 * When the round was last heard of. Live, when its records arrived; but a log written in whole
 * blocks (W&B: RoundState.reach) arrives in bursts a block apart whatever the pace, so such a round
 * is judged, live too, by the trainer's own times: its latest row or system-stats record.
 */
function lastActivity(r: RoundState, live: boolean): number | null {
  if (r.reach !== null) return Math.max(r.reach.time, r.lastTime ?? -Infinity);
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
    const blocks = latest.reach;
    const times = (ctx.live && blocks === null ? latest.arrivals : latest.stepTimes).points().values;
    if (times.length < p.min_intervals + 1) return [];
    const gaps: number[] = [];
    for (let i = 1; i < times.length; i++) gaps.push(times[i]! - times[i - 1]!);
    const usual = median(gaps);
    const threshold = Math.max(parseDuration(p.min_silence) ?? 600_000, p.factor * usual);
    // The trainer's system stats go on while no step is logged: the process lives, training does not move.
    const stuck = blocks !== null && latest.lastTime !== null ? blocks.time - latest.lastTime : 0;
    if (ctx.live && stuck > threshold) {
      const where = `${latest.role === 'unknown' ? 'the run' : `${latest.role} round ${latest.round ?? '-'}`}`;
      return [
        {
          round: latest.round,
          step: latest.lastStep,
          severity: p.severity,
          message: `No new step from ${where} for ${humanDuration(stuck)} of the trainer's time (it usually logs every ${humanDuration(usual)}), while W&B's system stats go on to ${new Date(blocks!.time).toISOString()}: the process is alive but training does not move (the last step was ${latest.lastStep}).`,
          evidence: {
            role: latest.role,
            last_step: latest.lastStep,
            last_step_time: new Date(latest.lastTime!).toISOString(),
            alive_until: new Date(blocks!.time).toISOString(),
            stuck_s: Math.round(stuck / 1000),
            usual_interval_s: Math.round(usual / 100) / 10,
            threshold_s: Math.round(threshold / 1000),
            time_source: 'trainer',
          },
          recommendation:
            'Look at the trainer process (py-spy dump, the console log): a hung NCCL collective, a rollout worker waiting forever, a reward function stuck on a remote call. Kill and resume from the last checkpoint if it does not move.',
        },
      ];
    }
    // A log written in blocks reaches the disk about a block's worth of the trainer's time late.
    const lag = blocks === null ? 0 : blocks.block.ms;
    const silence = ctx.now - at;
    if (!(silence > threshold + lag)) return [];
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
          threshold_s: Math.round((threshold + lag) / 1000),
          ...(blocks !== null ? { block_lag_s: Math.round(lag / 1000), block_steps: blocks.block.steps } : {}),
          time_source: ctx.live && blocks === null ? 'arrival' : 'trainer',
        },
        recommendation:
          'Check the training job (scheduler state, out-of-memory kills, a hung NCCL collective, a full disk) and resume from its last checkpoint.',
      },
    ];
  },
};
