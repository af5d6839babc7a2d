/**
 * Each notifier against a real peer on loopback: Slack's webhook and Alertmanager as HTTP capture
 * servers answering 200 "ok", 429 with Retry-After and 500; email through a real SMTP server
 * (smtp-server), the message parsed back (mailparser). Secrets never reach a result or a log.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { inspect } from 'node:util';
import type { Notification } from '../src/alerting/types.js';
import { channelCommon, parseConfig } from '../src/config/load.js';
import { Secret } from '../src/util/secret.js';
import { buildNotifiers } from '../src/notifiers/index.js';
import { alertmanagerPayload, createAlertmanagerNotifier } from '../src/notifiers/alertmanager/index.js';
import { createEmailNotifier } from '../src/notifiers/email/index.js';
import { createSlackNotifier, slackPayload, SLACK_LIMITS } from '../src/notifiers/slack/index.js';
import { barwatchAsync } from './helpers/cli.js';
import { REPO, tempDir } from './helpers/fs.js';
import { readmeExamples } from './helpers/examples.js';
import { viaJson } from './helpers/json.js';
import { CaptureServer, SmtpCapture } from './helpers/servers.js';

function notification(over: Partial<Notification> = {}): Notification {
  return {
    id: 'n1',
    dedupeKey: 'k1',
    channel: 'x',
    group: '/runs/<team>&co',
    reason: 'first notification of the group',
    createdAt: '2026-11-30T10:00:00.000Z',
    alerts: [
      {
        key: 'k',
        fingerprint: 'k@340',
        status: 'firing',
        detector: 'boundary-oscillation',
        severity: 'warning',
        run: '/runs/<team>&co',
        round: 2,
        step: 340,
        message: 'The boundary reward swings <script>alert(1)</script> & more',
        evidence: { period: 12, power_share: 0.62, window: 64 },
        recommendation: 'Lower the selector learning rate',
        sparkline: 'boundary, selector round 2: ▁▃▇█▆▃▁▂▅█▇▄',
        startsAt: '2026-11-30T10:00:00.000Z',
        endsAt: null,
      },
    ],
    ...over,
  };
}

describe('Slack', () => {
  test('Block Kit message with severity, run, round, step, evidence, recommendation and sparkline; text escaped', async () => {
    const srv = await new CaptureServer().start();
    const url = `${srv.url}/services/T000/B000/XXSECRETXX`;
    const slack = createSlackNotifier({ webhookUrl: new Secret(url, 'test') });
    assert.deepEqual(await slack.send(notification()), { ok: true });
    const body = srv.requests[0]!.json as {
      text: string;
      blocks: { type: string; text?: { text: string }; elements?: { text: string }[] }[];
    };
    assert.equal(srv.requests[0]!.path, '/services/T000/B000/XXSECRETXX');
    const all = JSON.stringify(body);
    assert.match(all, /WARNING/);
    assert.match(all, /boundary-oscillation/);
    assert.match(all, /round 2, step 340/);
    assert.match(all, /period: 12 \| power_share: 0.62/);
    assert.match(all, /Lower the selector learning rate/);
    assert.match(all, /▁▃▇█▆▃▁▂▅█▇▄/);
    assert.ok(!all.includes('<script>'), 'log-derived text is escaped');
    assert.match(all, /&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; more/);
    assert.match(all, /\/runs\/&lt;team&gt;&amp;co/);
    await srv.stop();
  });

  test("within Slack's limits whatever the logs hold: long paths keep their tail, many alerts are counted, mrkdwn from logs stays text", () => {
    const n = notification();
    const deep = `/data/${'very-long-folder-name/'.repeat(160)}bar-rag-nq-seed3`;
    const one = {
      ...n.alerts[0]!,
      run: deep,
      message: `*bold* _it_ ~s~ \`code\` <!channel> ${'x'.repeat(5000)}`,
      recommendation: 'r'.repeat(4000),
    };
    n.alerts = Array.from({ length: 30 }, (_, i) => ({ ...one, detector: `d${i}` }));
    const p = slackPayload(n);
    type T = { type: string; text: string };
    const blocks = p.blocks as { type: string; text?: T; elements?: T[] }[];
    assert.ok(blocks.length <= SLACK_LIMITS.blocks, `${blocks.length} blocks`);
    assert.equal(blocks[0]!.type, 'header');
    assert.ok(blocks[0]!.text!.text.length <= SLACK_LIMITS.header, `header of ${blocks[0]!.text!.text.length}`);
    assert.match(blocks[0]!.text!.text, /…[a-z/-]*\/bar-rag-nq-seed3 \(\+29 more\)$/, 'the header keeps the run name and the count');
    for (const b of blocks) {
      if (b.text !== undefined) assert.ok(b.text.text.length <= SLACK_LIMITS.section, `${b.type} of ${b.text.text.length}`);
      for (const e of b.elements ?? []) assert.ok(e.text.length <= SLACK_LIMITS.context);
    }
    const body = blocks.find((b) => b.text?.text.startsWith('Run '))!;
    assert.equal(body.text!.type, 'plain_text', 'log text is never mrkdwn');
    assert.match(body.text!.text, /^Run …[a-z/-]*\/bar-rag-nq-seed3\n\*bold\* _it_ ~s~ `code` &lt;!channel&gt; x+…$/);
    for (const b of blocks) if (b.text?.type === 'mrkdwn') assert.doesNotMatch(b.text.text, /bold|channel|xxxx/, 'no log text in mrkdwn');
    const last = blocks.at(-1)!;
    assert.match(last.elements![0]!.text, /^and \d+ more alert\(s\)/);
    const shown = blocks.filter((b) => b.text?.text.includes('`d')).length;
    assert.equal(Number(/and (\d+) more/.exec(last.elements![0]!.text)![1]) + shown, 30, 'every alert shown or counted');
  });

  test('429 with Retry-After and 500 retry, 404 does not; an unreachable webhook never shows its URL', async () => {
    const srv = await new CaptureServer().start();
    const slack = createSlackNotifier({ webhookUrl: new Secret(`${srv.url}/services/T0/B0/XXSECRETXX`, 'test') });
    srv.respond = () => ({ status: 429, body: 'rate_limited', headers: { 'retry-after': '7' } });
    assert.deepEqual(await slack.send(notification()), {
      ok: false,
      retry: true,
      retryAfterMs: 7000,
      error: `Slack at 127.0.0.1:${srv.url.split(':').pop()} answered HTTP 429 Too Many Requests`,
    });
    srv.respond = () => ({ status: 500, body: 'oops' });
    const r500 = await slack.send(notification());
    assert.equal(r500.ok === false && r500.retry, true);
    srv.respond = () => ({ status: 404, body: 'no_service' });
    assert.deepEqual(await slack.send(notification()), {
      ok: false,
      retry: false,
      error: `Slack at 127.0.0.1:${srv.url.split(':').pop()} answered HTTP 404 (not retried)`,
    });
    await srv.stop();
    const down = await slack.send(notification());
    assert.equal(down.ok, false);
    assert.ok(down.ok === false && down.retry);
    assert.ok(!JSON.stringify(down).includes('XXSECRETXX') && !JSON.stringify(down).includes('/services/'), JSON.stringify(down));
  });

  test('the payload sample the README links to is what barwatch sends today', async () => {
    const shown = JSON.parse(readFileSync(path.join(REPO, 'docs', 'slack-payload-example.json'), 'utf8')) as unknown;
    const { slack } = await readmeExamples();
    assert.deepEqual(viaJson(slack), shown, 'docs/slack-payload-example.json is stale: node dist/scripts/readme-assets.js rewrites it');
  });
});

/**
 * An email notifier logging in as `barwatch` to the SMTP server on loopback `port`, which offers no
 * STARTTLS: plain-text auth allowed, as for a relay on loopback (allow_plaintext_auth).
 */
