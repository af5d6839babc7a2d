/** `barwatch validate`: checks a configuration and lists every problem. */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/load.js';
import { EXIT } from './common.js';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check a configuration file; lists every problem (exit 0 valid, 2 invalid)')
    .requiredOption('-c, --config <file>', 'configuration file (YAML)')
    .action((opts: { config: string }) => {
      try {
        const config = loadConfig(opts.config);
        // A root may appear later (the daemon waits for it): a warning, not a problem.
        config.watch.roots.forEach((root, i) => {
          if (!existsSync(root))
            process.stderr.write(`${config.file}: watch.roots[${i}]: warning: ${root} does not exist yet (barwatch will wait for it)\n`);
        });
        process.stdout.write(`${config.file}: valid\n`);
        process.exitCode = EXIT.ok;
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        process.stderr.write(`${err.message}\n`);
        process.stderr.write(`${err.problems.length} problem(s) found\n`);
        process.exitCode = EXIT.usage;
      }
    });
}
