/**
 * TensorBoard event files: the files tensorboardX wrote (../shared/writer-samples) read with
 * their steps and tags; a file written here in pieces is read record by record, a cut record
 * waiting for its rest; a bad data CRC skips one record, a bad length CRC stops the file, counted
 * and reported once.
 */
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readdirSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../src/config/load.js';
import { crc32c, frame, frames, TFRECORD } from '../src/parsers/tfrecord.js';
import { decodeEvent, TfEventsDecoder } from '../src/parsers/tfevents.js';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { RecordTailer } from '../src/sources/record-tailer.js';
import { silentLogger } from '../src/util/log.js';
import { analyzeJson } from './helpers/cli.js';
import { DEFAULTS } from './helpers/defaults.js';
import { REPO, tempDir } from './helpers/fs.js';
import { scalarEvent, versionEvent } from './helpers/tfevents-writer.js';

const SAMPLES = path.resolve(REPO, '..', 'shared', 'writer-samples', 'tensorboard');
const SAMPLES_SKIP = existsSync(SAMPLES) ? false : `writer samples not found at ${SAMPLES}`;

function eventFile(dir: string): string {
  const f = readdirSync(dir).find((n) => n.startsWith('events.out.tfevents.'));
  return path.join(dir, f!);
}

describe('TensorBoard event files written by tensorboardX', { skip: SAMPLES_SKIP }, () => {
  const cases: [string, string, number, string[]][] = [
    [
      'verl-ppo-tensorboard',
      '',
      150,
      ['actor/entropy', 'critic/rewards/mean', 'critic/score/max', 'critic/score/mean', 'critic/score/min', 'response_length/mean'],
    ],
    ['selector-float-tensor', 'outputs/selector_round1/tensorboard', 60, ['accuracy', 'boundary', 'count', 'format', 'relevance']],
    ['selector-double-tensor', 'outputs/selector_round1/tensorboard', 60, ['accuracy', 'boundary', 'count', 'format', 'relevance']],
  ];
  for (const [name, sub, steps, tags] of cases) {
    test(`${name}: ${steps} steps of ${tags.length} scalars, wall times 30 s apart`, () => {
      const buf = readFileSync(eventFile(path.join(SAMPLES, name, sub)));
      const f = frames(buf);
      assert.equal(f.consumed, buf.length);
      assert.equal(f.badData, 0);
      assert.equal(f.corruptAt, null);
      const recs = new TfEventsDecoder(DEFAULTS.parser).decode(f.records).filter((r) => r.kind === 'metrics');
      assert.deepEqual(
        recs.map((r) => r.step),
        Array.from({ length: steps }, (_, i) => i + 1),
      );
      for (const r of recs) assert.deepEqual(Object.keys(r.values).sort(), tags);
      assert.equal(recs[1]!.time! - recs[0]!.time!, 30_000);
      const { doc } = analyzeJson([path.join(SAMPLES, name)]);
      assert.equal(doc.runs.length, 1);
      assert.equal(doc.runs[0]!.format, 'tensorboard');
      const round = doc.runs[0]!.rounds[0]!;
      assert.equal(round.steps, steps);
      if (sub !== '') assert.deepEqual([round.role, round.round], ['selector', 1]);
    });
  }
});

describe('Event fields', () => {
  test("a step is a signed int64: -1 (ten bytes of two's complement) reads as -1, not 1.8e19; large positive steps exactly", () => {
    const steps = [-1, -1000, 0, 1000, 2 ** 49];
    const file = Buffer.concat([versionEvent(1_700_000_000), ...steps.map((st) => scalarEvent(st, 1_700_000_000 + 30, 'reward', 0.5))]);
    // The writer encodes -1 as protobuf does: the step field's key, nine 0xff and a 0x01.
    assert.ok(file.includes(Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])));
    const decoded = frames(file).records.map((r) => decodeEvent(r).step);
    assert.deepEqual(decoded, [null, ...steps]);
  });
});

