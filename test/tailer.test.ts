import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { appendFileSync, readFileSync, renameSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { FileTailer, type TailCheckpoint } from '../src/sources/tailer.js';
import { tempDir } from './helpers/fs.js';
import { DEFAULTS } from './helpers/defaults.js';
import { viaJson } from './helpers/json.js';

const WRITER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'writer.js');

async function readAll(t: FileTailer, out: string[] | ((lines: string[]) => void)): Promise<void> {
  const deliver = typeof out === 'function' ? out : (lines: string[]): void => void out.push(...lines);
  while ((await t.read(deliver)) === 'more');
}

describe('tailing a file written by a real writer process', () => {
  for (const seed of [1, 2, 3]) {
    test(`bursts, partial lines, truncation, rename rotation and two restarts (seed ${seed})`, async () => {
      const dir = tempDir();
      const file = path.join(dir, 'reward_history.jsonl');
      writeFileSync(file, '');
      const perPhase = 1500;
      const child = fork(WRITER, [file, String(seed), String(perPhase)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const seen: number[] = [];
      const deliver = (lines: string[]): void => {
        for (const l of lines) seen.push((JSON.parse(l) as { seq: number }).seq);
      };
      let tailer = new FileTailer(file, { maxLineBytes: 1 << 20, chunkBytes: 4096, maxBytesPerRead: 64 << 10 });
      let phase = '';
      let written = 0;
      child.on('message', (m: { phase: string; written: number }) => {
        phase = m.phase;
        written = m.written;
      });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));

      let restarts = 0;
      const restart = async (gapMs: number, during?: () => void): Promise<void> => {
        // A restart of barwatch: keep only the checkpoint, drop everything in memory.
        const saved: TailCheckpoint | null = viaJson(tailer.checkpoint());
        await tailer.close();
        during?.();
        await sleep(gapMs);
        tailer = new FileTailer(file, { maxLineBytes: 1 << 20, chunkBytes: 4096, maxBytesPerRead: 64 << 10 }, saved);
        restarts++;
      };

      let restartedEarly = false;
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        await readAll(tailer, deliver);
        if (!restartedEarly && seen.length > perPhase / 3) {
          restartedEarly = true;
          await restart(20);
        }
        if (phase === 'before-truncate' && seen.length === written) {
          phase = '';
          child.send({ cmd: 'go' });
        }
        if (phase === 'before-rotate' && seen.length === written) {
          phase = '';
          // barwatch is down while the file is rotated: the old file must still be finished.
          await restart(60, () => child.send({ cmd: 'go' }));
        }
        if (phase === 'done') {
          await readAll(tailer, deliver);
          if (seen.length >= written) break;
        }
        await sleep(2);
      }
      await exited;
      await tailer.close();
      assert.equal(restarts, 2);
      assert.equal(written, 3 * perPhase + 2);
      const expected = Array.from({ length: written }, (_, i) => i);
      assert.equal(seen.length, expected.length, 'records seen vs written');
      assert.deepEqual(seen, expected);
    });
  }
});

