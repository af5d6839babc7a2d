/** `barwatch validate`: checks a configuration and lists every problem. */
import { endpointOf } from '../notifiers/answers.js';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config/load.js';
import { EXIT } from './common.js';
import { CONFIG_PLACES, configCandidates, findConfigFile } from './setup.js';

export function registerValidate(program: Command): void {
  program
    .command('validate')
    .description('check a configuration file; lists every problem (exit 0 valid, 2 invalid)')
    .option('-c, --config <file>', `configuration file (YAML); without it, the first of ${CONFIG_PLACES.join(', ')}`)
    .action((opts: { config?: string }) => {
      const { file, how } = findConfigFile(opts.config);
      if (file === null) {
        process.stderr.write(
          `barwatch: no configuration to check: give --config FILE (looked for $BARWATCH_CONFIG, ${configCandidates().join(', ')}; without one, every command runs on the built-in defaults)\n`,
        );
        process.exitCode = EXIT.usage;
        return;
      }
      if (opts.config === undefined) process.stdout.write(`checking ${file} (${how}; every command uses it when no --config is given)\n`);
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
        // Each webhook: its channel name, preset and where it posts (host and port only: the URL is a secret).
        for (const w of config.notify.webhook ?? []) {
          const u = new URL(w.url.reveal());
          const extras = [
            w.secret !== undefined ? 'signed' : '',
            Object.keys(w.headers).length > 0 ? `headers ${Object.keys(w.headers).join(', ')}` : '',
            w.template !== undefined ? 'template' : '',
          ]
            .filter((x) => x !== '')
            .join('; ');
          process.stdout.write(
            `${config.file}: ${w.name}: ${w.preset} to ${u.protocol}//${endpointOf(u.toString())}${extras !== '' ? ` (${extras})` : ''}\n`,
          );
        }
        // Each action: exactly what runs, for which detector and severity.
        for (const a of config.actions) {
          const what =
            typeof a.command === 'string' ? `/bin/sh -c ${JSON.stringify(a.command)}` : a.command.map((w) => JSON.stringify(w)).join(' ');
          process.stdout.write(
            `${config.file}: action ${a.name}: when ${a.detector === '*' ? 'any detector' : a.detector} fires at ${a.severity} or above (after alerting.for, not silenced), ${a.dryRun ? 'logs that it would run' : 'runs'} ${what} (${a.shell ? 'in a shell' : 'no shell'}, timeout ${a.timeoutMs / 1000} s, once per alert)\n`,
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
