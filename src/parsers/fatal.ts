/**
 * Lines of a console log that say the training died or how long it was meant to run.
 *
 * Fatal errors: a Python traceback (its last line, `torch.OutOfMemoryError: CUDA out of memory`,
 * names the error), and the lines that kill a job without one: an NCCL watchdog timeout, a Ray
 * actor or worker that died, a segfault, a C++ abort, torchrun's ChildFailedError, a scheduler
 * that cancelled or OOM-killed the job.
 *
 * Plans: verl prints `Total training steps: N` and a `Training Progress: k/N` bar; Hugging Face's
 * Trainer (TRL) draws an unnamed tqdm bar `k/N [elapsed<left, ...]` (its evaluation bars look the
 * same, so such a bar is only a candidate: the run keeps the one it sees most).
 */
import type { FatalRecord, PlanRecord } from './types.js';

const TRACEBACK = /^Traceback \(most recent call last\):/;
/** The exception line that ends a traceback: `RuntimeError: ...`, `ray.exceptions.RayTaskError(OutOfMemoryError): ...`. */
const EXCEPTION = /^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Failure|Exit|Exited)(?:\([\w.]+\))?)(?::\s*(.*))?$/;
/** Fatal lines with no traceback of their own, in one expression (tried on every unmatched line). */
const FATAL_LINE = new RegExp(
  [
    /Watchdog caught collective operation timeout/.source,
    /NCCL (?:[Ee]rror|[Tt]imeout|[Ww]atchdog)|ProcessGroupNCCL.*(?:timeout|timed out)/.source,
    /The actor died unexpectedly|A worker died or was killed|ActorDiedError|RayActorError/.source,
    /Segmentation fault|Fatal Python error|Bus error \(core dumped\)|Aborted \(core dumped\)/.source,
    /terminate called after throwing an instance of/.source,
    /torch\.distributed\.elastic\.multiprocessing\.errors\.ChildFailedError/.source,
    /slurmstepd: error: .*(?:CANCELLED|TIME LIMIT|oom[-_ ]kill|OUT OF MEMORY)/.source,
    /^Killed$/.source,
  ].join('|'),
);
/** Exceptions that end a traceback without ending a run (a KeyboardInterrupt does end it). */
const HARMLESS = /^(?:StopIteration|GeneratorExit|SystemExit: 0)$/;
/** A traceback whose exception line did not come within this many lines is reported as it is. */
const TRACEBACK_LINES = 400;

const STATED_PLAN = /\bTotal (?:training|optimization) steps\s*[:=]\s*(\d[\d,]*)/i;
const BAR = /^(?:([^|]*?):\s*)?\d{1,3}%\|[^|]*\|\s*(\d+)\/(\d+)\s*\[/;

/** Reads fatal errors out of a console log, line by line; keeps whether it is inside a traceback. */
export class FatalReader {
  /** Lines read since a traceback began, 0 outside one. */
  private inTraceback = 0;

  line(text: string): FatalRecord | null {
    if (TRACEBACK.test(text)) {
      this.inTraceback = 1;
      return null;
    }
    if (this.inTraceback > 0) {
      const m = text.startsWith(' ') || text.startsWith('\t') ? null : EXCEPTION.exec(text);
      if (m !== null) {
        this.inTraceback = 0;
        return HARMLESS.test(text) ? null : { kind: 'fatal', message: text.slice(0, 500) };
      }
      if (++this.inTraceback > TRACEBACK_LINES) {
        this.inTraceback = 0;
        return { kind: 'fatal', message: 'a Python traceback without its error line' };
      }
      return null;
    }
    return FATAL_LINE.test(text) ? { kind: 'fatal', message: text.slice(0, 500) } : null;
  }

  snapshot(): number {
    return this.inTraceback;
  }

  restore(n: unknown): void {
    this.inTraceback = typeof n === 'number' && n >= 0 ? n : 0;
  }
}

/** A plan the line states, or a progress bar's count, or null. */
export function parsePlan(text: string): PlanRecord | null {
  const stated = STATED_PLAN.exec(text);
  if (stated !== null) return { kind: 'plan', total: Number(stated[1]!.replaceAll(',', '')), source: 'stated' };
  if (!text.includes('%|')) return null;
  const bar = BAR.exec(text.trim());
  if (bar === null) return null;
  const total = Number(bar[3]);
  if (!(total > 0)) return null;
  const desc = bar[1]?.trim() ?? '';
  if (desc !== '' && !/train/i.test(desc)) return null;
  return { kind: 'plan', total, done: Number(bar[2]), source: desc === '' ? 'bar' : 'stated' };
}
