/**
 * End to end: `barwatch watch` as a process, a writer process writing a run that turns
 * oscillating after a healthy start and then heals, and real loopback peers for Slack, email and
 * Alertmanager. One message per channel when the swing starts, one resolved message when it heals.
 */
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';
import { rng, normal } from '../src/sim/random.js';
import { CaptureServer, SmtpCapture } from './helpers/servers.js';

const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'replay.js');

function lines(from: number, n: number, swing: boolean, r: () => number): string[] {
  const out: string[] = [];
  for (let s = from; s < from + n; s++) {
    const b = 0.62 + 0.04 * normal(r) + (swing ? 0.2 * Math.sin((2 * Math.PI * s) / 10) : 0);
    out.push(
      JSON.stringify({ step: s, boundary: +b.toFixed(4), accuracy: +(0.5 + 0.01 * normal(r)).toFixed(4), format: 1, relevance: 0.3 }) +
        '\n',
    );
  }
  return out;
}

test('a run that turns oscillating then heals: one Slack message and one email, then one resolved message each', async () => {
  const slack = await new CaptureServer().start();
  const am = await new CaptureServer().start();
  const smtp = await new SmtpCapture().start();
  const dir = tempDir();
  const run = path.join(dir, 'runs', 'r1');
  const file = path.join(run, 'outputs', 'selector_round1', 'reward_history.jsonl');
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(
    cfg,
    [
      `state_dir: ${dir}/state`,
      'watch: {status_interval: 500ms, sweep_interval: 500ms}',
      'alerting: {group_wait: 1s, group_interval: 1s}',
      'log: {format: json, level: info}',
      'notify:',
      `  slack: {webhook_url: "${slack.url}/services/T0/B0/XXSECRETXX"}`,
      `  email: {smtp: {host: 127.0.0.1, port: ${smtp.port}, secure: false}, from: barwatch@example.org, to: [ml@example.org]}`,
      `  alertmanager: {url: "${am.url}"}`,
      '',
    ].join('\n'),
  );
  const r = rng(11);
  const phases = [lines(1, 100, false, r), lines(101, 160, true, r), lines(261, 200, false, r)];
  const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg]);
  await d.waitFor((l) => l.msg === 'watching');
  const write = async (chunk: string[]): Promise<void> => {
    const plan = path.join(dir, `plan-${Math.random()}.json`);
    writeFileSync(plan, JSON.stringify({ writes: chunk.map((text) => ({ file, text })), every: 10, pauseMs: 2 }));
    await new Promise<void>((resolve, reject) =>
      fork(REPLAY, [plan], { stdio: 'inherit' }).on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`writer ${c}`)))),
    );
  };
  await write(phases[0]!);
  await write(phases[1]!);
  const fired = await d.waitFor((l) => l.msg.startsWith('firing: boundary-oscillation'), 30_000);
  const firedAt = Date.parse(fired['time'] as string);
  const sentLog = await d.waitFor((l) => l.msg.startsWith('sent to email'), 15_000);
  assert.ok(Date.parse(sentLog['time'] as string) - firedAt <= 1000 + 1500, 'sent within group_wait plus a second');
  await d.waitFor(() => d.logs.filter((x) => x.msg.startsWith('sent to ')).length >= 3, 10_000);
  assert.equal(slack.requests.length, 1);
  assert.equal(smtp.messages.length, 1);
  assert.equal(am.requests.length, 1);
  assert.match(smtp.messages[0]!.subject ?? '', /^\[WARNING\] boundary-oscillation in .*r1$/);
  assert.match(JSON.stringify(slack.requests[0]!.json), /swings with a period of about 1[01] steps/);
  // It heals: the swing leaves the detector's windows.
  await write(phases[2]!);
  await d.waitFor((l) => l.msg.startsWith('resolved: boundary-oscillation'), 30_000);
  await d.waitFor(() => smtp.messages.length >= 2 && slack.requests.length >= 2, 15_000);
  await d.waitQuiet();
  assert.equal(slack.requests.length, 2);
  assert.equal(smtp.messages.length, 2);
  assert.match(smtp.messages[1]!.subject ?? '', /^\[RESOLVED\] boundary-oscillation/);
  assert.match(JSON.stringify(slack.requests[1]!.json), /RESOLVED/);
  assert.equal(await d.stop(), 0);
  assert.ok(!d.logs.some((l) => JSON.stringify(l).includes('XXSECRETXX')), 'the webhook URL never reaches the log');
  await Promise.all([slack.stop(), am.stop(), smtp.stop()]);
});
