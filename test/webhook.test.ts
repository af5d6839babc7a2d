/**
 * notify.webhook (notifiers/webhook): each preset's payload as its service documents it, the
 * signatures recomputed here from the documented algorithms, the in-body error codes, the rate
 * limits kept on our side, templates, header secrets from files, and the config's checks.
 * Against a real HTTP server on loopback.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Notification } from '../src/alerting/types.js';
import { createWebhookNotifier, RateWindows } from '../src/notifiers/webhook/index.js';
import { fillTemplate, fitBytes, type PresetId } from '../src/notifiers/webhook/presets.js';
import { Secret } from '../src/util/secret.js';
import { sendSummary } from '../src/summary/send.js';
import { barwatch, barwatchAsync } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';
import { CaptureServer } from './helpers/servers.js';

const RUN = '/data/runs/bar-rag "q" <b>';

function notification(over: Partial<Notification> = {}): Notification {
  return {
    id: 'n1',
    dedupeKey: 'd1',
    channel: 'webhook:x',
    group: RUN,
    reason: 'first notification of the group',
    createdAt: '2026-12-03T07:00:00.000Z',
    alerts: [
      {
        key: 'k',
        fingerprint: 'f',
        status: 'firing',
        detector: 'boundary-share-low',
        severity: 'critical',
        run: RUN,
        round: 2,
        step: 120,
        message: 'Only 4% of the questions left after the filter are boundary questions.',
        evidence: { boundary_share_after: 0.04, questions_after: 304 },
        recommendation: 'Set easy_threshold 0.42 -> 0.85.',
        sparkline: '▁▂▃',
        startsAt: '2026-12-03T07:00:00.000Z',
        endsAt: null,
      },
    ],
    ...over,
  };
}

describe('notify.webhook presets against a loopback server', () => {
  const server = new CaptureServer();
  before(() => server.start());
  after(() => server.stop());
  let clock = Date.UTC(2026, 11, 3, 7, 0, 0);
  const hook = (preset: PresetId, extra: { secret?: string; template?: string; headers?: Record<string, string> } = {}) =>
    createWebhookNotifier({
      name: `webhook:${preset}`,
      preset,
      url: new Secret(`${server.url}/hook/${preset}?access_token=TOKEN123`, 'test'),
      ...(extra.secret !== undefined ? { secret: new Secret(extra.secret, 'test') } : {}),
      ...(extra.template !== undefined ? { template: extra.template } : {}),
      method: 'POST',
      headers: Object.fromEntries(Object.entries(extra.headers ?? {}).map(([k, v]) => [k, new Secret(v, 'test')])),
      timeoutMs: 5000,
      externalUrl: 'http://127.0.0.1:9464/',
      now: () => clock,
    });
  const last = () => server.requests[server.requests.length - 1]!;

  test('Feishu: msg_type text, timestamp in seconds and sign = base64(HmacSHA256 keyed "<ts>\\n<secret>" over nothing); code != 0 is a failure', async () => {
    server.respond = () => ({ status: 200, body: '{"code":0,"msg":"success","data":{}}' });
    const r = await hook('feishu', { secret: 'FEISHU-SECRET' }).send(notification());
    assert.deepEqual(r, { ok: true });
    const j = last().json as { msg_type: string; content: { text: string }; timestamp: string; sign: string };
    assert.equal(j.msg_type, 'text');
    assert.equal(j.timestamp, String(Math.floor(clock / 1000)));
    assert.equal(j.sign, createHmac('sha256', `${j.timestamp}\nFEISHU-SECRET`).update('').digest('base64'));
    assert.match(j.content.text, /^barwatch: \[CRITICAL\] boundary-share-low/);
    assert.ok(j.content.text.includes(RUN), 'the run as it is (text, not markup)');
    assert.match(j.content.text, /http:\/\/127\.0\.0\.1:9464\/#\/run\//);
    server.respond = () => ({
      status: 200,
      body: '{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}',
    });
    clock += 1000;
    const bad = await hook('feishu', { secret: 'FEISHU-SECRET' }).send(notification());
    assert.equal(bad.ok, false);
    assert.ok(!bad.ok && !bad.retry && /error 19021: sign match fail/.test(bad.error), JSON.stringify(bad));
    assert.ok(!bad.ok && !bad.error.includes('TOKEN123') && !bad.error.includes('FEISHU-SECRET'), 'no secret in the error');
  });

  test('DingTalk: markdown with title and text, timestamp (ms) and sign = urlEncode(base64(HmacSHA256 keyed with the secret over "<ts>\\n<secret>")) in the URL; 130101 is retried', async () => {
    server.respond = () => ({ status: 200, body: '{"errcode":0,"errmsg":"ok"}' });
    clock += 60_000;
    assert.deepEqual(await hook('dingtalk', { secret: 'SECabc' }).send(notification()), { ok: true });
    const req = last();
    const u = new URL(req.path, server.url);
    assert.equal(u.searchParams.get('access_token'), 'TOKEN123');
    assert.equal(u.searchParams.get('timestamp'), String(clock));
    const want = createHmac('sha256', 'SECabc').update(`${clock}\nSECabc`).digest('base64');
    assert.equal(u.searchParams.get('sign'), want);
    assert.ok(req.path.includes(`sign=${encodeURIComponent(want)}`), 'the sign is URL-encoded');
    const j = req.json as { msgtype: string; markdown: { title: string; text: string } };
    assert.equal(j.msgtype, 'markdown');
    assert.match(j.markdown.title, /^barwatch: \[CRITICAL\] boundary-share-low/);
    assert.match(j.markdown.text, /\*\*CRITICAL\*\* `boundary-share-low` \(round 2, step 120\)/);
    assert.ok(j.markdown.text.includes('\\<b\\>'), 'markup in the run path escaped');
    server.respond = () => ({ status: 200, body: '{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}' });
    const fast = await hook('dingtalk', { secret: 'SECabc' }).send(notification());
    assert.ok(!fast.ok && fast.retry && fast.retryAfterMs === 60_000 && /error 130101/.test(fast.error), JSON.stringify(fast));
  });

  test('WeCom: markdown content of at most 4096 bytes; 45009 is retried, 93000 not', async () => {
    server.respond = () => ({ status: 200, body: '{"errcode":0,"errmsg":"ok"}' });
    const long = notification({
      alerts: Array.from({ length: 40 }, (_, i) => ({ ...notification().alerts[0]!, key: `k${i}`, message: '超长的消息 '.repeat(30) })),
    });
    clock += 60_000;
    assert.deepEqual(await hook('wecom').send(long), { ok: true });
    const j = last().json as { msgtype: string; markdown: { content: string } };
    assert.equal(j.msgtype, 'markdown');
    assert.ok(Buffer.byteLength(j.markdown.content, 'utf8') <= 4096, `${Buffer.byteLength(j.markdown.content, 'utf8')} bytes`);
    assert.ok(j.markdown.content.startsWith('**barwatch: '), 'the keyword in the first line');
    assert.ok(j.markdown.content.endsWith('…'));
    server.respond = () => ({ status: 200, body: '{"errcode":45009,"errmsg":"api freq out of limit"}' });
    const r1 = await hook('wecom').send(notification());
    assert.ok(!r1.ok && r1.retry);
    server.respond = () => ({ status: 200, body: '{"errcode":93000,"errmsg":"invalid webhook url"}' });
    const r2 = await hook('wecom').send(notification());
    assert.ok(!r2.ok && !r2.retry && /93000/.test(r2.error));
  });

  test("Discord: embeds within Discord's limits, colour by severity, no mentions; 204 is success; 429's retry_after is waited", async () => {
    server.respond = () => ({ status: 204 });
    const many = notification({
      alerts: Array.from({ length: 14 }, (_, i) => ({ ...notification().alerts[0]!, key: `k${i}`, message: 'm'.repeat(3000) })),
    });
    assert.deepEqual(await hook('discord').send(many), { ok: true });
    const j = last().json as {
      content: string;
      embeds: { title: string; description: string; color: number; fields?: { name: string; value: string }[] }[];
      allowed_mentions: unknown;
    };
    assert.ok(j.embeds.length <= 10);
    const total = j.embeds.reduce(
      (a, e) => a + e.title.length + e.description.length + (e.fields ?? []).reduce((x, f) => x + f.name.length + f.value.length, 0),
      0,
    );
    assert.ok(total <= 6000, `${total} characters in the embeds`);
    assert.ok(j.embeds.every((e) => e.description.length <= 4096 && e.title.length <= 256));
    assert.equal(j.embeds[0]!.color, 0xd32f2f);
    assert.deepEqual(j.allowed_mentions, { parse: [] });
    assert.match(j.content, /more alert\(s\)/);
    server.respond = () => ({
      status: 429,
      body: '{"message":"You are being rate limited.","retry_after":1.5,"global":false}',
      headers: { 'content-type': 'application/json' },
    });
    const r = await hook('discord').send(notification());
    assert.ok(!r.ok && r.retry && r.retryAfterMs === 1500, JSON.stringify(r));
  });

  test('Teams: an Adaptive Card 1.4 in a message attachment, with a link to the run; 202 is success', async () => {
    server.respond = () => ({ status: 202, body: '' });
    assert.deepEqual(await hook('teams').send(notification()), { ok: true });
    const j = last().json as {
      type: string;
      attachments: {
        contentType: string;
        content: { type: string; version: string; body: { text: string }[]; actions: { url: string }[] };
      }[];
    };
    assert.equal(j.type, 'message');
    assert.equal(j.attachments[0]!.contentType, 'application/vnd.microsoft.card.adaptive');
    assert.equal(j.attachments[0]!.content.type, 'AdaptiveCard');
    assert.equal(j.attachments[0]!.content.version, '1.4');
    assert.ok(j.attachments[0]!.content.body.some((b) => b.text === RUN));
    assert.match(j.attachments[0]!.content.actions[0]!.url, /#\/run\//);
  });

  test('plain JSON: the notification; a template filled JSON-safely; headers sent, their values never in an error', async () => {
    server.respond = () => ({ status: 200, body: 'ok' });
    assert.deepEqual(await hook('json').send(notification()), { ok: true });
    const j = last().json as { version: number; status: string; alerts: { detector: string; link: string }[] };
    assert.deepEqual([j.version, j.status, j.alerts[0]!.detector], [1, 'firing', 'boundary-share-low']);
    const t = hook('json', {
      template: '{"text": "{{detector}} in {{run}}: {{message}}", "ev": {{{evidence}}}, "step": {{step}}}',
      headers: { 'X-Token': 'HEADER-SECRET' },
    });
    assert.deepEqual(await t.send(notification()), { ok: true });
    const body = JSON.parse(last().body) as { text: string; ev: Record<string, number>; step: number };
    assert.equal(body.text, `boundary-share-low in ${RUN}: Only 4% of the questions left after the filter are boundary questions.`);
    assert.deepEqual([body.ev['questions_after'], body.step], [304, 120]);
    assert.equal(last().headers['x-token'], 'HEADER-SECRET');
    server.respond = () => ({ status: 500, body: 'HEADER-SECRET TOKEN123' });
    const r = await t.send(notification());
    assert.ok(!r.ok && r.retry && !r.error.includes('HEADER-SECRET') && !r.error.includes('TOKEN123'), JSON.stringify(r));
  });

  test("rate limits are kept on our side: DingTalk's 21st message within a minute waits (retried after the window), none is refused by the service", async () => {
    server.respond = () => ({ status: 200, body: '{"errcode":0,"errmsg":"ok"}' });
    clock += 120_000;
    const h = hook('dingtalk');
    const before = server.requests.length;
    for (let i = 0; i < 20; i++) {
      clock += 1000;
      assert.deepEqual(await h.send(notification()), { ok: true }, `message ${i + 1}`);
    }
    clock += 1000;
    const held = await h.send(notification());
    assert.ok(!held.ok && held.retry && held.retryAfterMs === 40_000 && /held back/.test(held.error), JSON.stringify(held));
    assert.equal(server.requests.length - before, 20, 'the 21st was not sent');
    clock += 40_000;
    assert.deepEqual(await h.send(notification()), { ok: true });
    const w = new RateWindows([{ count: 5, ms: 1000 }]);
    for (let i = 0; i < 5; i++) w.record(1000 + i);
    assert.deepEqual([w.wait(1004), w.wait(2000), w.wait(2001)], [996, 0, 0]);
  });

  test('fitBytes never cuts a character in half', () => {
    const s = '超长'.repeat(100) + '😀'.repeat(50);
    for (const max of [10, 11, 12, 100, 301, 302]) {
      const f = fitBytes(s, max);
      assert.ok(Buffer.byteLength(f, 'utf8') <= max, `${max}`);
      assert.ok(!f.includes('\uFFFD'));
    }
    assert.equal(fillTemplate('{{a}} {{{a}}} {{nope}}', { a: '"x"' }), '\\"x\\" "x" ');
  });
});

describe('notify.webhook in the config', () => {
  test('validate: each webhook checked and named; a secret for a preset that does not sign, a template outside json and a missing URL refused with their keys; no secret printed', () => {
    const dir = tempDir();
    const token = path.join(dir, 'token');
    writeFileSync(token, 'FILE-TOKEN\n');
    const good = path.join(dir, 'good.yaml');
    writeFileSync(
      good,
      `notify:\n  webhook:\n    - {preset: feishu, url: "https://open.feishu.cn/open-apis/bot/v2/hook/SECRETHOOK", secret: SIGN-SECRET}\n    - {preset: discord, url: "https://discord.com/api/webhooks/1/SECRETTOKEN"}\n    - {name: ops, url: "https://hooks.example.com/barwatch", headers: {Authorization: {file: ${token}}}}\n`,
    );
    const ok = barwatch(['validate', '--config', good]);
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    for (const s of ['SECRETHOOK', 'SIGN-SECRET', 'SECRETTOKEN', 'FILE-TOKEN']) assert.ok(!(ok.stdout + ok.stderr).includes(s), s);
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'notify:\n  webhook:\n    - {preset: wecom, url: "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=K", secret: S}\n    - {preset: teams, url: "https://x.example/w", template: "{}"}\n    - {preset: dingtalk}\n',
    );
    const no = barwatch(['validate', '--config', bad]);
    assert.notEqual(no.status, 0);
    assert.match(no.stderr + no.stdout, /notify\.webhook\.0\.secret: only the feishu and dingtalk presets sign their messages/);
    assert.match(no.stderr + no.stdout, /notify\.webhook\.1\.template: only the json preset takes a template/);
    assert.match(no.stderr + no.stdout, /notify\.webhook\.2.*needs url, url_file or the environment variable BARWATCH_WEBHOOK_URL_2/);
  });
});

describe('notify.webhook end to end', () => {
  test('test-alert reaches every webhook and says which answered with an error code in its body', async () => {
    const server = await new CaptureServer().start();
    try {
      server.respond = (req) =>
        req.path.startsWith('/feishu')
          ? { status: 200, body: '{"code":0,"msg":"success"}' }
          : { status: 200, body: '{"errcode":310000,"errmsg":"keywords not in content"}' };
      const dir = tempDir();
      const cfg = path.join(dir, 'c.yaml');
      writeFileSync(
        cfg,
        `state_dir: ${path.join(dir, 'state')}\nnotify:\n  webhook:\n    - {preset: feishu, url: "${server.url}/feishu/hook/FEISHUHOOK", secret: S1}\n    - {preset: dingtalk, url: "${server.url}/dingtalk/robot/send?access_token=DINGTOKEN", secret: SEC2}\n`,
      );
      const r = await barwatchAsync(['test-alert', '--config', cfg]);
      const out = r.stdout + r.stderr;
      assert.notEqual(r.status, 0, out);
      assert.match(out, /webhook:feishu[^\n]*(ok|sent|delivered)/i);
      assert.match(out, /webhook:dingtalk[^\n]*error 310000: keywords not in content/);
      for (const s of ['FEISHUHOOK', 'DINGTOKEN', 'SEC2', 'S1"']) assert.ok(!out.includes(s), `${s} printed`);
      assert.equal(server.requests.length, 2);
    } finally {
      await server.stop();
    }
  });
});

test('the nightly summary goes to every webhook when summary.channels names webhook, each in its service format', async () => {
  const server = await new CaptureServer().start();
  try {
    server.respond = () => ({ status: 200, body: '{"errcode":0,"errmsg":"ok"}' });
    const make = (preset: PresetId, name: string) =>
      createWebhookNotifier({
        name,
        preset,
        url: new Secret(`${server.url}/${name}`, 'test'),
        method: 'POST',
        headers: {},
        timeoutMs: 5000,
      });
    const summary = { subject: 'barwatch: 2 runs, 1 with findings', text: 'run a: boundary-share-low (critical)', html: '', charts: [] };
    const results = await sendSummary(
      { alertsFile: '', summary: { timezone: 'UTC', channels: ['webhook'] } } as never,
      [make('wecom', 'webhook:wecom'), make('json', 'webhook:ops')],
      summary,
    );
    assert.deepEqual(results, [
      { channel: 'webhook:wecom', ok: true },
      { channel: 'webhook:ops', ok: true },
    ]);
    const [wecom, ops] = server.requests.map((r) => r.json as Record<string, { content?: string; subject?: string }>);
    assert.match(wecom!['markdown']!.content!, /\*\*barwatch: 2 runs, 1 with findings\*\*/);
    assert.equal(ops!['summary']!.subject, summary.subject);
  } finally {
    await server.stop();
  }
});
