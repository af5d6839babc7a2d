/** `barwatch demo`: the quick start (commands/demo-run.ts does the work). */
import { Option, type Command } from 'commander';
import type { SimLogger } from '../sim/writers.js';
import { applyListen, EXIT } from './common.js';
import { setup } from './setup.js';

export function registerDemo(program: Command): void {
  program
    .command('demo')
    .description('watch a simulated run go wrong, then come healthy with the recommended fix (about 90 s)')
    .option(
      '-c, --config <file>',
      'configuration file (YAML; found as every command finds it); its Slack/email channels get the alerts too',
    )
    .option('--fast', 'as fast as the machine goes (a few seconds)')
    .option('--seed <n>', 'random seed', '1')
    .option('--keep', 'keep the simulated runs')
    .addOption(
      new Option(
        '--logger <logger>',
        "how the simulated training is written: 'files' (SPEC 3.1's layout) or 'wandb' (W&B run files in BAR-RAG's official layout)",
      )
        .choices(['files', 'wandb'])
        .default('files'),
    )
    .option('--listen <host:port|off>', 'where the live page is served (default http.listen, 127.0.0.1:9464)')
    .action(async (opts: { config?: string; fast?: boolean; seed: string; keep?: boolean; listen?: string; logger: SimLogger }) => {
      const where = setup(opts);
      const config = where.config;
      if (where.configFile !== null) process.stderr.write(`barwatch: config ${where.configFile}: its channels get the demo's alerts too\n`);
      applyListen(config, opts.listen);
      const { demo } = await import('./demo-run.js');
      const r = await demo({
        config,
        fast: opts.fast === true,
        seed: Number(opts.seed),
        out: process.stdout,
        keep: opts.keep === true,
        logger: opts.logger,
      });
      process.exitCode = r.first.length > 0 && r.second.length === 0 ? EXIT.ok : EXIT.findings;
    });
}
