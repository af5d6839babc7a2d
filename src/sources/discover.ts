/**
 * Finding the files to read under a path: a run folder, a root of many runs at any depth, or a
 * single file. Folders that never hold training logs (.git, node_modules, barwatch's own state)
 * are skipped, and of W&B's folder only its runs' run files are read; symlink loops and
 * unreadable folders are reported, not fatal.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { classifyFile, type FileKind } from '../parsers/index.js';
import { placeFile, type FilePlace } from './place.js';
import { Reach } from './reach.js';

export interface FoundFile {
  file: string;
  kind: FileKind;
  place: FilePlace;
}

export interface DiscoverResult {
  files: FoundFile[];
  problems: { path: string; message: string }[];
  /** Files under the paths that are of no format barwatch reads (by name), sorted. */
  unknown: string[];
}

export const SKIP_DIRS = new Set(['.git', 'node_modules', '.barwatch', '__pycache__', '.cache', 'checkpoints']);

export function skipDir(name: string): boolean {
  return SKIP_DIRS.has(name) || (name.startsWith('.') && name !== '.' && name !== '..');
}

/** A W&B run folder: `run-<YYYYMMDD_HHMMSS>-<id>` online, `offline-run-...` offline. */
const WANDB_RUN_DIR = /^(?:offline-)?run-\d{8}_\d{6}-\w+$/;

/** What W&B keeps in `wandb/` beside its run folders: `latest-run` links to one of them, `debug*.log` to its debug logs. */
const WANDB_LINKS = /^(?:latest-run|debug(?:-internal|-cli\..*)?\.log)$/;

/** Whether a folder is a W&B run folder (`wandb/run-<ts>-<id>`). */
export function isWandbRunDir(dir: string): boolean {
  return WANDB_RUN_DIR.test(path.basename(dir)) && path.basename(path.dirname(dir)) === 'wandb';
}

/**
 * W&B's own files beside its runs' run files: in `wandb/`, `latest-run` (a link to one of its run
 * folders: each is read once, by its own name) and the links to W&B's debug logs; in a run folder,
 * everything but `run-<id>.wandb` and, in `files/`, `output.log` (W&B's copy of the console, read
 * with its run file: Pipeline.trackAt); the rest of `files/` is W&B's copies of the config and
 * requirements, `logs/` its debug logs.
 */
export function wandbInternal(dir: string, name: string): boolean {
  const parent = path.basename(dir);
  if (parent === 'wandb') return WANDB_LINKS.test(name);
  if (isWandbRunDir(dir)) return !name.endsWith('.wandb') && name !== 'files';
  if (parent === 'files' && isWandbRunDir(path.dirname(dir))) return name !== 'output.log';
  return false;
}

async function head(file: string): Promise<string> {
  const fh = await fsp.open(file, 'r');
  try {
    const buf = Buffer.alloc(4096);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.toString('utf8', 0, bytesRead);
  } finally {
    await fh.close();
  }
}

/**
 * Every file barwatch reads under `paths`, sorted; a missing path throws (a usage error). `reach`
 * says which symlinks are followed and how many files a root may hold (by default: links that
 * stay inside `paths`, reach.ts's limits).
 */
export async function discover(
  paths: string[],
  only?: (dir: string, name: string) => boolean,
  reach: Reach = new Reach(
    paths.map((p) => path.resolve(p)),
    [],
  ),
): Promise<DiscoverResult> {
  const files: FoundFile[] = [];
  const problems: DiscoverResult['problems'] = [];
  const unknown: string[] = [];
  const seenDirs = new Set<string>();
  const seenFiles = new Set<string>();

  const add = (file: string, kind: FileKind, single: boolean): void => {
    if (seenFiles.has(file)) return;
    seenFiles.add(file);
    files.push({ file, kind, place: placeFile(file, kind, single) });
  };

  const walk = async (dir: string): Promise<void> => {
    let real: string;
    try {
      real = await fsp.realpath(dir);
    } catch (err) {
      problems.push({ path: dir, message: `cannot resolve (${(err as NodeJS.ErrnoException).code})` });
      return;
    }
    if (seenDirs.has(real)) {
      if (dir !== real) problems.push({ path: dir, message: 'symlink loop or repeated folder; skipped' });
      return;
    }
    seenDirs.add(real);
    let entries;
    try {
      entries = await fsp.readdir(dir, { withFileTypes: true });
    } catch (err) {
      problems.push({ path: dir, message: `cannot list the folder (${(err as NodeJS.ErrnoException).code})` });
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (only !== undefined && !only(dir, e.name)) continue;
      if (wandbInternal(dir, e.name)) continue;
      let isDir = e.isDirectory();
      let isFile = e.isFile();
      if (e.isSymbolicLink()) {
        const st = await fsp.stat(p).catch((err: NodeJS.ErrnoException) => {
          problems.push({ path: p, message: `broken or looping symlink (${err.code})` });
          return null;
        });
        if (st === null) continue;
        isDir = st.isDirectory();
        isFile = st.isFile();
      }
      const kind = isFile ? classifyFile(p) : null;
      if (isFile && kind === null) unknown.push(p);
      if (isDir ? skipDir(e.name) : kind === null) continue;
      const refused = reach.admit(p, isDir);
      if (refused !== null) {
        if (refused.message !== '') problems.push({ path: p, message: refused.message });
        continue;
      }
      if (kind !== null) add(p, kind, false);
      else await walk(p);
    }
  };

  for (const raw of paths) {
    const p = path.resolve(raw);
    const st = await fsp.stat(p); // throws ENOENT: the caller reports a usage error
    if (st.isDirectory()) await walk(p);
    else {
      let h: string | undefined;
      try {
        h = await head(p);
      } catch (err) {
        problems.push({ path: p, message: `cannot read (${(err as NodeJS.ErrnoException).code})` });
        continue;
      }
      const kind = classifyFile(p, h);
      if (kind !== null) add(p, kind, true);
    }
  }
  files.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  unknown.sort();
  return { files, problems, unknown };
}
