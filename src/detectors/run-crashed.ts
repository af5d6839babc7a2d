/**
 * run-crashed: a console log printed a fatal error (the last line of a Python traceback, an NCCL
 * timeout, a Ray actor that died, a segfault, a scheduler's kill) and no step after it: the
 * training died there, also when it died before its first step. A file that goes on writing steps
 * after an error (a retried call, a resumed run appending to its log) clears it, and so does a
 * step the run's other files write after it (by the trainer's times, or in `watch` by arrival).
 * In `watch` the error must stand for `grace` with no step after it, since the next step line may
 * be on its way.
 */
import { parseDuration } from '../util/duration.js';
import type { Crash, RunState } from '../runs/run.js';
import type { Detector, Params } from './types.js';

interface P extends Params {
  /** In watch: how long an error must stand with no step after it (a duration). */
  grace: string;
}

/** The crash that ended the run, or null: the latest fatal error that no later step contradicts. */
export function crashOf(run: RunState, live: boolean): Crash | null {
  let latest: Crash | null = null;
  for (const c of run.crashes.values()) if (latest === null || c.seen > latest.seen || (c.time ?? 0) > (latest.time ?? 0)) latest = c;
  if (latest === null || run.finished) return null;
  for (const r of run.rounds.values()) {
    if (latest.time !== null && r.lastTime !== null && r.lastTime > latest.time) return null;
    if (live && r.lastSeen !== null && r.lastSeen > latest.seen) return null;
  }
  return latest;
}

export const runCrashed: Detector<P> = {
  id: 'run-crashed',
  cleared: 'the run wrote steps again after the error',
  scope: 'run',
  immediate: true,
  description: 'A console log shows a fatal error (traceback, out of memory, NCCL timeout, a dead Ray actor) and no step after it.',
  defaults: { enabled: true, severity: 'critical', grace: '1m' },
  every: () => 1,
  timeBased: true,
  detect(run, p, ctx) {
    const c = crashOf(run, ctx.live);
    if (c === null) return [];
    if (ctx.live && ctx.now - c.seen < (parseDuration(p.grace) ?? 60_000)) return [];
    const where = c.role === 'unknown' ? '' : ` in ${c.role} round ${c.round ?? '-'}`;
    const when = c.step === null ? 'before its first step' : `after step ${c.step}`;
    return [
      {
        round: c.round,
        step: c.step,
        severity: p.severity,
        message: `The training crashed${where} ${when}: ${c.message}`,
        evidence: {
          error: c.message,
          file: c.file,
          role: c.role,
          last_step: c.step,
          ...(c.time !== null ? { at: new Date(c.time).toISOString() } : {}),
        },
        recommendation: advice(c.message),
      },
    ];
  },
};

/** What to do about the usual fatal errors. */
function advice(message: string): string {
  if (/out of memory|OutOfMemory|oom/i.test(message))
    return 'Out of GPU memory: lower the micro-batch size or the rollout batch (verl ppo_micro_batch_size_per_gpu, rollout.gpu_memory_utilization; TRL per_device_train_batch_size), turn on gradient checkpointing or parameter offload, then resume from the last checkpoint.';
  if (/NCCL|collective|timeout|timed out/i.test(message))
    return "A collective timed out: one rank hung or died (look in every rank's log for the first error), check the network and NCCL settings, raise the timeout if a step is legitimately slow, and resume from the last checkpoint.";
  if (/actor died|worker died|ActorDied|RayActor/i.test(message))
    return "A Ray worker died: its own log (ray's session_latest/logs) names why, most often memory on the host or the GPU; fix that and resume from the last checkpoint.";
  return 'Read the traceback around this line in the log, fix its cause and resume from the last checkpoint.';
}
