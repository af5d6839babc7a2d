/**
 * Every finding transition from the engine (held, escalated, cleared) goes to the daemon's log,
 * the console and `<state_dir>/alerts.jsonl` (notifiers/console.ts). A failing append is logged
 * once until it changes; the console still gets the block.
 */
import type { Transition } from '../detectors/engine.js';
import { STATUS, type AlertLog } from '../notifiers/console.js';
import { FailureReport } from '../util/failures.js';
import type { Logger } from '../util/log.js';

export class TransitionRecord {
  private readonly failure = new FailureReport();

  constructor(
    private readonly alertLog: AlertLog,
    private readonly log: Logger,
    /** On a terminal the console block is the alert: the log entry would say it twice, so it goes to debug. */
    private readonly quiet = false,
  ) {}

  /** The error code of the last failed append to alerts.jsonl, or null. */
  get error(): string | null {
    return this.failure.cause('append');
  }

  record(ts: readonly Transition[]): void {
    for (const t of ts) {
      const f = t.finding;
      const status = STATUS[t.kind];
      const level = this.quiet ? 'debug' : t.kind === 'cleared' || f.severity === 'info' ? 'info' : 'warn';
      const fields = { run: f.run, round: f.round, step: f.step, detector: f.detector, severity: f.severity, transition: status };
      this.log[level](fields, `${status}: ${f.detector}: ${f.message}`);
    }
    const err = this.alertLog.record(ts);
    if (err === null) {
      this.failure.recovered('append');
      return;
    }
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    if (this.failure.failed('append', code)) {
      this.log.error({ file: this.alertLog.file, code }, `cannot append to the alert log (${code}); alerts still go to the console`);
    }
  }
}
