/** Files barwatch does not read are said, with why; a binary file named like a log is never read as text. */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
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
    // Two lines, then a sparse hole of zeros (a writer that went on past a truncation): text.
    assert.equal(binaryReason(Buffer.concat([Buffer.from('{"step": 1}\n{"step": 2}\n'), Buffer.alloc(4000)])), null);
    assert.match(binaryReason(Buffer.from([0x73, 0x74, 0x00, 0x01, 0x02]))!, /binary file \(a NUL byte at byte 2, in its first line\)/);
    // A corrupt line after a first line of text is a malformed line, not a binary file.
    assert.equal(binaryReason(Buffer.from('{"step": 1}\n\u0000\u0001binary\n{"step": 2}\n')), null);
    assert.match(binaryReason(Buffer.from(Array.from({ length: 200 }, (_, i) => (i % 3 === 0 ? 0x41 : 0x02))))!, /control bytes/);
    assert.match(binaryReason(Buffer.from(':W&B\xbe\xe1\x00', 'latin1'))!, /W&B run file/);
  });

  test("a real W&B run file given as a file is read as one; the same bytes under a log's name are refused, saying what they are (before: read as text)", (t) => {
    if (!existsSync(WANDB)) return t.skip(`${WANDB} is absent`);
    const dirs = readdirSync(WANDB, { withFileTypes: true }).filter((d) => d.isDirectory());
    const run = path.join(WANDB, dirs[0]!.name);
    const file = path.join(
      run,
      readdirSync(run).find((f) => f.endsWith('.wandb'))!,
    );
    const r = barwatch(['analyze', file, '--format', 'json']);
    assert.equal(r.status, 0, r.stderr);
    const doc = JSON.parse(r.stdout) as { runs: { format: string; rounds: { steps: number }[] }[] };
    assert.deepEqual([doc.runs[0]!.format, doc.runs[0]!.rounds[0]!.steps], ['wandb', 80]);
    const misnamed = path.join(tempDir(), 'train.log');
    copyFileSync(file, misnamed);
    const m = barwatch(['analyze', misnamed]);
    assert.equal(m.status, 2, m.stdout);
    assert.match(m.stderr, /nothing could be read: .*train\.log: a W&B run file \(binary\) under the name of a text log/);
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
      { path: path.join(dir, 'model.out'), reason: 'a binary file (a NUL byte at byte 3, in its first line), not a text log' },
    ]);
    const text = barwatch(['analyze', dir]);
    assert.match(text.stdout, /model\.out.*binary file/);
    assert.equal(barwatch(['analyze', dir, '--strict']).status, 3);
  });
});

describe('what was not read is said', () => {
  test('a console log with no step lines exits 2 saying why; files of no known format are listed; --strict exits 3', () => {
    const dir = tempDir();
    const only = path.join(dir, 'only-wandb.log');
    writeFileSync(only, 'Loading model...\nwandb: Tracking run with wandb version 0.30.0\nwandb: Run data is saved locally in ./wandb\n');
    const r = barwatch(['analyze', only]);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /only-wandb\.log: no step lines .*W&B or TensorBoard/);
    // Beside a log that is read: both listed under "not read", the run read.
    const run = path.join(dir, 'run');
    mkdirSync(run);
    writeFileSync(path.join(run, 'train.log'), 'step=1 reward=0.5\nstep=2 reward=0.6\n');
    writeFileSync(path.join(run, 'stderr.log'), 'Traceback? no: just warnings\n');
    writeFileSync(path.join(run, 'launch.sh'), 'python train.py\n');
    const text = barwatch(['analyze', run]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /not read \(2\):/);
    assert.match(text.stdout, /launch\.sh: not a format barwatch reads\n/);
    assert.match(text.stdout, /stderr\.log: no step lines/);
    assert.equal(barwatch(['analyze', run, '--strict']).status, 3);
  });
});
