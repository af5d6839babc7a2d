/** `barwatch validate`: checks a configuration and lists every problem. */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/load.js';
import { EXIT } from './common.js';

/** Where a configuration is looked for when none is named, in order. */
const DEFAULT_PLACES = ['$BARWATCH_CONFIG', './barwatch.yaml', '$XDG_CONFIG_HOME/barwatch/barwatch.yaml', '/etc/barwatch/barwatch.yaml'];

function candidates(): string[] {
  const env = process.env['BARWATCH_CONFIG'];
  const xdg = process.env['XDG_CONFIG_HOME'] || path.join(homedir(), '.config');
  return [...(env ? [env] : []), path.resolve('barwatch.yaml'), path.join(xdg, 'barwatch', 'barwatch.yaml'), '/etc/barwatch/barwatch.yaml'];
}

/** The first configuration file found where DEFAULT_PLACES says, or null. */
export function defaultConfigFile(): string | null {
  return candidates().find((f) => existsSync(f)) ?? null;
}

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check a configuration file; lists every problem (exit 0 valid, 2 invalid)')
    .option('-c, --config <file>', `configuration file (YAML); without it, the first of ${DEFAULT_PLACES.join(', ')}`)
    .action((opts: { config?: string }) => {
      const file = opts.config ?? defaultConfigFile();
      if (file === null) {
        process.stderr.write(
          `barwatch: no configuration to check: give --config FILE (looked for ${candidates().join(', ')}; without one, barwatch runs on its defaults)\n`,
        );
        process.exitCode = EXIT.usage;
        return;
      }
      if (opts.config === undefined) process.stdout.write(`checking ${file} (no --config given)\n`);
      try {
        const config = loadConfig(file);
        // A root may appear later (the daemon waits for it): a warning, not a problem.
        config.watch.roots.forEach((root, i) => {
          if (!existsSync(root))
            process.stderr.write(`${config.file}: watch.roots[${i}]: warning: ${root} does not exist yet (barwatch will wait for it)\n`);
        });
        const smtp = config.notify.email?.smtp;
        if (smtp?.pass !== undefined) {
          if (smtp.secure) process.stdout.write(`${config.file}: notify.email.smtp: the password is sent only over TLS (secure: true)\n`);
          else if (smtp.requireTls)
            process.stdout.write(`${config.file}: notify.email.smtp: the password is sent only after STARTTLS (require_tls)\n`);
          else
            process.stderr.write(
              `${config.file}: notify.email.smtp.allow_plaintext_auth: warning: the password goes to ${smtp.host}:${smtp.port} without TLS when the server offers no STARTTLS\n`,
            );
        }
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
