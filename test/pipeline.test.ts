/** The read path: restarts that resume from saved state give the same statistics as one pass. */
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, renameSync, statSync, truncateSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { pino } from 'pino';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Pipeline } from '../src/pipeline/pipeline.js';
import { discover } from '../src/sources/discover.js';
import type { ReadState } from '../src/pipeline/pipeline.js';
import { fitReadState } from '../src/pipeline/state-schema.js';
import type { SetAside } from '../src/state/file.js';
import { loadState } from '../src/state/file.js';
import { silentLogger } from '../src/util/log.js';
import { tempDir } from './helpers/fs.js';
import { RUN_SETTINGS, writeRun } from './helpers/run.js';
import { firstDiff } from './helpers/diff.js';
import { writeAtomic } from '../src/state/atomic.js';
import { StateSaver } from '../src/daemon/state.js';
import { Curve, CURVE_FIELDS, History, packDoubles, RollingWindow, type CurveColumns, type HistoryJSON } from '../src/stats/rolling.js';
import { DEFAULTS } from './helpers/defaults.js';

const opts = () => ({
  parser: DEFAULTS.parser,
  tail: DEFAULTS.tail,
  stats: DEFAULTS.stats,
  now: () => 1_000_000,
  log: silentLogger(),
});

/** A fresh run folder with a selector round's two files (their paths; written by the test). */
function roundFiles(): { dir: string; history: string; log: string } {
  const dir = tempDir();
  const round = path.join(dir, 'outputs', 'selector_round1');
  mkdirSync(round, { recursive: true });
  return { dir, history: path.join(round, 'reward_history.jsonl'), log: path.join(round, 'train.log') };
}

/** Follows every file under `dir`, as a daemon's watcher reports them, without reading them. */
async function trackRound(p: Pipeline, dir: string): Promise<void> {
  for (const f of (await discover([dir])).files) p.track(f.file, f.kind, f.place);
}

async function ingest(p: Pipeline, root: string): Promise<void> {
  const found = await discover([root]);
  for (const f of found.files) {
    p.track(f.file, f.kind, f.place);
    await p.drain(f.file);
  }
}

