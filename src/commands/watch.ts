/** `barwatch watch`: the daemon in the foreground; SIGTERM and SIGINT stop it, SIGHUP re-reads its config. */
import type * as V8 from 'node:v8';
import type { Command } from 'commander';
import { ConfigError, formatProblem, loadConfig, type Config } from '../config/load.js';
import { createLogger, forPeople } from '../util/log.js';
import { applyListen, EXIT, fail } from './common.js';
import { CONFIG_PLACES, place, setup } from './setup.js';
import { lazy } from '../util/lazy.js';

/** Loaded when the daemon starts: the other commands never set V8's flags (issue 32: start-up). */
const v8 = lazy<typeof V8>('node:v8');

const HEAP_GROWING_PERCENT = 20;

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('follow runs as training writes them (the daemon)')
    .argument('[paths...]', 'run folders or roots of many runs (default: the config, or this folder as one run)')
    .option('-c, --config <file>', `configuration file (YAML); without it, the first of ${CONFIG_PLACES.join(', ')}`)
    .option('--state-dir <dir>', "state folder (default: the config's state_dir, else one per set of PATHs, else ./.barwatch)")
    .option('--listen <host:port|off>', 'where the web page, /healthz and /metrics are served (overrides http.listen)')
    .option('--no-color', 'no colours on a terminal (NO_COLOR=1 does the same)')
    .action(async (paths: string[], opts: { config?: string; stateDir?: string; listen?: string; color: boolean }) => {
      if (!opts.color) process.env['NO_COLOR'] = '1';
      // A daemon reading a long backlog makes garbage faster than V8 expects of a server, and V8
      // let the old generation grow to several times what was live before collecting it: RSS
      // grew 20% from 1M to 10M records with a retained heap that stays flat. With the heap allowed
      // to grow 20% past what the last full collection kept: 4%, the catch-up as fast
      // (BENCHMARKS.md, "Memory"). Set here, not in the unit: NODE_OPTIONS does not take this flag.
      v8().setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
      // Paths as the shell gives them: spaces, '#', '%' and non-ASCII are file names, not URL syntax.
      const where = setup(opts, paths);
      const { config, configFile } = where;
      applyListen(config, opts.listen);
      const singleRun = paths.length === 0 && configFile === null;
      const log = createLogger(config.log);
      // On a terminal the banner below says it.
      log[forPeople(config.log) ? 'debug' : 'info']({ config: configFile, state_dir: config.stateDir }, `using ${where.said}`);
      const [{ Daemon }, { StateDirInUse }] = await Promise.all([import('../daemon/daemon.js'), import('../daemon/state.js')]);
      const daemon = await Daemon.open({ config, log, singleRun }).catch((err: unknown) => {
        if (err instanceof StateDirInUse) fail(err.message);
        throw err;
      });
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
        if (configFile === null) {
          log.info('SIGHUP: no config file to re-read (running on the built-in defaults); nothing to reload');
          return;
        }
        let next: Config;
        try {
          next = loadConfig(configFile);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          for (const p of err.problems) log.error({ file: p.file, key: p.key }, formatProblem(p));
          log.error({ problems: err.problems.length }, 'SIGHUP: new configuration refused; the running one stays');
          return;
        }
        place(next, opts, paths);
        // The command line's --listen stays over the file's http.listen, as at start.
        applyListen(next, opts.listen);
        daemon.reload(next).catch((err: unknown) => log.error({ err: (err as Error).message }, 'reload failed'));
      });
      await daemon.run();
      // On a terminal, say in a few lines what is going on and how to stop it (JSON logs say it as fields).
      if (forPeople(config.log)) {
        process.stderr.write(
          [
            `barwatch is watching ${config.watch.roots.join(', ')}`,
            `  config:       ${configFile ?? 'built-in defaults'}`,
            `  state folder: ${config.stateDir} (${where.stateHow})`,
            `  web page:     ${daemon.url ?? 'off'}`,
            '  Ctrl-C to stop.',
            '',
          ].join('\n'),
        );
      }
    });
}
