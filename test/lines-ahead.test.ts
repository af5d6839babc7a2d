/**
 * A JSONL backlog read with the decode thread (parsers/json-lines-ahead.ts, FileTailer's parts):
 * every record, malformed line, long line and format is what reading each line's text gives.
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { JSON_LINES_AHEAD, type AheadLines } from '../src/parsers/json-lines-ahead.js';
import type { LineParser, MetricRecord, ParsedRecord } from '../src/parsers/types.js';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { rng } from '../src/sim/random.js';
import { openSource, type FileProblem } from '../src/sources/file-source.js';
import { placeFile } from '../src/sources/place.js';
import type { TailOptions } from '../src/sources/tailer.js';
import { silentLogger } from '../src/util/log.js';
import { DEFAULTS } from './helpers/defaults.js';
import { tempDir } from './helpers/fs.js';

const NUMBERS = [
  '0.5',
  '-0',
  '0',
  '12',
  '-3.25',
  '1e-5',
  '2.5E+3',
  '0.12345678901234567891',
  '123456789012345678901234',
  'NaN',
  'Infinity',
  '-Infinity',
  '1.0',
  '5e400',
  '0.000001',
];

/**
 * Lines of every kind a metrics JSONL holds or a broken writer leaves: long stretches of one shape
 * (the decode thread's fast path), other spacing, a change of keys, CRLF, numbers of every form,
 * and lines only the parser reads (strings, nesting, escapes, non-ASCII keys, integer keys,
 * duplicate keys, a wrapped verl record), malformed and empty lines, and lines over the limit.
 */
function writeMixed(file: string, lines: number, seed: number): void {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const num = (): string => (r() < 0.7 ? (r() * 2 - 0.5).toFixed(1 + Math.floor(r() * 6)) : pick(NUMBERS));
  const out: string[] = [];
  let keys = ['boundary', 'relevance', 'format', 'count', 'total', 'accuracy'];
  for (let step = 1; step <= lines; step++) {
    const x = r();
    let line: string;
    if (x < 0.8) line = `{"step": ${step}, ${keys.map((k) => `"${k}": ${num()}`).join(', ')}}`;
    else if (x < 0.83) line = `{"step":${step},${keys.map((k) => `"${k}":${num()}`).join(',')}}`;
    else if (x < 0.85) line = `  { "step" : ${step} , ${keys.map((k) => `"${k}" :\t${num()}`).join(' ,')} }  `;
    else if (x < 0.86) line = `{"step": ${step}, "time": ${1_790_000_000 + step}, "boundary": ${num()}}`;
    else if (x < 0.87) line = `{"step": ${step}, "time": "2026-12-0${1 + (step % 9)}T10:00:00Z", "boundary": ${num()}}`;
    else if (x < 0.88) line = `{"step": ${step}, "rewards": {"boundary": ${num()}, "format": 1}}`;
    else if (x < 0.885) line = `{"step": ${step}, "data": {"boundary": ${num()}}}`;
    else if (x < 0.89) line = `{"step": ${step}, "b\\u006fundary": ${num()}}`;
    else if (x < 0.895) line = `{"step": ${step}, "bóundary": ${num()}}`;
    else if (x < 0.9) line = `{"step": ${step}, "0": ${num()}, "boundary": ${num()}}`;
    else if (x < 0.905) line = `{"step": ${step}, "boundary": ${num()}, "boundary": ${num()}}`;
    else if (x < 0.91) line = `{"step": "${step}", "boundary": ${num()}}`;
    else if (x < 0.915) line = `{"boundary": ${num()}}`;
    else if (x < 0.92) line = `{"step": ${step}, "boundary": }`;
    else if (x < 0.925) line = pick(['', '   ', 'not json', '[1, 2]', '{}', '{"step": 1e999}', 'null']);
    else if (x < 0.93) line = `{"step": ${step}, "note": "${'x'.repeat(3000)}", "boundary": ${num()}}`;
    else if (x < 0.935) line = `{"step": ${step}, "boundary": ${num()}, "flag": true}`;
    else if (x < 0.94) line = `{"step": ${step}, "boundary": 0.5`;
    else if (x < 0.945) {
      keys = r() < 0.5 ? [...keys].reverse() : [...keys.slice(1), pick(['kl', 'entropy', 'boundary_share', 'rollouts'])];
      line = `{"step": ${step}, ${keys.map((k) => `"${k}": ${num()}`).join(', ')}}`;
    } else line = `{"step": ${step}, ${keys.map((k) => `"${k}": ${num()}`).join(', ')}}`;
    out.push(r() < 0.03 ? `${line}\r` : line);
  }
  writeFileSync(file, `${out.join('\n')}\n`);
}

