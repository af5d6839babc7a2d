/**
 * Replacing a file so that a crash at any moment leaves either the old file or the new one: write
 * a temporary file, fsync it, rename it over the target, fsync the folder.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';

/** Pieces are copied into a buffer of this size and written when it fills. */
const WRITE_BUFFER = 1 << 20;

async function writeAll(fh: fsp.FileHandle, buf: Buffer, length: number): Promise<void> {
  for (let at = 0; at < length;) at += (await fh.write(buf, at, length - at)).bytesWritten;
}

/** Writes `pieces` one after the other through one buffer: no string of the whole text is built. */
async function writePieces(fh: fsp.FileHandle, pieces: readonly string[]): Promise<void> {
  const buf = Buffer.allocUnsafe(WRITE_BUFFER);
  let used = 0;
  for (const piece of pieces) {
    const n = Buffer.byteLength(piece);
    if (used + n > buf.length) {
      await writeAll(fh, buf, used);
      used = 0;
    }
    if (n > buf.length) await writeAll(fh, Buffer.from(piece), n);
    else used += buf.write(piece, used);
  }
  await writeAll(fh, buf, used);
}

/**
 * Replaces `file` with `data` (a text, or the pieces of one) so that a crash at any moment leaves
 * either the old file or the new one.
 */
export async function writeAtomic(file: string, data: string | readonly string[]): Promise<void> {
  const tmp = `${file}.tmp`;
  const fh = await fsp.open(tmp, 'w', 0o600);
  try {
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
