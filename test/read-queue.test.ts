import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ReadQueue } from '../src/daemon/read-queue.js';
import type { ReadOutcome } from '../src/sources/tailer.js';

/** A queue whose reads are recorded (file and performance.now() at the read). */
function queue(
  spacingMs: number,
  outcome: (file: string) => ReadOutcome = () => 'idle',
): { q: ReadQueue; reads: { file: string; at: number }[] } {
  const reads: { file: string; at: number }[] = [];
  const q = new ReadQueue({
    read: (file) => {
      reads.push({ file, at: performance.now() });
      return Promise.resolve(outcome(file));
    },
    gone: () => Promise.resolve(),
    now: () => Date.now(),
    spacingMs,
  });
  return { q, reads };
}

describe('ReadQueue: read spacing (watch.read_spacing)', () => {
  test('a file written once is read at once; events within the spacing of its last read join one later read', async () => {
    const { q, reads } = queue(200);
    const t0 = performance.now();
    q.schedule('a');
    await q.idle();
    assert.equal(reads.length, 1);
    assert.ok(reads[0]!.at - t0 < 100, `first read after ${reads[0]!.at - t0} ms`);
    for (let i = 0; i < 5; i++) {
      q.schedule('a');
      assert.equal(q.size, 1, 'the file waits for its spacing, counted as queued');
      await sleep(10);
    }
    await q.idle();
    assert.equal(reads.length, 2, 'five events within the spacing: one read');
    assert.ok(reads[1]!.at - reads[0]!.at >= 199, `second read ${reads[1]!.at - reads[0]!.at} ms after the first`);
    assert.equal(q.size, 0);
    // Past the spacing: read at once again.
    await sleep(250);
    const t1 = performance.now();
    q.schedule('a');
    await q.idle();
    assert.equal(reads.length, 3);
    assert.ok(reads[2]!.at - t1 < 100);
  });

  test('spacing is per file: another file is read at once', async () => {
    const { q, reads } = queue(500);
    q.schedule('a');
    await q.idle();
    q.schedule('a');
    q.schedule('b');
    await sleep(50);
    assert.deepEqual(
      reads.map((r) => r.file),
      ['a', 'b'],
    );
    await q.idle();
    assert.deepEqual(
      reads.map((r) => r.file),
      ['a', 'b', 'a'],
    );
  });

  test("a read that stopped short ('more') goes on at once, whatever the spacing", async () => {
    let left = 3;
    const { q, reads } = queue(10_000, () => (--left > 0 ? 'more' : 'idle'));
    q.schedule('big');
    await q.idle();
    assert.equal(reads.length, 3);
    assert.ok(reads[2]!.at - reads[0]!.at < 1000);
  });

  test('stop drops reads waiting for their spacing, and idle() does not wait for them', async () => {
    const { q, reads } = queue(10_000);
    q.schedule('a');
    await q.idle();
    q.schedule('a');
    assert.equal(q.size, 1);
    const t0 = performance.now();
    await q.stop();
    assert.ok(performance.now() - t0 < 1000);
    assert.equal(q.size, 0);
    q.schedule('a');
    await sleep(20);
    assert.equal(reads.length, 1);
  });

  test('spacing 0 reads at every event', async () => {
    const { q, reads } = queue(0);
    for (let i = 0; i < 3; i++) {
      q.schedule('a');
      await q.idle();
    }
    assert.equal(reads.length, 3);
  });
});
