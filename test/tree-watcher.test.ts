import assert from 'node:assert/strict';
import { mkdirSync, promises as fsp, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Reach } from '../src/sources/reach.js';
import { RELIST_EVERY, relistShare, startTreeWatcher } from '../src/sources/tree-watcher.js';
import { tempDir } from './helpers/fs.js';

describe('folder watcher: every folder listed again once in RELIST_EVERY rescans', () => {
  test('each folder once over RELIST_EVERY rescans, never all at one', async (t) => {
    const root = tempDir();
    const folders = [root];
    for (let r = 0; r < 12; r++) {
      for (const sub of ['', 'outputs', 'outputs/selector_round1']) {
        const dir = path.join(root, `run${r}`, sub);
        mkdirSync(dir, { recursive: true });
        if (!folders.includes(dir)) folders.push(dir);
      }
      writeFileSync(path.join(root, `run${r}`, 'outputs', 'selector_round1', 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n');
    }
    const events: string[] = [];
    const following = await startTreeWatcher(
      { roots: [{ path: root }], poll: false, pollIntervalMs: 1000, exclude: [], reach: new Reach([root], []) },
      (event, file) => events.push(`${event} ${file}`),
      (err) => assert.fail(err),
    );
    t.after(() => following.close());
    assert.equal(events.filter((e) => e.startsWith('add ')).length, 12, 'the start lists every folder');

    const listed = new Map<string, number>();
    const perRescan: number[] = [];
    const readdir = fsp.readdir.bind(fsp);
    t.mock.method(fsp, 'readdir', (dir: string, opts: unknown) => {
      listed.set(dir, (listed.get(dir) ?? 0) + 1);
      return readdir(dir, opts as { withFileTypes: true });
    });
    for (let i = 0; i < RELIST_EVERY; i++) {
      const before = [...listed.values()].reduce((a, b) => a + b, 0);
      await following.rescan();
      perRescan.push([...listed.values()].reduce((a, b) => a + b, 0) - before);
    }
    assert.deepEqual([...listed.keys()].sort(), [...folders].sort(), 'every folder listed');
    assert.ok(
      [...listed.values()].every((n) => n === 1),
      'each folder once',
    );
    assert.ok(Math.max(...perRescan) < folders.length, `a share at each rescan: ${perRescan.join(', ')}`);
    // A listing reports what no event told: nothing new here, so nothing more.
    assert.equal(events.length, 12);
  });

  test('a folder keeps its share; the shares cover every rescan', () => {
    assert.equal(relistShare('/runs/a/outputs'), relistShare('/runs/a/outputs'));
    const seen = new Set<number>();
    for (let i = 0; i < 200; i++) {
      const s = relistShare(`/runs/run${i}/outputs`);
      assert.ok(Number.isInteger(s) && s >= 0 && s < RELIST_EVERY);
      seen.add(s);
    }
    assert.equal(seen.size, RELIST_EVERY);
  });
});
