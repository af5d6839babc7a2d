/**
 * Per-run training statistics on /metrics: what Prometheus scrapes and Grafana charts
 * across machines. Checked with the real tools: `promtool check metrics` on the output,
 * `promtool check config` and `check rules` on deploy/, a real Prometheus scraping a daemon, and
 * every metric the Grafana dashboard queries present in the output.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { DaemonProcess, type LogLine } from './helpers/daemon.js';
import { REPO, tempDir } from './helpers/fs.js';
import { writeRun } from './helpers/run.js';
import { freePort } from './helpers/servers.js';

const HAVE_PROMTOOL = spawnSync('promtool', ['--version']).status === 0;
const PROMTOOL_SKIP = HAVE_PROMTOOL ? false : 'promtool not installed (Debian package prometheus; .ci/run installs it)';
const HAVE_PROMETHEUS = spawnSync('prometheus', ['--version']).status === 0;

/** Three runs of two rounds, one with a NaN reward (a finding); metrics_max_runs 2. */
async function daemonWithRuns(): Promise<{ d: DaemonProcess; base: string; runs: string }> {
  const dir = tempDir();
  const runs = path.join(dir, 'runs');
  for (const i of [1, 2, 3]) writeRun(path.join(runs, `seed${i}`), 2, 80);
  const nan = path.join(runs, 'seed3', 'outputs', 'selector_round2', 'reward_history.jsonl');
  writeFileSync(nan, readFileSync(nan, 'utf8') + '{"step": 81, "boundary": NaN}\n');
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${dir}/state\nhttp: {listen: "127.0.0.1:0", metrics_max_runs: 2}\nwatch: {status_interval: 200ms}\nlog: {format: json}\n`,
  );
  const d = new DaemonProcess([runs, '--config', cfg], { listen: null });
  const l = await d.waitFor((x) => typeof x['url'] === 'string' && x.msg.startsWith('web page at'));
  await d.waitFor((x: LogLine) => x.msg.startsWith('status:') && (x['records'] as number) >= 3 * 2 * 80);
  after(() => d.stop());
  return { d, base: String(l['url']).replace(/\/$/, ''), runs };
}

describe('/metrics: per-run training statistics', () => {
  test('the current round of each run, bounded by metrics_max_runs; promtool check metrics passes', { skip: PROMTOOL_SKIP }, async () => {
    const { base, runs } = await daemonWithRuns();
    const text = await (await fetch(`${base}/metrics`)).text();
    const lines = text.split('\n');
    const series = (name: string): string[] => lines.filter((l) => l.startsWith(`${name}{`));
    // The two most recently written runs are exported (seed3 was written last), the third counted.
    const exported = new Set(series('barwatch_run_last_write_timestamp_seconds').map((l) => /run="([^"]+)"/.exec(l)![1]));
    assert.equal(exported.size, 2);
    assert.ok(exported.has(path.join(runs, 'seed3')));
    assert.ok(lines.includes('barwatch_run_metrics_omitted_runs 1'), 'the run left out is counted');
    for (const run of exported) {
      const mean = series('barwatch_run_boundary_mean').find((l) => l.includes(`run="${run}",role="selector",round="2"`));
      assert.ok(mean !== undefined, `${run}: boundary mean of selector round 2 (the current round only)`);
      assert.ok(!series('barwatch_run_boundary_mean').some((l) => l.includes(`run="${run}"`) && l.includes('round="1"')), 'no old round');
      assert.ok(series('barwatch_run_accuracy').some((l) => l.includes(`run="${run}"`)));
      assert.ok(series('barwatch_run_boundary_variance').some((l) => l.includes(`run="${run}"`)));
      assert.ok(series('barwatch_run_signal_share').some((l) => l.includes(`run="${run}"`) && l.includes('component="boundary"')));
      assert.ok(series('barwatch_run_boundary_share').some((l) => l.includes(`run="${run}"`)));
      assert.ok(series('barwatch_run_last_step').some((l) => l.includes(`run="${run}",role="selector",round="2"`) && / 8[01]$/.test(l)));
    }
    assert.ok(
      series('barwatch_finding_active').some(
        (l) => l.includes(`run="${path.join(runs, 'seed3')}"`) && l.includes('detector="nonfinite-reward"') && l.endsWith(' 1'),
      ),
      'the NaN run has its finding',
    );
    assert.match(text, /# HELP barwatch_run_boundary_mean .*Only the current \(latest\) round of each run and role is exported/);
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(check.status, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
  });

  test(
    'deploy/: the Prometheus config and rules check; every metric the Grafana dashboard queries is in /metrics',
    { skip: PROMTOOL_SKIP },
    async () => {
      for (const [what, file] of [
        ['config', 'prometheus.yml'],
        ['rules', 'barwatch.rules.yml'],
      ] as const) {
        const r = spawnSync('promtool', ['check', what, path.join(REPO, 'deploy', file)], { encoding: 'utf8' });
        assert.equal(r.status, 0, `promtool check ${what} ${file}: ${r.stdout}${r.stderr}`);
      }
      const { base } = await daemonWithRuns();
      const text = await (await fetch(`${base}/metrics`)).text();
      const families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
      const dashboard = readFileSync(path.join(REPO, 'deploy', 'grafana-dashboard.json'), 'utf8');
      const queried = new Set([...dashboard.matchAll(/\bbarwatch_[a-z_]+/g)].map((m) => m[0]));
      assert.ok(queried.size >= 8, `the dashboard queries ${queried.size} barwatch metrics`);
      assert.deepEqual(
        [...queried].filter((m) => !families.has(m)),
        [],
        'metrics the dashboard queries that /metrics does not have',
      );
      const rules = readFileSync(path.join(REPO, 'deploy', 'barwatch.rules.yml'), 'utf8');
      const inRules = [...rules.matchAll(/\bbarwatch_[a-z_]+/g)].map((m) => m[0]);
      assert.deepEqual(
        inRules.filter((m) => !families.has(m)),
        [],
      );
    },
  );

  test(
    'a real Prometheus scrapes a daemon and answers a query for barwatch_run_boundary_mean',
    { skip: HAVE_PROMETHEUS ? false : 'prometheus not installed' },
    async () => {
      const { base } = await daemonWithRuns();
      const dir = tempDir();
      const port = await freePort();
      writeFileSync(
        path.join(dir, 'prometheus.yml'),
        `global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: barwatch\n    static_configs: [{targets: ["${new URL(base).host}"]}]\n`,
      );
      const prom = spawn(
        'prometheus',
        [
          `--config.file=${path.join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: 'ignore' },
      );
      after(() => prom.kill('SIGKILL'));
      const end = Date.now() + 60_000;
      let result: { metric: Record<string, string>; value: [number, string] }[] = [];
      while (Date.now() < end) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=barwatch_run_boundary_mean`);
          const body = (await res.json()) as { data?: { result: typeof result } };
          result = body.data?.result ?? [];
          if (result.length > 0) break;
        } catch {
          // Not up yet.
        }
        await sleep(250);
      }
      assert.equal(result.length, 2, 'both exported runs');
      assert.ok(result.every((r) => r.metric['job'] === 'barwatch' && r.metric['role'] === 'selector' && r.metric['round'] === '2'));
    },
  );
});
