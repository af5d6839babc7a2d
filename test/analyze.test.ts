/** `barwatch analyze`: the JSON document of SPEC 5, the text report and the exit statuses. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { analyzeJson, barwatch, type AnalyzeDoc } from './helpers/cli.js';
import { BIN, tempDir } from './helpers/fs.js';
import { writeRun } from './helpers/run.js';
import { normal, rng } from '../src/sim/random.js';

describe('barwatch analyze', () => {
  test('a root of many runs at any depth: one JSON document, rounds in order, series statistics', () => {
    const root = tempDir();
    writeRun(path.join(root, 'a'), 2, 40);
    writeRun(path.join(root, 'team', 'deep', 'b'), 1, 10);
    const { status, doc, stderr } = analyzeJson([root]);
    assert.equal(status, 0, stderr);
    assert.equal(doc.version, 1);
    assert.deepEqual(
      doc.runs.map((r) => r.run),
      [path.join(root, 'a'), path.join(root, 'team', 'deep', 'b')],
    );
    const a = doc.runs[0]!;
    assert.equal(a.format, 'reward-history');
    assert.deepEqual(
      a.rounds.map((r) => [r.role, r.round, r.steps]),
      [
        ['selector', 1, 40],
        ['generator', 1, 40],
        ['selector', 2, 40],
        ['generator', 2, 40],
      ],
    );
    const b = a.rounds[0]!.series['boundary']!;
    assert.equal(b.n, 40);
    assert.ok(Math.abs(b.mean! - (0.4 + 0.001 * 20.5)) < 1e-12);
    assert.equal(b.window.n, 40);
    assert.equal(b.last_step, 40);
    assert.deepEqual(a.findings, []);
    assert.equal(a.filter?.['boundary_share_before'], 0.5);
    assert.equal(a.filter?.['boundary_share_after'], 0.75);
    const share = a.rounds[0]!.signal_share!.share;
    assert.ok(share['boundary'] !== undefined && Object.values(share).reduce((x, y) => x + y, 0) > 0.999);
  });

  test('text output names runs, their findings first, then a line per round; --verbose every key series', () => {
    const root = tempDir();
    writeRun(path.join(root, 'a'), 1, 30);
    const r = barwatch(['analyze', root]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^${path.join(root, 'a')}\n  findings: none\n`, 'm'));
    assert.match(r.stdout, /filter: boundary share 50% before, 75% after \(6 questions read, 6 -> 4 questions\)/);
    assert.match(r.stdout, /\n {2}selector round 1: 30 step\(s\) {2}boundary 0\.41[56] [▁▂▃▄▅▆▇█]{12}/);
    const v = barwatch(['analyze', root, '--verbose']);
    assert.match(v.stdout, /selector round 1: 30 step\(s\), steps 1-30/);
    assert.match(v.stdout, /boundary +mean 0\.41[56] sd 0\.009 +last 30: 0\.41[56]±0\.009 +[▁▂▃▄▅▆▇█]{24}/);
    // Off a terminal nothing is coloured and no progress line is drawn.
    assert.ok(!(r.stdout + r.stderr).includes(`${String.fromCharCode(27)}[`));
  });

  test('a run folder named with line breaks and terminal escapes is shown escaped: no forged line, no escape reaches the terminal', async () => {
    const { writeScenario } = await import('./helpers/scenarios.js');
    const { formatTransition } = await import('../src/notifiers/console.js');
    const root = tempDir();
    const evil = `run\r\nFIRING [critical] fake: all good${String.fromCharCode(27)}]0;pwned${String.fromCharCode(7)}`;
    writeScenario(path.join(root, evil), 'nan-rewards', 3);
    const r = barwatch(['analyze', root]);
    assert.equal(r.status, 1, r.stderr);
    const raw = (text: string): boolean => ['\r', String.fromCharCode(27), String.fromCharCode(7)].some((c) => text.includes(c));
    assert.ok(!raw(r.stdout), JSON.stringify(r.stdout.slice(0, 200)));
    assert.ok(r.stdout.includes('run\\r\\nFIRING [critical] fake: all good\\x1b]0;pwned\\x07'));
    assert.ok(!/^FIRING/m.test(r.stdout));
    const shown = formatTransition({
      kind: 'held',
      finding: {
        detector: 'nonfinite-reward',
        severity: 'critical',
        run: path.join(root, evil),
        round: 1,
        step: 2,
        message: 'm',
        evidence: {},
        recommendation: null,
      },
    });
    assert.equal(shown.split('\n').length, 3);
    assert.ok(!raw(shown));
  });

  test('many runs: the runs with findings first, the worst first, then a tally; --quiet prints findings only', async () => {
    const { writeScenario } = await import('./helpers/scenarios.js');
    const root = tempDir();
    writeScenario(path.join(root, 'a-healthy'), 'healthy', 2);
    writeScenario(path.join(root, 'b-format'), 'format-heavy', 2);
    writeScenario(path.join(root, 'c-filter'), 'aggressive-filter', 2);
    const r = barwatch(['analyze', root]);
    assert.equal(r.status, 1);
    const order = [...r.stdout.matchAll(/^\/.*$/gm)].map((m) => path.basename(m[0]));
    assert.deepEqual(order, ['c-filter', 'b-format', 'a-healthy']);
    assert.match(
      r.stdout,
      /\n3 run\(s\): 2 with findings \(worst: 1 critical, 1 warning\), 1 without\n {2}boundary-share-low: 1 run\(s\)\n {2}format-dominance: 1 run\(s\)\n$/,
    );
    const q = barwatch(['analyze', root, '--quiet']);
    assert.equal(q.status, 1);
    assert.doesNotMatch(q.stdout, /a-healthy|step\(s\)|run\(s\):|[▁▂▃▄▅▆▇█]/);
    assert.match(q.stdout, /c-filter\n {2}findings: 1\n {4}\[critical\] boundary-share-low \(whole run\): .*\n {6}-> Set easy_threshold/);
    assert.match(q.stdout, /b-format\n {2}findings: 1\n {4}\[warning\] format-dominance/);
    const healthy = barwatch(['analyze', path.join(root, 'a-healthy'), '--quiet']);
    assert.equal(healthy.status, 0);
    assert.equal(healthy.stdout, 'findings: none\n');
  });

  test('exit 2 with a message on stderr for a missing path, a folder without logs, a bad option', () => {
    const empty = tempDir();
    const missing = barwatch(['analyze', path.join(empty, 'nope')]);
    assert.equal(missing.status, 2);
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /nope: no such file or folder/);
    const none = barwatch(['analyze', empty]);
    assert.equal(none.status, 2);
    assert.match(none.stderr, /no training logs found under/);
    const badFormat = barwatch(['analyze', empty, '--format', 'yaml']);
    assert.equal(badFormat.status, 2);
    assert.match(badFormat.stderr, /yaml.*is invalid|Allowed choices/);
    const noArgs = barwatch(['analyze']);
    assert.equal(noArgs.status, 2);
    const badConfig = barwatch(['analyze', empty, '--config', path.join(empty, 'missing.yaml')]);
    assert.equal(badConfig.status, 2);
    assert.match(badConfig.stderr, /missing\.yaml: cannot read the file \(ENOENT\)/);
  });

  test('a report larger than a pipe holds reaches a reader that is slow to read it whole before the process exits', async () => {
    // analyze ends by process.exit once stdout has taken the report (no heap teardown): a reader
    // that reads nothing for a while fills the pipe (64 KiB), and the rest must still arrive.
    const root = tempDir();
    for (let i = 0; i < 40; i++) writeRun(path.join(root, `run-${String(i).padStart(2, '0')}`), 2, 30);
    const child = spawn(process.execPath, [BIN, 'analyze', root, '--format', 'json']);
    child.stdout.pause();
    await sleep(1000);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stdout.resume();
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.ok(out.length > 256 << 10, `a report of ${out.length} characters`);
    assert.equal(status, 0);
    const doc = JSON.parse(out) as AnalyzeDoc;
    assert.equal(doc.runs.length, 40);
  });

  test('malformed lines are counted per file and reported, and the rest is read', () => {
    const root = tempDir();
    const sel = path.join(root, 'outputs', 'selector_round1');
    mkdirSync(sel, { recursive: true });
    writeFileSync(
      path.join(sel, 'reward_history.jsonl'),
      '{"step": 1, "boundary": 0.4}\n{"step": 2,\n\u0000\u0001binary\n{"step": 3, "boundary": 0.6}\n',
    );
    const { status, doc } = analyzeJson([root]);
    assert.equal(status, 0);
    assert.equal(doc.runs[0]!.files[0]!.malformed, 2);
    assert.equal(doc.runs[0]!.rounds[0]!.series['boundary']!.n, 2);
    const text = barwatch(['analyze', root]);
    assert.match(text.stdout, /2 malformed line\(s\) skipped/);
  });

  test("the guide's flat debug_artifacts layout is one run with every round, configs applied", () => {
    const root = path.join(tempDir(), 'debug_artifacts');
    const put = (rel: string, text: string): void => {
      mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      writeFileSync(path.join(root, rel), text);
    };
    const lines = (n: number, v: number): string =>
      Array.from({ length: n }, (_, i) => JSON.stringify({ step: i + 1, boundary: v, accuracy: 0.45 }) + '\n').join('');
    put('rewards/selector_round1_reward_history.jsonl', lines(20, 0.3));
    put('rewards/selector_round2_reward_history.jsonl', lines(30, 0.5));
    put('rewards/generator_round1_reward_history.jsonl', lines(10, 0.4));
    put('logs/selector_round1_train.log', 'step=1 loss=0.9\nstep=2 loss=0.8\n');
    put('configs/filter_config.yaml', 'easy_threshold: 0.7\nunsolvable_threshold: 0.1\n');
    const { doc } = analyzeJson([root]);
    assert.equal(doc.runs.length, 1);
    const run = doc.runs[0]!;
    assert.equal(run.run, root);
    assert.deepEqual(
      run.rounds.map((r) => `${r.role} ${r.round} ${r.steps}`),
      ['selector 1 20', 'generator 1 10', 'selector 2 30'],
    );
    assert.equal(run.rounds[0]!.series['loss']!.n, 2, 'the round 1 train.log joins round 1');
    assert.equal(run.settings['easyThreshold'], 0.7);
  });

  test('paths are taken as the shell gives them: spaces, #, %, non-ASCII, relative', () => {
    const base = tempDir();
    for (const name of ['my runs', 'a#b', '100%', 'données']) {
      const sel = path.join(base, name, 'outputs', 'selector_round1');
      mkdirSync(sel, { recursive: true });
      writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.4}\n');
      const { status, doc } = analyzeJson([path.join(base, name)]);
      assert.equal(status, 0, name);
      assert.equal(doc.runs[0]!.run, path.join(base, name));
      const rel = barwatch(['analyze', name, '--format', 'json'], { cwd: base });
      assert.equal((JSON.parse(rel.stdout) as AnalyzeDoc).runs[0]!.run, path.join(base, name), `${name} relative`);
    }
  });

  test('a round logged in two formats a record a step each is labelled the same whichever file is read first', () => {
    // A simulated run's train.log and reward_history.jsonl hold a record a step each: the label
    // once depended on which file came first. Here the console log sorts first by name.
    for (const [console, structured] of [
      ['a.log', 'z_reward_history.jsonl'],
      ['z.log', 'a_reward_history.jsonl'],
    ] as const) {
      const root = tempDir();
      const sel = path.join(root, 'run', 'outputs', 'selector_round1');
      mkdirSync(sel, { recursive: true });
      const steps = Array.from({ length: 20 }, (_, i) => i + 1);
      writeFileSync(path.join(sel, console), steps.map((s) => `step=${s} reward=0.5 loss=0.1\n`).join(''));
      writeFileSync(path.join(sel, structured), steps.map((s) => JSON.stringify({ step: s, boundary: 0.5, rollouts: 8 }) + '\n').join(''));
      const { doc } = analyzeJson([root]);
      assert.equal(doc.runs[0]!.format, 'reward-history', console);
      const text = barwatch(['analyze', root]);
      assert.match(text.stdout, /formats reward-history \+ train-log, 2 file\(s\)/, console);
    }
  });

  test('a key map from the config renames a trainer key to a component', () => {
    const root = tempDir();
    writeFileSync(path.join(root, 'train.log'), 'step=1 my_bdy=0.4\nstep=2 my_bdy=0.5\n');
    const cfg = path.join(root, 'c.yaml');
    writeFileSync(cfg, 'parse:\n  key_map: {my_bdy: boundary}\n');
    const { doc } = analyzeJson([path.join(root, 'train.log')], ['--config', cfg]);
    assert.equal(doc.runs[0]!.rounds[0]!.series['boundary']!.n, 2);
  });
});

describe('barwatch analyze with findings', () => {
  test('JSON findings have exactly the fields of SPEC 5; exit 1 on a warning', async () => {
    const { writeScenario } = await import('./helpers/scenarios.js');
    const root = tempDir();
    writeScenario(path.join(root, 'osc'), 'oscillating', 2);
    const { status, doc } = analyzeJson([root]);
    assert.equal(status, 1);
    const f = doc.runs[0]!.findings as unknown as Record<string, unknown>[];
    assert.equal(f.length, 2);
    for (const x of f) {
      assert.deepEqual(Object.keys(x).sort(), ['detector', 'evidence', 'message', 'recommendation', 'round', 'run', 'severity', 'step']);
      assert.equal(x['detector'], 'boundary-oscillation');
      assert.equal(x['severity'], 'warning');
      assert.equal(x['run'], path.join(root, 'osc'));
      const ev = x['evidence'] as { peaks: { period: number; power_share: number }[]; window: number };
      assert.equal(ev.window, 64);
      assert.equal(ev.peaks.length, 3);
      assert.ok(ev.peaks.every((p) => p.power_share > 0.3 && p.period >= 4 && p.period <= 32));
    }
    assert.deepEqual(
      f.map((x) => x['round']),
      [2, 3],
    );
  });

  test('text: findings most severe first, each with its round and step and a sparkline of the series', async () => {
    const { writeScenario } = await import('./helpers/scenarios.js');
    const root = tempDir();
    writeScenario(root, 'reward-collapse', 3);
    const nan = tempDir();
    writeScenario(nan, 'nan-rewards', 3);
    const r = barwatch(['analyze', root]);
    assert.equal(r.status, 1);
    assert.match(
      r.stdout,
      /findings: 1\n {4}\[critical\] reward-collapse \(round 3, step \d+\): total collapsed from [\d.]+ to about 0 since step \d+/,
    );
    assert.match(r.stdout, /\n {6}total, selector round 3: [▁▂▃▄▅▆▇█ ]{48}\n {6}-> Stop the run/);
    const n = barwatch(['analyze', nan]);
    assert.match(n.stdout, /\n {4}\[critical\] nonfinite-reward \(round 2, step \d+\): boundary became NaN at step \d+/);
  });

  test('a long backlog is judged in strides yet finds what starts late, within 1/128 of the steps before it', () => {
    // 30,000 selector steps: noise around 0.5, then from step 20,001 a swing of period 10.
    const root = tempDir();
    const file = path.join(root, 'run', 'outputs', 'selector_round1', 'reward_history.jsonl');
    mkdirSync(path.dirname(file), { recursive: true });
    const r = rng(7);
    const lines: string[] = [];
    for (let step = 1; step <= 30_000; step++) {
      const swing = step > 20_000 ? 0.2 * Math.sin((2 * Math.PI * step) / 10) : 0;
      lines.push(JSON.stringify({ step, boundary: 0.5 + swing + 0.03 * normal(r), format: 1, accuracy: 0.5, rollouts: 8 }));
    }
    writeFileSync(file, lines.join('\n') + '\n');
    const { doc, stderr } = analyzeJson([root]);
    const f = (doc.runs[0]!.findings as { detector: string; step: number }[]).find((x) => x.detector === 'boundary-oscillation');
    assert.ok(f !== undefined, stderr);
    // Three 64-step windows (128 steps) must swing; then at most one stride (1/128 of the steps)
    // late, and one more evaluation (a finding fires once two evaluations in a row hold).
    assert.ok(f.step >= 20_000 + 128 && f.step <= 20_000 + 128 + 2 * Math.ceil(20_128 / 128) + 16, `step ${f.step}`);
  });
});

describe('barwatch analyze: what was not read', () => {
  test('an unreadable file is listed in the text and JSON reports; --strict exits 3; nothing readable exits 2', () => {
    const root = tempDir();
    const sel = path.join(root, 'run', 'outputs', 'selector_round1');
    mkdirSync(sel, { recursive: true });
    writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.4}\n{"step": 2, "boundary": 0.5}\n');
    const broken = path.join(root, 'run', 'outputs', 'selector_round2');
    mkdirSync(broken);
    symlinkSync('/nonexistent/reward_history.jsonl', path.join(broken, 'reward_history.jsonl'));
    const garbage = path.join(root, 'run', 'outputs', 'generator_round1');
    mkdirSync(garbage);
    writeFileSync(path.join(garbage, 'reward_history.jsonl'), '\u0000\u0001\u0002 binary\n\u00ff\u00fe garbage\n');
    const text = barwatch(['analyze', root]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /not read \(2\):/);
    assert.match(text.stdout, /selector_round2\/reward_history\.jsonl: broken or looping symlink \(ENOENT\)/);
    assert.match(text.stdout, /generator_round1\/reward_history\.jsonl: every line \(2\) was malformed/);
    const { doc } = analyzeJson([root]);
    const run = doc.runs[0]! as unknown as { problems: { path: string; reason: string }[] };
    assert.deepEqual(
      run.problems.map((p) => p.reason),
      ['every line (2) was malformed (not valid JSON)'],
    );
    assert.equal((doc as unknown as { problems: unknown[] }).problems.length, 1, 'the broken link is not a file of the run');
    assert.equal(barwatch(['analyze', root, '--strict']).status, 3);
    const only = barwatch(['analyze', garbage]);
    assert.equal(only.status, 2);
    assert.match(only.stderr, /nothing could be read: .*every line \(2\) was malformed/);
  });

  test('a skipped over-long line is named in the text report', () => {
    const root = tempDir();
    writeFileSync(path.join(root, 'train.log'), `step=1 boundary=0.4\nstep=2 note=${'x'.repeat(300)}\nstep=3 boundary=0.5\n`);
    const cfg = path.join(root, 'c.yaml');
    writeFileSync(cfg, 'parse: {max_line_bytes: 100}\n');
    const r = barwatch(['analyze', path.join(root, 'train.log'), '--config', cfg]);
    assert.match(r.stdout, /train\.log: 1 line\(s\) over parse\.max_line_bytes skipped/);
  });
});
