/**
 * Following local folders without chokidar: one fs.watch (inotify) per folder, no watcher per file.
 * A folder's watch reports both its entries coming and going ('rename': the folder is listed again
 * and the difference reported as add and unlink) and the files in it growing ('change' of a file
 * already followed: reported as it is, with no listing and no stat; a 'rename' of a followed
 * name is reported as 'renamed', so its reader stats the path again). chokidar re-listed a folder
 * and stat'ed its entries after every append to any file in it, and kept a second watch on each
 * file; at 4,000 appends a second that was most of barwatch's cost (BENCHMARKS.md, "Following growing files").
 * Polling (`watch.poll`, for NFS) stays with chokidar (watcher.ts).
 */
import { promises as fsp, watch as fsWatch, type FSWatcher, type Stats } from 'node:fs';
import path from 'node:path';
import { classifyFile } from '../parsers/index.js';
import { ignoredBy, type WatcherOptions, type WatchEvent } from './watcher.js';

const ROOT_WAIT_MS = 500;
/**
 * Watch failures that are limits of the machine, not faults of the folder: the inotify watch quota
 * (ENOSPC, fs.inotify.max_user_watches), the inotify instances or descriptors (EMFILE, ENFILE). Such
 * a folder stays followed: it is listed at every rescan and watched again once a watch is free.
 */
const LIMITS = new Set(['ENOSPC', 'EMFILE', 'ENFILE']);
/**
 * Every folder is listed again once in this many rescans (the daemon's sweeps): a share of the
 * folders at each, each folder's share fixed by its path (relistShare), so the relisting's cost
 * is spread over the sweeps instead of coming whole at one sweep in ten.
 */
export const RELIST_EVERY = 10;

/** Which of the RELIST_EVERY rescans lists `dir` again (FNV-1a of its path): the same for as long as it is followed. */
export function relistShare(dir: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < dir.length; i++) h = Math.imul(h ^ dir.charCodeAt(i), 0x01000193);
  return (h >>> 0) % RELIST_EVERY;
}

interface Folder {
  /** Null while the folder could not be watched (a limit: see LIMITS). */
  watch: FSWatcher | null;
  /**
   * Entries followed in it: files by name, each to its path (the one string every later event
   * of the file hands on, so the daemon's maps, keyed by it, compare it by identity: a path made
   * afresh at each event was hashed and compared character by character in each of them), and
   * folders watched in turn.
   */
  files: Map<string, string>;
  dirs: Set<string>;
  /** A listing under way, and whether another was asked for meanwhile. */
  scanning: Promise<void> | null;
  again: boolean;
  /** The rescan, of every RELIST_EVERY, that lists it again (relistShare). */
  share: number;
}

/** Folders followed without a watch because of a limit of the machine (see LIMITS), and which. */
export interface Unwatched {
  folders: number;
  code: string | null;
}

export interface Following {
  /**
   * Looks again at roots that did not exist, tries again to watch the folders a limit kept from
   * being watched (and lists them), and now and then lists every folder again (the daemon's sweep).
   */
  rescan(): Promise<void>;
  unwatched(): Unwatched;
  close(): Promise<void>;
}

