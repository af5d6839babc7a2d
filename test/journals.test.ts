/**
 * The append-only logs of the state folder (state/journal.ts): they rotate by size and age and
 * are read as a stream; the record of what was sent is read across a rotation; names written into
 * logs and metrics carry no control character.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Writable } from 'node:stream';
import { Outbox } from '../src/alerting/outbox.js';
import type { Channel, Notification } from '../src/alerting/types.js';
import { Journal } from '../src/state/journal.js';
import { stateLayout } from '../src/state/layout.js';
import { Metrics } from '../src/http/metrics.js';
import { createLogger, silentLogger } from '../src/util/log.js';
import { tempDir } from './helpers/fs.js';

const record = (time: number, i: number): string => JSON.stringify({ time: new Date(time).toISOString(), i }) + '\n';

async function all(j: Journal): Promise<number[]> {
  const out: number[] = [];
  for await (const l of j.lines()) out.push((JSON.parse(l) as { i: number }).i);
  return out;
}

describe('the append-only logs of the state folder', () => {
  test('rotate by size: two generations of at most maxBytes, read oldest first', async () => {
    const file = path.join(tempDir(), 'alerts.jsonl');
    const t = Date.parse('2026-01-01T00:00:00Z');
    const j = new Journal(file, { maxBytes: 1000, maxAgeMs: 86_400_000 }, () => t);
    for (let i = 0; i < 100; i++) j.append(record(t, i));
    assert.ok(statSync(file).size <= 1000);
    assert.ok(statSync(j.previous).size <= 1000);
    assert.equal((statSync(file).mode & 0o777).toString(8), '600');
    const got = await all(j);
    assert.ok(got.length >= 20 && got.length < 100, `${got.length} records kept`);
    assert.deepEqual(
      got,
      Array.from({ length: got.length }, (_, k) => 100 - got.length + k),
      'the most recent, in order',
    );
  });

  test('rotate by age: a generation whose first record is older than maxAgeMs is moved aside, also after a restart', async () => {
    const file = path.join(tempDir(), 'notifications.jsonl');
    const day = 86_400_000;
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    writeFileSync(file, record(t0, 0) + record(t0 + 1000, 1));
    let now = t0 + 2 * day;
    const j = new Journal(file, { maxBytes: 1 << 20, maxAgeMs: 3 * day }, () => now);
    j.append(record(now, 2));
    assert.equal(readFileSync(file, 'utf8').split('\n').length - 1, 3, 'younger than the limit: appended');
    now = t0 + 4 * day;
    j.append(record(now, 3));
    assert.equal(readFileSync(file, 'utf8'), record(now, 3), 'older than the limit: a new generation');
    assert.deepEqual(await all(j), [0, 1, 2, 3]);
  });

  test('missing files read as empty; a torn last line is skipped by the reader, not the journal', async () => {
    const file = path.join(tempDir(), 'alerts.jsonl');
    const j = new Journal(file);
    assert.deepEqual(await all(j), []);
    writeFileSync(file, record(0, 1) + '{"time": "1970');
    const lines: string[] = [];
    for await (const l of j.lines()) lines.push(l);
    assert.equal(lines.length, 2);
  });
});

describe('the record of what was sent', () => {
  test('is read from both generations at start: an entry sent before a rotation is not sent again', async () => {
    const layout = stateLayout(tempDir());
    mkdirSync(layout.outbox, { recursive: true });
    const n = (id: string, dedupeKey: string): Notification => ({
      id,
      dedupeKey,
      channel: 'slack',
      group: 'g',
      reason: 'new alerts in group',
      createdAt: '2026-01-01T00:00:00.000Z',
      alerts: [],
    });
    const rec = (key: string): string =>
      JSON.stringify({ time: '2026-01-01T00:00:00.000Z', id: key, dedupeKey: key, channel: 'slack', group: 'g', attempts: 1 }) + '\n';
    writeFileSync(`${layout.notifications}.1`, rec('old'));
    writeFileSync(layout.notifications, rec('new'));
    for (const [id, key] of [
      ['a', 'old'],
      ['b', 'new'],
      ['c', 'never'],
    ] as const)
      writeFileSync(
        path.join(layout.outbox, `${id}.json`),
        JSON.stringify({ notification: n(id, key), attempts: 0, nextAttempt: 0, lastError: null }),
      );
    const sent: string[] = [];
    const slack: Channel = { name: 'slack', send: (x) => (sent.push(x.dedupeKey), Promise.resolve({ ok: true })) };
    const box = new Outbox(layout, new Map([['slack', slack]]), silentLogger(), () => Date.now());
    await box.init();
    assert.equal(box.depth, 1, 'only the notification never sent stays queued');
    assert.ok(!existsSync(path.join(layout.outbox, 'a.json')) && !existsSync(path.join(layout.outbox, 'b.json')));
    await box.pump();
    assert.deepEqual(sent, ['never']);
    assert.equal(await box.enqueue(n('d', 'old')), false, 'a notification sent before the rotation is not queued again');
  });
});

describe('names with control characters in logs and metrics', () => {
  const evil = `/runs/run\r\nFIRING [critical] forged${String.fromCharCode(27)}]0;title${String.fromCharCode(7)}/train.log`;

  test('the pretty log shows them escaped: no forged line, no escape sequence', () => {
    let out = '';
    const stream = new Writable({
      write(chunk: Buffer, _enc, cb) {
        out += chunk.toString();
        cb();
      },
    });
    const log = createLogger({ level: 'info', format: 'pretty' }, stream);
    log.warn({ file: evil }, `cannot read ${evil}`);
    assert.equal(out.split('\n').filter((l) => l !== '').length, 1, out);
    assert.ok(!out.includes('\r') && !out.includes(String.fromCharCode(27)), 'no raw CR or ESC');
    assert.match(out, /cannot read \/runs\/run\\r\\nFIRING \[critical\] forged\\x1b\]0;title\\x07\/train\.log/);
  });

  test('/metrics label values carry no raw control character', async () => {
    const m = new Metrics(() => ({
      runs: 1,
      files: 1,
      lines: 3,
      records: 2,
      malformedByFile: new Map([[evil, 1]]),
      ingestLagSeconds: 0,
      outboxDepth: 0,
      activeAlerts: [],
      sent: new Map(),
      failed: new Map(),
      lastError: null,
      unwatchedFolders: 0,
      catchingUp: false,
      backingOff: [],
    }));
    const text = await m.registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith('barwatch_parse_errors_total{'))!;
    assert.ok(line !== undefined, text);
    assert.ok(!['\r', String.fromCharCode(27), String.fromCharCode(7)].some((c) => text.includes(c)), 'no raw control character');
    assert.ok(line.includes('run\\\\r\\\\nFIRING'), line);
  });
});
