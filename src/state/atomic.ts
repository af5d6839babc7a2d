/**
 * Replacing a file so that a crash at any moment leaves either the old file or the new one: write
 * a temporary file, fsync it, rename it over the target, fsync the folder. The temporary file is
 * created exclusively and 0600 (a symlink planted in its place is removed, never written through)
 * and the rename replaces whatever is at the target, a symlink included, without following it.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { CREATE_EXCLUSIVE, PRIVATE_FILE_MODE } from './private.js';

/** Pieces are copied into a buffer of this size and written when it fills. */
const WRITE_BUFFER = 1 << 20;

async function writeAll(fh: fsp.FileHandle, buf: Buffer, length: number): Promise<void> {
  for (let at = 0; at < length;) at += (await fh.write(buf, at, length - at)).bytesWritten;
}

/** UTF-8 takes at most this many bytes for a UTF-16 code unit of a string. */
const MOST_BYTES_PER_UNIT = 3;

/**
 * Writes `pieces` one after the other through one buffer: no string of the whole text is built.
 * A piece is encoded once, straight into the buffer, when it surely fits (three bytes a unit at
 * most); Buffer.byteLength would read every piece once more (a 40 MB state: ~70 ms a save).
 */
async function writePieces(fh: fsp.FileHandle, pieces: readonly string[]): Promise<void> {
  const buf = Buffer.allocUnsafe(WRITE_BUFFER);
  let used = 0;
  for (const piece of pieces) {
    const most = piece.length * MOST_BYTES_PER_UNIT;
    if (used + most > buf.length) {
      await writeAll(fh, buf, used);
      used = 0;
    }
    if (most > buf.length) {
      const bytes = Buffer.from(piece);
      await writeAll(fh, bytes, bytes.length);
    } else used += buf.write(piece, used);
  }
  await writeAll(fh, buf, used);
}

/** Creates `tmp` exclusively; a leftover (an interrupted save, or a planted symlink) is unlinked first. */
async function openExclusive(tmp: string): Promise<fsp.FileHandle> {
  try {
    return await fsp.open(tmp, CREATE_EXCLUSIVE, PRIVATE_FILE_MODE);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  await fsp.unlink(tmp);
  return fsp.open(tmp, CREATE_EXCLUSIVE, PRIVATE_FILE_MODE);
}

/**
 * Replaces `file` with `data` (a text, or the pieces of one) so that a crash at any moment leaves
 * either the old file or the new one.
 */
export async function writeAtomic(file: string, data: string | readonly string[]): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await openExclusive(tmp);
  try {
    await fh.chmod(PRIVATE_FILE_MODE);
    if (typeof data === 'string') await fh.writeFile(data, 'utf8');
    else await writePieces(fh, data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, file);
  try {
    const dir = await fsp.open(path.dirname(file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  } catch {
    // Some file systems refuse fsync on a folder; the rename is still atomic.
  }
}
