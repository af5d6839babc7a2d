/**
 * `barwatch demo`: a simulated run with a filter that throws away the boundary questions, watched
 * live by the real daemon (console alerts, plus Slack or email when the config has them), the
 * findings told in plain words, then the same run with barwatch's recommended thresholds.
 */
import { createServer } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Daemon } from '../daemon/daemon.js';
import { analyzePaths } from '../pipeline/analyze.js';
import { compare, targetsOf } from '../pipeline/compare.js';
import { silentLogger } from '../util/log.js';
import { invokedAs } from './common.js';
import { renderComparison } from './compare.js';
import type { Config } from '../config/load.js';
import type { Finding } from '../detectors/types.js';
import { createLogger } from '../util/log.js';
import type { Knobs } from '../sim/model.js';
import { SIM_SCENARIOS, type SimScenarioName } from '../sim/scenarios.js';
import type { SimLogger } from '../sim/writers.js';
import { GENERATOR_STEPS, SELECTOR_STEPS, simulate } from '../sim/simulate.js';

export interface DemoOptions {
  config: Config;
  /** As fast as the machine goes (tests); otherwise paced to about a minute and a half. */
  fast: boolean;
  seed: number;
  out: NodeJS.WritableStream;
  keep: boolean;
  /** How the simulated training is written: SPEC 3.1's layout, or W&B run files as BAR-RAG's official scripts leave them. */
  logger?: SimLogger;
}

const SCENARIO: SimScenarioName = 'aggressive-filter';
const ROUNDS = 3;
const SPEED = 22;

export interface DemoResult {
  dir: string;
  first: Finding[];
  second: Finding[];
  fix: Partial<Knobs>;
}

export async function demo(o: DemoOptions): Promise<DemoResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-demo-'));
  const say = (s = ''): void => void o.out.write(`${s}\n`);
  const tty = (o.out as { isTTY?: boolean }).isTTY === true;
  const config: Config = {
    ...o.config,
    // A finished run is judged with everything read a second after its last line.
    watch: { ...o.config.watch, roots: [dir], settleAfterMs: 1000 },
    stateDir: path.join(dir, '.barwatch'),
    alerting: {
      lifecycle: { ...o.config.alerting.lifecycle, forMs: 0 },
      dispatch: { ...o.config.alerting.dispatch, groupWaitMs: 0 },
    },
    http: { ...o.config.http },
    log: { level: 'error', format: 'auto' },
  };
  // A page address already taken (another barwatch, another demo): the demo serves on a free port.
  const wanted = config.http.listen;
  if (wanted !== undefined && wanted.port !== 0 && !(await portFree(wanted.host, wanted.port))) {
    config.http = { ...config.http, listen: { ...wanted, port: 0 } };
    o.out.write(`(${wanted.host}:${wanted.port} is in use: the demo's page is served on a free port instead.)\n`);
  }
  // Console alerts, indented under the progress line.
  const alerts = new Writable({
    write(chunk: Buffer, _enc, done) {
      if (tty) o.out.write('\r\x1b[K');
      o.out.write(chunk.toString().replace(/^(?=.)/gm, '  | '));
      done();
    },
  });
  const daemon = await Daemon.open({ config, log: createLogger(config.log), alertStream: alerts, sweepIntervalMs: 1000 });
  await daemon.run();
  const channels = daemon.alerter.channels;

  const scenario = SIM_SCENARIOS[SCENARIO];
  say('barwatch demo: a small BAR-RAG training (selector trained with GRPO, generator fine-tuned, alternating)');
  say(`is simulated in ${dir} and watched live by barwatch.${channels.length > 0 ? ` Alerts also go to: ${channels.join(', ')}.` : ''}`);
  if (daemon.url !== null && !o.fast) say(`Watch it on the charts: open ${daemon.url}`);
  else if (daemon.url !== null) say(`(--fast ends in seconds; run the demo without --fast to watch it on the charts.)`);
  say();
  say(`Run 1: ${scenario.change}.`);
  const first = await watchRun(o, daemon, path.join(dir, 'run-1'), {}, say, tty);
  narrate(first, say);

  const low = first.find((f) => f.detector === 'boundary-share-low');
  const suggested = low?.evidence['suggested'] as { easy_threshold: number; unsolvable_threshold: number } | undefined;
  const fix: Partial<Knobs> =
    suggested !== undefined ? { easy: suggested.easy_threshold, unsolvable: suggested.unsolvable_threshold } : scenario.fix;
  say();
  say(`Run 2: the same training with barwatch's recommended filter thresholds (easy ${fix.easy}, unsolvable ${fix.unsolvable}).`);
  const second = await watchRun(o, daemon, path.join(dir, 'run-2'), fix, say, tty);
  narrate(second, say);
  say();
  say(
    second.length === 0
      ? 'With the recommended thresholds the run is healthy: no finding. That is what barwatch does for a real run, for days, unattended.'
      : `Run 2 still has ${second.length} finding(s).`,
  );
  // The guide's last step: check that the fix worked, run 1 against run 2.
  const before = await analyzePaths([path.join(dir, 'run-1')], o.config, silentLogger());
  const after = await analyzePaths([path.join(dir, 'run-2')], o.config, silentLogger());
  const cmp = compare(
    { run: before.runs[0]!, round: null, findings: before.findings },
    { run: after.runs[0]!, round: null, findings: after.findings },
    targetsOf(o.config.detectors),
  );
  say();
  say('Did the fix work? barwatch compare run-1 run-2:');
  say(typeof cmp === 'string' ? cmp : renderComparison(cmp).trimEnd().replace(/^/gm, '  '));
  if (daemon.url !== null && tty && !o.fast) {
    say(`The page stays at ${daemon.url}; press Ctrl-C to end the demo.`);
    await new Promise<void>((resolve) => process.once('SIGINT', () => resolve()));
  }
  await daemon.stop();
  if (!o.keep) rmSync(dir, { recursive: true, force: true });
  else say(`The runs are kept in ${dir} (try: ${invokedAs()} analyze ${JSON.stringify(path.join(dir, 'run-1'))}).`);
  return { dir, first, second, fix };
}

