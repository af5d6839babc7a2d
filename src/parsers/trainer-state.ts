/**
 * Hugging Face `trainer_state.json`: rewritten whole at each checkpoint. Its `log_history` holds one
 * entry per logging step; the final summary entry (`train_runtime`...) is skipped and `eval_*`
 * keys go to `eval/*` series. Each call emits only the entries past the last step it emitted.
 */
import { parseJsonLenient } from './json.js';
import { flattenValues, toNumber } from './keys.js';
import type { DocumentParser, FormatId, LineResult, ParsedRecord, ParserOptions } from './types.js';
import { defineInput } from './types.js';

const SKIP: ReadonlySet<string> = new Set(['step', 'epoch']);

/**
 * Log dicts as Hugging Face's Trainer keeps them (`state.log_history`): one entry per logging
 * step, `step` and `epoch` beside the metrics, the end-of-training summary (`train_runtime`...)
 * last. Each call gets the whole list as the file holds it now and emits only the entries past
 * the last step it emitted; a list whose steps end lower than that was started over (a restarted
 * run) and is read again from its start.
 */
export class LogHistoryReader {
  private lastStep = -Infinity;

  constructor(private readonly opts: ParserOptions) {}

  entries(history: readonly unknown[]): ParsedRecord[] {
    let maxStep = -Infinity;
    for (const e of history) maxStep = Math.max(maxStep, toNumber((e as Record<string, unknown>)?.['step']) ?? -Infinity);
    if (maxStep < this.lastStep) this.lastStep = -Infinity;
    const out: ParsedRecord[] = [];
    for (const entry of history) {
      if (entry === null || typeof entry !== 'object') continue;
      const e = entry as Record<string, unknown>;
      const step = toNumber(e['step']);
      if ('train_runtime' in e) {
        if (step === undefined || step > this.lastStep) out.push({ kind: 'finished' });
        continue;
      }
      if (step === undefined || step <= this.lastStep) continue;
      const train: Record<string, unknown> = {};
      const evals: Record<string, number> = {};
      for (const k in e) {
        if (k.startsWith('eval_')) {
          const v = toNumber(e[k]);
          if (v !== undefined) evals[`eval/${k.slice(5)}`] = v;
        } else train[k] = e[k];
      }
      const nulls: string[] = [];
      const values = flattenValues(train, this.opts.keyMap, SKIP, {}, '', nulls);
      Object.assign(values, evals);
      if (Object.keys(values).length > 0 || nulls.length > 0)
        out.push({ kind: 'metrics', step, values, ...(nulls.length > 0 ? { nulls } : {}) });
    }
    if (maxStep > this.lastStep) this.lastStep = maxStep;
    return out;
  }

  snapshot(): unknown {
    return { lastStep: Number.isFinite(this.lastStep) ? this.lastStep : null };
  }

  restore(state: unknown): void {
    const s = (state as { lastStep?: number | null }) ?? {};
    this.lastStep = typeof s.lastStep === 'number' ? s.lastStep : -Infinity;
  }
}

export class TrainerStateParser implements DocumentParser {
  readonly kind = 'document';
  private readonly history: LogHistoryReader;

  constructor(opts: ParserOptions) {
    this.history = new LogHistoryReader(opts);
  }

  format(): FormatId {
    return 'trainer-state';
  }

  document(text: string): LineResult {
    let doc: unknown;
    try {
      doc = parseJsonLenient(text);
    } catch {
      return { error: 'trainer_state.json is not valid JSON' };
    }
    const history = (doc as { log_history?: unknown } | null)?.log_history;
    if (!Array.isArray(history)) return { error: 'trainer_state.json has no log_history array' };
    const out = this.history.entries(history);
    const d = doc as { max_steps?: unknown; global_step?: unknown };
    const total = toNumber(d.max_steps);
    if (total !== undefined && total > 0) {
      const done = toNumber(d.global_step);
      out.push(done === undefined ? { kind: 'plan', total, source: 'stated' } : { kind: 'plan', total, done, source: 'stated' });
    }
    return out;
  }

  snapshot(): unknown {
    return this.history.snapshot();
  }

  restore(state: unknown): void {
    this.history.restore(state);
  }
}

export const trainerStateInput = defineInput({
  id: 'trainer-state',
  read: 'document',
  named: (base) => base.includes('trainer_state') && base.endsWith('.json'),
  sniffed: (head) => head.trimStart().startsWith('{') && head.includes('"log_history"'),
  create: (opts) => new TrainerStateParser(opts),
  wholeRun: true,
});
