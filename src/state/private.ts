/**
 * The state folder is barwatch's own: created 0700 and its files 0600 whatever the umask, and
 * nothing in it is written or read through a symlink (a link planted in place of `state.json.tmp`
 * or `alerts.jsonl` would otherwise make barwatch overwrite or append to the link's target).
 */
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeSync,
} from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Opening for an append that never follows a symlink and creates the file private (read too: see endsWhole). */
export const APPEND_NOFOLLOW = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
/** Opening a new file exclusively: fails when anything, a symlink included, is in its place. */
export const CREATE_EXCLUSIVE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
/** Reading a file of the state folder without following a symlink. */
export const READ_NOFOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW;

/** The mode that takes every permission of group and others away from `mode`, and adds none. */
function narrowed(mode: number): number | null {
  return (mode & 0o077) === 0 ? null : mode & 0o700;
}

/**
 * Creates `dir` (and its parents) and takes group and other permissions away from `dir` itself
 * (a new folder ends up 0700: mkdir's mode passes through the umask, so it is set afterwards).
 * Nothing is widened: a folder an operator made read-only stays read-only. A folder owned by
 * someone else keeps its mode.
 */
export function makePrivateDirSync(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  try {
    const mode = narrowed(statSync(dir).mode);
    if (mode !== null) chmodSync(dir, mode);
  } catch {
    // Not ours to change (a shared folder given as state_dir): left as it is.
  }
}

/** makePrivateDirSync for async callers (a mkdir and a stat of a local folder: nothing to wait for); a failure rejects. */
export function makePrivateDir(dir: string): Promise<void> {
  return new Promise((resolve) => {
    makePrivateDirSync(dir);
    resolve();
  });
}

/** Reads a file of the state folder as text; a symlink in its place is refused (ELOOP). */
export function readPrivateSync(file: string): string {
  const fd = openSync(file, READ_NOFOLLOW);
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** Writes all of `buf` to `fd`. */
export function writeAllSync(fd: number, buf: Buffer): void {
  for (let at = 0; at < buf.length;) at += writeSync(fd, buf, at, buf.length - at);
}

/** Whether the file behind `fd` (of `size` bytes) ends with a newline, or is empty. */
function endsWhole(fd: number, size: number): boolean {
  if (size === 0) return true;
  const last = Buffer.alloc(1);
  return readSync(fd, last, 0, 1, size - 1) === 1 && last[0] === 10;
}

/**
 * Appends `text` to `file`, creating it 0600; a symlink in its place is refused (ELOOP).
 * `before` sees the open descriptor's size first and may ask for the append to go elsewhere
 * (a journal rotating): it returns true when it moved the file away and the append must reopen.
 * The append is whole or absent: a write cut short (a full disk) is cut back to where it began,
 * and a file left ending mid-line (by a crash) gets a newline first, so a line is never merged
 * into the remains of another.
 */
export function appendPrivate(file: string, text: string, before?: (size: number) => boolean): void {
  const buf = Buffer.from(text);
  for (let attempt = 0; attempt < 2; attempt++) {
    const fd = openSync(file, APPEND_NOFOLLOW, PRIVATE_FILE_MODE);
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) throw Object.assign(new Error(`${file} is not a regular file`), { code: 'ENOTFILE' });
      if (attempt === 0 && before?.(st.size) === true) continue;
      if ((st.mode & 0o777) !== PRIVATE_FILE_MODE) fchmodSync(fd, PRIVATE_FILE_MODE);
      const whole = endsWhole(fd, st.size);
      try {
        writeAllSync(fd, whole ? buf : Buffer.concat([Buffer.from('\n'), buf]));
      } catch (err) {
        try {
          ftruncateSync(fd, st.size);
        } catch {
          // Nothing more to do: the next append starts with a newline (see endsWhole).
        }
        throw err;
      }
      return;
    } finally {
      closeSync(fd);
    }
  }
}
