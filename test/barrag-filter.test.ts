/**
 * The pre-training filter's output in the official layout (parsers/barrag-filter.ts):
 * `filtered_data/filtered_<ts>.jsonl` (kept samples) and `filtered_ids_<ts>.json` (kept ids and the
 * filter config): thresholds, kept vs total, the kept questions' boundary share, the detectors.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { accuracyOf, FilteredIdsParser, FilteredSamplesParser } from '../src/parsers/barrag-filter.js';
import { classifyFile } from '../src/parsers/index.js';
import { analyzeJson, barwatch } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

/** A training folder whose filter kept `kept` of `total` questions, `boundary` of the kept in [0.4, 0.6]. */
function filterRun(root: string, o: { total: number; kept: number; boundary: number; withAccuracy: boolean }): void {
  const dir = path.join(root, 'filtered_data');
  mkdirSync(dir, { recursive: true });
  const lines: string[] = [];
  for (let i = 0; i < o.kept; i++) {
    const acc = i < o.boundary ? 0.5 : i % 2 === 0 ? 0.3 : 0.75;
    const sample: Record<string, unknown> = {
      data_source: 'nq',
      prompt: [{ role: 'user', content: `question ${i}` }],
      reward_model: { ground_truth: ['x'] },
      extra_info: { index: i, split: 'train' },
    };
    // One version writes the mean, another the rollouts' accuracies.
    if (o.withAccuracy) sample['filter_stats'] = i % 3 === 0 ? { acc_list: [acc, acc] } : { mean_acc: acc, var: 0.05 };
    lines.push(JSON.stringify(sample));
  }
  writeFileSync(path.join(dir, 'filtered_20261201_093000.jsonl'), lines.join('\n') + '\n');
  writeFileSync(
    path.join(dir, 'filtered_ids_20261201_093000.json'),
    JSON.stringify({
      filter_config: { mean_min: 0.25, mean_max: 0.85, var_min: 0.02, n_samples: 8, k_rollouts: 10 },
      total: o.total,
      ids: Array.from({ length: o.kept }, (_, i) => i),
    }),
  );
}

describe("the filter's output (filtered_data/)", () => {
  test('the names: kept samples and kept ids, not taken for a metrics JSONL', () => {
    assert.equal(classifyFile('/r/filtered_data/filtered_20261201_093000.jsonl'), 'barrag-filtered');
    assert.equal(classifyFile('/r/filtered_data/filtered_ids_20261201_093000.json'), 'barrag-filtered-ids');
    assert.equal(classifyFile('/r/logs/metrics.jsonl'), 'jsonl');
  });

  test('accuracies found where the sample carries them: a mean, a list of rollouts, nested', () => {
    assert.equal(accuracyOf({ mean_acc: 0.4 }), 0.4);
    assert.equal(accuracyOf({ filter_stats: { acc_list: [0, 1, 1, 0] } }), 0.5);
    assert.equal(accuracyOf({ extra_info: { accuracy: '0.7' } }), 0.7);
    assert.equal(accuracyOf({ question: 'q', answer: 3 }), null);
    const p = new FilteredSamplesParser();
    assert.deepEqual(p.line('{"x": 1}'), [{ kind: 'filter-summary', before: null, after: 1 }]);
    assert.deepEqual(p.line('not json'), { error: 'a kept sample that is not JSON' });
    const ids = new FilteredIdsParser();
    const recs = ids.document(
      JSON.stringify({ config: { mean_min: 0.2, mean_max: 0.8, var_min: 0.01 }, kept_ids: ['a', 'b'], num_total: 5 }),
    );
    assert.deepEqual(recs, [
      { kind: 'settings', settings: { unsolvableThreshold: 0.2, easyThreshold: 0.8, varMin: 0.01 } },
      { kind: 'filter-summary', before: 5, after: 2 },
    ]);
    // Entries with their accuracies and kept flags: the questions before the filter.
    const all = new FilteredIdsParser().document(
      JSON.stringify({
        stats: [
          { id: 'a', mean: 0.5, kept: true },
          { id: 'b', mean: 0.9, kept: false },
        ],
      }),
    );
    assert.deepEqual(
      (all as { kind: string }[]).filter((r) => r.kind === 'filter-question'),
      [
        { kind: 'filter-question', id: 'a', acc: 0.5, kept: true },
        { kind: 'filter-question', id: 'b', acc: 0.9, kept: false },
      ],
    );
  });

  test('analyze: the thresholds, kept vs total and the kept questions boundary share; a low share fires boundary-share-low', () => {
    const root = path.join(tempDir(), 'bar-rag');
    filterRun(root, { total: 400, kept: 100, boundary: 10, withAccuracy: true });
    const { doc } = analyzeJson([root]);
    assert.equal(doc.runs.length, 1);
    const run = doc.runs[0]!;
    assert.equal(run.run, root, 'filtered_data/ is a folder of the training run');
    const filter = (run as unknown as { filter: Record<string, unknown> }).filter;
    assert.deepEqual(
      [
        filter['questions_before'],
        filter['questions_after'],
        filter['boundary_share_after'],
        filter['summary_before'],
        filter['summary_after'],
      ],
      [0, 100, 0.1, 400, 100],
    );
    const settings = (run as unknown as { settings: Record<string, number> }).settings;
    assert.deepEqual([settings['unsolvableThreshold'], settings['easyThreshold'], settings['varMin']], [0.25, 0.85, 0.02]);
    const low = run.findings.find((f) => f.detector === 'boundary-share-low');
    assert.ok(low !== undefined, `boundary-share-low: ${JSON.stringify(run.findings.map((f) => f.detector))}`);
    assert.match(low.message, /Only 10% of the questions left after the filter/);
    const text = barwatch(['analyze', root]).stdout;
    assert.match(
      text,
      /filter: boundary share - before, 10% after \(100 kept questions with an accuracy read, 400 -> 100 questions\); kept 0\.25 < accuracy < 0\.85, variance >= 0\.02/,
    );
  });

  test('kept samples without accuracies: kept vs total and the thresholds, no share judged', () => {
    const root = path.join(tempDir(), 'bar-rag');
    filterRun(root, { total: 300, kept: 120, boundary: 0, withAccuracy: false });
    const run = analyzeJson([root]).doc.runs[0]!;
    const filter = (run as unknown as { filter: Record<string, unknown> }).filter;
    assert.deepEqual([filter['summary_before'], filter['summary_after'], filter['boundary_share_after']], [300, 120, null]);
    assert.equal(run.findings.length, 0);
  });
});
