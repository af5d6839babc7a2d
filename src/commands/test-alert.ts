/** `barwatch test-alert`: one test notification through every configured channel. */
import { channelCommon } from '../config/load.js';
import type { Command } from 'commander';
import { EXIT } from './common.js';
import { sayWhere, setup } from './setup.js';

export function registerTestAlert(program: Command): void {
  program
    .command('test-alert')
    .description('send one test notification through every configured channel and report each result')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .action(async (opts: { config?: string }) => {
      const where = setup(opts);
      sayWhere(where);
      const config = where.config;
      const [{ buildNotifiers }, { newId }] = await Promise.all([import('../notifiers/index.js'), import('../alerting/dispatch.js')]);
      const notifiers = buildNotifiers(config.notify, channelCommon(config));
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
}
