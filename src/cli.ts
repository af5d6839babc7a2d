/** argv -> commands (commander). Thin: each command builds what it needs and sets the exit code. */
import { Command, CommanderError, Option } from 'commander';
import { analyzePaths, InputError } from './analyze.js';
import { ConfigError, formatProblem, loadConfig, type Config } from './config/load.js';
import { createLogger, silentLogger } from './log.js';
import { analyzeDocument } from './report/json.js';
import { renderText } from './report/text.js';
// Commands import what only they need when they run (the daemon's notifiers, HTTP and watcher
// are a few hundred ms of module loading that `analyze` does not pay).
import { SilenceStore } from './alerting/silences.js';
import { parseDuration } from './config/duration.js';
import { DETECTOR_IDS } from './config/schema.js';
import { loadState } from './sources/checkpoint.js';
import { RunRegistry } from './runs/registry.js';
import path from 'node:path';
import { SIM_SCENARIO_NAMES, SIM_SCENARIOS, type SimScenarioName } from './sim/scenarios.js';

/** Exit statuses of SPEC 5. */
export const EXIT = { ok: 0, findings: 1, usage: 2 } as const;

function readConfig(file: string | undefined): Config {
  return loadConfig(file ?? null);
}

function fail(message: string): never {
  process.stderr.write(`barwatch: ${message}\n`);
  process.exit(EXIT.usage);
}

function configOrExit(file: string | undefined): Config {
  try {
    return readConfig(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`barwatch: invalid configuration\n${err.message}\n`);
      process.exit(EXIT.usage);
    }
    throw err;
  }
}

