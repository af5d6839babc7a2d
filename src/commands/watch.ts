/** `barwatch watch`: the daemon in the foreground; SIGTERM and SIGINT stop it, SIGHUP re-reads its config. */
import path from 'node:path';
import v8 from 'node:v8';
import type { Command } from 'commander';
import { ConfigError, formatProblem, loadConfig, type Config } from '../config/load.js';
import { createLogger, forPeople } from '../util/log.js';
import { applyListen, configOrExit, EXIT, fail } from './common.js';
import { defaultStateDir } from '../state/layout.js';

const HEAP_GROWING_PERCENT = 20;

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('follow runs as training writes them (the daemon)')
    .argument('[paths...]', 'run folders or roots of many runs (default: the config, or this folder as one run)')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .option('--listen <host:port|off>', 'where the web page, /healthz and /metrics are served (overrides http.listen)')
    .option('--no-color', 'no colours on a terminal (NO_COLOR=1 does the same)')
    .action(async (paths: string[], opts: { config?: string; listen?: string; color: boolean }) => {
      if (!opts.color) process.env['NO_COLOR'] = '1';
      // A daemon reading a long backlog makes garbage faster than V8 expects of a server, and V8
      // let the old generation grow to several times what was live before collecting it: RSS
      // grew 20% from 1M to 10M records with a retained heap that stays flat. With the heap allowed
      // to grow 20% past what the last full collection kept: 4%, the catch-up as fast
      // (BENCHMARKS.md, "Memory"). Set here, not in the unit: NODE_OPTIONS does not take this flag.
      v8.setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
      const config = configOrExit(opts.config);
      applyListen(config, opts.listen);
      const singleRun = paths.length === 0 && opts.config === undefined;
      // Paths as the shell gives them: spaces, '#', '%' and non-ASCII are file names, not URL syntax.
      if (paths.length > 0) config.watch.roots = paths.map((p) => path.resolve(p));
      // Without a config, state goes to the user's state folder, one per set of roots.
      if (paths.length > 0 && opts.config === undefined) config.stateDir = defaultStateDir(config.watch.roots);
      const log = createLogger(config.log);
      const [{ Daemon }, { StateDirInUse }] = await Promise.all([import('../daemon/daemon.js'), import('../daemon/state.js')]);
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
          next = loadConfig(opts.config);
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          for (const p of err.problems) log.error({ file: p.file, key: p.key }, formatProblem(p));
          log.error({ problems: err.problems.length }, 'SIGHUP: new configuration refused; the running one stays');
          return;
        }
        if (paths.length > 0) next.watch.roots = config.watch.roots;
        // The command line's --listen stays over the file's http.listen, as at start.
        applyListen(next, opts.listen);
        daemon.reload(next).catch((err: unknown) => log.error({ err: (err as Error).message }, 'reload failed'));
      });
      try {
        await daemon.start();
      } catch (err) {
        if (err instanceof StateDirInUse) fail(err.message);
        throw err;
      }
      // On a terminal, say in a few lines what is going on and how to stop it (JSON logs say it as fields).
      if (forPeople(config.log)) {
        process.stderr.write(
          [
            `barwatch is watching ${config.watch.roots.join(', ')}`,
            `  state folder: ${config.stateDir}`,
            `  web page:     ${daemon.url ?? 'off'}`,
            '  Ctrl-C to stop.',
            '',
          ].join('\n'),
        );
      }
    });
}
