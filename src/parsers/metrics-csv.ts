/**
 * Metric tables in CSV with a step column: a W&B panel's "Export CSV" (`wandb_export_*.csv`: a
 * `Step` column, then `<run> - <metric>` with `__MIN` / `__MAX` beside each, the spread of the
 * points W&B sampled into that step), a W&B API history saved by pandas (`_step`, `_runtime`,
 * `_timestamp`, the metrics, an unnamed index), or a logger's `metrics.csv`. Read whole when it
 * changes (an export is written once). An empty cell is a metric not logged at that step.
 */
import type * as CsvParse from 'csv-parse/sync';
import { lazy } from '../util/lazy.js';
import { canonicalKey, toNumber, trainTag } from './keys.js';
import { parseTime } from './reward-history.js';
import type { DocumentParser, FormatId, LineResult, ParsedRecord, ParserOptions } from './types.js';
import { defineInput } from './types.js';

/** Column names of the step, lower case, in the order they are preferred. */
const STEP_COLUMNS = ['step', '_step', 'global_step', 'train/global_step', 'trainer/global_step'];
/** Columns that are about the row, not metrics. */
const ROW_COLUMNS = new Set(['', '_runtime', '_timestamp', 'wall time', 'relative time (process)', 'relative time (wall)', 'epoch']);
/** W&B's spread of the sampled points: the value itself is the mean column. */
const SPREAD = /__(MIN|MAX)$/;
const RUN_PREFIX = ' - ';
/** Rows as arrays of cells; ragged rows and stray quotes (hand-edited exports) read rather than refused. */
/** Loaded by the first CSV file read. */
const csvParse = lazy<typeof CsvParse>('csv-parse/sync');

const CSV_OPTIONS: CsvParse.Options = { bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, trim: true };

interface Column {
  at: number;
  name: string;
}

export class MetricsCsvParser implements DocumentParser {
  readonly kind = 'document';
  private lastStep = -Infinity;
  private unread: string | null = null;

  constructor(private readonly opts: ParserOptions) {}

  format(): FormatId {
    return 'metrics-csv';
  }

  document(text: string): LineResult {
    let rows: string[][];
    try {
      rows = csvParse().parse(text, CSV_OPTIONS);
    } catch (err) {
      return { error: `not a CSV table (${(err as Error).message.split('\n')[0]})` };
    }
    const header = rows[0];
    if (header === undefined) return [];
    const lower = header.map((h) => h.toLowerCase());
    const stepAt = STEP_COLUMNS.map((c) => lower.indexOf(c)).find((i) => i >= 0);
    if (stepAt === undefined)
      return { error: 'no step column (Step, _step, global_step): a runs table, or a panel exported with another x-axis' };
    const timeAt = lower.indexOf('_timestamp');
    const { columns, runs } = metricColumns(header, stepAt);
    this.unread =
      runs.length > 1
        ? `holds ${runs.length} runs (${runs.map((r) => `"${r}"`).join(', ')}): only "${runs[0]}" is read; export one run per file to read each`
        : null;
    const out: ParsedRecord[] = [];
    let maxStep = -Infinity;
    for (let i = 1; i < rows.length; i++) maxStep = Math.max(maxStep, toNumber(rows[i]![stepAt]) ?? -Infinity);
    // Written again with fewer steps: a new export of a restarted run; read it from its start.
    if (maxStep < this.lastStep) this.lastStep = -Infinity;
    for (let i = 1; i < rows.length; i++) {
      const row = rows[i]!;
      const step = toNumber(row[stepAt]);
      if (step === undefined || !Number.isFinite(step) || step <= this.lastStep) continue;
      const values: Record<string, number> = {};
      let any = false;
      for (const c of columns) {
        const v = toNumber(row[c.at]);
        if (v === undefined) continue;
        values[canonicalKey(trainTag(c.name), this.opts.keyMap)] = v;
        any = true;
      }
      if (!any) continue;
      const rec: ParsedRecord = { kind: 'metrics', step, values };
      const time = timeAt >= 0 ? parseTime(toNumber(row[timeAt])) : undefined;
      if (time !== undefined) rec.time = time;
      out.push(rec);
    }
    if (maxStep > this.lastStep) this.lastStep = maxStep;
    return out;
  }

  unreadPart(): string | null {
    return this.unread;
  }

  snapshot(): unknown {
    return { lastStep: Number.isFinite(this.lastStep) ? this.lastStep : null };
  }

  restore(state: unknown): void {
    const s = (state as { lastStep?: number | null }) ?? {};
    this.lastStep = typeof s.lastStep === 'number' ? s.lastStep : -Infinity;
  }
}

/**
 * The metric columns of a header and the runs they belong to (a panel export names each column
 * `<run> - <metric>`): the first run's columns, named by their metric alone.
 */
function metricColumns(header: readonly string[], stepAt: number): { columns: Column[]; runs: string[] } {
  const runs: string[] = [];
  const all: (Column & { run: string | null })[] = [];
  header.forEach((h, at) => {
    if (at === stepAt || ROW_COLUMNS.has(h.toLowerCase()) || SPREAD.test(h)) return;
    const cut = h.indexOf(RUN_PREFIX);
    const run = cut > 0 ? h.slice(0, cut) : null;
    if (run !== null && !runs.includes(run)) runs.push(run);
    all.push({ at, name: run === null ? h : h.slice(cut + RUN_PREFIX.length), run });
  });
  const first = runs[0] ?? null;
  return { columns: all.filter((c) => c.run === first || c.run === null), runs };
}

/** A name that says it is a W&B export or a metrics table. */
const NAMED = /^wandb_export|(^|[^a-z])(metrics|history|logs?)([^a-z]|$)/;

export const metricsCsvInput = defineInput({
  id: 'csv',
  read: 'document',
  named: (base) => base.endsWith('.csv') && NAMED.test(base.slice(0, -4)),
  sniffed: (head) =>
    /^\ufeff?"?(Step|_step|step|global_step)"?,/.test(head) || /^\ufeff?,_step,|,"?_step"?,/.test(head.split('\n')[0] ?? ''),
  create: (opts) => new MetricsCsvParser(opts),
  wholeRun: true,
});