function loopbackEmail(port: number, pass: string, from = 'b@example.org', to = 't@example.org'): ReturnType<typeof createEmailNotifier> {
  return createEmailNotifier({
    smtp: { host: '127.0.0.1', port, secure: false, requireTls: false, user: 'barwatch', pass: new Secret(pass, 'test') },
    from,
    to: [to],
  });
}

describe('email', () => {
  test('through a real SMTP server with auth: subject, plain text and HTML parts, HTML escaped', async () => {
    const smtp = await new SmtpCapture({ user: 'barwatch', pass: 'hunter2-smtp-pass' }).start();
    const email = loopbackEmail(smtp.port, 'hunter2-smtp-pass', 'barwatch@example.org', 'ml-team@example.org');
    assert.deepEqual(await email.send(notification()), { ok: true });
    await email.close?.();
    const m = smtp.messages[0]!;
    assert.equal(m.subject, '[WARNING] boundary-oscillation in /runs/<team>&co');
    assert.match(m.text ?? '', /WARNING boundary-oscillation - \/runs\/<team>&co \(round 2, step 340\)/);
    assert.match(m.text ?? '', /Recommendation: Lower the selector learning rate/);
    const html = String(m.html);
    assert.ok(!html.includes('<script>'));
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; more/);
    assert.match(html, /<pre>boundary, selector round 2: ▁▃▇█▆▃▁▂▅█▇▄<\/pre>/);
    assert.deepEqual(smtp.auths, [{ user: 'barwatch', pass: 'hunter2-smtp-pass' }]);
    await smtp.stop();
  });

  test('a wrong password is reported without the password and not retried; a dead server is retried', async () => {
    const smtp = await new SmtpCapture({ user: 'barwatch', pass: 'right' }).start();
    const email = loopbackEmail(smtp.port, 'wrong-hunter2');
    const r = await email.send(notification());
    assert.equal(r.ok, false);
    assert.ok(r.ok === false && !r.retry, JSON.stringify(r));
    assert.ok(!JSON.stringify(r).includes('wrong-hunter2'));
    await email.close?.();
    await smtp.stop();
    const dead = createEmailNotifier({
      smtp: { host: '127.0.0.1', port: smtp.port, secure: false },
      from: 'b@example.org',
      to: ['t@example.org'],
    });
    const d = await dead.send(notification());
    assert.ok(d.ok === false && d.retry, JSON.stringify(d));
  });
});