describe('pipeline', () => {
  test('a canonical run: rounds, filter histogram, settings and signal shares', async () => {
    const dir = tempDir();
    writeRun(dir, 2, 50);
    const p = new Pipeline(opts());
    await ingest(p, dir);
    const run = p.registry.get(dir)!;
    assert.deepEqual(
      run.orderedRounds().map((r) => `${r.role}${r.round}:${r.steps}`),
      ['selector1:50', 'generator1:50', 'selector2:50', 'generator2:50'],
    );
    assert.equal(run.filter.preN, 6);
    assert.equal(run.filter.postN, 4);
    assert.equal(run.filter.boundaryPre, 3);
    assert.equal(run.filter.boundaryPost, 3);
    assert.equal(run.filter.before, 6);
    assert.deepEqual(run.settings, RUN_SETTINGS);
    assert.equal(run.rollouts?.k, 10);
    const sel = run.round('selector', 1)!;
    assert.deepEqual(
      run.orderedRounds().map((r) => r.steps),
      [50, 50, 50, 50],
      JSON.stringify(run.orderedRounds().map((r) => [r.key, r.steps, r.records])),
    );
    // reward_history.jsonl and train.log both log it: read once, from the first file.
    assert.equal(sel.series.get('boundary')!.summary.n, 50);
    assert.equal(sel.duplicates, 100); // boundary and rollouts, 50 steps each
    await p.close();
  });

  test('resuming from saved state equals one uninterrupted pass', async () => {
    const whole = tempDir();
    writeRun(whole, 2, 300);
    // The same run, written in two halves with a restart between them.
    const split = tempDir();
    writeRun(split, 2, 300);
    const files = (await discover([split])).files.map((f) => f.file);
    const full = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
    for (const f of files) {
      const text = full.get(f)!;
      writeFileSync(f, text.slice(0, Math.floor(text.length * 0.4))); // cuts mid-line
    }
    const a = new Pipeline(opts());
    await ingest(a, split);
    const statePath = path.join(split, 'state.json');
    await writeAtomic(statePath, (sink) => a.statePieces(sink));
    await a.close();
    for (const f of files) {
      const text = full.get(f)!;
      appendFileSync(f, text.slice(Math.floor(text.length * 0.4)));
    }
    const { state } = await loadState<ReadState>(statePath, fitReadState);
    const b = new Pipeline(opts(), state);
    await ingest(b, split);
    const c = new Pipeline(opts());
    await ingest(c, whole);
    const norm = (s: ReadState['runs'], root: string): unknown => JSON.parse(JSON.stringify(s).split(root).join('<run>'));
    assert.equal(firstDiff(norm(b.registry.toJSON(), split), norm(c.registry.toJSON(), whole)), null);
    await Promise.all([b.close(), c.close()]);
  });

  test('the saved text equals the state, also after some rounds read more (their cached text is renewed)', async () => {
    const dir = tempDir();
    writeRun(dir, 2, 100);
    const files = (await discover([dir])).files.map((f) => f.file);
    const full = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
    for (const f of files) writeFileSync(f, full.get(f)!.slice(0, Math.floor(full.get(f)!.length / 2)));
    const p = new Pipeline(opts());
    await ingest(p, dir);
    assert.deepEqual(JSON.parse(p.statePieces([]).join('')), p.state());
    // Only the selector files grow: the generator rounds' text is reused, the selector rounds' renewed.
    for (const f of files.filter((x) => x.includes('selector'))) appendFileSync(f, full.get(f)!.slice(Math.floor(full.get(f)!.length / 2)));
    await ingest(p, dir);
    const text = JSON.parse(p.statePieces([], { alerting: { alerts: [], groups: {} } }).join('')) as ReadState;
    assert.deepEqual(text, { ...p.state(), alerting: { alerts: [], groups: {} } });
    assert.deepEqual(text.runs[0]!.rounds.map((r) => `${r.role}${r.round}:${r.steps}`).sort(), [
      'generator1:50',
      'generator2:50',
      'selector1:100',
      'selector2:100',
    ]);
    await p.close();
  });

  test('malformed lines are counted per file and skipped; the good lines around them count', async () => {
    const dir = tempDir();
    const sel = path.join(dir, 'outputs', 'selector_round1');
    mkdirSync(sel, { recursive: true });
    writeFileSync(
      path.join(sel, 'reward_history.jsonl'),
      '{"step": 1, "boundary": 0.1}\n{"step": 2, "boundary": \n{"step": 3, "boundary": 0.3}\nnot json\n{"step": 4, "boundary": NaN}\n',
    );
    const p = new Pipeline(opts());
    await ingest(p, dir);
    const src = [...p.sources.values()][0]!;
    assert.equal(src.counters.malformed, 2);
    assert.equal(src.counters.lines, 5);
    const b = p.registry.get(dir)!.round('selector', 1)!.series.get('boundary')!;
    assert.equal(b.summary.n, 2);
    assert.equal(b.nonfinite.count, 1);
    assert.equal(b.nonfinite.firstStep, 4);
    await p.close();
  });

  test('a state written in pieces reads back whole: pieces across the write buffer, larger than it, multi-byte', async () => {
    const file = path.join(tempDir(), 'state.json');
    const pieces = [
      'a'.repeat((1 << 20) - 3),
      'é€',
      'ü',
      'x'.repeat(3 << 20),
      '"ü€"',
      '',
      'z',
      '😀'.repeat(200_000),
      'b'.repeat(349_000),
      '€',
    ];
    // It says how many bytes it wrote (UTF-8: the euro sign three, an emoji four).
    assert.equal(await writeAtomic(file, pieces), statSync(file).size);
    assert.equal(readFileSync(file, 'utf8'), pieces.join(''));
    assert.equal(await writeAtomic(file, 'ü€'), 5);
    // Two at once (one write buffer serves both), with surrogate pairs at every offset a cut can
    // fall on, and pieces pushed by a function as the state save pushes them.
    const other = path.join(path.dirname(file), 'other.json');
    const odd = ['a', ...pieces.slice(1).reverse(), 'ab😀'.repeat(300_001)];
    await Promise.all([writeAtomic(file, pieces), writeAtomic(other, odd)]);
    assert.equal(readFileSync(file, 'utf8'), pieces.join(''));
    assert.equal(readFileSync(other, 'utf8'), odd.join(''));
    await Promise.all([
      writeAtomic(file, (sink) => pieces.forEach((p) => sink.push(p, ''))),
      writeAtomic(other, (sink) => sink.push(...odd)),
    ]);
    assert.equal(readFileSync(file, 'utf8'), pieces.join(''));
    assert.equal(readFileSync(other, 'utf8'), odd.join(''));
    assert.equal(await writeAtomic(file, ['{}']), 2);
    assert.equal(readFileSync(file, 'utf8'), '{}');
  });

  test('a timed save waits for its duration and its size: a large state is saved at most about 128 KiB a second', async () => {
    const file = path.join(tempDir(), 'state.json');
    let clock = 1_000_000;
    let size = 1 << 20;
    let changes = 0;
    const saver = new StateSaver({
      file,
      pieces: (sink) => sink.push('x'.repeat(size)),
      mark: () => [changes],
      log: silentLogger(),
      now: () => clock,
    });
    assert.ok(saver.due(), 'nothing saved yet');
    changes++;
    await saver.save();
    assert.equal(statSync(file).size, 1 << 20);
    // The save took no time on this clock: its 1 MiB alone spaces the next, 8 s at 128 KiB/s.
    clock += 7_900;
    assert.ok(!saver.due(), '1 MiB saved 7.9 s ago');
    clock += 200;
    assert.ok(saver.due(), '1 MiB saved 8.1 s ago');
    // A small state is due again at once (the checkpoint interval is the daemon's timer).
    size = 1000;
    changes++;
    await saver.save();
    clock += 10;
    assert.ok(saver.due(), '1,000 bytes saved 10 ms ago');
  });

  test('a state pushed in pieces is written as it is pushed: no piece waits for the ones after it', async () => {
    const file = path.join(tempDir(), 'state.json');
    const seen: number[] = [];
    await writeAtomic(file, (sink) => {
      for (let i = 0; i < 6; i++) {
        sink.push(String(i).repeat(700_000));
        seen.push(statSync(`${file}.tmp`).size);
      }
    });
    // 700,000 units at most three bytes each: the 1 MiB buffer holds one piece, so each earlier
    // piece is on disk by the time the next is pushed.
    assert.ok(seen[5]! >= 4 * 700_000, `written while pushing: ${seen.join(', ')}`);
    assert.equal(readFileSync(file, 'utf8'), [0, 1, 2, 3, 4, 5].map((i) => String(i).repeat(700_000)).join(''));
  });

  test('a corrupt state file is moved aside and reading starts over', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'state.json');
    writeFileSync(file, '{"version": 1, "files": {');
    const { state, problems } = await loadState<ReadState>(file, fitReadState, Date.parse('2026-11-30T00:00:00Z'));
    assert.equal(state, null);
    assert.equal(problems.length, 1);
    assert.match(
      problems[0]!,
      /unusable \(not valid JSON \(25 bytes\)\); moved to .*state\.json\.corrupt-2026-11-30T00-00-00-000Z; rebuilding from the logs/,
    );
    // A complete temp file (crash between fsync and rename) wins.
    writeFileSync(file + '.tmp', JSON.stringify({ version: 1, savedAt: 'x', files: {}, runs: [] }));
    const again = await loadState<ReadState>(file, fitReadState);
    assert.deepEqual(again.state, { version: 1, savedAt: 'x', files: {}, runs: [] });
  });

  test('a state of the wrong shape: each part that does not fit is set aside, with the checkpoints of a run set aside', async () => {
    const dirs = [tempDir(), tempDir()];
    const p = new Pipeline(opts());
    for (const d of dirs) {
      writeRun(d, 2, 50);
      await ingest(p, d);
    }
    const saved = JSON.parse(p.statePieces([]).join('')) as ReadState & Record<string, unknown>;
    await p.close();
    const fit = (v: unknown): { state: ReadState | null; parts: string[] } => {
      const aside: SetAside[] = [];
      const state = fitReadState(JSON.parse(JSON.stringify(v)) as Record<string, unknown>, aside);
      return { state, parts: aside.map((a) => a.part) };
    };
    // A real state fits whole.
    assert.deepEqual(fit(saved).parts, []);
    // A state saved before curves were columns (an object a bucket) fits whole and gives the same state.
    const before = JSON.parse(JSON.stringify(saved)) as ReadState;
    for (const run of before.runs)
      for (const r of run.rounds)
        for (const s of Object.values(r.series)) s.curve = { size: s.curve.size, per: s.curve.per, buckets: Curve.from(s.curve).buckets() };
    assert.ok(JSON.stringify(before).includes('"buckets":[{"firstStep"'));
    assert.deepEqual(fit(before).parts, []);
    const restored = (state: ReadState): unknown => new Pipeline(opts(), state).state().runs;
    assert.deepEqual(restored(fit(before).state!), restored(fit(saved).state!));
    // A state saved before the numbers were packed (curves as columns, windows and histories as
    // numbers) fits whole and gives the same state.
    const unpacked = JSON.parse(JSON.stringify(saved)) as ReadState;
    const numbers = (j: HistoryJSON): HistoryJSON => {
      const { steps, values } = History.from(j).points();
      return { size: j.size, steps: [...steps], values: [...values] };
    };
    for (const run of unpacked.runs)
      for (const r of run.rounds) {
        r.arrivals = numbers(r.arrivals);
        if (r.stepTimes !== undefined) r.stepTimes = numbers(r.stepTimes);
        for (const s of Object.values(r.series)) {
          const buckets = Curve.from(s.curve).buckets();
          const col = (f: (b: (typeof buckets)[number]) => number | undefined): (number | null)[] => buckets.map((b) => f(b) ?? null);
          s.curve = {
            size: s.curve.size,
            per: s.curve.per,
            firstStep: buckets.map((b) => b.firstStep),
            lastStep: buckets.map((b) => b.lastStep),
            n: buckets.map((b) => b.n),
            mean: col((b) => b.mean),
            m2: col((b) => b.m2),
            min: col((b) => b.min),
            max: col((b) => b.max),
          };
          s.history = numbers(s.history);
          s.window = { size: s.window.size, values: [...RollingWindow.from(s.window).values()] };
        }
      }
    assert.ok(!JSON.stringify(unpacked).includes('"packed"') && !JSON.stringify(unpacked).includes('"store"'));
    assert.deepEqual(fit(unpacked).parts, []);
    assert.deepEqual(restored(fit(unpacked).state!), restored(fit(saved).state!));
    // Columns of different lengths: that run is set aside.
    const ragged = JSON.parse(JSON.stringify(unpacked)) as ReadState;
    const curve = Object.values(ragged.runs[0]!.rounds[0]!.series)[0]!.curve as CurveColumns;
    curve.mean.pop();
    assert.deepEqual(fit(ragged).parts, ['runs[0]']);
    // A packed curve whose numbers are not whole buckets, a packed history that is not base64: set aside.
    const cut = JSON.parse(JSON.stringify(saved)) as ReadState;
    Object.values(cut.runs[0]!.rounds[0]!.series)[0]!.curve = { size: 128, per: 1, store: packDoubles(new Float64Array(CURVE_FIELDS + 1)) };
    assert.deepEqual(fit(cut).parts, ['runs[0]']);
    const garbled = JSON.parse(JSON.stringify(saved)) as ReadState;
    Object.values(garbled.runs[1]!.rounds[0]!.series)[0]!.history = { size: 256, packed: 'not base64!' };
    assert.deepEqual(fit(garbled).parts, ['runs[1]']);
    // A run whose rounds are not a list: it and its files' checkpoints go, the other run stays.
    const broken = JSON.parse(JSON.stringify(saved)) as ReadState;
    const at = broken.runs.findIndex((r) => r.id === dirs[0]);
    (broken.runs[at] as unknown as Record<string, unknown>).rounds = 'x';
    const a = fit(broken);
    assert.deepEqual(a.parts, [`runs[${at}]`]);
    assert.deepEqual(
      a.state!.runs.map((r) => r.id),
      [dirs[1]],
    );
    assert.ok(Object.values(a.state!.files).every((c) => c.place.run === dirs[1]) && Object.keys(a.state!.files).length > 0);
    // An offset that is a string: that file's checkpoint and its run go.
    const off = JSON.parse(JSON.stringify(saved)) as ReadState;
    const f1 = Object.keys(off.files).find((f) => off.files[f]!.place.run === dirs[1] && off.files[f]!.tail !== null)!;
    (off.files[f1]!.tail as unknown as Record<string, unknown>).offset = '12';
    const b = fit(off);
    assert.deepEqual(b.parts, [`files[${JSON.stringify(f1)}]`, `runs[id=${JSON.stringify(dirs[1])}]`]);
    assert.deepEqual(
      b.state!.runs.map((r) => r.id),
      [dirs[0]],
    );
    // Not a state of the read path at all: unusable whole.
    assert.equal(fit({ ...saved, runs: {} }).state, null);
    // A state saved when three inputs had other names (tfevents, selector-debug, generator-debug) fits, renamed.
    const older = JSON.parse(JSON.stringify(saved)) as ReadState;
    const names = Object.keys(older.files).slice(0, 3);
    const earlier = ['tfevents', 'selector-debug', 'generator-debug'];
    names.forEach((f, i) => ((older.files[f] as unknown as Record<string, unknown>).kind = earlier[i]));
    const c = fit(older);
    assert.deepEqual(c.parts, []);
    assert.deepEqual(
      names.map((f) => c.state!.files[f]!.kind),
      ['tensorboard', 'barrag-selector-debug', 'barrag-generator-debug'],
    );
  });

  test('a file that cannot be read is reported once per cause, survived, and read when it recovers', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'train.log');
    mkdirSync(file); // a folder where a log should be: every read fails the same way
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(s) });
    const p = new Pipeline({ ...opts(), log });
    p.track(file, 'text', { run: dir, role: 'unknown', round: null });
    for (let i = 0; i < 5; i++) assert.equal(await p.poll(file), 'idle');
    const warned = lines.map((l) => JSON.parse(l) as { msg: string; file: string }).filter((l) => l.msg.startsWith('cannot read file'));
    assert.equal(warned.length, 1);
    assert.equal(warned[0]!.file, file);
    assert.equal(p.failures().get(file), 'ENOTFILE');
    rmSync(file, { recursive: true });
    writeFileSync(file, 'step=1 reward=0.5\n');
    await p.drain(file);
    assert.equal(p.failures().size, 0);
    assert.ok(lines.some((l) => l.includes('file readable again')));
    assert.equal(p.registry.get(dir)!.round('unknown', null)!.steps, 1);
    await p.close();
  });

  test("a daemon holds a file's steps past its round's other file until that one catches up, across a restart, and not for ever", async () => {
    const { dir, history, log } = roundFiles();
    const lines = (from: number, to: number, line: (s: number) => string): string =>
      Array.from({ length: to - from + 1 }, (_, i) => line(from + i) + '\n').join('');
    const historyLine = (s: number): string => JSON.stringify({ step: s, boundary: 0.5, total: 0.6 });
    const logLine = (s: number): string => `step=${s} loss=${s === 6 ? 'nan' : '0.3'}`;
    writeFileSync(history, lines(1, 3, historyLine));
    writeFileSync(log, lines(1, 10, logLine));
    let now = 1_000_000;
    const live = { ...opts(), now: () => now, live: true };
    const a = new Pipeline(live);
    await trackRound(a, dir);
    // reward_history stands at step 3: train.log's steps 4 to 10 wait in its checkpoint.
    await a.read(history);
    await a.read(log);
    const sel = (p: Pipeline) => p.registry.get(dir)!.round('selector', 1)!;
    assert.equal(sel(a).lastStep, 3);
    const saved = JSON.parse(JSON.stringify(a.state())) as ReadState & Record<string, unknown>;
    const held = saved.files[log]!.held!;
    assert.deepEqual(
      held.flatMap((b) => b.records.map((r) => (r.kind === 'metrics' ? r.step : null))),
      [4, 5, 6, 7, 8, 9, 10],
    );
    await a.close();
    // Restarted from that state, reward_history catches up: both files' steps 4 to 10 are read, the NaN loss too.
    const aside: SetAside[] = [];
    const b = new Pipeline(live, fitReadState(saved, aside));
    assert.deepEqual(aside, []);
    await trackRound(b, dir);
    appendFileSync(history, lines(4, 12, historyLine));
    now += 1000;
    await b.read(history);
    assert.equal(sel(b).lastStep, 12);
    const loss = sel(b).series.get('loss')!;
    assert.equal(loss.summary.n + loss.nonfinite.count, 10);
    assert.equal(loss.nonfinite.count, 1);
    assert.equal(sel(b).series.get('boundary')!.summary.n, 12);
    // One file goes quiet: the other's steps past it wait HOLD_MS (5 s) at most.
    appendFileSync(log, lines(11, 20, logLine));
    await b.read(log);
    assert.equal(sel(b).lastStep, 12);
    now += 6000;
    await b.read(log);
    assert.equal(sel(b).lastStep, 20);
    await b.close();
    // analyze (not live) never holds.
    const c = new Pipeline(opts());
    await ingest(c, dir);
    assert.equal(sel(c).lastStep, 20);
    await c.close();
  });

  test("with trusted events, a round's other file is read only when an event or a sweep marked it; a step past it waits for it", async () => {
    const { dir, history, log } = roundFiles();
    writeFileSync(history, `${JSON.stringify({ step: 1, boundary: 0.5 })}\n`);
    writeFileSync(log, 'step=1 loss=0.3\n');
    let now = 1_000_000;
    const p = new Pipeline({ ...opts(), tail: { ...DEFAULTS.tail, sync: true, trustEvents: true }, now: () => now, live: true });
    await trackRound(p, dir);
    await p.read(history);
    const src = (f: string) => p.sources.get(f)!;
    const sel = () => p.registry.get(dir)!.round('selector', 1)!;
    assert.equal(src(log).counters.lines, 1, 'a file never read is read with its round');
    // train.log grows, but its event has not come yet: the read of reward_history leaves it, and
    // reward_history's step 2, past train.log's step 1, waits for it (train.log read 0 s ago).
    appendFileSync(log, 'step=2 loss=0.2\n');
    appendFileSync(history, `${JSON.stringify({ step: 2, boundary: 0.4 })}\n`);
    now += 100;
    p.changed(history);
    await p.read(history);
    assert.equal(src(log).counters.lines, 1);
    assert.equal(sel().series.get('boundary')!.summary.n, 1);
    assert.equal(src(history).held.length, 1);
    // Its event: both files' step 2 go in, in order.
    p.changed(log);
    await p.read(history);
    assert.equal(src(log).counters.lines, 2);
    assert.equal(sel().series.get('boundary')!.summary.n, 2);
    assert.equal(sel().series.get('loss')!.summary.n, 2);
    assert.equal(src(history).held.length, 0);
    // Without trusted events (chokidar), every file of the round is read at each read.
    const q = new Pipeline({ ...opts(), now: () => now, live: true });
    await trackRound(q, dir);
    await q.read(history);
    appendFileSync(log, 'step=3 loss=0.1\n');
    await q.read(history);
    assert.equal(q.sources.get(log)!.counters.lines, 3);
    await p.close();
    await q.close();
  });

  test('a sweep passes over a file one stat shows as it was read; a file grown, cut, replaced, holding steps back, young or never read is read', async () => {
    const { dir, history, log } = roundFiles();
    const line = (step: number): string => `${JSON.stringify({ step, boundary: 0.5 })}\n`;
    writeFileSync(history, line(1));
    writeFileSync(log, 'step=1 loss=0.3\n');
    let now = 1_000_000;
    const p = new Pipeline({ ...opts(), tail: { ...DEFAULTS.tail, sync: true, trustEvents: true }, now: () => now, live: true });
    await trackRound(p, dir);
    const src = (f: string) => p.sources.get(f)!;
    const passed = (f: string): boolean => p.unchangedOnDisk(src(f));
    assert.equal(passed(history), false, 'never read');
    await p.read(history);
    assert.deepEqual([passed(history), passed(log)], [true, true]);
    appendFileSync(history, line(2));
    assert.equal(passed(history), false, 'grown');
    assert.equal(passed(log), true);
    // Its step 2 waits for train.log's (read just now, at step 1): held back, so read at each sweep.
    now += 100;
    p.changed(history);
    await p.read(history);
    assert.equal(src(history).held.length, 1);
    assert.equal(passed(history), false, 'holding steps back');
    appendFileSync(log, 'step=2 loss=0.2\n');
    p.changed(log);
    await p.read(history);
    assert.equal(src(history).held.length, 0);
    assert.deepEqual([passed(history), passed(log)], [true, true]);
    // Part of a line: read and kept by the tailer, so the file is as long as what was read.
    appendFileSync(history, '{"step": 3, "bound');
    assert.equal(passed(history), false);
    await p.read(history);
    assert.equal(passed(history), true);
    // Cut, and replaced by a copy of the same length (another inode).
    truncateSync(history, 10);
    assert.equal(passed(history), false, 'cut');
    const text = readFileSync(log);
    renameSync(log, `${log}.1`);
    writeFileSync(log, text);
    assert.equal(passed(log), false, 'replaced');
    // A young file alone in its round looks on disk for the others at each read: never passed over.
    const young = roundFiles();
    writeFileSync(young.history, line(1));
    await trackRound(p, young.dir);
    await p.read(young.history);
    assert.equal(passed(young.history), false, 'young and alone');
    for (let s = 2; s <= 9; s++) appendFileSync(young.history, line(s));
    await p.read(young.history);
    assert.equal(passed(young.history), true);
    // Asynchronous reads (watch.poll, files on a network file system): every sweep reads.
    const q = new Pipeline({ ...opts(), tail: { ...DEFAULTS.tail, sync: false } });
    await trackRound(q, young.dir);
    await q.drain(young.history);
    assert.equal(q.unchangedOnDisk(q.sources.get(young.history)!), false);
    await p.close();
    await q.close();
  });
});
