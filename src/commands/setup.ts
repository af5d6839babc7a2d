/**
 * Where every command finds its configuration and the daemon's state folder: one way, shared by
 * watch, analyze, compare, validate, test-alert, silence, summary and demo, so a helper command
 * reads the state the daemon writes.
 *
 * The configuration: `--config FILE`, else `$BARWATCH_CONFIG`, else the first that exists of
 * `./barwatch.yaml`, `$XDG_CONFIG_HOME/barwatch/barwatch.yaml` (`~/.config/...`) and
 * `/etc/barwatch/barwatch.yaml`; else the built-in defaults.
 *
 * The state folder: `--state-dir DIR`, else the config file's `state_dir`, else, where PATHs are
 * given (the daemon's, or a helper's naming the same PATHs), the user's state folder for those
 * roots (`$XDG_STATE_HOME/barwatch/<name>-<hash>`), else `.barwatch` beside the config file, else
 * `./.barwatch` (this folder watched as one run).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { Config } from '../config/load.js';
import { defaultStateDir } from '../state/layout.js';
import { configOrExit, fail } from './common.js';

/** The places a configuration is looked for when none is named, in order, as the help says them. */
export const CONFIG_PLACES = [
  '$BARWATCH_CONFIG',
  './barwatch.yaml',
  '$XDG_CONFIG_HOME/barwatch/barwatch.yaml',
  '/etc/barwatch/barwatch.yaml',
];

/** The files a configuration is looked for in, after $BARWATCH_CONFIG, in order. */
export function configCandidates(env: NodeJS.ProcessEnv = process.env): string[] {
  const xdg = env['XDG_CONFIG_HOME'] || path.join(homedir(), '.config');
  return [path.resolve('barwatch.yaml'), path.join(xdg, 'barwatch', 'barwatch.yaml'), '/etc/barwatch/barwatch.yaml'];
}

/** The configuration file to use and how it was found; null file: the built-in defaults. */
export function findConfigFile(given: string | undefined, env: NodeJS.ProcessEnv = process.env): { file: string | null; how: string } {
  if (given !== undefined) return { file: path.resolve(given), how: '--config' };
  const fromEnv = env['BARWATCH_CONFIG'];
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!existsSync(fromEnv)) fail(`BARWATCH_CONFIG names ${fromEnv}, which does not exist`);
    return { file: path.resolve(fromEnv), how: '$BARWATCH_CONFIG' };
  }
  const places = configCandidates(env);
  const found = places.find((f) => existsSync(f));
  if (found !== undefined) return { file: found, how: found === places[0] ? 'found in this folder' : 'found' };
  return { file: null, how: `no file at ${places.join(', ')}` };
}

export interface Setup {
  config: Config;
  /** The config and the state folder, and how each was found, in one line for people. */
  said: string;
  /** How the state folder was found, for a helper that finds nothing there. */
  stateHow: string;
  /** The config file was found by barwatch, not named (a daemon reloads it all the same). */
  configFile: string | null;
}

/**
 * The configuration (a broken one ends the command with every problem listed) and the state
 * folder, as every command finds them. `paths`: the run folders or roots the command was given.
 */
export function setup(opts: { config?: string; stateDir?: string }, paths: readonly string[] = []): Setup {
  const { file, how } = findConfigFile(opts.config);
  const config = configOrExit(file ?? undefined);
  const stateHow = place(config, opts, paths);
  const said = `config ${file === null ? `built-in defaults (${how})` : `${file} (${how})`}; state folder ${config.stateDir} (${stateHow})`;
  return { config, said, stateHow, configFile: file };
}

/**
 * Puts the command line's PATHs and state folder into a loaded config, by the rules above (also
 * for a config re-read on SIGHUP); returns how the state folder was found.
 */
export function place(config: Config, opts: { stateDir?: string }, paths: readonly string[]): string {
  if (paths.length > 0) config.watch.roots = paths.map((p) => path.resolve(p));
  if (opts.stateDir !== undefined) {
    config.stateDir = path.resolve(opts.stateDir);
    return '--state-dir';
  }
  if (config.given.stateDir) return `state_dir in ${config.file}`;
  if (paths.length > 0) {
    config.stateDir = defaultStateDir(config.watch.roots);
    return "the user's state folder for these paths";
  }
  return config.file === null ? 'this folder as one run' : `beside ${config.file}`;
}

/** Says on stderr which config and state folder a command uses. */
export function sayWhere(s: Setup): void {
  process.stderr.write(`barwatch: ${s.said}\n`);
}

/** What a helper command says when the state folder it found holds no daemon state. */
export function noStateHelp(dir: string, how: string): string {
  return `no daemon state in ${dir} (${how}): start barwatch watch with the same config and PATHs, or name the daemon's folder with --state-dir DIR (its start-up line "using config ...; state folder ..." names it), or give the PATHs it watches`;
}
