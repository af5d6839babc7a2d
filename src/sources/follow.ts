/**
 * How a daemon follows its roots, chosen in one place: polled folders (watch.poll, for NFS) go
 * through chokidar, whose events are checked (a recheck read after each, a stat before each
 * read); local folders through the folder watcher (tree-watcher.ts), whose events are trusted and
 * whose files are read with synchronous calls.
 */
import { startTreeWatcher, type Unwatched } from './tree-watcher.js';
import { startWatcher, type WatcherOptions, type WatchEvent } from './watcher.js';

/** What follows the roots: the folder watcher, or chokidar's (which has no rescan and no limits to report). */
export interface Watching {
  close(): Promise<void>;
  rescan?: () => Promise<void>;
  unwatched?: () => Unwatched;
}

export interface Follow {
  /** chokidar: its events drop some changes (a recheck read after each is needed). */
  chokidar: boolean;
  /** Files are read with synchronous calls (local folders). */
  sync: boolean;
  /** A watcher's event is trusted: no stat of a path before each read while no rename was reported. */
  trustEvents: boolean;
  start(
    opts: WatcherOptions,
    onEvent: (event: WatchEvent, file: string) => void,
    onError: (err: Error) => void,
    onLimit: (u: Unwatched) => void,
  ): Promise<Watching>;
}

export function followFor(poll: boolean): Follow {
  if (poll) return { chokidar: true, sync: false, trustEvents: false, start: (o, ev, err) => startWatcher(o, ev, err) };
  return { chokidar: false, sync: true, trustEvents: true, start: (o, ev, err, limit) => startTreeWatcher(o, ev, err, limit) };
}