describe('TFRecord framing and the record tailer', () => {
  test('CRC32C of the standard check string', () => {
    assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
    // Eight bytes a step agrees with one byte a step at every length and alignment.
    const table = Array.from({ length: 256 }, (_, i) => {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      return c >>> 0;
    });
    const bytewise = (b: Uint8Array, from: number, to: number): number => {
      let c = 0xffffffff;
      for (let i = from; i < to; i++) c = table[(c ^ b[i]!) & 0xff]! ^ (c >>> 8);
      return (c ^ 0xffffffff) >>> 0;
    };
    const data = Buffer.from(Array.from({ length: 80 }, (_, i) => (i * 131 + 7) & 0xff));
    for (let from = 0; from < 9; from++)
      for (let to = from; to <= data.length; to++) assert.equal(crc32c(data, from, to), bytewise(data, from, to));
  });

  test('a file appended in pieces is read record by record; a cut record waits for its rest', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'events.out.tfevents.1.host');
    const bytes = Buffer.concat([
      versionEvent(1000),
      ...Array.from({ length: 40 }, (_, i) =>
        scalarEvent(i + 1, 1000 + i, 'reward/boundary', i / 40, (['simple', 'float-tensor', 'double-tensor'] as const)[i % 3]),
      ),
    ]);
    writeFileSync(file, '');
    const tailer = new RecordTailer(file, null, TFRECORD);
    const dec = new TfEventsDecoder(DEFAULTS.parser);
    const steps: number[] = [];
    // Cut at every 37 bytes: records are split across writes at arbitrary places.
    for (let at = 0; at < bytes.length; at += 37) {
      appendFileSync(file, bytes.subarray(at, Math.min(bytes.length, at + 37)));
      await tailer.read((recs) => steps.push(...dec.decode(recs).flatMap((r) => (r.kind === 'metrics' ? [r.step!] : []))));
    }
    assert.deepEqual(
      steps,
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    assert.equal(tailer.checkpoint().offset, bytes.length);
  });

  test('a backlog is read 16 MiB at a time, the next part read ahead: each record once, in order; a part read ahead of a file since replaced is not used', async () => {
    const dir = tempDir();
    const files = [0, 1, 2].map((k) => path.join(dir, `events.out.tfevents.${k}.big`));
    // 120 records of 300 KB: 36 MB, three reads each. Each record says its file and its place.
    const record = (file: number, i: number): Buffer => {
      const data = Buffer.alloc(300_000, i & 0xff);
      data.writeUInt32LE(i, 0);
      data.writeUInt32LE(file, 4);
      return frame(data);
    };
    const write = (f: string, file: number, from: number): void =>
      writeFileSync(f, Buffer.concat(Array.from({ length: 120 }, (_, i) => record(file, from + i))));
    files.forEach((f, k) => write(f, k, 0));
    const tailers = files.map((f) => new RecordTailer(f, null, TFRECORD));
    const seen: number[][] = files.map(() => []);
    const into =
      (out: number[]) =>
      (recs: Uint8Array[]): void => {
        for (const r of recs) {
          const b = Buffer.from(r.buffer, r.byteOffset, r.byteLength);
          out.push(b.readUInt32LE(0) + 1000 * b.readUInt32LE(4));
        }
      };
    // Interleaved, as the daemon reads a backlog over many files: more tailers than reads ahead held.
    const outcomes: string[] = [];
    let open = [0, 1, 2];
    while (open.length > 0) {
      for (const k of [...open]) {
        const out = await tailers[k]!.read(into(seen[k]!));
        outcomes.push(out);
        if (out !== 'more') open = open.filter((x) => x !== k);
      }
    }
    files.forEach((_, k) =>
      assert.deepEqual(
        seen[k],
        Array.from({ length: 120 }, (_, i) => 1000 * k + i),
        `file ${k}`,
      ),
    );
    assert.ok(outcomes.filter((o) => o === 'more').length >= 6, 'read in parts');
    // Replaced by another file after a read that read its next part ahead: the new file from its start.
    const t = new RecordTailer(files[0]!, null, TFRECORD);
    const got: number[] = [];
    assert.equal(await t.read(into(got)), 'more');
    const first = got.length;
    write(`${files[0]}.new`, 9, 500);
    renameSync(`${files[0]}.new`, files[0]!);
    while ((await t.read(into(got))) === 'more');
    assert.deepEqual(
      got.slice(0, first),
      Array.from({ length: first }, (_, i) => i),
    );
    assert.deepEqual(
      got.slice(first),
      Array.from({ length: 120 }, (_, i) => 9500 + i),
    );
  });

  test('a bad data CRC skips one record; a bad length CRC stops the file until it is rewritten', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'events.out.tfevents.2.host');
    const recs = Array.from({ length: 6 }, (_, i) => scalarEvent(i + 1, 2000 + i, 'boundary', 0.5));
    const badData = Buffer.from(recs[1]!);
    badData[badData.length - 1]! ^= 0xff;
    const badLength = Buffer.from(recs[4]!);
    badLength[9]! ^= 0xff;
    writeFileSync(file, Buffer.concat([recs[0]!, badData, recs[2]!, recs[3]!, badLength, recs[5]!]));
    const notices: string[] = [];
    const tailer = new RecordTailer(file, null, TFRECORD, { corrupt: ({ offset }) => notices.push(`corrupt@${offset}`) });
    const dec = new TfEventsDecoder(DEFAULTS.parser);
    const steps: number[] = [];
    let skipped = 0;
    const read = (): Promise<unknown> =>
      tailer.read((r, bad) => {
        steps.push(...dec.decode(r).flatMap((x) => (x.kind === 'metrics' ? [x.step!] : [])));
        skipped += bad;
      });
    await read();
    await read();
    assert.deepEqual(steps, [1, 3, 4]);
    assert.equal(skipped, 1);
    const corruptAt = recs[0]!.length + badData.length + recs[2]!.length + recs[3]!.length;
    assert.deepEqual(notices, [`corrupt@${corruptAt}`], 'reported once');
    // Rewritten (a new file in its place): read again from the start.
    writeFileSync(`${file}.new`, Buffer.concat(recs));
    renameSync(`${file}.new`, file);
    await read();
    assert.deepEqual(steps, [1, 3, 4, 1, 2, 3, 4, 5, 6]);
  });

  test('through analyze: a run folder with an event file is a run; images and other plugins are skipped', async () => {
    const dir = tempDir();
    const tb = path.join(dir, 'exp', 'outputs', 'selector_round2', 'tensorboard');
    mkdirSync(tb, { recursive: true });
    const parts = [versionEvent(3000)];
    for (let s = 1; s <= 30; s++) {
      parts.push(scalarEvent(s, 3000 + s, 'reward/boundary', 0.5 + 0.01 * s));
      parts.push(scalarEvent(s, 3000 + s, 'train/rewards/format_reward/mean', 0.9));
      parts.push(scalarEvent(s, 3000 + s, 'samples', 0, 'image'));
    }
    writeFileSync(path.join(tb, 'events.out.tfevents.3.host'), Buffer.concat(parts));
    const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => Date.now());
    const run = res.runs[0]!;
    assert.equal(run.id, path.join(dir, 'exp'));
    const r = run.round('selector', 2)!;
    assert.equal(r.steps, 30);
    assert.equal(r.series.get('boundary')!.summary.n, 30);
    assert.ok(Math.abs(r.series.get('boundary')!.summary.mean - (0.5 + 0.01 * 15.5)) < 1e-6);
    assert.equal(r.series.get('format')!.lastValue !== null, true);
    assert.equal(r.series.has('samples'), false);
  });

  test("a Hugging Face run's end-of-training summary is its finish line: no stale-run, and the summary is no series", () => {
    const dir = tempDir();
    const tb = path.join(dir, 'hf-run', 'runs', 'Jan01_00-00-00_host');
    mkdirSync(tb, { recursive: true });
    // Written two years ago (wall times in seconds since the epoch, as the writer stores them).
    const t0 = Date.now() / 1000 - 2 * 365 * 86_400;
    const event = (end: boolean): Buffer => {
      const parts = [versionEvent(t0)];
      for (let s = 1; s <= 40; s++)
        parts.push(scalarEvent(s, t0 + 10 * s, 'train/reward', 0.5 + 0.005 * s), scalarEvent(s, t0 + 10 * s, 'train/loss', 0.1));
      if (end)
        for (const tag of ['train/train_runtime', 'train/train_loss', 'train/total_flos']) parts.push(scalarEvent(40, t0 + 401, tag, 123));
      return Buffer.concat(parts);
    };
    const file = path.join(tb, 'events.out.tfevents.1.host');
    writeFileSync(file, event(true));
    const done = analyzeJson([dir]).doc.runs[0]!;
    assert.deepEqual(
      done.findings.map((f) => f.detector),
      [],
    );
    assert.equal(done.rounds[0]!.series['train_runtime'], undefined);
    assert.equal(done.rounds[0]!.series['train_loss'], undefined);
    // The same run without the summary did stop without saying it finished.
    writeFileSync(file, event(false));
    assert.ok(analyzeJson([dir]).doc.runs[0]!.findings.some((f) => f.detector === 'stale-run'));
  });

  test('a restarted writer: the newer file replaces the older one from its first step on, as TensorBoard does', async () => {
    const dir = tempDir();
    const tb = path.join(dir, 'exp', 'outputs', 'selector_round1', 'tensorboard');
    mkdirSync(tb, { recursive: true });
    const older = [versionEvent(1000), ...Array.from({ length: 50 }, (_, i) => scalarEvent(i + 1, 1000 + i, 'boundary', 0.2))];
    const newer = [versionEvent(5000), ...Array.from({ length: 30 }, (_, i) => scalarEvent(31 + i, 5000 + i, 'boundary', 0.8))];
    writeFileSync(path.join(tb, 'events.out.tfevents.1790000000.host'), Buffer.concat(older));
    writeFileSync(path.join(tb, 'events.out.tfevents.1790005000.host'), Buffer.concat(newer));
    const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => Date.now());
    const b = res.runs[0]!.round('selector', 1)!.series.get('boundary')!;
    // Steps 1-30 from the older file (0.2), 31-60 from the newer one (0.8); the older 31-50 are gone.
    assert.equal(b.summary.n, 60);
    assert.ok(Math.abs(b.summary.mean - 0.5) < 1e-6, String(b.summary.mean)); // simple_value is a float32
    assert.equal(b.lastStep, 60);
  });
});
