/** The nightly summary: built from run state and the alert log, sent by email with PNG charts. */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { loadConfig, parseConfig } from '../src/config/load.js';
import { silentLogger } from '../src/util/log.js';
import { createEmailNotifier } from '../src/notifiers/email/index.js';
import { buildSummary } from '../src/summary/build.js';
import { barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { writeGrpoScenario } from './helpers/grpo-scenarios.js';
import { writeScenario } from './helpers/scenarios.js';
import { SmtpCapture } from './helpers/servers.js';
import { writeAtomic } from '../src/state/atomic.js';

test('summary email: rounds, direction of change, accuracy vs c, alerts of the last 24 h, PNG charts attached and referenced', async () => {
  const root = tempDir();
  writeScenario(path.join(root, 'healthy'), 'healthy', 5);
  writeScenario(path.join(root, 'osc'), 'oscillating', 5);
  const now = Date.now();
  const res = await analyzePaths([root], loadConfig(null), silentLogger(), () => now);
  const alerts = [
    {
      time: new Date(now - 3_600_000).toISOString(),
      status: 'firing',
      detector: 'boundary-oscillation',
      run: path.join(root, 'osc'),
      severity: 'warning',
    },
    {
      time: new Date(now - 2 * 86_400_000).toISOString(),
      status: 'firing',
      detector: 'stale-run',
      run: path.join(root, 'osc'),
      severity: 'warning',
    },
  ];
  const s = buildSummary(res.runs, alerts, now);
  assert.match(
    s.text,
    /selector round 2: boundary mean 0\.\d{3} \(up 0\.\d{3}\), variance 0\.\d{3} \(down 0\.\d{3}\); accuracy 0\.\d{3} vs c=0\.5; boundary signal share \d+%/,
  );
  assert.match(s.text, /last 24 h: 1 alert\(s\) fired \(boundary-oscillation\); 0 resolved/);
  assert.match(s.text, /filter: boundary share \d+% before, \d+% after/);
  assert.equal(s.charts.length, 4);
  const smtp = await new SmtpCapture().start();
  const email = createEmailNotifier({
    smtp: { host: '127.0.0.1', port: smtp.port, secure: false },
    from: 'b@example.org',
    to: ['t@example.org'],
  });
  assert.deepEqual(await email.sendSummary!(s), { ok: true });
  await email.close?.();
  const m = smtp.messages[0]!;
  assert.equal(m.subject, 'barwatch summary: 2 run(s), 1 alert(s) in the last 24 h');
  assert.equal(m.attachments.length, 4);
  const html = String(m.html);
  for (const a of m.attachments) {
    assert.equal(a.contentType, 'image/png');
    assert.equal(a.content.subarray(1, 4).toString(), 'PNG');
    assert.ok(a.content.length > 2000, `${a.filename}: ${a.content.length} bytes`);
    assert.ok(html.includes(`cid:${a.cid}`), `${a.cid} referenced in the HTML`);
  }
  await smtp.stop();
});

test('barwatch summary prints the summary from the state file; --send reports per channel', async () => {
  const root = tempDir();
  writeScenario(path.join(root, 'runs', 'a'), 'healthy', 2);
  const state = path.join(root, 'state');
  mkdirSync(state);
  const cfgFile = path.join(root, 'c.yaml');
  const smtp = await new SmtpCapture().start();
  writeFileSync(
    cfgFile,
    `state_dir: state\nnotify:\n  email: {smtp: {host: 127.0.0.1, port: ${smtp.port}, secure: false}, to: [t@example.org]}\n`,
  );
  const config = parseConfig(`state_dir: state\n`, cfgFile);
  const res = await analyzePaths([path.join(root, 'runs')], config, silentLogger());
  await writeAtomic(path.join(state, 'state.json'), JSON.stringify(res.pipeline.state()));
  appendFileSync(
    path.join(state, 'alerts.jsonl'),
    JSON.stringify({
      time: new Date().toISOString(),
      status: 'firing',
      detector: 'stale-run',
      run: path.join(root, 'runs', 'a'),
      severity: 'warning',
    }) + '\n',
  );
  const printed = await barwatchAsync(['summary', '--config', cfgFile]);
  assert.equal(printed.status, 0, printed.stderr);
  assert.match(printed.stdout, /^barwatch summary: 1 run\(s\), 1 alert\(s\) in the last 24 h\n/);
  assert.match(printed.stdout, /rounds: 3 selector, 3 generator \(finished\)/);
  const sent = await barwatchAsync(['summary', '--config', cfgFile, '--send']);
  assert.equal(sent.stdout, 'email: sent\n');
  assert.equal(smtp.messages.length, 1);
  assert.equal(smtp.messages[0]!.attachments.length, 2);
  // Attachments named by run, not boundary-0.png.
  assert.deepEqual(smtp.messages[0]!.attachments.map((a) => a.filename).sort(), ['a-1-accuracy.png', 'a-1-boundary.png']);
  await smtp.stop();
  const none = await barwatchAsync(['summary', '--config', path.join(root, 'missing.yaml')]);
  assert.equal(none.status, 2);
});

test('a bad cron expression or time zone is refused', () => {
  assert.throws(
    () => parseConfig('summary: {cron: "every night", timezone: Mars/Olympus}\n', '/etc/b.yaml'),
    (err: Error) =>
      err.message ===
      '/etc/b.yaml: summary.cron: is not a valid cron expression (e.g. "0 23 * * *") (breaks the nightly summary)\n/etc/b.yaml: summary.timezone: is not a known time zone (e.g. UTC, Europe/Paris) (breaks the nightly summary)',
  );
});

test("summary of a run that is not BAR-RAG: its training series' recent levels, by their own names, and its alerts", async () => {
  const dir = tempDir();
  writeGrpoScenario(path.join(dir, 'verl-run'), 'grpo-entropy-collapse', 2);
  const now = Date.now();
  const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => now);
  const alerts = res.findings.map((f) => ({
    time: new Date(now).toISOString(),
    status: 'firing',
    detector: f.detector,
    run: f.run,
    severity: f.severity,
  }));
  const s = buildSummary(res.runs, alerts, now, { withCharts: false });
  const line = s.text.split('\n').find((l) => l.includes('training (120 steps, recent means)'));
  assert.ok(line !== undefined, s.text);
  for (const name of [
    'critic/score/mean',
    'actor/entropy',
    'actor/kl_loss',
    'response_length/mean',
    'response_length/clip_ratio',
    'actor/grad_norm',
  ])
    assert.match(line, new RegExp(`${name.replace('/', '\\/')} -?\\d`), name);
  assert.match(s.text, /1 alert\(s\) fired \(entropy-collapse\); 0 resolved/);
  assert.match(s.html, /training \(120 steps, recent means\)/);
});