describe('email over TLS', () => {
  const openssl = spawnSync('openssl', ['version']);
  const skip = openssl.status === 0 ? false : 'openssl is not installed: no certificate for the TLS tests';
  test('STARTTLS on a submission port and implicit TLS', { skip }, async () => {
    const dir = tempDir();
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    const gen = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'],
      { encoding: 'utf8' },
    );
    assert.equal(gen.status, 0, gen.stderr);
    const tls = { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
    for (const implicit of [false, true]) {
      const smtp = await new SmtpCapture({ user: 'u', pass: 'p-secret', tls: { ...tls, implicit } }).start();
      const email = createEmailNotifier({
        smtp: { host: '127.0.0.1', port: smtp.port, secure: implicit, user: 'u', pass: new Secret('p-secret', 'test') },
        from: 'b@example.org',
        to: ['t@example.org'],
        tls: { rejectUnauthorized: false },
      });
      assert.deepEqual(await email.send(notification()), { ok: true }, implicit ? 'TLS' : 'STARTTLS');
      await email.close?.();
      assert.deepEqual(smtp.secure, [true]);
      await smtp.stop();
    }
  });
});

describe('email: the password only inside TLS', () => {
  test('by default a password is never sent to a server without STARTTLS: the send fails, is retried, and says what to do', async () => {
    const smtp = await new SmtpCapture({ user: 'u', pass: 'never-in-clear' }).start();
    const email = createEmailNotifier({
      smtp: { host: '127.0.0.1', port: smtp.port, secure: false, user: 'u', pass: new Secret('never-in-clear', 'test') },
      from: 'b@example.org',
      to: ['t@example.org'],
    });
    const r = await email.send(notification());
    await email.close?.();
    await smtp.stop();
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.retry, 'retried: the server may gain TLS');
    assert.match(
      !r.ok ? r.error : '',
      /offers no STARTTLS .*the password is not sent without TLS \(notify\.email\.smtp\.allow_plaintext_auth/,
    );
    assert.doesNotMatch(!r.ok ? r.error : '', /never-in-clear/);
    assert.deepEqual(smtp.auths, [], 'no AUTH reached the server');
    assert.equal(smtp.messages.length, 0);
  });
});

describe('Alertmanager', () => {
  test('POST /api/v2/alerts with alertname, run, round and severity labels', async () => {
    const srv = await new CaptureServer().start();
    const am = createAlertmanagerNotifier({ url: srv.url });
    const resolved = notification();
    resolved.alerts[0] = { ...resolved.alerts[0]!, status: 'resolved', endsAt: '2026-11-30T11:00:00.000Z' };
    assert.deepEqual(await am.send(resolved), { ok: true });
    assert.equal(srv.requests[0]!.path, '/api/v2/alerts');
    assert.deepEqual(srv.requests[0]!.json, [
      {
        labels: { alertname: 'boundary-oscillation', run: '/runs/<team>&co', round: '2', severity: 'warning' },
        annotations: {
          summary: 'The boundary reward swings <script>alert(1)</script> & more',
          description: 'period: 12; power_share: 0.62; window: 64',
          recommendation: 'Lower the selector learning rate',
          step: '340',
        },
        startsAt: '2026-11-30T10:00:00.000Z',
        endsAt: '2026-11-30T11:00:00.000Z',
      },
    ]);
    await srv.stop();
  });

  test('a firing alert holds for four resend intervals and links to its run on the page', () => {
    const now = Date.parse('2026-11-30T10:05:00Z');
    const [a] = alertmanagerPayload(notification(), { now, validMs: 4 * 60_000, dashboardUrl: 'https://barwatch.example.org' }) as {
      endsAt: string;
      annotations: Record<string, string>;
    }[];
    assert.equal(a!.endsAt, '2026-11-30T10:09:00.000Z');
    assert.equal(a!.annotations['dashboard'], 'https://barwatch.example.org/#/run/%2Fruns%2F%3Cteam%3E%26co');
  });
});

