/**
 * The fault and bad-input suite: a real daemon, a real writer process doing to the files what
 * trainers, logrotate and operators do, and real servers. Each case asserts that the daemon
 * stays up, that the problem is reported once with its file named, and that the good records
 * around the bad ones are all counted. (Symlink loops: test/watch.test.ts; kill -9:
 * test/kill9.test.ts; broken configs and alias bombs: test/config.test.ts.)
 */
import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import type { StateFile } from '../src/sources/checkpoint.js';
import { Actor } from './helpers/actor.js';
import { DaemonProcess, type LogLine } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { rng } from './helpers/random.js';

const IS_ROOT = process.getuid?.() === 0;
/** Root reads everything: the daemon runs as `nobody` where permissions must apply. */
const NOBODY = { uid: 65534, gid: 65534 };

function good(step: number): string {
  return JSON.stringify({ step, boundary: Math.round(((step * 37) % 100) / 10) / 10, relevance: 0.3, format: 1, count: 0 }) + '\n';
}
function goods(from: number, to: number, eol = '\n'): string {
  let s = '';
  for (let i = from; i <= to; i++) s += good(i).replace('\n', eol);
  return s;
}

/** A folder the `nobody` daemon can read, with a state folder it owns. */
function workspace(): { dir: string; runs: string; state: string } {
  const dir = tempDir();
  const runs = path.join(dir, 'runs');
  const state = path.join(dir, 'state');
  mkdirSync(runs);
  mkdirSync(state);
  if (IS_ROOT) {
    chmodSync(dir, 0o755);
    chownSync(state, NOBODY.uid, NOBODY.gid);
  }
  return { dir, runs, state };
}

function readState(stateDir: string): StateFile | null {
  try {
    return JSON.parse(readFileSync(path.join(stateDir, 'state.json'), 'utf8')) as StateFile;
  } catch {
    return null;
  }
}