interface Read {
  records: string[];
  formats: string[];
  counters: unknown;
  problems: string[];
}

/**
 * A problem as text, in an order of its own: a malformed line is reported with the end of the
 * batch it came in (its offset, and its place after the batch's long lines, depend on how the
 * file was cut into reads); a long line with its own start.
 */
const problemText = (p: FileProblem): string => `${p.kind} ${p.kind === 'malformed' ? '' : (p.offset ?? '')} ${p.message}`;

/** A number as text, -0 kept. */
const shown = (v: number | null | undefined): string => (Object.is(v, -0) ? '-0' : String(v));

/**
 * Every record of the file read by a line source with these tail options, as text to compare, and
 * how many lines the parser took from the decode thread's values.
 */
async function readWith(file: string, tail: Partial<TailOptions>): Promise<{ read: Read; fromValues: number }> {
  const problems: FileProblem[] = [];
  const src = openSource(file, 'jsonl', placeFile(file, 'jsonl', true), {
    parser: DEFAULTS.parser,
    tail: { ...DEFAULTS.tail, maxLineBytes: 2048, sync: true, ...tail },
    problem: (p) => problems.push(p),
  });
  const parser = src.parser as LineParser;
  const own = parser.fromValues!.bind(parser);
  let fromValues = 0;
  parser.fromValues = (keys, values, from) => {
    const r = own(keys, values, from);
    if (r !== null) fromValues++;
    return r;
  };
  const records: string[] = [];
  const formats: string[] = [];
  const sink = (rs: ParsedRecord[], format: string): void => {
    formats.push(format);
    for (const rec of rs) {
      const m = rec as MetricRecord;
      const values = Object.entries(m.values).map(([k, v]) => `${k}=${shown(v)}`);
      records.push(`${rec.kind} ${shown(m.step)} ${m.time ?? ''} ${values.join(' ')} ${m.nulls?.join(',') ?? ''}`);
    }
  };
  while ((await src.poll(sink, 0)) === 'more');
  await src.close();
  const read = { records, formats: [...new Set(formats)], counters: { ...src.counters }, problems: problems.map(problemText).sort() };
  return { read, fromValues };
}

test('a backlog read with the decode thread gives every record, malformed and long line that reading each line gives', async () => {
  const dir = tempDir();
  let taken = 0;
  for (const seed of [1, 2, 3]) {
    const file = path.join(dir, `mixed-${seed}.jsonl`);
    writeMixed(file, 6000, seed);
    const { read: alone, fromValues: none } = await readWith(file, { aheadFrom: Infinity });
    assert.equal(none, 0);
    assert.ok(alone.records.length > 4000, `records read: ${alone.records.length}`);
    assert.ok((alone.counters as { malformed: number }).malformed > 50);
    assert.ok((alone.counters as { longLines: number }).longLines > 10);
    // Parts of every size against the chunks: lines cut by parts, parts of one line, a line over the limit across parts.
    // The last: the thread's trial ends it at 64 KiB (as on a machine with no core free), and the rest is read here.
    for (const [aheadPart, chunkBytes, minCores] of [
      [4096, 1024, 0],
      [7919, 4096, 0],
      [64 << 10, 8192, 0],
      [4096, 4096, Infinity],
    ] as const) {
      const aheadTrial = { from: 16 << 10, to: 64 << 10, minCores };
      const { read: ahead, fromValues } = await readWith(file, {
        aheadFrom: 0,
        aheadPart,
        chunkBytes,
        maxBytesPerRead: 100_000,
        aheadTrial,
      });
      assert.deepEqual(ahead, alone, `seed ${seed}, parts of ${aheadPart} bytes`);
      // Ended at its trial: no line past the trial's 64 KiB (and the part then under way) came from the thread.
      if (minCores === Infinity) assert.ok(fromValues < 1000, `lines taken from the thread after its trial ended it: ${fromValues}`);
      taken += fromValues;
    }
  }
  // How many lines the decode thread reads depends on the two threads' pace (the reading thread
  // takes over a part that is not ready), but it reads some.
  assert.ok(taken > 0, 'no line was taken from the decode thread');
});

