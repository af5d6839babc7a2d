/**
 * Watching the roots for files that appear, grow, and vanish with chokidar: used when polling
 * (`watch.poll`, NFS), where chokidar earns its place; local folders are followed by
 * tree-watcher.ts. The filters here (isIgnored, folderGuard) serve both.
 * Folders are watched, not single files, so a file replaced by rename keeps being followed.
 * `awaitWriteFinish` is off: training logs grow forever.
 */
import path from 'node:path';
import { realpathSync, type Stats } from 'node:fs';
import { watch, type FSWatcher } from 'chokidar';
import { classifyFile } from '../parsers/index.js';
import { skipDir, wandbInternal } from './discover.js';
import type { Reach } from './reach.js';

export interface WatchRoot {
  path: string;
  /** When set, only these entries directly under the root are watched. */
  only?: readonly string[];
}

export interface WatcherOptions {
  roots: WatchRoot[];
  poll: boolean;
  pollIntervalMs: number;
  /** Never watched (barwatch's own state folder). */
  exclude: string[];
  /** Which symlinks are followed and how much each root may hold, shared with the catch-up's discovery. */
  reach: Reach;
}

/**
 * What a watcher reports of a file. 'renamed' (the folder watcher only): the file's name was
 * renamed, created or removed in its folder, so it may now lead to another file or none.
 */
export type WatchEvent = 'add' | 'change' | 'unlink' | 'renamed';

export function isIgnored(p: string, stats: Stats | undefined, opts: WatcherOptions): boolean {
  const abs = path.resolve(p);
  for (const root of opts.roots) if (abs === root.path) return false;
  for (const ex of opts.exclude) if (abs === ex || abs.startsWith(ex + path.sep)) return true;
  const name = path.basename(abs);
  const parent = path.dirname(abs);
  for (const root of opts.roots) {
    if (root.only !== undefined && parent === root.path && !root.only.includes(name)) return true;
  }
  if (wandbInternal(parent, name)) return true;
  if (stats?.isDirectory()) return skipDir(name);
  if (stats?.isFile()) return classifyFile(abs) === null;
  // No stats yet: decide by name only; unknown names are looked at again with stats.
  return skipDir(name);
}

/**
 * Folders reached twice through symlinks (a loop, or two links to one folder) are watched once:
 * the first path to a real folder wins and the others are ignored, reported once each.
 */
export function folderGuard(onRepeat: (dir: string, real: string) => void): (dir: string) => boolean {
  const seen = new Map<string, string>();
  /** Folders already judged the first path to their real folder: asked again on every change, answered without a realpath. */
  const firsts = new Set<string>();
  return (dir: string): boolean => {
    if (firsts.has(dir)) return false;
    let real: string;
    try {
      real = realpathSync(dir);
    } catch {
      return false;
    }
    const first = seen.get(real);
    if (first === undefined) {
      seen.set(real, dir);
      firsts.add(dir);
      return false;
    }
    if (first === dir) return false;
    onRepeat(dir, real);
    return true;
  };
}

/**
 * The one filter both watchers apply: a path is not followed when isIgnored says so, when it is a
 * folder reached again through a link (folderGuard), or when the reach refuses it (a link out of
 * the roots, a root over its limits). A refusal is passed to `onError` (the daemon logs each once).
 */
export function ignoredBy(opts: WatcherOptions, onError: (err: Error) => void): (p: string, stats?: Stats) => boolean {
  const repeated = folderGuard((dir, real) => {
    onError(
      Object.assign(new Error(`${dir} leads back to ${real} (symlink loop or repeated folder); not followed`), {
        code: 'ELOOP',
        path: dir,
      }),
    );
  });
  return (p, stats) => {
    const abs = path.resolve(p);
    if (isIgnored(abs, stats, opts)) return true;
    if (stats === undefined) return false;
    if (stats.isDirectory() && repeated(abs)) return true;
    if (opts.roots.some((r) => r.path === abs)) return false;
    const r = opts.reach.admit(abs, stats.isDirectory());
    if (r === null) return false;
    if (r.message !== '') onError(Object.assign(new Error(`${abs}: ${r.message}`), { code: r.code, path: abs }));
    return true;
  };
}

export function startWatcher(
  opts: WatcherOptions,
  onEvent: (event: WatchEvent, file: string) => void,
  onError: (err: Error) => void,
): Promise<FSWatcher> {
  const ignored = ignoredBy(opts, onError);
  const w = watch(
    opts.roots.map((r) => r.path),
    {
      persistent: true,
      ignoreInitial: false,
      followSymlinks: true,
      usePolling: opts.poll,
      interval: opts.pollIntervalMs,
      binaryInterval: opts.pollIntervalMs,
      atomic: false,
      awaitWriteFinish: false,
      ignorePermissionErrors: false,
      ignored,
    },
  );
  w.on('add', (p) => onEvent('add', path.resolve(p)));
  w.on('change', (p) => onEvent('change', path.resolve(p)));
  w.on('unlink', (p) => {
    opts.reach.forget(path.resolve(p));
    onEvent('unlink', path.resolve(p));
  });
  w.on('unlinkDir', (p) => opts.reach.forget(path.resolve(p)));
  w.on('error', (err) => onError(err as Error));
  return new Promise((resolve) => w.once('ready', () => resolve(w)));
}
