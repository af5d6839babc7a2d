import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { placeFile } from '../src/sources/place.js';
import { tempDir } from './helpers/fs.js';

test('role, round and run folder from the path (SPEC 3.1)', () => {
  const cases: [string, ReturnType<typeof placeFile>][] = [
    ['/runs/a/outputs/selector_round3/train.log', { run: '/runs/a', role: 'selector', round: 3 }],
    ['/runs/a/outputs/generator_round2/reward_history.jsonl', { run: '/runs/a', role: 'generator', round: 2 }],
    ['/runs/b/outputs/selector-round-3/train.log', { run: '/runs/b', role: 'selector', round: 3 }],
    ['/runs/c/outputs/round3/selector/train.log', { run: '/runs/c', role: 'selector', round: 3 }],
    ['/runs/d/configs/reward_config.yaml', { run: '/runs/d', role: 'unknown', round: null }],
    ['/runs/e/debug_logs/selector_reward_debug_1.log', { run: '/runs/e', role: 'selector', round: null }],
    ['/runs/f/train.log', { run: '/runs/f', role: 'unknown', round: null }],
    ['/deep/x/y/run7/logs/train.log', { run: '/deep/x/y/run7', role: 'unknown', round: null }],
    // The guide's flat layout: role and round in the file name.
    ['/r/debug_artifacts/rewards/selector_round1_reward_history.jsonl', { run: '/r/debug_artifacts', role: 'selector', round: 1 }],
    ['/r/debug_artifacts/logs/selector_round1_train.log', { run: '/r/debug_artifacts', role: 'selector', round: 1 }],
    ['/r/debug_artifacts/logs/generator-round-2-train.log', { run: '/r/debug_artifacts', role: 'generator', round: 2 }],
    ['/r/debug_artifacts/logs/train_selector_round3.log', { run: '/r/debug_artifacts', role: 'selector', round: 3 }],
    ['/r/debug_artifacts/logs/round4_generator.log', { run: '/r/debug_artifacts', role: 'generator', round: 4 }],
    ['/r/debug_artifacts/configs/filter_config.yaml', { run: '/r/debug_artifacts', role: 'unknown', round: null }],
    // Folders win over the name; a name that only mentions a round elsewhere is not taken.
    ['/r/outputs/selector_round2/generator_round9_notes.log', { run: '/r', role: 'selector', round: 2 }],
    ['/r/logs/myselector_round1x.log', { run: '/r', role: 'unknown', round: null }],
  ];
  for (const [file, want] of cases) {
    const kind = file.endsWith('.yaml')
      ? 'run-config'
      : file.includes('selector_reward_debug')
        ? 'barrag-selector-debug'
        : file.endsWith('.jsonl')
          ? 'jsonl'
          : 'text';
    assert.deepEqual(placeFile(file, kind), want, file);
  }
});

test('a single file named on the command line is its own run unless its folders say otherwise', () => {
  assert.deepEqual(placeFile('/tmp/verl.log', 'text', true), { run: '/tmp/verl.log', role: 'unknown', round: null });
  assert.deepEqual(placeFile('/r/outputs/selector_round1/train.log', 'text', true), { run: '/r', role: 'selector', round: 1 });
});

test("the official scripts' console logs: role from the name, round from the order of the time stamps among that role's logs", () => {
  const dir = tempDir();
  const logs = path.join(dir, 'logs');
  mkdirSync(logs);
  for (const n of [
    'selector_training_20261201_100000.log',
    'generator_training_20261201_110000.log',
    'selector_training_20261201_120000.log',
  ])
    writeFileSync(path.join(logs, n), '');
  assert.deepEqual(placeFile(path.join(logs, 'selector_training_20261201_100000.log'), 'text'), { run: dir, role: 'selector', round: 1 });
  assert.deepEqual(placeFile(path.join(logs, 'generator_training_20261201_110000.log'), 'text'), { run: dir, role: 'generator', round: 1 });
  assert.deepEqual(placeFile(path.join(logs, 'selector_training_20261201_120000.log'), 'text'), { run: dir, role: 'selector', round: 2 });
  // A later invocation's log leaves the earlier rounds as they were.
  writeFileSync(path.join(logs, 'selector_training_20261201_140000.log'), '');
  assert.equal(placeFile(path.join(logs, 'selector_training_20261201_120000.log'), 'text').round, 2);
  assert.equal(placeFile(path.join(logs, 'selector_training_20261201_140000.log'), 'text').round, 3);
});