test('the lines the decode thread reads are flat objects of numbers; every other line is left to the parser', () => {
  const text = [
    'head of a line begun in the part before',
    '{"step": 1, "boundary": 0.5, "format": 1}',
    '{"step": 2, "boundary": -0, "format": 1e-5}',
    '{"step":3,"boundary":NaN,"format":-Infinity}\r',
    '{"step": 4, "boundary": "0.5"}',
    '{"step": 5, "b\\u006f": 1}',
    '{"step": 6, "x": {"y": 1}}',
    '{"step": 7, "bó": 1}',
    '{"step": 8, "boundary": 0.5, "format": 1}',
    '',
    '{"step": 9, "boundary": 0.5, "format": 1',
    'the start of a line the next part ends',
  ].join('\n');
  const buf = Buffer.from(text, 'utf8');
  const d = JSON_LINES_AHEAD.receive(JSON_LINES_AHEAD.decode(buf, 0, 1).decoded) as AheadLines;
  const at = [...buf.entries()].filter(([, b]) => b === 10).map(([i]) => i);
  assert.deepEqual([...d.newlines], at);
  assert.equal(d.ids.length, at.length - 1);
  const read = [...d.ids].map((id, j) =>
    id < 0 ? null : { keys: d.keys[id], values: [...d.values.subarray(d.at[j], d.at[j]! + d.keys[id]!.length)] },
  );
  const flat = { keys: ['step', 'boundary', 'format'] };
  assert.deepEqual(read, [
    { ...flat, values: [1, 0.5, 1] },
    { ...flat, values: [2, -0, 1e-5] },
    { ...flat, values: [3, NaN, -Infinity] },
    null,
    null,
    null,
    null,
    { ...flat, values: [8, 0.5, 1] },
    null,
    null,
  ]);
  assert.ok(Object.is(read[1]!.values[1], -0));
  // A share of the lines, or a part the reading thread waits for: the rest is split, not read.
  const half = JSON_LINES_AHEAD.receive(JSON_LINES_AHEAD.decode(buf, 0, 0.5).decoded) as AheadLines;
  assert.deepEqual([...half.newlines], at);
  assert.ok(half.ids.slice(0, 2).every((id) => id >= 0));
  assert.ok(half.ids.slice(5).every((id) => id < 0));
  const hurried = JSON_LINES_AHEAD.receive(JSON_LINES_AHEAD.decode(buf, 0, 1, () => true).decoded) as AheadLines;
  assert.deepEqual([...hurried.newlines], at);
  assert.ok(hurried.ids.every((id) => id < 0));
});

test('analyze of a large JSONL file reads it with the decode thread and reports what reading every line gives', async () => {
  const dir = tempDir();
  const run = path.join(dir, 'run', 'outputs', 'selector_round1');
  const file = path.join(run, 'reward_history.jsonl');
  mkdirSync(run, { recursive: true });
  // A run whose boundary reward swings: findings to compare, not only statistics.
  const lines: string[] = [];
  for (let s = 1; s <= 30_000; s++) {
    const b = 0.5 + 0.3 * Math.sin(s / 9) + ((s * 7919) % 13) / 100;
    lines.push(
      `{"step": ${s}, "boundary": ${b.toFixed(4)}, "relevance": 0.3, "format": 1.0, "count": -0.5, "total": ${(b / 2).toFixed(4)}, "accuracy": 0.41, "boundary_share": 0.2, "rollouts": 10}`,
    );
    if (s % 997 === 0) lines.push('{"step": oops}');
  }
  appendFileSync(file, `${lines.join('\n')}\n`);
  const analyze = async (tail: Partial<TailOptions>): Promise<string> => {
    const config = { ...DEFAULTS, stateDir: path.join(dir, 'state'), tail: { ...DEFAULTS.tail, ...tail } };
    const r = await analyzePaths([path.join(dir, 'run')], config, silentLogger(), () => 1_790_000_000_000);
    const runs = r.runs.map((x) => x.toJSON());
    const counters = [...r.pipeline.sources.values()].map((s) => s.counters);
    return JSON.stringify({ findings: r.findings, runs, counters });
  };
  const alone = await analyze({ aheadFrom: Infinity });
  const ahead = await analyze({ aheadFrom: 0, aheadPart: 64 << 10 });
  assert.ok(alone.includes('"malformed":30'), 'the malformed lines are counted');
  assert.ok(alone.includes('"detector"'), 'a finding to compare');
  // (Not assert.equal: its message would hold both reports whole.)
  const at = [...alone].findIndex((c, i) => ahead[i] !== c);
  assert.ok(
    ahead === alone,
    `the reports differ from character ${at}: ${alone.slice(at - 80, at + 80)} | ${ahead.slice(at - 80, at + 80)}`,
  );
});
