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
 * A piece is encoded once, straight into the buffer, in cuts that surely fit (three bytes a unit
 * at most); Buffer.byteLength would read every piece once more (a 40 MB state: ~70 ms a save),
 * and a buffer of its own for a large piece was allocated and faulted in at each save.
 */
async function writePieces(fh: fsp.FileHandle, pieces: readonly string[]): Promise<void> {
  const buf = spare ?? Buffer.allocUnsafe(WRITE_BUFFER);
  spare = null;
  try {
    await writeThrough(fh, pieces, buf);
  } finally {
    spare = buf;
  }
}

/**
 * The buffer of the last save, lent to the next: a fresh 1 MiB buffer for each save was mapped
 * and faulted in page by page, then unmapped (a daemon saves every 30 s). Null while a save holds it.
 */
let spare: Buffer | null = null;

/** A piece is cut where the buffer has room for fewer units than this: the buffer is written first. */
const LEAST_CUT = 4096;

async function writeThrough(fh: fsp.FileHandle, pieces: readonly string[], buf: Buffer): Promise<void> {
  let used = 0;
  for (const piece of pieces) {
    for (let at = 0; at < piece.length;) {
      const room = Math.floor((buf.length - used) / MOST_BYTES_PER_UNIT);
      if (room < piece.length - at && room < LEAST_CUT) {
        await writeAll(fh, buf, used);
        used = 0;
        continue;
      }
      // A piece longer than the room goes in cuts (a slice shares the piece's characters, no
      // copy), never between the two halves of a surrogate pair.
      let end = Math.min(piece.length, at + room);
      if (end < piece.length && isHighSurrogate(piece.charCodeAt(end - 1))) end--;
      used += buf.write(at === 0 && end === piece.length ? piece : piece.slice(at, end), used);
      at = end;
    }
  }
  await writeAll(fh, buf, used);
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
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
