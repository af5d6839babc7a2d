/**
 * run-stopped-short: the trainer said how long it would train (verl `Total training steps: N`, a
 * `Training Progress: k/N` bar, a trainer_state's `max_steps`, Hugging Face's progress bar) and
 * stopped writing well before that without saying it finished. "Stopped" is stale-run's silence:
 * in `watch` no step for max(min_silence, factor x the usual interval) by arrival; in `analyze`
 * by the trainer's own times, and where its lines carry none, the end of the file is where it
 * stopped (analyze reads finished output). A crash is run-crashed's to report.
 */
import { parseDuration } from '../util/duration.js';
import { median } from '../stats/inference.js';
import { crashOf } from './run-crashed.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** The round must have got to less than this fraction of its plan. */
  short_of: number;
  min_silence: string;
  factor: number;
}

export const runStoppedShort: Detector<P> = {
  id: 'run-stopped-short',
  cleared: 'the run writes steps again, or said it finished',
  scope: 'round',
  description: 'The trainer said its planned length and stopped writing well before it without a finish line.',
  defaults: { enabled: true, severity: 'warning', short_of: 0.95, min_silence: '10m', factor: 10 },
  every: () => 1,
  timeBased: true,
  detect(run, p, ctx) {
    if (run.finished || crashOf(run, ctx.live) !== null) return [];
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const plan = run.planOf(r.role, r.round);
      if (plan === null || r.lastStep === null) continue;
      // A bar counts the trainer's own steps; a round whose records count entries (TRL's console
      // dicts) is judged by the bar.
      const done = plan.done !== null && plan.done > 0 ? plan.done : r.lastStep;
      if (!(done < p.short_of * plan.total)) continue;
      const times = (ctx.live ? r.arrivals : r.stepTimes).points().values;
      const last = ctx.live ? r.lastSeen : r.lastTime;
      let silence: number | null = null;
      if (last !== null && times.length >= 2) {
        const gaps = times.slice(1).map((t, i) => t - times[i]!);
        const threshold = Math.max(parseDuration(p.min_silence) ?? 600_000, p.factor * median(gaps));
        silence = ctx.now - last;
        if (!(silence > threshold)) continue;
      } else if (ctx.live) continue;
      const where = r.role === 'unknown' ? 'The run' : `${r.role[0]!.toUpperCase()}${r.role.slice(1)} round ${r.round ?? '-'}`;
      out.push({
        round: r.round,
        step: r.lastStep,
        severity: p.severity,
        message: `${where} stopped at step ${done} of its planned ${plan.total} (${Math.round((100 * done) / plan.total)}%) without saying it finished.`,
        evidence: {
          planned_steps: plan.total,
          plan_source: plan.source,
          steps_done: done,
          last_step: r.lastStep,
          silence_s: silence === null ? null : Math.round(silence / 1000),
          time_source: silence === null ? 'end of file' : ctx.live ? 'arrival' : 'trainer',
        },
        recommendation:
          'Check the job: the scheduler (a time limit, a preemption), the host (an out-of-memory kill leaves no traceback), a full disk; resume from its last checkpoint.',
      });
    }
    return out;
  },
};