export async function startTreeWatcher(
  opts: WatcherOptions,
  onEvent: (event: WatchEvent, file: string) => void,
  onError: (err: Error) => void,
  /** The count of folders a limit keeps from being watched went from none to some, or back to none. */
  onLimit: (u: Unwatched) => void = () => undefined,
): Promise<Following> {
  const folders = new Map<string, Folder>();
  /** Folders followed without a watch, with the code that refused it. */
  const limited = new Map<string, string>();
  const noteLimit = (dir: string, code: string | null): void => {
    const before = limited.size;
    if (code === null) limited.delete(dir);
    else limited.set(dir, code);
    if ((before === 0) !== (limited.size === 0)) onLimit(unwatched());
  };
  const unwatched = (): Unwatched => ({ folders: limited.size, code: limited.values().next().value ?? null });
  let closed = false;
  const ignored = ignoredBy(opts, onError);
  const fail = (err: unknown, p: string): void => {
    const e = err as NodeJS.ErrnoException;
    onError(Object.assign(new Error(`${p}: ${e.code ?? e.message}`), { code: e.code, path: p }));
  };

  const forget = (dir: string): void => {
    const f = folders.get(dir);
    if (f === undefined) return;
    folders.delete(dir);
    f.watch?.close();
    for (const file of f.files.values()) {
      opts.reach.forget(file);
      onEvent('unlink', file);
    }
    for (const d of f.dirs) forget(d);
    opts.reach.forget(dir);
    noteLimit(dir, null);
  };

  /** Lists `dir` and reports what came and went; folders new to it are watched and listed in turn. */
  const list = async (dir: string, f: Folder): Promise<void> => {
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (code === 'ENOENT' || code === 'ENOTDIR') forget(dir);
      // Out of descriptors: listed again at each rescan until a listing goes through.
      else if (LIMITS.has(code)) noteLimit(dir, code);
      else fail(err, dir);
      return;
    }
    if (f.watch !== null) noteLimit(dir, null);
    const files = new Map<string, string>();
    const dirs = new Set<string>();
    for (const e of entries) {
      const known = f.files.get(e.name);
      const p = known ?? path.join(dir, e.name);
      let stats: Stats;
      if (e.isFile() || e.isDirectory()) {
        // Known entries need no stat: the listing's type is enough to keep them.
        if (e.isFile() && known !== undefined) {
          files.set(e.name, known);
          continue;
        }
        if (e.isDirectory() && f.dirs.has(p)) {
          dirs.add(p);
          continue;
        }
      }
      try {
        stats = await fsp.stat(p);
      } catch (err) {
        // A broken or looping link is named; an entry gone since the listing is not news.
        if (e.isSymbolicLink()) fail(err, p);
        continue;
      }
      // A FIFO or a device named like a log is reported as one: its reader refuses it by name (ENOTFILE).
      if (ignored(p, stats)) continue;
      if (stats.isDirectory()) dirs.add(p);
      else if (classifyFile(p) !== null) files.set(e.name, p);
    }
    for (const [name, p] of f.files)
      if (!files.has(name)) {
        opts.reach.forget(p);
        onEvent('unlink', p);
      }
    for (const [name, p] of files) if (!f.files.has(name)) onEvent('add', p);
    for (const d of f.dirs) if (!dirs.has(d)) forget(d);
    const fresh = [...dirs].filter((d) => !f.dirs.has(d));
    f.files = files;
    f.dirs = dirs;
    for (const d of fresh) await follow(d);
  };

  /** Lists a folder now, or once more after the listing under way. */
  const scan = (dir: string): Promise<void> => {
    const f = folders.get(dir);
    if (f === undefined || closed) return Promise.resolve();
    if (f.scanning !== null) {
      f.again = true;
      return f.scanning;
    }
    f.scanning = (async () => {
      do {
        f.again = false;
        await list(dir, f);
      } while (f.again && !closed && folders.get(dir) === f);
    })().finally(() => {
      f.scanning = null;
    });
    return f.scanning;
  };

  /**
   * Starts a folder's watch. A limit of the machine leaves it without one (listed at each rescan
   * meanwhile); another failure stops following it.
   */
  const arm = (dir: string, f: Folder): boolean => {
    try {
      f.watch = fsWatch(dir, { persistent: true }, (type, name) => {
        if (closed) return;
        // An event names an entry of the folder (never '.', '..' or a path): as a listing does.
        const file = name === null ? undefined : f.files.get(name);
        if (file !== undefined) {
          // The hot path: an append to a file followed here.
          if (type === 'change') return onEvent('change', file);
          // Its name was moved, replaced or removed: the reader looks at the path again.
          onEvent('renamed', file);
        }
        void scan(dir);
      });
      f.watch.on('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'EPERM') fail(err, dir);
        forget(dir);
      });
      noteLimit(dir, null);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (LIMITS.has(code)) {
        noteLimit(dir, code);
        return true;
      }
      folders.delete(dir);
      noteLimit(dir, null);
      if (code !== 'ENOENT') fail(err, dir);
      return false;
    }
  };

  /** Watches a folder (its watch first, then its listing: nothing written between the two is missed). */
  const follow = async (dir: string): Promise<void> => {
    if (folders.has(dir) || closed) return;
    const f: Folder = { watch: null, files: new Map(), dirs: new Set(), scanning: null, again: false, share: relistShare(dir) };
    folders.set(dir, f);
    if (arm(dir, f)) await scan(dir);
  };

  const roots = opts.roots.map((r) => r.path);
  /** Follows the roots that exist; true when every root is followed. */
  const start = async (): Promise<boolean> => {
    let all = true;
    for (const root of roots) {
      if (folders.has(root)) continue;
      const st = await fsp.stat(root).catch(() => null);
      if (st?.isDirectory() === true) await follow(root);
      else all = false;
    }
    return all;
  };
  // A root that does not exist yet is looked for twice a second until it does (the daemon said it waits for it).
  let waiting: NodeJS.Timeout | null = null;
  if (!(await start())) {
    let busy = false;
    waiting = setInterval(() => {
      if (busy) return;
      busy = true;
      void start()
        .then((all) => {
          if (all && waiting !== null) {
            clearInterval(waiting);
            waiting = null;
          }
        })
        .finally(() => (busy = false));
    }, ROOT_WAIT_MS);
    // Not unref'd: like a folder's watch, waiting for a root keeps the daemon alive.
  }
  // inotify reports every entry that comes or goes, unless its queue overflows (a burst of
  // thousands of events; Node does not say so): every folder is listed again now and then, a
  // share of them at each rescan (800 folders listed at once took ~80 ms of the main thread).
  let rescans = 0;
  return {
    async rescan() {
      await start();
      // A folder without a watch or whose listing failed: watched now if a watch is free, and
      // listed (it raised no event).
      const bare = [...limited.keys()];
      for (const d of bare) {
        const f = folders.get(d);
        if (f !== undefined && f.watch === null) arm(d, f);
      }
      const share = rescans++ % RELIST_EVERY;
      const listed = new Set(bare);
      for (const [d, f] of folders) if (f.share === share) listed.add(d);
      await Promise.all([...listed].map((d) => scan(d)));
    },
    unwatched,
    close() {
      closed = true;
      if (waiting !== null) clearInterval(waiting);
      for (const f of folders.values()) f.watch?.close();
      folders.clear();
      limited.clear();
      return Promise.resolve();
    },
  };
}
