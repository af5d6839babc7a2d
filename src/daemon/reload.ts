/**
 * What a new configuration may change in a running daemon: detector parameters, alerting
 * options and channels, and the log level apply at once; the watched roots, what is followed
 * under them (symlinks, limits), the state folder and the HTTP listener need a restart (the running values are kept and the log says so).
 */
import type { Config } from '../config/load.js';

export interface ReloadPlan {
  /** The new config with what cannot change live kept as it runs. */
  applied: Config;
  /** Keys whose new values wait for a restart. */
  needRestart: string[];
}

/** `singleRun`: the daemon watches one run folder it was started in, not the config's roots. */
export function planReload(running: Config, next: Config, singleRun: boolean): ReloadPlan {
  const needRestart: string[] = [];
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  if (!singleRun && !same(running.watch.roots, next.watch.roots)) needRestart.push('watch.roots');
  const { follow, maxFiles, maxFolders } = running.watch.reach;
  if (follow !== next.watch.reach.follow) needRestart.push('watch.follow_symlinks');
  if (maxFiles !== next.watch.reach.maxFiles) needRestart.push('watch.max_files');
  if (maxFolders !== next.watch.reach.maxFolders) needRestart.push('watch.max_folders');
  if (running.stateDir !== next.stateDir) needRestart.push('state_dir');
  if (!same(running.http, next.http)) needRestart.push('http.listen');
  const applied: Config = {
    ...next,
    watch: { ...next.watch, roots: running.watch.roots, reach: running.watch.reach },
    stateDir: running.stateDir,
    http: running.http,
  };
  return { applied, needRestart };
}