describe('tailer edge cases', () => {
  test("reading a log leaves its access time as it was (the watchdog's reads do not make it look read)", async (t) => {
    const dir = tempDir();
    const file = path.join(dir, 'reward_history.jsonl');
    const old = new Date(Date.UTC(2020, 0, 1));
    // An atime older than the mtime: relatime updates it at the next read.
    const stale = (): void => {
      writeFileSync(file, '{"step": 1}\n');
      utimesSync(file, old, new Date());
    };
    stale();
    readFileSync(file);
    if (statSync(file).atimeMs === old.getTime()) return t.skip('this file system never updates access times (noatime)');
    stale();
    const tailer = new FileTailer(file, { maxLineBytes: 1 << 20 });
    const lines: string[] = [];
    await readAll(tailer, lines);
    appendFileSync(file, '{"step": 2}\n');
    utimesSync(file, old, new Date());
    await readAll(tailer, lines);
    await tailer.close();
    assert.deepEqual(lines, ['{"step": 1}', '{"step": 2}']);
    assert.equal(statSync(file).atimeMs, old.getTime());
  });

  test('a partial last line waits for its newline; CRLF and invalid UTF-8 do not break lines', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'train.log');
    writeFileSync(
      file,
      Buffer.concat([
        Buffer.from('a=1\r\nbad '),
        Buffer.from([0xff, 0xfe]),
        Buffer.from(' bytes\n'),
        Buffer.from([0xe2, 0x82]),
        Buffer.from('partial'),
      ]),
    );
    const t = new FileTailer(file, DEFAULTS.tail);
    const out: string[] = [];
    await readAll(t, out);
    assert.deepEqual(out, ['a=1', 'bad \ufffd\ufffd bytes']);
    appendFileSync(file, Buffer.from([0xac, 0x0a])); // a stray continuation byte, then the newline
    await readAll(t, out);
    assert.equal(out[2], '\ufffdpartial\ufffd');
    assert.equal(out.length, 3);
    await t.close();
  });

  test('a line over the limit is skipped and counted, without holding it', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'x.jsonl');
    const long = 'y'.repeat(50_000);
    writeFileSync(file, `first\n${long}\nsecond\n${long}`);
    const skipped: number[] = [];
    const t = new FileTailer(file, { maxLineBytes: 1000, chunkBytes: 4096, maxBytesPerRead: 1 << 20 }, null, {
      longLine: ({ bytes }) => skipped.push(bytes),
    });
    const out: string[] = [];
    await readAll(t, out);
    assert.deepEqual(out, ['first', 'second']);
    assert.deepEqual(skipped, [50_000]);
    // The unterminated long tail is still being skipped; its end arrives.
    appendFileSync(file, 'tail\nthird\n');
    await readAll(t, out);
    assert.deepEqual(out, ['first', 'second', 'third']);
    assert.deepEqual(skipped, [50_000, 50_004]);
    // The checkpoint never points into a line.
    const cp = t.checkpoint()!;
    assert.equal(cp.offset, Buffer.byteLength(`first\n${long}\nsecond\n${long}tail\nthird\n`));
    await t.close();
  });

  const modes = [
    { name: 'asynchronous reads', sync: false, trustEvents: false },
    { name: 'synchronous reads', sync: true, trustEvents: false },
    { name: 'synchronous reads without a stat of the path', sync: true, trustEvents: true },
  ];
  for (const { name, sync, trustEvents } of modes)
    test(`truncation (copytruncate) and regrowth past the old offset are both noticed (${name})`, async () => {
      const dir = tempDir();
      const file = path.join(dir, 'train.log');
      writeFileSync(file, 'step=1 a=1\nstep=2 a=2\n');
      const notes: string[] = [];
      const t = new FileTailer(file, { ...DEFAULTS.tail, sync, trustEvents }, null, {
        truncated: ({ rewritten }) => notes.push(rewritten ? 'rewritten' : 'truncated'),
        rotated: ({ reason }) => notes.push(reason),
      });
      const out: string[] = [];
      await readAll(t, out);
      truncateSync(file, 0);
      appendFileSync(file, 'step=9 a=9\n');
      await readAll(t, out);
      // Replaced with longer content before barwatch looked: the bytes before the read position tell.
      writeFileSync(file, 'step=100 a=100\nstep=101 a=101\nstep=102 a=102\n');
      await readAll(t, out);
      // Rewritten again with the same first line: still noticed (the first line alone would not tell).
      writeFileSync(file, 'step=100 a=100\nstep=201 a=201\nstep=202 a=202\nstep=203 a=203\n');
      await readAll(t, out);
      assert.deepEqual(out, [
        'step=1 a=1',
        'step=2 a=2',
        'step=9 a=9',
        'step=100 a=100',
        'step=101 a=101',
        'step=102 a=102',
        'step=100 a=100',
        'step=201 a=201',
        'step=202 a=202',
        'step=203 a=203',
      ]);
      assert.deepEqual(notes, ['truncated', 'rewritten', 'rewritten']);
      await t.close();
    });

  test('trusting the watcher: an open file is read on without a stat until its name is said to have changed', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'train.log');
    writeFileSync(file, 'a\n');
    const notes: string[] = [];
    const t = new FileTailer(file, { ...DEFAULTS.tail, sync: true, trustEvents: true }, null, {
      truncated: () => notes.push('truncated'),
      rotated: ({ reason }) => notes.push(reason),
    });
    const out: string[] = [];
    await readAll(t, out);
    // Rotated by rename: the writer's last line lands in the old file, a new file takes the name.
    renameSync(file, `${file}.1`);
    appendFileSync(`${file}.1`, 'b\n');
    writeFileSync(file, 'c\n');
    // No rename reported yet: the open descriptor is read on, the path is not looked at.
    await readAll(t, out);
    assert.deepEqual(out, ['a', 'b']);
    assert.deepEqual(notes, []);
    // The folder watcher reports the rename: the path is stat'ed, the new file read from its start.
    t.suspectPath();
    await readAll(t, out);
    assert.deepEqual(out, ['a', 'b', 'c']);
    assert.deepEqual(notes, ['inode']);
    appendFileSync(file, 'd\n');
    await readAll(t, out);
    assert.deepEqual(out, ['a', 'b', 'c', 'd']);
    await t.close();
  });

  test('a file deleted and recreated is read from the start; a vanished file reports gone', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'a.jsonl');
    writeFileSync(file, '{"step":1}\n');
    const t = new FileTailer(file, DEFAULTS.tail);
    const out: string[] = [];
    await readAll(t, out);
    renameSync(file, file + '.old');
    assert.equal(await t.read((l) => out.push(...l)), 'gone');
    writeFileSync(file, '{"step":2}\n');
    await readAll(t, out);
    assert.deepEqual(out, ['{"step":1}', '{"step":2}']);
    await t.close();
  });

  test('a restart resumes at the saved offset and repeats nothing', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'a.log');
    writeFileSync(file, 'l1\nl2\npart');
    const a = new FileTailer(file, DEFAULTS.tail);
    const out: string[] = [];
    await readAll(a, out);
    const cp = a.checkpoint();
    await a.close();
    appendFileSync(file, 'ial\nl4\n');
    const b = new FileTailer(file, DEFAULTS.tail, cp);
    await readAll(b, out);
    assert.deepEqual(out, ['l1', 'l2', 'partial', 'l4']);
    await b.close();
  });
});
