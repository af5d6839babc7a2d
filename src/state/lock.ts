/**
 * One daemon per state folder: `<state_dir>/lock` holds the PID of the daemon using the folder
 * and that process's start time (so a PID reused after a crash is not taken for the daemon). A
 * lock whose process is gone (kill -9, a crash) is stale and taken over.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';

export interface LockHolder {
  pid: number;
  started: string | null;
}

/** The start time of a process (clock ticks after boot, /proc/<pid>/stat field 22), or null where /proc is not there. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(h: LockHolder): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(h.pid);
  return h.started === null || now === null || now === h.started;
}

function read(file: string): LockHolder | null {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockHolder>;
    return typeof v.pid === 'number' ? { pid: v.pid, started: typeof v.started === 'string' ? v.started : null } : null;
  } catch {
    return null;
  }
}

export class StateLock {
  private held = false;
  private readonly onExit = (): void => this.release();

  private constructor(readonly file: string) {}

  /**
   * Takes the lock at `file`: the lock, or the live process holding it. `tookOver` names the
   * dead process whose stale lock was replaced.
   */
  static acquire(file: string): { lock: StateLock; tookOver: LockHolder | null } | { heldBy: LockHolder } {
    let tookOver: LockHolder | null = null;
    for (let attempt = 0; attempt < 2; attempt++) {
      let fd: number;
      try {
        fd = openSync(file, 'wx', 0o600);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const h = read(file);
        if (h !== null && h.pid !== process.pid && alive(h)) return { heldBy: h };
        tookOver = h;
        rmSync(file, { force: true });
        continue;
      }
      try {
        writeSync(fd, JSON.stringify({ pid: process.pid, started: startTime(process.pid) }) + '\n');
      } finally {
        closeSync(fd);
      }
      const lock = new StateLock(file);
      lock.held = true;
      process.once('exit', lock.onExit);
      return { lock, tookOver };
    }
    throw Object.assign(new Error(`cannot take the lock ${file}: another process keeps recreating it`), { code: 'ELOCKED' });
  }

  release(): void {
    if (!this.held) return;
    this.held = false;
    process.removeListener('exit', this.onExit);
    const h = read(this.file);
    if (h === null || h.pid === process.pid) rmSync(this.file, { force: true });
  }
}