test('barwatch summary --html writes one file a browser shows: active findings by severity with what to do, fired and resolved apart, generator rounds, local times, charts inlined', async () => {
  const root = tempDir();
  writeScenario(path.join(root, 'runs', 'agg'), 'aggressive-filter', 3);
  const state = path.join(root, 'state');
  mkdirSync(state);
  const cfgFile = path.join(root, 'c.yaml');
  writeFileSync(cfgFile, 'state_dir: state\nsummary: {timezone: Asia/Shanghai}\n');
  const res = await analyzePaths([path.join(root, 'runs')], parseConfig('state_dir: state\n', cfgFile), silentLogger());
  await writeAtomic(path.join(state, 'state.json'), JSON.stringify(res.pipeline.state()));
  const run = path.join(root, 'runs', 'agg');
  const line = (status: string, detector: string, round: number | null): string =>
    JSON.stringify({ time: new Date().toISOString(), status, detector, run, severity: 'warning', round }) + '\n';
  appendFileSync(path.join(state, 'alerts.jsonl'), line('firing', 'generator-regression', 1) + line('resolved', 'generator-regression', 1));
  const file = path.join(root, 'summary.html');
  const r = await barwatchAsync(['summary', '--config', cfgFile, '--html', file]);
  assert.equal(r.status, 0, r.stderr);
  const html = readFileSync(file, 'utf8');
  assert.match(html, /\[critical\] boundary-share-low<\/b>/);
  assert.match(html, /What to do: Set easy_threshold/);
  assert.match(html, /1 alert\(s\) fired \(generator-regression \(round 1\)\); 1 resolved \(generator-regression \(round 1\)\)/);
  assert.match(html, /generator round 1: 80 steps; accuracy/);
  assert.match(html, /\d{4}-\d\d-\d\d \d\d:\d\d Asia\/Shanghai/);
  assert.match(html, /<img src="data:image\/png;base64,/);
  assert.doesNotMatch(html, /cid:/);
  assert.match(r.stdout, /active findings \(\d+\):\n\s+\[critical\] boundary-share-low/);
});

test('an alert that moved on to another round is said as a move, not among what resolved', async () => {
  const root = tempDir();
  const run = path.join(root, 'frozen');
  writeScenario(run, 'frozen-generator', 5);
  const now = Date.now();
  const res = await analyzePaths([root], loadConfig(null), silentLogger(), () => now);
  const at = (minutes: number): string => new Date(now - minutes * 60_000).toISOString();
  const alerts = [
    { time: at(50), status: 'firing', detector: 'generator-regression', run, severity: 'warning', round: 1 },
    { time: at(40), status: 'resolved', detector: 'generator-regression', run, severity: 'warning', round: 1, moved_to: 3 },
    { time: at(40), status: 'firing', detector: 'generator-regression', run, severity: 'warning', round: 3 },
    { time: at(30), status: 'firing', detector: 'stale-run', run, severity: 'warning' },
    { time: at(20), status: 'resolved', detector: 'stale-run', run, severity: 'warning' },
  ];
  const s = buildSummary(res.runs, alerts, now);
  assert.match(
    s.text,
    /last 24 h: 3 alert\(s\) fired \(generator-regression \(round 1\), generator-regression \(round 3\), stale-run\); 1 resolved \(stale-run\); 1 moved on to another round \(generator-regression from round 1 to round 3\)/,
  );
});
