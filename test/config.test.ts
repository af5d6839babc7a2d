import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { inspect } from 'node:util';
import { describe, test } from 'node:test';
import { parseDuration } from '../src/util/duration.js';
import { ConfigError, loadConfig, parseConfig } from '../src/config/load.js';
import { BIN, REPO, tempDir } from './helpers/fs.js';
import { barwatch } from './helpers/cli.js';

const FIXTURES = path.join(REPO, 'test', 'fixtures', 'configs');

function problems(name: string): string[] {
  const file = path.join(FIXTURES, name);
  try {
    loadConfig(file);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems.map((p) => `${path.basename(p.file)}: ${p.key}: ${p.message}`);
  }
  assert.fail(`${name} was accepted`);
}

describe('invalid configs: one case per file, the exact message', () => {
  const cases: Record<string, string[]> = {
    'unknown-key.yaml': ['unknown-key.yaml: watch.pol: unknown key (did you mean poll?)'],
    'wrong-type.yaml': ['wrong-type.yaml: watch.poll: must be true or false, not a string'],
    'bad-duration.yaml': ['bad-duration.yaml: alerting.group_wait: must be a duration such as 500ms, 10s, 5m or 4h'],
    'bad-yaml.yaml': ['bad-yaml.yaml: : not valid YAML: line 3, column 1: deficient indentation'],
    'not-a-mapping.yaml': ['not-a-mapping.yaml: : must be a mapping of keys, not a list'],
    'email-without-to.yaml': ['email-without-to.yaml: notify.email.to: is required (a list)'],
    'slack-both.yaml': ['slack-both.yaml: notify.slack: at most one of webhook_url and webhook_url_file may be set'],
    'detectors.yaml': [
      'detectors.yaml: detectors.stale-run.enabled: must be true or false, not a string',
      'detectors.yaml: detectors.boundary-osc: unknown key (did you mean boundary-oscillation?)',
    ],
    'several.yaml': [
      'several.yaml: http.listen: must be host:port, e.g. 127.0.0.1:9464, or off',
      'several.yaml: log.level: must be one of fatal, error, warn, info, debug, trace',
    ],
    'slack-bad-url.yaml': ['slack-bad-url.yaml: notify.slack.webhook_url: must be an http:// or https:// URL with a host'],
    'alias-bomb.yaml': [
      ...Array.from({ length: 9 }, (_, i) => `alias-bomb.yaml: watch.roots[${i}]: must be a string, not a list`),
      'alias-bomb.yaml: detectors: must be a mapping, not a list',
    ],
    'exposed.yaml': [
      'exposed.yaml: http.listen: 0.0.0.0 is not a loopback address; set http.expose: true to serve the page, /healthz and /metrics beyond this machine',
    ],
  };
  for (const [file, want] of Object.entries(cases)) {
    test(file, () => assert.deepEqual(problems(file), want));
  }

  test('detector parameters: unknown names, wrong types and bad durations', () => {
    assert.throws(
      () =>
        parseConfig(
          'detectors:\n  generator-stall: {margin: "big", windw: 10}\n  stale-run: {min_silence: 10}\n  low-rollouts: {min_k: -1}\n',
          '/etc/b.yaml',
        ),
      (err: ConfigError) =>
        err.problems.map((p) => `${p.key}: ${p.message}`).join('\n') ===
        [
          'detectors.low-rollouts.min_k: must be from 1 to 1000000',
          'detectors.generator-stall.margin: must be a number, not a string',
          'detectors.generator-stall.windw: unknown parameter (generator-stall takes: enabled, severity, window, min_points, margin, alpha, min_rise, horizon)',
          'detectors.stale-run.min_silence: must be a duration such as 500ms, 10s, 5m or 4h',
        ].join('\n'),
    );
    const c = parseConfig(
      'detectors:\n  stale-run: {min_silence: 2s, factor: 3}\n  boundary-oscillation: {enabled: false}\n',
      '/etc/b.yaml',
    );
    assert.equal(c.detectors['stale-run']!['min_silence'], '2s');
    assert.equal(c.detectors['stale-run']!['factor'], 3);
    assert.equal(c.detectors['stale-run']!['min_intervals'], 5);
    assert.equal(c.detectors['boundary-oscillation']!.enabled, false);
  });

  test('a missing file is named', () => {
    assert.throws(
      () => loadConfig('/nonexistent/barwatch.yaml'),
      (err: ConfigError) => err.message === '/nonexistent/barwatch.yaml: cannot read the file (ENOENT)',
    );
  });

  test('cross-key problems: channels not configured, secret file missing', () => {
    const dir = tempDir();
    const file = path.join(dir, 'c.yaml');
    assert.throws(
      () => parseConfig('summary: {channels: [slack]}\nnotify:\n  email: {to: [a@b.c], smtp: {user: u, pass_file: nope.txt}}\n', file),
      (err: ConfigError) =>
        err.problems.map((p) => `${p.key}: ${p.message}`).join('\n') ===
        [
          `notify.email.smtp.pass_file: cannot read ${path.join(dir, 'nope.txt')} (ENOENT)`,
          'summary.channels[0]: slack is listed but notify.slack is not configured',
        ].join('\n'),
    );
  });
});

