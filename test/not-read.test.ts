/** Files barwatch does not read are said, with why; a binary file named like a log is never read as text. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { binaryReason } from '../src/sources/line-source.js';
import { barwatch } from './helpers/cli.js';
import { REAL_LOGS, tempDir } from './helpers/fs.js';

const WANDB = path.join(REAL_LOGS, '..', 'writer-samples', 'wandb', 'components', 'wandb');

describe('binary files named like logs', () => {
  test('a NUL byte or the W&B magic makes a file binary; a hole of zeros at the start (copytruncate) does not', () => {
    assert.equal(binaryReason(Buffer.from('step=1 reward=0.5\n')), null);
    assert.equal(binaryReason(Buffer.concat([Buffer.alloc(2048), Buffer.from('step=1 reward=0.5\n')])), null);
    assert.match(binaryReason(Buffer.from([0x73, 0x74, 0x00, 0x01, 0x02]))!, /binary file \(a NUL byte at byte 2\)/);
    assert.match(binaryReason(Buffer.from(':W&B\xbe\xe1\x00', 'latin1'))!, /W&B run file/);
  });

  test('a real W&B run file given as a file: exit 2, saying what it is (before: read as text)', (t) => {
    if (!existsSync(WANDB)) return t.skip(`${WANDB} is absent`);
    const dirs = readdirSync(WANDB, { withFileTypes: true }).filter((d) => d.isDirectory());
    const run = path.join(WANDB, dirs[0]!.name);
    const file = path.join(
      run,
      readdirSync(run).find((f) => f.endsWith('.wandb'))!,
    );
    const r = barwatch(['analyze', file]);
    assert.equal(r.status, 2, r.stdout);
    assert.match(r.stderr, /nothing could be read: .*run-\w+\.wandb: a W&B run file \(binary\)/);
  });

  test('in a folder: the good log is read, the binary one is listed as not read, and --strict exits 3', () => {
    const dir = tempDir();
    const lines = Array.from({ length: 30 }, (_, i) => `step=${i + 1} reward=${(0.5 + 0.01 * Math.sin(i)).toFixed(3)}\n`).join('');
    writeFileSync(path.join(dir, 'train.log'), lines);
    writeFileSync(path.join(dir, 'model.out'), Buffer.from([0x80, 0x04, 0x95, 0x00, 0x00, 0x12, 0x7d, 0x94]));
    const r = barwatch(['analyze', dir, '--format', 'json']);
    assert.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { runs: { rounds: { steps: number }[]; problems: { path: string; reason: string }[] }[] };
    assert.equal(doc.runs[0]!.rounds[0]!.steps, 30);
    assert.deepEqual(doc.runs[0]!.problems, [
      { path: path.join(dir, 'model.out'), reason: 'a binary file (a NUL byte at byte 3), not a text log' },
    ]);
    const text = barwatch(['analyze', dir]);
    assert.match(text.stdout, /model\.out.*binary file/);
    assert.equal(barwatch(['analyze', dir, '--strict']).status, 3);
  });
});