export function buildProgram(): Command {
  const program = new Command('barwatch')
    .description('Watchdog for alternating RL training runs (BAR-RAG): tails reward logs, detects failure modes, alerts.')
    .version('0.1.0')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  program
    .command('watch')
    .description('follow runs as training writes them (the daemon)')
    .argument('[paths...]', 'run folders or roots of many runs (default: the config, or this folder as one run)')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action(async (paths: string[], opts: { config?: string }) => {
      const config = configOrExit(opts.config);
      const singleRun = paths.length === 0 && opts.config === undefined;
      if (paths.length > 0) config.watch.roots = paths.map((p) => new URL(p, `file://${process.cwd()}/`).pathname);
      const log = createLogger(config.log);
      const { Daemon } = await import('./app.js');
      const daemon = new Daemon({ config, log, singleRun });
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        log.info({ signal }, 'stopping');
        const force = setTimeout(() => process.exit(1), 5000);
        force.unref();
        daemon.stop().then(
          () => process.exit(EXIT.ok),
          (err: unknown) => {
            log.error({ err }, 'error while stopping');
            process.exit(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      // SIGHUP re-reads the config: a valid one is applied, an invalid one refused (the old one stays).
      process.on('SIGHUP', () => {
        if (opts.config === undefined) {
          log.info('SIGHUP: no --config file to re-read; nothing to reload');
          return;
        }
        let next: Config;
        try {
          next = readConfig(opts.config);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          for (const p of err.problems) log.error({ file: p.file, key: p.key }, formatProblem(p));
          log.error({ problems: err.problems.length }, 'SIGHUP: new configuration refused; the running one stays');
          return;
        }
        if (paths.length > 0) next.watch.roots = config.watch.roots;
        daemon.reload(next).catch((err: unknown) => log.error({ err: (err as Error).message }, 'reload failed'));
      });
      await daemon.start();
    });

  program
    .command('analyze')
    .description('one pass over finished or running output, then exit (0 healthy, 1 findings, 2 usage/input error)')
    .argument('<paths...>', 'run folders, roots of many runs, or single log files')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('-v, --verbose', 'log what is read to stderr')
    .action(async (paths: string[], opts: { config?: string; format: 'text' | 'json'; verbose?: boolean }) => {
      const config = configOrExit(opts.config);
      const log = opts.verbose === true ? createLogger({ ...config.log, level: 'debug' }) : createLogger({ ...config.log, level: 'warn' });
      let result;
      try {
        result = await analyzePaths(paths, config, opts.verbose === true ? log : silentLogger());
      } catch (err) {
        if (err instanceof InputError) fail(err.message);
        throw err;
      }
      for (const p of result.problems) log.warn({ path: p.path }, p.message);
      if (opts.format === 'json') {
        process.stdout.write(JSON.stringify(analyzeDocument(result.runs, result.filesByRun, result.findings), null, 2) + '\n');
      } else {
        process.stdout.write(renderText(result.runs, result.filesByRun, result.findings));
      }
      const bad = result.findings.some((f) => f.severity === 'warning' || f.severity === 'critical');
      process.exitCode = bad ? EXIT.findings : EXIT.ok;
    });

  program
    .command('validate')
    .description('check a configuration file; lists every problem (exit 0 valid, 2 invalid)')
    .requiredOption('-c, --config <file>', 'configuration file (YAML)')
    .action((opts: { config: string }) => {
      try {
        const config = readConfig(opts.config);
        process.stdout.write(`${config.file}: valid\n`);
        process.exitCode = EXIT.ok;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.stderr.write(`${err.problems.length} problem(s) found\n`);
        process.exitCode = EXIT.usage;
      }
    });

  const silence = program.command('silence').description('silence alerts of matching runs and detectors (stored in state_dir)');
  silence
    .command('add')
    .description('add a silence')
    .requiredOption('--run <glob>', 'run path glob (* within a folder name, ** across folders)')
    .option('--detector <id>', 'detector id, or * for all', '*')
    .requiredOption('--for <duration>', 'how long, e.g. 2h')
    .option('--comment <text>', 'why', '')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action(async (opts: { run: string; detector: string; for: string; comment: string; config?: string }) => {
      const config = configOrExit(opts.config);
      const ms = parseDuration(opts.for);
      if (ms === null) fail(`--for: ${opts.for} is not a duration such as 30m or 2h`);
      if (opts.detector !== '*' && !(DETECTOR_IDS as readonly string[]).includes(opts.detector))
        fail(`--detector: unknown detector ${opts.detector} (one of ${DETECTOR_IDS.join(', ')})`);
      const now = Date.now();
      const s = await SilenceStore.in(config.stateDir).add(
        { run: opts.run, detector: opts.detector, endsAt: new Date(now + ms).toISOString(), comment: opts.comment },
        now,
      );
      process.stdout.write(`silence ${s.id}: ${s.detector} on ${s.run} until ${s.endsAt}${s.comment ? ` (${s.comment})` : ''}\n`);
    });
  silence
    .command('list')
    .description('list active silences')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action((opts: { config?: string }) => {
      const config = configOrExit(opts.config);
      const list = SilenceStore.in(config.stateDir).active(Date.now());
      if (list.length === 0) process.stdout.write('no active silences\n');
      for (const s of list)
        process.stdout.write(`${s.id}  ${s.detector}  ${s.run}  until ${s.endsAt}${s.comment ? `  ${s.comment}` : ''}\n`);
    });
  silence
    .command('remove')
    .description('remove a silence')
    .argument('<id>', 'silence id (from silence list)')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action(async (id: string, opts: { config?: string }) => {
      const config = configOrExit(opts.config);
      if (!(await SilenceStore.in(config.stateDir).remove(id))) fail(`no silence with id ${id}`);
      process.stdout.write(`silence ${id} removed\n`);
    });

  program
    .command('test-alert')
    .description('send one test notification through every configured channel and report each result')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action(async (opts: { config?: string }) => {
      const config = configOrExit(opts.config);
      const [{ buildNotifiers }, { newId }] = await Promise.all([import('./notifiers/index.js'), import('./alerting/dispatch.js')]);
      const notifiers = buildNotifiers(config);
      process.stdout.write('console: delivered\n');
      if (notifiers.length === 0) {
        process.stdout.write('no other channel is configured (notify.slack, notify.email, notify.alertmanager)\n');
        return;
      }
      let failed = 0;
      for (const n of notifiers) {
        const r = await n.send({
          id: newId(),
          dedupeKey: newId(),
          channel: n.name,
          group: 'test',
          reason: 'test-alert',
          createdAt: new Date().toISOString(),
          alerts: [],
          test: true,
        });
        await n.close?.();
        if (r.ok) process.stdout.write(`${n.name}: delivered\n`);
        else {
          failed++;
          process.stdout.write(`${n.name}: not delivered: ${r.error}\n`);
        }
      }
      process.exitCode = failed > 0 ? EXIT.findings : EXIT.ok;
    });

  program
    .command('summary')
    .description('build the nightly summary now from the daemon state; print it, or send it with --send')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .option('--send', 'send it to summary.channels')
    .action(async (opts: { config?: string; send?: boolean }) => {
      const config = configOrExit(opts.config);
      const { state, problems } = await loadState(path.join(config.stateDir, 'state.json'));
      for (const p of problems) process.stderr.write(`barwatch: ${p}\n`);
      if (state === null) fail(`no state in ${config.stateDir}: run barwatch watch first (or pass --config with its state_dir)`);
      const runs = RunRegistry.from(state.runs, config.stats).all();
      const [{ buildNotifiers }, { sendSummary, summaryOf }] = await Promise.all([
        import('./notifiers/index.js'),
        import('./summary/send.js'),
      ]);
      const s = summaryOf(config, runs, Date.now(), opts.send === true);
      if (opts.send !== true) {
        process.stdout.write(`${s.subject}\n\n${s.text}\n`);
        return;
      }
      const notifiers = buildNotifiers(config);
      const results = await sendSummary(config, notifiers, s);
      for (const n of notifiers) await n.close?.();
      for (const r of results) process.stdout.write(`${r.channel}: ${r.ok ? 'sent' : `not sent: ${r.error}`}\n`);
      if (results.length === 0) process.stdout.write('summary.channels is empty: nothing sent\n');
      process.exitCode = results.every((r) => r.ok) ? EXIT.ok : EXIT.findings;
    });

  program
    .command('simulate')
    .description('run a small simulated BAR-RAG training and write its logs (docs/simulator.md)')
    .argument('<out_dir>', 'where the run is written (canonical layout)')
    .addOption(new Option('--scenario <name>', 'what goes wrong').choices(SIM_SCENARIO_NAMES).default('healthy'))
    .option('--seed <n>', 'random seed', '1')
    .option('--speed <steps_per_second>', "pace of the training; 'max' for as fast as it can", 'max')
    .option('--rounds <r>', 'alternating rounds', '3')
    .action(async (out: string, opts: { scenario: SimScenarioName; seed: string; speed: string; rounds: string }) => {
      const seed = Number(opts.seed);
      const rounds = Number(opts.rounds);
      const speed = opts.speed === 'max' ? null : Number(opts.speed);
      if (!Number.isInteger(seed)) fail(`--seed must be an integer, not ${opts.seed}`);
      if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) fail(`--rounds must be an integer from 1 to 100, not ${opts.rounds}`);
      if (speed !== null && !(speed > 0)) fail(`--speed must be a positive number of steps per second or 'max', not ${opts.speed}`);
      const dir = path.resolve(out);
      const t0 = Date.now();
      const { simulate } = await import('./sim/simulate.js');
      await simulate(dir, { scenario: opts.scenario, seed, rounds, speed });
      const s = SIM_SCENARIOS[opts.scenario];
      process.stdout.write(
        `wrote ${rounds} round(s) of scenario ${opts.scenario} (${s.change}) to ${dir} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
      );
      process.stdout.write(`expected findings: ${s.expected.join(', ') || 'none'}; check with: barwatch analyze ${dir}\n`);
    });

  program
    .command('demo')
    .description('watch a simulated run go wrong, then come healthy with the recommended fix (about 90 s)')
    .option('-c, --config <file>', 'configuration file (YAML); its Slack/email channels get the alerts too')
    .option('--fast', 'as fast as the machine goes (a few seconds)')
    .option('--seed <n>', 'random seed', '1')
    .option('--keep', 'keep the simulated runs')
    .action(async (opts: { config?: string; fast?: boolean; seed: string; keep?: boolean }) => {
      const config = opts.config === undefined ? loadConfig(null) : configOrExit(opts.config);
      const { demo } = await import('./demo.js');
      const r = await demo({ config, fast: opts.fast === true, seed: Number(opts.seed), out: process.stdout, keep: opts.keep === true });
      process.exitCode = r.first.length > 0 && r.second.length === 0 ? EXIT.ok : EXIT.findings;
    });

  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
        process.exit(EXIT.ok);
      process.exit(EXIT.usage);
    }
    process.stderr.write(`barwatch: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(EXIT.usage);
  }
}