describe('Alertmanager behind a path prefix and basic auth', () => {
  test('the prefix is kept; user:pass@ in the URL or username with password_file become basic auth, never shown', async () => {
    const srv = await new CaptureServer().start();
    after(() => srv.stop());
    srv.respond = (req) =>
      req.authorization === `Basic ${Buffer.from('barwatch:s3cr3t-am').toString('base64')}`
        ? { status: 200, body: 'ok' }
        : { status: 401, body: 'no' };
    const dir = tempDir();
    writeFileSync(path.join(dir, 'am-pass'), 's3cr3t-am\n');
    const withCreds = srv.url.replace('http://', 'http://barwatch:s3cr3t-am@') + '/alertmanager/';
    for (const [how, text] of [
      ['in the URL', `notify:\n  alertmanager: {url: "${withCreds}"}\n`],
      ['from a file', `notify:\n  alertmanager: {url: "${srv.url}/alertmanager", username: barwatch, password_file: am-pass}\n`],
    ] as const) {
      const config = parseConfig(text, path.join(dir, 'c.yaml'));
      assert.doesNotMatch(
        JSON.stringify(config) + inspect(config, { depth: 9 }),
        /s3cr3t/,
        `${how}: the password is not in the config's text`,
      );
      const [am] = buildNotifiers(config.notify, channelCommon(config));
      assert.equal(am!.name, 'alertmanager');
      assert.deepEqual(await am!.send(notification()), { ok: true }, how);
      assert.equal(srv.requests.at(-1)!.path, '/alertmanager/api/v2/alerts', `${how}: the prefix is kept`);
    }
    const wrong = parseConfig(
      `notify:\n  alertmanager: {url: "${srv.url.replace('http://', 'http://barwatch:wrong-pw@')}"}\n`,
      path.join(dir, 'c.yaml'),
    );
    const r = await buildNotifiers(wrong.notify, channelCommon(wrong))[0]!.send(notification());
    assert.deepEqual(r, {
      ok: false,
      retry: false,
      error: `Alertmanager at ${srv.url.slice(7)} answered HTTP 401 (not retried) (check notify.alertmanager credentials)`,
    });
  });

  test('a list of URLs is one channel per peer, each named by its address', () => {
    const c = parseConfig('notify:\n  alertmanager: {url: ["http://127.0.0.1:9093", "http://127.0.0.1:9094/am"]}\n', '/etc/b.yaml');
    assert.deepEqual(
      buildNotifiers(c.notify, channelCommon(c)).map((n) => n.name),
      ['alertmanager@127.0.0.1:9093', 'alertmanager@127.0.0.1:9094'],
    );
    assert.deepEqual(c.notify.alertmanager?.urls, ['http://127.0.0.1:9093/', 'http://127.0.0.1:9094/am']);
  });
});