describe('valid configs', () => {
  test('the shipped example validates, with the defaults of SPEC 6', () => {
    const c = loadConfig(path.join(REPO, 'config', 'barwatch.example.yaml'));
    assert.deepEqual(c.watch.roots, [path.join(REPO, 'config')]);
    assert.equal(c.stateDir, path.join(REPO, 'config', '.barwatch'));
    assert.equal(c.alerting.dispatch.groupWaitMs, 10_000);
    assert.equal(c.alerting.dispatch.repeatIntervalMs, 4 * 3_600_000);
    assert.equal(c.watch.pollIntervalMs, 1000);
    assert.equal(c.summary.cron, '0 23 * * *');
    assert.equal(c.tail.maxLineBytes, 1 << 20);
  });

  test('no file: defaults relative to the working folder', () => {
    const c = loadConfig(null, { cwd: '/srv/run1' });
    assert.deepEqual(c.watch.roots, ['/srv/run1']);
    assert.equal(c.stateDir, '/srv/run1/.barwatch');
    assert.equal(c.summary.channels[0], 'email');
  });

  test('relative paths resolve against the config file; empty sections mean defaults', () => {
    const c = parseConfig('watch:\n  roots: [runs, /abs/runs]\nstate_dir: ../state\nhttp:\n', '/etc/barwatch/barwatch.yaml');
    assert.deepEqual(c.watch.roots, ['/etc/barwatch/runs', '/abs/runs']);
    assert.equal(c.stateDir, '/etc/state');
    assert.deepEqual(c.http, {
      listen: { host: '127.0.0.1', port: 9464 },
      expose: false,
      metricsRetentionMs: 21_600_000,
      metricsMaxRuns: 500,
    });
    assert.deepEqual(parseConfig('http: {listen: "off"}\n', '/etc/b.yaml').http, {
      expose: false,
      metricsRetentionMs: 21_600_000,
      metricsMaxRuns: 500,
    });
  });

  test('http.listen: loopback by default, another address only with http.expose', () => {
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.3.2.1']) {
      assert.equal(parseConfig(`http: {listen: "${host}:0"}\n`, '/etc/b.yaml').http.listen?.port, 0, host);
    }
    const c = parseConfig('http: {listen: "0.0.0.0:9464", expose: true}\n', '/etc/b.yaml');
    assert.deepEqual(c.http, {
      listen: { host: '0.0.0.0', port: 9464 },
      expose: true,
      metricsRetentionMs: 21_600_000,
      metricsMaxRuns: 500,
    });
    assert.throws(() => parseConfig('http: {listen: "192.168.1.5:9464"}\n', '/etc/b.yaml'), /192\.168\.1\.5 is not a loopback address/);
  });

  test('an empty or missing http.auth_token_file is refused by validate, naming the key', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'empty-token'), '\n');
    for (const [token, why] of [
      ['empty-token', /http\.auth_token_file: the file .*empty-token is empty/],
      ['no-such-token', /http\.auth_token_file: cannot read .*no-such-token \(ENOENT\)/],
    ] as const) {
      const cfg = path.join(dir, `${token}.yaml`);
      writeFileSync(cfg, `http: {listen: "0.0.0.0:9464", expose: true, auth_token_file: ${token}}\n`);
      const r = barwatch(['validate', '--config', cfg]);
      assert.equal(r.status, 2, r.stdout + r.stderr);
      assert.match(r.stdout + r.stderr, why);
    }
  });

  test('secrets from a file or the environment never print', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'hook'), 'https://hooks.slack.com/services/T0/B0/TOPSECRET\n');
    const c = parseConfig(
      'notify:\n  slack: {webhook_url_file: hook}\n  email: {to: [a@b.c], smtp: {user: u}}\n',
      path.join(dir, 'c.yaml'),
      {
        env: { BARWATCH_SMTP_PASS: 'hunter2-password' },
      },
    );
    assert.equal(c.notify.slack?.webhookUrl.reveal(), 'https://hooks.slack.com/services/T0/B0/TOPSECRET');
    assert.equal(c.notify.email?.smtp.pass?.reveal(), 'hunter2-password');
    const shown = [JSON.stringify(c), inspect(c, { depth: 10 }), String(c.notify.slack?.webhookUrl)].join('\n');
    assert.ok(!shown.includes('TOPSECRET'), 'webhook URL leaked');
    assert.ok(!shown.includes('hunter2'), 'password leaked');
  });

  test('secrets written in the config itself never print either', () => {
    const c = parseConfig(
      'notify:\n  slack: {webhook_url: "https://hooks.slack.com/services/T0/B0/INLINESECRET"}\n  email: {to: [a@b.c], smtp: {user: u, pass: inline-hunter2}}\n  alertmanager: {url: "http://u:inline-am-pw@127.0.0.1:9093"}\n',
      '/etc/b.yaml',
    );
    const shown = JSON.stringify(c) + inspect(c, { depth: 10 });
    for (const s of ['INLINESECRET', 'inline-hunter2', 'inline-am-pw']) assert.ok(!shown.includes(s), `${s} leaked`);
  });

  test('a config error never quotes a secret value', () => {
    const msgs = problems('slack-bad-url.yaml').join('\n');
    assert.ok(!msgs.includes('SECRETSECRET'));
    const both = problems('slack-both.yaml').join('\n');
    assert.ok(!both.includes('SECRETSECRET'));
  });

  test('durations', () => {
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1h30m'), 5_400_000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('10'), null);
    assert.equal(parseDuration('10 s'), null);
  });
});

