/** `barwatch summary`: the nightly summary built now from the daemon's saved state. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { ReadState } from '../pipeline/pipeline.js';
import { RunRegistry } from '../runs/registry.js';
import { loadState } from '../state/file.js';
import { stateLayout } from '../state/layout.js';
import { channelCommon } from '../config/load.js';
import { EXIT, fail } from './common.js';
import { noStateHelp, sayWhere, setup } from './setup.js';

export function registerSummary(program: Command): void {
  program
    .command('summary')
    .description('build the nightly summary now from the daemon state; print it, or send it with --send')
    .argument('[paths...]', 'the PATHs the daemon watches, when it was started with them (its state folder is theirs)')
    .option('-c, --config <file>', 'configuration file (YAML), as barwatch watch finds it')
    .option('--state-dir <dir>', "the daemon's state folder (its 'watching' line names it)")
    .option('--send', 'send it to summary.channels')
    .option('--html <file>', 'also write it, with its charts, as one HTML file for a browser')
    .action(async (paths: string[], opts: { config?: string; stateDir?: string; send?: boolean; html?: string }) => {
      const where = setup(opts, paths);
      sayWhere(where);
      const config = where.config;
      // The state file's schema loads with the command that reads it, not at every start (issue 32).
      const { fitReadState } = await import('../pipeline/state-schema.js');
      const { state, problems } = await loadState<ReadState>(stateLayout(config.stateDir).state, fitReadState);
      for (const p of problems) process.stderr.write(`barwatch: ${p}\n`);
      if (state === null) fail(noStateHelp(config.stateDir, where.stateHow));
      const runs = RunRegistry.from(state.runs, config.stats).all();
      const [{ buildNotifiers }, { sendSummary, summaryOf }] = await Promise.all([
        import('../notifiers/index.js'),
        import('../summary/send.js'),
      ]);
      const findings = state.engine?.findings ?? [];
      const s = await summaryOf(config, runs, Date.now(), opts.send === true || opts.html !== undefined, findings);
      if (opts.html !== undefined) {
        const { standaloneHtml } = await import('../summary/build.js');
        writeFileSync(opts.html, standaloneHtml(s));
        process.stderr.write(`barwatch: summary written to ${path.resolve(opts.html)}\n`);
      }
      if (opts.send !== true) {
        process.stdout.write(`${s.subject}\n\n${s.text}\n`);
        return;
      }
      const notifiers = buildNotifiers(config.notify, channelCommon(config));
      const results = await sendSummary(config, notifiers, s);
      for (const n of notifiers) await n.close?.();
      for (const r of results) process.stdout.write(`${r.channel}: ${r.ok ? 'sent' : `not sent: ${r.error}`}\n`);
      if (results.length === 0) process.stdout.write('summary.channels is empty: nothing sent\n');
      process.exitCode = results.every((r) => r.ok) ? EXIT.ok : EXIT.findings;
    });
}
