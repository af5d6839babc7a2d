/**
 * How far barwatch reaches from its roots. A symlink is followed only as `watch.follow_symlinks`
 * allows: `inside` (the default) follows a link whose target stays inside a root, `all` follows
 * every link, `none` follows none. The state folder is never read as input, whatever leads to it.
 * And each root holds at most `maxFiles` files and `maxFolders` folders: beyond them nothing more
 * is followed and the root is named once, so a link to `/usr` or a runaway writer cannot turn
 * into hundreds of thousands of watches.
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';

export type FollowSymlinks = 'inside' | 'all' | 'none';
export const FOLLOW_SYMLINKS: readonly FollowSymlinks[] = ['inside', 'all', 'none'];

export interface ReachOptions {
  follow: FollowSymlinks;
  /** Per root. */
  maxFiles: number;
  maxFolders: number;
}

export const DEFAULT_REACH: ReachOptions = { follow: 'inside', maxFiles: 50_000, maxFolders: 20_000 };

/** Why a path is not followed: what to say after the path (once), or '' to skip it silently. */
export interface Refusal {
  code: 'ELINKOUT' | 'ELINK' | 'ETOOMANY' | 'ESTATE';
  message: string;
}

function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);
}

function realOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

interface Root {
  given: string;
  real: string;
  files: Set<string>;
  folders: Set<string>;
  full: boolean;
}

export class Reach {
  private readonly roots: Root[];
  private readonly excluded: string[];

  constructor(
    roots: readonly string[],
    /** Never read (barwatch's own state folder). */
    exclude: readonly string[],
    readonly opts: ReachOptions = DEFAULT_REACH,
  ) {
    this.roots = roots.map((r) => ({ given: r, real: realOr(r), files: new Set(), folders: new Set(), full: false }));
    this.excluded = exclude.flatMap((e) => [e, realOr(e)]);
  }

  /**
   * Whether `p` (an absolute path under a root, a file or a folder as `isDir` says) is followed;
   * null when it is. `real` is its resolved path (computed when not given). A path already
   * admitted stays admitted, so asking twice never counts twice.
   */
  admit(p: string, isDir: boolean, real?: string): Refusal | null {
    const root = this.roots.find((r) => within(p, r.given));
    // Asked again on every change in a followed folder: an admitted path costs a lookup, no realpath.
    const seen = root === undefined ? undefined : isDir ? root.folders : root.files;
    if (seen?.has(p) === true) return null;
    if (this.excluded.some((e) => within(p, e))) return { code: 'ESTATE', message: '' };
    const resolved = real ?? realOr(p);
    if (this.excluded.some((e) => within(resolved, e))) return { code: 'ESTATE', message: '' };
    if (root === undefined || seen === undefined || p === root.given) return null;
    const expected = path.join(root.real, path.relative(root.given, p));
    if (resolved !== expected) {
      // A symlink on the way from the root to p.
      if (this.opts.follow === 'none')
        return { code: 'ELINK', message: `a symlink to ${resolved}; not followed (watch.follow_symlinks: none)` };
      if (this.opts.follow === 'inside' && !this.roots.some((r) => within(resolved, r.real)))
        return {
          code: 'ELINKOUT',
          message: `leads to ${resolved}, outside the watched roots; not followed (watch.follow_symlinks: inside; set it to all to follow)`,
        };
    }
    const limit = isDir ? this.opts.maxFolders : this.opts.maxFiles;
    if (seen.size >= limit) {
      const first = !root.full;
      root.full = true;
      return {
        code: 'ETOOMANY',
        message: first
          ? `the root ${root.given} holds more than ${limit} ${isDir ? 'folders' : 'files'} to follow; this one and any more are not followed (watch.${isDir ? 'max_folders' : 'max_files'})`
          : '',
      };
    }
    seen.add(p);
    return null;
  }

  /** Forgets a path that went away (and, for a folder, what was under it): it no longer counts against its root's limits. */
  forget(p: string): void {
    for (const r of this.roots) {
      if (!within(p, r.given)) continue;
      for (const set of [r.files, r.folders]) for (const x of set) if (within(x, p)) set.delete(x);
    }
  }
}