/** Waits until the saved state shows `records` records read from `file`. */
async function waitRecords(d: DaemonProcess, stateDir: string, file: string, records: number, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    assert.equal(d.child.exitCode, null, 'the daemon exited');
    const got = readState(stateDir)?.files[file]?.counters.records ?? 0;
    if (got >= records) return;
    if (Date.now() > end) assert.fail(`${file}: ${got} of ${records} records after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/** Log lines about `file` at warn level or above. */
function complaints(logs: LogLine[], file: string): LogLine[] {
  return logs.filter((l) => l.level >= 40 && l['file'] === file);
}

describe('faults: bad input, written while the daemon runs', () => {
  test('each problem is reported once with its file named; the good records around it all count', async () => {
    const { dir, runs, state } = workspace();
    const file = (name: string): string => path.join(runs, name, 'outputs', 'selector_round1', 'reward_history.jsonl');
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${state}\nwatch: {status_interval: 1s, checkpoint_interval: 100ms}\nlog: {format: json}\n`);
    // Present before the start: a file nobody may read (when permissions apply), CRLF lines.
    const denied = file('denied');
    mkdirSync(path.dirname(denied), { recursive: true });
    writeFileSync(denied, goods(1, 5));
    const canDeny = IS_ROOT || process.getuid?.() !== undefined;
    if (canDeny) chmodSync(denied, 0o000);
    writeFileSync((mkdirSync(path.dirname(file('crlf')), { recursive: true }), file('crlf')), goods(1, 10, '\r\n'));

    const d = new DaemonProcess([runs, '--config', cfg], IS_ROOT ? { user: NOBODY } : {});
    after(() => d.child.kill('SIGKILL'));
    await d.waitFor((l) => l.msg === 'watching');
    const w = new Actor();
    after(() => w.close());

    // Malformed JSON between good lines.
    await w.do({ op: 'append', file: file('malformed'), text: goods(1, 10) + '{"step": 11, "boundary": 0.\nnot json at all\n{"step": 12, "boundary": [1,2}\n' + goods(13, 22) });
    // NaN, infinities, -0 and numbers as strings.
    await w.do({
      op: 'append',
      file: file('numbers'),
      text: '{"step": 1, "boundary": NaN}\n{"step": 2, "boundary": Infinity}\n{"step": 3, "boundary": -Infinity}\n{"step": 4, "boundary": -0}\n{"step": 5, "boundary": "0.25"}\n{"step": 6, "boundary": "nan"}\n' + goods(7, 16),
    });
    // A 50 MiB line, never held whole.
    await w.do({ op: 'append', file: file('long'), text: goods(1, 5) });
    await w.do({ op: 'long-line', file: file('long'), bytes: 50 << 20 });
    await w.do({ op: 'append', file: file('long'), text: goods(6, 10) });
    // Binary garbage: five lines of random bytes (each starts with NUL, none is blank).
    const r = rng(7);
    const garbage = Buffer.concat(
      Array.from({ length: 5 }, () => {
        const b = Buffer.from(Array.from({ length: 200 + Math.floor(r() * 800) }, () => 14 + Math.floor(r() * 242)));
        b[0] = 0;
        return Buffer.concat([b, Buffer.from('\n')]);
      }),
    );
    await w.do({ op: 'append', file: file('binary'), text: goods(1, 5) });
    await w.do({ op: 'bytes', file: file('binary'), base64: garbage.toString('base64') });
    await w.do({ op: 'append', file: file('binary'), text: goods(6, 10) });
    // Invalid UTF-8 inside strings.
    const utf8 = Buffer.concat(Array.from({ length: 10 }, (_, i) => Buffer.concat([Buffer.from(`{"step": ${i + 1}, "boundary": 0.5, "note": "`), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}\n')])));
    await w.do({ op: 'bytes', file: file('utf8'), base64: utf8.toString('base64') });
    // A line cut short by a writer that died; the restarted writer appends after it.
    await w.do({ op: 'append', file: file('cut'), text: goods(1, 5) + '{"step": 6, "boundary": 0.4' });
    await waitRecords(d, state, file('cut'), 5);
    await w.do({ op: 'append', file: file('cut'), text: goods(6, 10) });
    // copytruncate rotation (logrotate's copy, then truncate in place).
    await w.do({ op: 'append', file: file('copytruncate'), text: goods(1, 10) });
    await waitRecords(d, state, file('copytruncate'), 10);
    await w.do({ op: 'copytruncate', file: file('copytruncate') });
    await w.do({ op: 'append', file: file('copytruncate'), text: goods(11, 20) });
    // Rename rotation: the old file moves to .1 and a new one starts.
    await w.do({ op: 'append', file: file('renamed'), text: goods(1, 10) });
    await waitRecords(d, state, file('renamed'), 10);
    await w.do({ op: 'rename', from: file('renamed'), to: `${file('renamed')}.1` });
    await w.do({ op: 'append', file: file('renamed'), text: goods(11, 20) });
    // Deleted and recreated.
    await w.do({ op: 'append', file: file('recreated'), text: goods(1, 10) });
    await waitRecords(d, state, file('recreated'), 10);
    await w.do({ op: 'rm', path: file('recreated') });
    await sleep(300);
    await w.do({ op: 'append', file: file('recreated'), text: goods(11, 15) });
    // A run folder removed under the watched root after it was read.
    await w.do({ op: 'append', file: file('removed'), text: goods(1, 10) });
    await waitRecords(d, state, file('removed'), 10);
    await w.do({ op: 'rm', path: path.join(runs, 'removed') });
    // Permission denied, then granted.
    if (canDeny) {
      await d.waitFor((l) => l['file'] === denied && l['code'] === 'EACCES');
      await w.do({ op: 'chmod', path: denied, mode: 0o644 });
    }
    await w.do({ op: 'append', file: denied, text: goods(6, 10) });

    const expected: Record<string, { records: number; malformed?: number; longLines?: number }> = {
      malformed: { records: 20, malformed: 3 },
      numbers: { records: 16 },
      long: { records: 10, longLines: 1 },
      binary: { records: 10, malformed: 5 },
      utf8: { records: 10 },
      crlf: { records: 10 },
      cut: { records: 9, malformed: 1 },
      copytruncate: { records: 20 },
      renamed: { records: 20 },
      recreated: { records: 15 },
      denied: { records: 10 },
    };
    for (const [name, want] of Object.entries(expected)) await waitRecords(d, state, file(name), want.records);
    await sleep(500);
    assert.equal(d.child.exitCode, null, 'the daemon stays up');
    assert.equal(await d.stop(), 0);

    const s = readState(state)!;
    for (const [name, want] of Object.entries(expected)) {
      const c = s.files[file(name)]!.counters;
      assert.deepEqual({ records: c.records, malformed: c.malformed, longLines: c.longLines }, { malformed: 0, longLines: 0, ...want }, name);
    }
    // Each problem once, with the file named, and nothing else said about the good files.
    const once = (name: string, problem: string): void => {
      const said = complaints(d.logs, file(name));
      assert.deepEqual(said.map((l) => l['problem'] ?? l['code']), [problem], `${name}: ${JSON.stringify(said)}`);
    };
    once('malformed', 'malformed');
    once('long', 'long-line');
    once('binary', 'malformed');
    once('cut', 'malformed');
    if (canDeny) once('denied', 'EACCES');
    for (const name of ['numbers', 'utf8', 'crlf', 'copytruncate', 'renamed', 'recreated']) assert.deepEqual(complaints(d.logs, file(name)), [], name);
    const said = (name: string): string[] => d.logs.filter((l) => l['file'] === file(name) && l['problem'] !== undefined).map((l) => l['problem'] as string);
    assert.deepEqual(said('copytruncate'), ['truncated']);
    // Seen either as a rotation, or (when the new file comes after the daemon looked) as removed, then new.
    assert.ok(said('renamed').length <= 1 && said('renamed').every((p) => p === 'rotated'), said('renamed').join());
    if (canDeny) assert.equal(d.logs.filter((l) => l['file'] === denied && l.msg === 'file readable again').length, 1);
    // Nonfinite values are counted, not averaged; -0 and "0.25" are numbers.
    const series = (name: string) => s.runs.find((x) => x.id === path.join(runs, name))!.rounds[0]!.series;
    const b = series('numbers')['boundary']!;
    assert.equal(b.nonfinite.count, 4);
    assert.equal(b.summary.n, 12);
    // The removed run keeps what was read from it.
    assert.equal(series('removed')['boundary']!.summary.n, 10);
    // The rotated copies are not read as new files.
    assert.ok(!(`${file('copytruncate')}.1` in s.files) && !(`${file('renamed')}.1` in s.files));
  });
});