async function watchRun(
  o: DemoOptions,
  daemon: Daemon,
  run: string,
  override: Partial<Knobs>,
  say: (s?: string) => void,
  tty: boolean,
): Promise<Finding[]> {
  const total = ROUNDS * (SELECTOR_STEPS + GENERATOR_STEPS);
  let done = 0;
  let lastRound = 0;
  await simulate(run, {
    scenario: SCENARIO,
    seed: o.seed,
    rounds: ROUNDS,
    speed: o.fast ? null : SPEED,
    override,
    ...(o.logger !== undefined ? { logger: o.logger } : {}),
    onStep: (p) => {
      done++;
      const alerts = daemon.findings().filter((f) => f.run === run).length;
      const line = `  ${p.role} round ${p.round}, step ${p.step} | ${p.boundary !== undefined ? `boundary reward ${p.boundary.toFixed(2)} | ` : ''}accuracy ${p.accuracy.toFixed(2)} | ${Math.round((100 * done) / total)}% of the training done | findings: ${alerts}`;
      if (tty) o.out.write(`\r\x1b[K${line}`);
      else if (p.round !== lastRound && p.role === 'selector' && p.step === 1) say(line);
      lastRound = p.round;
    },
  });
  if (tty) o.out.write('\r\x1b[K');
  // Let the daemon read the last lines and judge the finished run with everything read.
  for (let waited = 0; waited < 15_000 && !daemon.settled(run); waited += 100) await sleep(100);
  return daemon.findings().filter((f) => f.run === run && f.severity !== 'info');
}

function narrate(findings: Finding[], say: (s?: string) => void): void {
  say();
  if (findings.length === 0) {
    say('  barwatch found nothing wrong.');
    return;
  }
  say(`  What barwatch saw (${findings.length} finding(s)):`);
  for (const f of findings) {
    say(`  * ${f.detector}${f.round !== null ? ` (round ${f.round}${f.step !== null ? `, step ${f.step}` : ''})` : ''}: ${f.message}`);
    if (f.recommendation) say(`    What to do: ${f.recommendation}`);
  }
}

/** Whether host:port can be listened on now (closed again at once). */
function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}