describe('delivery errors name the channel, host:port and the cause, never the secret', () => {
  test('a redirect is never followed with the alerts (Alertmanager, Slack): refused, not retried, with the URL to configure', async () => {
    const target = await new CaptureServer().start();
    const redirecting = await new CaptureServer().start();
    redirecting.respond = () => ({ status: 301, headers: { location: `${target.url}/api/v2/alerts?token=XXSECRETXX` } });
    try {
      const am = await createAlertmanagerNotifier({ url: redirecting.url, timeoutMs: 2000 }).send(notification());
      assert.equal(am.ok, false);
      assert.ok(am.ok === false && am.retry === false, JSON.stringify(am));
      assert.match(
        am.ok === false ? am.error : '',
        new RegExp(
          `answered HTTP 301, a redirect to ${target.url.replace(/[.]/g, '\\.')}/api/v2/alerts; .*set notify\\.alertmanager\\.url`,
        ),
      );
      assert.doesNotMatch(JSON.stringify(am), /XXSECRETXX/);
      const slack = await createSlackNotifier({
        webhookUrl: new Secret(`${redirecting.url}/services/T0/B0/XXSECRETXX`, 'test'),
        timeoutMs: 2000,
      }).send(notification());
      assert.equal(slack.ok, false, JSON.stringify(slack));
      assert.doesNotMatch(JSON.stringify(slack), /XXSECRETXX/);
      assert.equal(target.requests.length, 0, 'a redirect was followed');
      assert.equal(redirecting.requests.length, 2);
    } finally {
      await target.stop();
      await redirecting.stop();
    }
  });

  test('connection refused, no answer in time, a refused login', async () => {
    // A port nothing listens on: a server started and stopped.
    const gone = await new CaptureServer().start();
    const port = Number(gone.url.split(':').pop());
    await gone.stop();
    const slack = createSlackNotifier({
      webhookUrl: new Secret(`http://127.0.0.1:${port}/services/T0/B0/XXSECRETXX`, 'test'),
      timeoutMs: 300,
    });
    const refused = await slack.send(notification());
    assert.deepEqual(refused, {
      ok: false,
      retry: true,
      error: `Slack webhook at 127.0.0.1:${port} unreachable: connection refused (ECONNREFUSED)`,
    });
    const am = createAlertmanagerNotifier({ url: `http://127.0.0.1:${port}`, timeoutMs: 300 });
    const amDown = await am.send(notification());
    assert.ok(amDown.ok === false && amDown.error === `Alertmanager at 127.0.0.1:${port} unreachable: connection refused (ECONNREFUSED)`);
    const mail = createEmailNotifier({
      smtp: { host: '127.0.0.1', port, secure: false },
      from: 'b@example.org',
      to: ['t@example.org'],
      timeoutMs: 300,
    });
    const mailDown = await mail.send(notification());
    assert.ok(
      mailDown.ok === false && mailDown.error === `SMTP server 127.0.0.1:${port} unreachable: connection refused (ECONNREFUSED)`,
      JSON.stringify(mailDown),
    );

    const hang = await new CaptureServer().start();
    hang.respond = () => 'hang';
    const slow = createSlackNotifier({ webhookUrl: new Secret(`${hang.url}/services/T0/B0/XXSECRETXX`, 'test'), timeoutMs: 300 });
    const timedOut = await slow.send(notification());
    assert.ok(
      timedOut.ok === false &&
        timedOut.error === `Slack webhook at 127.0.0.1:${hang.url.split(':').pop()} unreachable: no answer within 0.3 s`,
      JSON.stringify(timedOut),
    );
    await hang.stop();

    const smtp = await new SmtpCapture({ user: 'barwatch', pass: 'right-pass' }).start();
    const wrong = createEmailNotifier({
      smtp: {
        host: '127.0.0.1',
        port: smtp.port,
        secure: false,
        requireTls: false,
        user: 'barwatch',
        pass: new Secret('XXWRONGPASSXX', 'test'),
      },
      from: 'b@example.org',
      to: ['t@example.org'],
      tls: { rejectUnauthorized: false },
    });
    const denied = await wrong.send(notification());
    assert.ok(denied.ok === false && !denied.retry, JSON.stringify(denied));
    assert.equal(denied.ok === false ? denied.error : '', `SMTP server 127.0.0.1:${smtp.port} refused the login: 535 (not retried)`);
    for (const r of [refused, amDown, mailDown, timedOut, denied])
      assert.ok(!/XXSECRETXX|XXWRONGPASSXX|\/services\//.test(JSON.stringify(r)));
    await smtp.stop();
  });
});

describe('barwatch test-alert', () => {
  test('reports delivered or the reason, per channel; secrets stay out of the output', async () => {
    const slack = await new CaptureServer().start();
    const am = await new CaptureServer().start();
    am.respond = () => ({ status: 500, body: 'down' });
    const smtp = await new SmtpCapture().start();
    const dir = tempDir();
    const hook = path.join(dir, 'hook');
    writeFileSync(hook, `${slack.url}/services/T0/B0/XXSECRETXX\n`);
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${dir}/state\nnotify:\n  slack: {webhook_url_file: hook}\n  email: {smtp: {host: 127.0.0.1, port: ${smtp.port}, secure: false}, from: b@example.org, to: [t@example.org]}\n  alertmanager: {url: "${am.url}"}\n`,
    );
    const r = await barwatchAsync(['test-alert', '--config', cfg]);
    assert.equal(r.status, 1, r.stderr);
    assert.equal(
      r.stdout,
      `console: delivered\nslack: delivered\nemail: delivered\nalertmanager: not delivered: Alertmanager at 127.0.0.1:${am.url.split(':').pop()} answered HTTP 500\n`,
    );
    assert.ok(!(r.stdout + r.stderr).includes('XXSECRETXX'));
    assert.equal(smtp.messages[0]!.subject, 'barwatch test notification');
    assert.equal(slack.requests.length, 1);
    await Promise.all([slack.stop(), am.stop(), smtp.stop()]);
  });
});
