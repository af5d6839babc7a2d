/**
 * Reading TensorBoard event files: `barwatch analyze` of one event file against a bare framing
 * loop in the same run (read the file, walk the frames by their lengths, no CRC, no decoding;
 * the file read whole into one new buffer, and again in parts into one buffer),
 * against barwatch's own framing with CRC32C but no decoding, and against its framing and
 * decoding into metric records in process (no start-up, no statistics). `node dist/bench/tfevents.js
 * [--events 600000]`.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TfEventsDecoder } from '../src/parsers/tfevents.js';
import { frames } from '../src/parsers/tfrecord.js';
import { DEFAULTS } from '../test/helpers/defaults.js';
import { scalarEvent } from '../test/helpers/tfevents-writer.js';
import { arg, BIN, median, report } from './common.js';

const TAGS = ['reward/boundary', 'reward/relevance', 'reward/format', 'reward/count', 'accuracy', 'critic/score/mean'];

/** The frames walked by their lengths, the whole file read into one new buffer. */
function bareLoop(file: string): number {
  const buf = readFileSync(file);
  let n = 0;
  for (let at = 0; at + 12 <= buf.length; n++) at += 12 + Number(buf.readBigUInt64LE(at)) + 4;
  return n;
}

/**
 * The same walk, the file read in 2 MiB parts into one buffer: no new memory for each part (on a
 * machine where touching new memory is slow, most of bareLoop's time is its page faults).
 */
function barePartsLoop(file: string): number {
  const buf = Buffer.allocUnsafeSlow(2 << 20);
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    let n = 0;
    let base = 0; // the file offset of buf[0]
    let have = 0;
    for (let at = 0; at + 12 <= size; n++) {
      if (at + 12 > base + have) {
        base = at;
        have = readSync(fd, buf, 0, buf.length, at);
      }
      at += 12 + Number(buf.readBigUInt64LE(at - base)) + 4;
    }
    return n;
  } finally {
    closeSync(fd);
  }
}

export function main(): Promise<void> {
  const events = arg('events', 600_000, 60_000);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-tb-'));
  try {
    const tb = path.join(dir, 'run', 'outputs', 'selector_round1', 'tensorboard');
    mkdirSync(tb, { recursive: true });
    const file = path.join(tb, 'events.out.tfevents.1.bench');
    const written: Buffer[] = [];
    for (let i = 0; i < events; i++) {
      const step = Math.floor(i / TAGS.length) + 1;
      written.push(scalarEvent(step, 1.79e9 + step, TAGS[i % TAGS.length]!, Math.sin(i * 0.37)));
    }
    writeFileSync(file, Buffer.concat(written));
    const bare: number[] = [];
    const inParts: number[] = [];
    const framed: number[] = [];
    const decoded: number[] = [];
    const analyze: number[] = [];
    for (let k = 0; k < 3; k++) {
      let t = performance.now();
      const n = bareLoop(file);
      bare.push((performance.now() - t) / 1000);
      t = performance.now();
      if (barePartsLoop(file) !== n) throw new Error('the two bare loops walked different frames');
      inParts.push((performance.now() - t) / 1000);
      t = performance.now();
      frames(readFileSync(file));
      framed.push((performance.now() - t) / 1000);
      t = performance.now();
      const metrics = new TfEventsDecoder(DEFAULTS.parser).decode(frames(readFileSync(file)).records);
      decoded.push((performance.now() - t) / 1000);
      if (metrics.length !== Math.ceil(events / TAGS.length)) throw new Error(`decoded ${metrics.length} steps`);
      t = performance.now();
      const r = spawnSync(process.execPath, [BIN, 'analyze', path.join(dir, 'run'), '--format', 'json'], { maxBuffer: 1 << 26 });
      if (r.status !== 0 && r.status !== 1) throw new Error(`analyze failed: ${r.stderr.toString()}`);
      analyze.push((performance.now() - t) / 1000);
    }
    const rate = (s: number): string => `${Math.round(events / s).toLocaleString('en')} events/s`;
    const b = median(bare);
    const rows = [
      ['bare framing loop (lengths only; the file read into one buffer)', `${b.toFixed(3)} s`, rate(b), '1.00x'],
      [
        'the same loop, the file read in 2 MiB parts into one buffer',
        `${median(inParts).toFixed(3)} s`,
        rate(median(inParts)),
        `${(b / median(inParts)).toFixed(2)}x`,
      ],
      [
        'barwatch framing with CRC32C, no decoding',
        `${median(framed).toFixed(3)} s`,
        rate(median(framed)),
        `${(b / median(framed)).toFixed(2)}x`,
      ],
      [
        'barwatch framing and decoding into metric records, in process',
        `${median(decoded).toFixed(3)} s`,
        rate(median(decoded)),
        `${(b / median(decoded)).toFixed(2)}x`,
      ],
      [
        'barwatch analyze (start-up, framing, decoding, statistics, detectors)',
        `${median(analyze).toFixed(3)} s`,
        rate(median(analyze)),
        `${(b / median(analyze)).toFixed(2)}x`,
      ],
    ];
    report(
      'tfevents',
      `## TensorBoard event files: ${events} scalar events (median of 3)`,
      ['reader', 'time', 'throughput', 'vs bare'],
      rows,
      {
        events,
        bare,
        parts: inParts,
        framed,
        decoded,
        analyze,
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return Promise.resolve();
}

if (process.argv[1]?.endsWith('tfevents.js')) await main();
