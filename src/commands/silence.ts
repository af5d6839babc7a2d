/** `barwatch silence add|list|remove`: the silences the daemon reads from its state folder. */
import type { Command } from 'commander';
import path from 'node:path';
import { globMatcher, MAX_GLOB, SilenceStore } from '../alerting/silences.js';
import { readFileSync } from 'node:fs';
import type { ReadState } from '../pipeline/pipeline.js';
import { DETECTOR_IDS } from '../detectors/index.js';
import { stateLayout } from '../state/layout.js';
import { parseDuration } from '../util/duration.js';
import { fail } from './common.js';
import { noStateHelp, sayWhere, setup, type Setup } from './setup.js';

/** The runs the daemon's saved state knows, read without touching the file (the daemon may be saving it). */
function knownRuns(stateFile: string): string[] | null {
  try {
    const s = JSON.parse(readFileSync(stateFile, 'utf8')) as Partial<ReadState>;
    return Array.isArray(s.runs) ? s.runs.map((r) => r.id) : [];
  } catch {
    return null;
  }
}

const PATHS = ['[paths...]', 'the PATHs the daemon watches, when it was started with them (its state folder is theirs)'] as const;

/** The config and state folder as barwatch watch finds them, said on stderr; a warning where no daemon state is. */
function where(opts: { config?: string; stateDir?: string }, paths: string[]): Setup & { runs: string[] | null } {
  const s = setup(opts, paths);
  sayWhere(s);
  const runs = knownRuns(stateLayout(s.config.stateDir).state);
  if (runs === null) process.stderr.write(`barwatch: warning: ${noStateHelp(s.config.stateDir, s.stateHow)}\n`);
  return { ...s, runs };
}

function common(cmd: Command): Command {
  return cmd
    .option('-c, --config <file>', 'configuration file (YAML), as barwatch watch finds it')
    .option('--state-dir <dir>', "the daemon's state folder (its start-up line names it)");
}

export function registerSilence(program: Command): void {
  const silence = program.command('silence').description('silence alerts of matching runs and detectors (stored in state_dir)');
  common(
    silence
      .command('add')
      .description('add a silence')
      .argument(...PATHS),
  )
    .requiredOption('--run <glob>', 'run path glob (* within a folder name, ** across folders)')
    .option('--detector <id>', 'detector id, or * for all', '*')
    .requiredOption('--for <duration>', 'how long, e.g. 2h')
    .option('--comment <text>', 'why', '')
    .action(
      async (
        paths: string[],
        opts: { run: string; detector: string; for: string; comment: string; config?: string; stateDir?: string },
      ) => {
        const { config, runs: ids } = where(opts, paths);
        const ms = parseDuration(opts.for);
        if (ms === null) fail(`--for: ${opts.for} is not a duration such as 30m or 2h`);
        if (opts.detector !== '*' && !DETECTOR_IDS.includes(opts.detector))
          fail(`--detector: unknown detector ${opts.detector} (one of ${DETECTOR_IDS.join(', ')})`);
        const now = Date.now();
        // Runs are known by absolute paths: a relative one is taken from here, as the shell would.
        const run = path.isAbsolute(opts.run) ? opts.run : path.join(process.cwd(), opts.run);
        const layout = stateLayout(config.stateDir);
        if (run.length > MAX_GLOB) fail(`--run: the glob is ${run.length} characters long; at most ${MAX_GLOB}`);
        const matches = globMatcher(run);
        if (ids !== null && ids.length > 0 && !ids.some((id) => matches(id))) {
          process.stderr.write(
            `barwatch: warning: ${run} matches none of the ${ids.length} run(s) in ${config.stateDir} (the silence is added all the same)\n`,
          );
        }
        const s = await new SilenceStore(layout.silences).add(
          { run, detector: opts.detector, endsAt: new Date(now + ms).toISOString(), comment: opts.comment },
          now,
        );
        process.stdout.write(`silence ${s.id}: ${s.detector} on ${s.run} until ${s.endsAt}${s.comment ? ` (${s.comment})` : ''}\n`);
      },
    );
  common(
    silence
      .command('list')
      .description('list active silences')
      .argument(...PATHS),
  ).action((paths: string[], opts: { config?: string; stateDir?: string }) => {
    const { config } = where(opts, paths);
    const list = new SilenceStore(stateLayout(config.stateDir).silences).active(Date.now());
    if (list.length === 0) process.stdout.write('no active silences\n');
    for (const s of list) process.stdout.write(`${s.id}  ${s.detector}  ${s.run}  until ${s.endsAt}${s.comment ? `  ${s.comment}` : ''}\n`);
  });
  common(
    silence
      .command('remove')
      .description('remove a silence')
      .argument('<id>', 'silence id (from silence list)')
      .argument(...PATHS),
  ).action(async (id: string, paths: string[], opts: { config?: string; stateDir?: string }) => {
    const { config } = where(opts, paths);
    const store = new SilenceStore(stateLayout(config.stateDir).silences);
    // Any unique beginning of an id, as `silence list` prints them.
    if (id.trim() === '') fail('give a silence id (from barwatch silence list), or its beginning');
    const matches = store.load().filter((s) => s.id.startsWith(id));
    if (matches.length === 0) fail(`no silence with an id starting ${id}`);
    if (matches.length > 1) fail(`${id} begins ${matches.length} silence ids (${matches.map((s) => s.id).join(', ')}); give more of it`);
    await store.remove(matches[0]!.id);
    process.stdout.write(`silence ${matches[0]!.id} removed\n`);
  });
}