describe('barwatch validate', () => {
  test('exit 0 on a valid file, 2 with every problem listed on an invalid one', () => {
    const ok = spawnSync(process.execPath, [BIN, 'validate', '--config', path.join(REPO, 'config', 'barwatch.example.yaml')], {
      encoding: 'utf8',
    });
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /barwatch\.example\.yaml: valid/);
    const bad = spawnSync(process.execPath, [BIN, 'validate', '--config', path.join(FIXTURES, 'several.yaml')], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /several\.yaml: http\.listen: must be host:port/);
    assert.match(bad.stderr, /several\.yaml: log\.level: must be one of/);
    assert.match(bad.stderr, /2 problem\(s\) found/);
    // Without --config: the first of $BARWATCH_CONFIG, ./barwatch.yaml, $XDG_CONFIG_HOME/barwatch/barwatch.yaml, /etc/barwatch/barwatch.yaml.
    const home = tempDir();
    const env = { ...process.env, XDG_CONFIG_HOME: path.join(home, 'xdg'), BARWATCH_CONFIG: '' };
    const none = spawnSync(process.execPath, [BIN, 'validate'], { encoding: 'utf8', cwd: home, env });
    if (!existsSync('/etc/barwatch/barwatch.yaml')) {
      assert.equal(none.status, 2);
      assert.match(none.stderr, /no configuration to check: give --config FILE \(looked for .*barwatch\.yaml/);
    }
    writeFileSync(path.join(home, 'barwatch.yaml'), 'log: {level: warn}\n');
    const found = spawnSync(process.execPath, [BIN, 'validate'], { encoding: 'utf8', cwd: home, env });
    assert.equal(found.status, 0, found.stderr);
    assert.match(
      found.stdout,
      new RegExp(
        `checking ${path.join(home, 'barwatch.yaml')} \\(found in this folder; every command uses it when no --config is given\\)\n.*: valid`,
      ),
    );
  });
});

