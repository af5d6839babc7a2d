/** `barwatch summary`: the nightly summary built now from the daemon's saved state. */
import type { Command } from 'commander';
import { hasReadSections, type ReadState } from '../pipeline/pipeline.js';
import { RunRegistry } from '../runs/registry.js';
import { loadState } from '../state/file.js';
import { stateLayout } from '../state/layout.js';
import { configOrExit, EXIT, fail } from './common.js';

export function registerSummary(program: Command): void {
  program
    .command('summary')
    .description('build the nightly summary now from the daemon state; print it, or send it with --send')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .option('--send', 'send it to summary.channels')
    .action(async (opts: { config?: string; send?: boolean }) => {
      const config = configOrExit(opts.config);
      const { state, problems } = await loadState<ReadState>(stateLayout(config.stateDir).state, hasReadSections);
      for (const p of problems) process.stderr.write(`barwatch: ${p}\n`);
      if (state === null) fail(`no state in ${config.stateDir}: run barwatch watch first (or pass --config with its state_dir)`);
      const runs = RunRegistry.from(state.runs, config.stats).all();
      const [{ buildNotifiers }, { sendSummary, summaryOf }] = await Promise.all([
        import('../notifiers/index.js'),
        import('../summary/send.js'),
      ]);
      const s = await summaryOf(config, runs, Date.now(), opts.send === true);
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
}
