/**
 * A bare JSON list of log dicts: what a callback that dumps the Trainer's `state.log_history`
 * writes (`step_logs.json`, `log_history.json`), or any list of `{"step": N, ...metrics}`. Read
 * whole each time it changes, as trainer_state.json is (LogHistoryReader).
 */
import { parseJsonLenient } from './json.js';
import { LogHistoryReader } from './trainer-state.js';
import type { DocumentParser, FormatId, LineResult, ParserOptions } from './types.js';
import { defineInput } from './types.js';

export class LogHistoryParser implements DocumentParser {
  readonly kind = 'document';
  private readonly history: LogHistoryReader;

  constructor(opts: ParserOptions) {
    this.history = new LogHistoryReader(opts);
  }

  format(): FormatId {
    return 'log-history';
  }

  document(text: string): LineResult {
    let doc: unknown;
    try {
      doc = parseJsonLenient(text);
    } catch {
      return { error: 'not valid JSON (barwatch reads a JSON list of log dicts here)' };
    }
    if (!Array.isArray(doc)) return { error: `a JSON ${doc === null ? 'null' : typeof doc}, not a list of log dicts with a "step" each` };
    if (doc.length > 0 && !doc.some((e) => e !== null && typeof e === 'object' && 'step' in e))
      return { error: 'a JSON list whose entries have no "step": not a training log' };
    return this.history.entries(doc);
  }

  snapshot(): unknown {
    return this.history.snapshot();
  }

  restore(state: unknown): void {
    this.history.restore(state);
  }
}

/** A name that says log, history or metrics; configs, tokenizers and results files are not. */
const NAMED = /(^|[^a-z])(logs?|log_history|history|metrics)([^a-z]|$)/;

export const logHistoryInput = defineInput({
  id: 'log-history',
  read: 'document',
  named: (base) => base.endsWith('.json') && NAMED.test(base.slice(0, -5)),
  sniffed: (head) => /^\s*\[\s*\{/.test(head) && head.includes('"step"'),
  create: (opts) => new LogHistoryParser(opts),
  wholeRun: true,
});
