/** `barwatch silence add|list|remove`: the silences the daemon reads from its state folder. */
import type { Command } from 'commander';
import { SilenceStore } from '../alerting/silences.js';
import { DETECTOR_IDS } from '../detectors/index.js';
import { stateLayout } from '../state/layout.js';
import { parseDuration } from '../util/duration.js';
import { configOrExit, fail } from './common.js';

export function registerSilence(program: Command): void {
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
      if (opts.detector !== '*' && !DETECTOR_IDS.includes(opts.detector))
        fail(`--detector: unknown detector ${opts.detector} (one of ${DETECTOR_IDS.join(', ')})`);
      const now = Date.now();
      const s = await new SilenceStore(stateLayout(config.stateDir).silences).add(
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
      const list = new SilenceStore(stateLayout(config.stateDir).silences).active(Date.now());
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
      if (!(await new SilenceStore(stateLayout(config.stateDir).silences).remove(id))) fail(`no silence with id ${id}`);
      process.stdout.write(`silence ${id} removed\n`);
    });
}