/** The problems parseConfig finds in a config text, as `key: message`; none when it is valid. */
function problemsOf(text: string): string[] {
  try {
    parseConfig(text, '/etc/b.yaml');
    return [];
  } catch (err) {
    return (err as ConfigError).problems.map((p) => `${p.key}: ${p.message}`);
  }
}

describe('every number has a range, named when it is broken', () => {
  test('counts, fractions, levels and sizes; a YAML merge key is named', () => {
    assert.deepEqual(
      problemsOf(
        'stats: {window: 0, ewma_half_life: 0, max_series: 1e9}\nparse: {max_line_bytes: 0}\nwatch: {max_files: 0}\ndetectors:\n  boundary-oscillation: {window: 0, min_amplitude: -1}\n  generator-stall: {alpha: 2}\n',
      ),
      [
        'watch.max_files: must be from 1 to 10000000',
        'parse.max_line_bytes: must be from 64 to 268435456',
        'stats.window: must be from 2 to 100000',
        'stats.ewma_half_life: must be greater than 0',
        'stats.max_series: must be from 1 to 100000',
        'detectors.boundary-oscillation.window: must be from 1 to 1000000',
        'detectors.boundary-oscillation.min_amplitude: must be from 0 to 1000000000 (not negative)',
        'detectors.generator-stall.alpha: must be between 0 and 1 (a significance level such as 0.01)',
      ],
    );
    assert.deepEqual(problemsOf('x-base: &b {poll: true}\nwatch:\n  <<: *b\n'), [
      'watch.<<: YAML merge keys (<<) are not supported: write the keys out',
      'x-base: unknown key',
    ]);
  });
});

describe('the SMTP password and TLS', () => {
  const smtp = (extra: string): string => `notify:\n  email: {to: [a@b.c], smtp: {host: 127.0.0.1, user: u, pass: Zq9secret${extra}}}\n`;
  test('STARTTLS is required by default whenever a password is configured; allow_plaintext_auth lifts it; secure needs none', () => {
    assert.equal(parseConfig(smtp(''), '/etc/b.yaml').notify.email?.smtp.requireTls, true);
    assert.equal(parseConfig(smtp(', allow_plaintext_auth: true'), '/etc/b.yaml').notify.email?.smtp.requireTls, false);
    assert.equal(parseConfig(smtp(', secure: true, port: 465'), '/etc/b.yaml').notify.email?.smtp.requireTls, false);
    assert.equal(
      parseConfig('notify:\n  email: {to: [a@b.c], smtp: {host: 127.0.0.1}}\n', '/etc/b.yaml').notify.email?.smtp.requireTls,
      false,
      'no password, nothing to protect',
    );
    assert.deepEqual(problemsOf(smtp(', require_tls: false')), [
      'notify.email.smtp.require_tls: false would send the SMTP password in clear text to a server without STARTTLS; set allow_plaintext_auth: true to allow that (a relay on loopback)',
    ]);
  });

  test('validate says how the password travels', () => {
    const dir = tempDir();
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, smtp(''));
    const r = barwatch(['validate', '--config', cfg]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /notify\.email\.smtp: the password is sent only after STARTTLS \(require_tls\)/);
    writeFileSync(cfg, smtp(', allow_plaintext_auth: true'));
    const plain = barwatch(['validate', '--config', cfg]);
    assert.equal(plain.status, 0);
    assert.match(plain.stderr, /allow_plaintext_auth: warning: the password goes to 127\.0\.0\.1:587 without TLS/);
    assert.doesNotMatch(plain.stdout + plain.stderr, /Zq9secret/);
  });
});

