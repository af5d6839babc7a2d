/**
 * Opening a followed file to read it without touching its access time, where the system allows
 * it (O_NOATIME: Linux, for a file the daemon's user owns). Under relatime a read after each
 * append writes the file's inode (its atime is then older than its mtime): one more inode change
 * for the journal at every line a trainer logs, and a watchdog reading a log is no reason for the
 * log to look read. Where it is refused (a file of another user: EPERM) the file is opened as
 * usual, and that file is not asked again.
 */
import { constants, promises as fsp } from 'node:fs';

/** 0 where the platform has no such flag. */
const NOATIME: number = (constants as { O_NOATIME?: number }).O_NOATIME ?? 0;
/** Files whose owner is not the daemon's user: opened without the flag (forgotten past REFUSED_MAX, so a daemon that sees many such files over days keeps a bounded list). */
const refused = new Set<string>();
const REFUSED_MAX = 4096;

export async function openToRead(file: string, opts: { nonblock?: boolean } = {}): Promise<fsp.FileHandle> {
  const flags = constants.O_RDONLY | (opts.nonblock === true ? constants.O_NONBLOCK : 0);
  if (NOATIME !== 0 && !refused.has(file)) {
    try {
      return await fsp.open(file, flags | NOATIME);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
      if (refused.size >= REFUSED_MAX) refused.clear();
      refused.add(file);
    }
  }
  return fsp.open(file, flags);
}
