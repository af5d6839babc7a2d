/**
 * reward-hacking: one reward component rises while the task's own signal falls: the policy has
 * found a way to be paid without solving the task (a format, length or style reward learned at
 * the expense of correctness). format-dominance judges BAR-RAG's configured weights; this reads
 * any run's components: TRL `rewards/<fn>/mean`, verl `reward_extra_info/*`, a reward_history's
 * components. The task's signal is the accuracy, else a component named for correctness, else
 * the main reward (a BAR-RAG selector's is its boundary reward: its accuracy should move to c, not
 * up).
 */
import type { RoundState } from '../runs/round.js';
import type { SeriesStats } from '../runs/series.js';
import { moments, welch } from '../stats/inference.js';
import { historyValues } from '../stats/rolling.js';
import type { Moments } from '../stats/inference.js';
import { seriesNamed } from '../runs/quantities.js';
import { rewardSeries } from './queries.js';
import { r4 } from './levels.js';
import { memoByName } from '../util/memo.js';
import type { Detector, Draft, Params } from './types.js';

interface P extends Params {
  /** Values needed; the first and the last third of them are compared. */
  min_points: number;
  /** The component must rise at least this much... */
  min_rise: number;
  /** ...while the task's signal falls at least this much. */
  min_fall: number;
  alpha: number;
}

const TASK = /correct|accura|answer|(^|[/_])acc($|[/_])|exact|(^|[/_])em($|[/_])|f1|solve/i;
const SHAPING = /format|length|style|xml|tag|think|structure/i;

/** A component named for the task's correctness (rewards/accuracy_reward/mean). */
const isTaskName = memoByName((name) => {
  const m = /^(?:rewards|reward_extra_info)\/(.+?)(?:\/mean)?$/.exec(name);
  return m !== null && TASK.test(m[1]!) && !name.endsWith('/std');
});

/** The series' name when it is a shaping component (format, length, style), else null. */
const component = memoByName(componentOf);

function componentOf(name: string): string | null {
  if (name === 'format') return name;
  const m = /^(?:rewards|reward_extra_info)\/(.+?)(?:\/mean)?$/.exec(name);
  return m !== null && SHAPING.test(m[1]!) && !TASK.test(m[1]!) ? name : null;
}

/** Whether a series is a shaping component (format, length, style). */
const isComponent = (name: string): boolean => component(name) !== null;

function taskSeries(r: RoundState): { name: string; stats: SeriesStats } | null {
  // A BAR-RAG selector aims its accuracy at c, not up: its task is the boundary reward.
  const boundary = r.series.get('boundary');
  if (boundary !== undefined) return { name: 'boundary', stats: boundary };
  const acc = r.series.get('accuracy');
  if (acc !== undefined) return { name: 'accuracy', stats: acc };
  for (const [name, s] of r.series) if (isTaskName(name)) return { name, stats: s };
  return rewardSeries(r);
}

export const rewardHacking: Detector<P> = {
  id: 'reward-hacking',
  cleared: 'the component no longer rises while the task signal falls',
  scope: 'round',
  description: "One reward component (format, length, style) rises while the task's accuracy or main reward falls.",
  defaults: { enabled: true, severity: 'warning', min_points: 24, min_rise: 0.05, min_fall: 0.05, alpha: 0.001 },
  counts: ['min_points'],
  every: () => 4,
  detect(run, p) {
    const out: Draft[] = [];
    for (const r of run.orderedRounds()) {
      const task = taskSeries(r);
      if (task === null || task.stats.history.length < p.min_points) continue;
      // The first and the last third of a series' kept points; the test only where their means moved far enough.
      // Read in place (points() would make two arrays for each series at each evaluation).
      const split = (s: SeriesStats): { early: Moments; late: Moments; n: number; lastStep: number } => {
        const h = s.history;
        const n = h.length;
        const values = historyValues(h);
        const third = Math.floor(n / 3);
        return { early: moments(values, 0, third), late: moments(values, n - third, n), n, lastStep: h.stepAt(n - 1) };
      };
      const t = split(task.stats);
      if (!(t.early.mean - t.late.mean >= p.min_fall)) continue;
      const tw = welch(t.early, t.late);
      if (!(tw.pLower < p.alpha)) continue;
      for (const { name, stats: s } of seriesNamed(r, isComponent)) {
        if (name === task.name || s.history.length < p.min_points) continue;
        const c = split(s);
        if (!(c.late.mean - c.early.mean >= p.min_rise)) continue;
        const cw = welch(c.early, c.late);
        if (!(cw.pHigher < p.alpha)) continue;
        out.push({
          round: r.round,
          step: t.lastStep,
          severity: p.severity,
          message: `${name} rose from ${c.early.mean.toFixed(3)} to ${c.late.mean.toFixed(3)} while ${task.name} fell from ${t.early.mean.toFixed(3)} to ${t.late.mean.toFixed(3)} (first vs last third of the last ${t.n} steps): the policy is being paid for ${name} instead of the task.`,
          evidence: {
            component: name,
            component_early: r4(c.early.mean),
            component_late: r4(c.late.mean),
            component_welch_t: Math.round(cw.t * 100) / 100,
            task: task.name,
            task_early: r4(t.early.mean),
            task_late: r4(t.late.mean),
            task_welch_t: Math.round(tw.t * 100) / 100,
            points: t.n,
          },
          recommendation: `Lower the weight of ${name} (or make it a gate that only multiplies a correct answer's reward), read completions that score high on it for a shortcut, and resume from a checkpoint before the task signal fell.`,
          series: { role: r.role, round: r.round, name: task.name },
        });
        break;
      }
    }
    return out;
  },
};
