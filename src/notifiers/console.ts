/**
 * The record of findings as the engine finds them, always on: a readable block on the console
 * (stdout) and one JSON line per transition in `<state_dir>/alerts.jsonl`. It records every
 * transition, the catch-up's included; `for`, `keep_firing_for` and silences apply to the
 * alerts sent to channels (alerting/), not to this record.
 */
import { resolvedMessage } from '../detectors/index.js';
import type { Transition } from '../detectors/engine.js';
import { findingJson } from '../report/json.js';
import { Journal } from '../state/journal.js';
import { printable, where } from '../util/format.js';

/** The words the console and alerts.jsonl use for a finding's transitions (alerts.jsonl's `status`). */
export const STATUS: Record<Transition['kind'], 'firing' | 'resolved' | 'escalated'> = {
  held: 'firing',
  cleared: 'resolved',
  escalated: 'escalated',
};

export function formatTransition(t: Transition): string {
  const f = t.finding;
  const at = where(f);
  // The run is a folder name and messages quote log text: shown with control characters escaped.
  const head = `${STATUS[t.kind].toUpperCase()} [${f.severity}] ${f.detector}: ${printable(f.run)}${at ? ` (${at})` : ''}`;
  if (t.kind === 'cleared') return `${head}\n  ${printable(resolvedMessage(f, t.movedTo))}\n`;
  return `${head}\n  ${printable(f.message)}\n${f.recommendation ? `  -> ${printable(f.recommendation)}\n` : ''}`;
}

export class AlertLog {
  private readonly journal: Journal;

  constructor(
    /** `<state_dir>/alerts.jsonl` (state/layout.ts), rotated by state/journal.ts. */
    readonly file: string,
    /** Where the readable blocks go; null: none (off a terminal the JSON log says the same, so journald gets one format). */
    private readonly out: NodeJS.WritableStream | null = process.stdout,
    private readonly now: () => number = Date.now,
  ) {
    this.journal = new Journal(file, undefined, now);
  }

  /** Prints and records transitions; a failing write is returned, not thrown. */
  record(ts: readonly Transition[]): Error | null {
    let lines = '';
    for (const t of ts) {
      this.out?.write(formatTransition(t));
      // A resolved alert of a run-wide finding that moved on says to which round (`moved_to`).
      const moved = t.movedTo !== undefined ? { moved_to: t.movedTo } : {};
      lines +=
        JSON.stringify({ time: new Date(this.now()).toISOString(), status: STATUS[t.kind], ...moved, ...findingJson(t.finding) }) + '\n';
    }
    try {
      this.journal.append(lines);
      return null;
    } catch (err) {
      return err as Error;
    }
  }
}