describe('validate catches what would fail later', () => {
  test('a URL that reaches nothing, an address that is not one, a root that does not exist yet (a warning)', () => {
    assert.deepEqual(problemsOf('notify: {slack: {webhook_url: "htp:/127.0.0.1/hook"}}\n'), [
      'notify.slack.webhook_url: must be an http:// or https:// URL with a host',
    ]);
    assert.deepEqual(problemsOf('notify: {alertmanager: {url: "ftp://am.example:9093"}}\n'), [
      'notify.alertmanager.url: must be an http:// or https:// URL with a host',
    ]);
    assert.deepEqual(problemsOf('notify: {email: {to: [not-an-email]}}\n'), [
      'notify.email.to[0]: must be an email address such as name@example.org',
    ]);
    assert.deepEqual(problemsOf('notify: {email: {to: [ml@example.org], from: "a b@c"}}\n'), [
      'notify.email.from: must be an email address such as name@example.org',
    ]);
    const dir = tempDir();
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, 'watch: {roots: [missing-root]}\n');
    const r = spawnSync(process.execPath, [BIN, 'validate', '--config', cfg], { encoding: 'utf8' });
    assert.equal(r.status, 0);
    assert.match(r.stderr, /watch\.roots\[0\]: warning: .*missing-root does not exist yet/);
    assert.match(r.stdout, /valid/);
  });

  test("durations out of range are refused with the range: no status line every millisecond, no timer past Node's 24.8 days", () => {
    assert.deepEqual(problemsOf('watch: {status_interval: 0s}\n'), ['watch.status_interval: must be from 100ms to 24d']);
    assert.deepEqual(problemsOf('alerting: {repeat_interval: 30d}\n'), ['alerting.repeat_interval: must be from 1m to 24d']);
    assert.deepEqual(problemsOf('notify: {timeout: 30d}\n'), ['notify.timeout: must be from 100ms to 10m']);
    assert.deepEqual(problemsOf('detectors: {stale-run: {min_silence: 30d}}\n'), [
      'detectors.stale-run.min_silence: must be from 0s to 24d',
    ]);
    assert.deepEqual(problemsOf('watch: {status_interval: soon}\n'), [
      'watch.status_interval: must be a duration such as 500ms, 10s, 5m or 4h',
    ]);
    assert.deepEqual(problemsOf('watch: {status_interval: 24d}\nalerting: {group_interval: 0s}\n'), []);
  });

  test('an unreadable secret file, a bad cron expression and time zone: each says what it will break', () => {
    const dir = tempDir();
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `notify:\n  email: {smtp: {host: 127.0.0.1, port: 25, user: u, pass_file: ${dir}/missing-pass}, from: a@example.org, to: [b@example.org]}\nsummary: {cron: '61 25 * * *', timezone: Mars/Olympus}\n`,
    );
    const r = spawnSync(process.execPath, [BIN, 'validate', '--config', cfg], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    const lines = r.stderr.trim().split('\n');
    assert.deepEqual(lines, [
      `${cfg}: notify.email.smtp.pass_file: cannot read ${dir}/missing-pass (ENOENT) (breaks the email channel)`,
      `${cfg}: summary.cron: is not a valid cron expression (e.g. "0 23 * * *") (breaks the nightly summary)`,
      `${cfg}: summary.timezone: is not a known time zone (e.g. UTC, Europe/Paris) (breaks the nightly summary)`,
      '3 problem(s) found',
    ]);
  });
});
