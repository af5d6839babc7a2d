/**
 * The output of BAR-RAG's pre-training filter (filter.py), as the official scripts leave it in
 * `filtered_data/`: `filtered_<ts>.jsonl`, the kept samples one a line, and
 * `filtered_ids_<ts>.json`, the kept ids with the filter's config (`mean_min`, `mean_max`,
 * `var_min`). What barwatch takes from them: the thresholds, how many questions were kept of how
 * many, and each question's accuracy wherever a sample or an entry carries one (its mean over the
 * rollouts, or the rollouts' list), for the boundary-share detectors. The two files' exact fields
 * vary with the version of the script, so fields are found by their names at any depth.
 */
import { settingsOf } from './run-config.js';
import type { DocumentParser, FilterQuestion, FormatId, LineParser, LineResult, ParsedRecord } from './types.js';
import { defineInput, NOTHING } from './types.js';

/** A question's accuracy under one of these names (the first found wins). */
const ACCURACY = ['mean_acc', 'acc_mean', 'mean_accuracy', 'avg_acc', 'accuracy_mean', 'mean', 'accuracy', 'acc'];
/** Or the mean of a list under one of these. */
const ACCURACY_LISTS = ['acc_list', 'accuracies', 'acc_scores', 'accuracy_list', 'rollout_accs'];
const ID = ['id', 'question_id', 'qid', 'idx', 'index', 'uid'];
/** The number of questions before the filter. */
const TOTAL =
  /^(total|num_total|n_total|total_samples|total_questions|num_questions|original|original_size|num_original|before|input_size|num_before)$/i;
/** Where the kept ids are. */
const KEPT_IDS = /^(ids|kept_ids|filtered_ids|kept|selected_ids|keep_ids)$/i;
/** Nested objects a sample's filter statistics may sit in. */
const NESTS = ['filter_stats', 'stats', 'extra_info', 'filter', 'metadata'];

function finiteIn01(v: unknown): number | null {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

/** The accuracy an object gives for its question, or null. */
export function accuracyOf(o: Record<string, unknown>, depth = 0): number | null {
  for (const k of ACCURACY) {
    const a = finiteIn01(o[k]);
    if (a !== null) return a;
  }
  for (const k of ACCURACY_LISTS) {
    const list = o[k];
    if (!Array.isArray(list) || list.length === 0) continue;
    const xs = list.map(finiteIn01).filter((x) => x !== null);
    if (xs.length === list.length) return xs.reduce((a, b) => a + b, 0) / xs.length;
  }
  if (depth < 2)
    for (const k of NESTS) {
      const v = o[k];
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        const a = accuracyOf(v as Record<string, unknown>, depth + 1);
        if (a !== null) return a;
      }
    }
  return null;
}

function idOf(o: Record<string, unknown>): string | null {
  for (const k of ID) {
    const v = o[k];
    if (typeof v === 'string' || typeof v === 'number') return String(v);
  }
  const extra = o['extra_info'];
  if (extra !== null && typeof extra === 'object' && !Array.isArray(extra)) return idOf(extra as Record<string, unknown>);
  return null;
}

/** `filtered_<ts>.jsonl`: every line a kept sample; its accuracy, where it carries one. */
export class FilteredSamplesParser implements LineParser {
  readonly kind = 'lines';
  private kept = 0;

  format(): FormatId {
    return 'barrag-filter';
  }

  line(text: string): LineResult {
    const t = text.trim();
    if (t === '') return NOTHING;
    let o: unknown;
    try {
      o = JSON.parse(t);
    } catch {
      return { error: 'a kept sample that is not JSON' };
    }
    if (o === null || typeof o !== 'object' || Array.isArray(o)) return { error: 'a kept sample that is not a JSON object' };
    this.kept++;
    const out: ParsedRecord[] = [{ kind: 'filter-summary', before: null, after: this.kept }];
    const acc = accuracyOf(o as Record<string, unknown>);
    if (acc !== null) out.push({ kind: 'filter-question', id: idOf(o as Record<string, unknown>), acc, kept: true, keptOnly: true });
    return out;
  }

  snapshot(): unknown {
    return { kept: this.kept };
  }

  restore(state: unknown): void {
    const k = (state as { kept?: unknown } | null)?.kept;
    if (typeof k === 'number') this.kept = k;
  }
}

/** What a `filtered_ids_<ts>.json` document says. */
interface IdsDoc {
  kept: number | null;
  total: number | null;
  questions: FilterQuestion[];
}

function readIds(doc: unknown): IdsDoc {
  let kept: number | null = null;
  let total: number | null = null;
  const questions: FilterQuestion[] = [];
  const visit = (node: unknown, key: string, depth: number): void => {
    if (depth > 4 || node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) {
      if (node.every((x) => typeof x === 'string' || typeof x === 'number')) {
        if (KEPT_IDS.test(key) || depth === 0) kept = Math.max(kept ?? 0, node.length);
        return;
      }
      // Entries with an accuracy each: the questions the filter judged, kept or not where they say.
      for (const x of node) {
        if (x === null || typeof x !== 'object' || Array.isArray(x)) continue;
        const o = x as Record<string, unknown>;
        const acc = accuracyOf(o);
        if (acc === null) continue;
        const flag = o['kept'] ?? o['keep'] ?? o['selected'];
        questions.push({ kind: 'filter-question', id: idOf(o), acc, kept: typeof flag === 'boolean' ? flag : null });
      }
      return;
    }
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && TOTAL.test(k)) total = v;
      else if (
        typeof v === 'number' &&
        Number.isInteger(v) &&
        v >= 0 &&
        /^(num_kept|kept_count|num_filtered|after|n_kept|num_after)$/i.test(k)
      )
        kept = v;
      else visit(v, k, depth + 1);
    }
  };
  visit(doc, '', 0);
  // Entries without a kept flag in a document that lists the kept ids: kept when listed.
  return { kept, total, questions };
}

/** `filtered_ids_<ts>.json`: the kept ids and the filter's config, read whole when it changes. */
export class FilteredIdsParser implements DocumentParser {
  readonly kind = 'document';
  private questionsSent = false;

  format(): FormatId {
    return 'barrag-filter';
  }

  document(text: string): LineResult {
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      return { error: `filtered ids that are not JSON: ${(err as Error).message}` };
    }
    const out: ParsedRecord[] = [];
    const settings = settingsOf(doc);
    if (Object.keys(settings).length > 0) out.push({ kind: 'settings', settings });
    const ids = readIds(doc);
    if (ids.kept !== null || ids.total !== null) out.push({ kind: 'filter-summary', before: ids.total, after: ids.kept });
    if (!this.questionsSent && ids.questions.length > 0) {
      this.questionsSent = true;
      out.push(...ids.questions);
    }
    return out;
  }

  snapshot(): unknown {
    return { questionsSent: this.questionsSent };
  }

  restore(state: unknown): void {
    this.questionsSent = (state as { questionsSent?: unknown } | null)?.questionsSent === true;
  }
}

export const barragFilteredInput = defineInput({
  id: 'barrag-filtered',
  read: 'lines',
  named: (base) => /^filtered_.*\.jsonl$/.test(base) && !base.startsWith('filtered_ids'),
  create: () => new FilteredSamplesParser(),
});

export const barragFilteredIdsInput = defineInput({
  id: 'barrag-filtered-ids',
  read: 'document',
  named: (base) => /^filtered_ids.*\.json$/.test(base),
  create: () => new FilteredIdsParser(),
});
