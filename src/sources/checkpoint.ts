/**
 * The state file: offsets of every file and the statistics of every run, saved together so they
 * always agree. Written to a temp file, fsynced, renamed over the old one, and the folder fsynced.
 * On start the temp file is preferred when it is complete (a crash between fsync and rename).
 * A state file that does not read is moved aside and barwatch starts over from the logs.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { AlertingJSON } from '../alerting/service.js';
import type { EngineJSON } from '../detectors/engine.js';
import type { RunJSON } from '../runs/run.js';
import type { FileCheckpoint, FileCounters } from './file-source.js';

export const STATE_VERSION = 1;

export interface StateFile {
  version: number;
  savedAt: string;
  files: Record<string, FileCheckpoint>;
  runs: RunJSON[];
  /** Findings that hold, and when each detector last ran. */
  engine?: EngineJSON;
  /** Alerts and notification groups. */
  alerting?: AlertingJSON;
  /** Counters of files that were removed (kept so totals never go down). */
  retired?: Record<string, FileCounters>;
}

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

function valid(v: unknown): v is StateFile {
  const s = v as StateFile;
  return (
    s !== null &&
    typeof s === 'object' &&
    s.version === STATE_VERSION &&
    typeof s.files === 'object' &&
    s.files !== null &&
    Array.isArray(s.runs)
  );
}

export interface LoadedState {
  state: StateFile | null;
  /** What was wrong, for a warning: files moved aside. */
  problems: string[];
}

async function readJson(file: string): Promise<{ ok: true; value: unknown } | { ok: false; missing: boolean; why: string }> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { ok: false, missing: code === 'ENOENT', why: code ?? 'unreadable' };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, missing: false, why: `not valid JSON (${text.length} bytes)` };
  }
}

async function moveAside(file: string, now: number): Promise<string> {
  const dest = `${file}.corrupt-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  await fsp.rename(file, dest).catch(() => undefined);
  return dest;
}

export async function loadState(file: string, now = Date.now()): Promise<LoadedState> {
  const problems: string[] = [];
  const tmp = `${file}.tmp`;
  const t = await readJson(tmp);
  if (t.ok && valid(t.value)) {
    await fsp.rename(tmp, file).catch(() => undefined);
    return { state: t.value, problems };
  }
  if (!t.ok && !t.missing) problems.push(`incomplete ${tmp} ignored (${t.why})`);
  if (t.ok || !t.missing) await fsp.rm(tmp, { force: true }).catch(() => undefined);
  const m = await readJson(file);
  if (m.ok && valid(m.value)) return { state: m.value, problems };
  if (!m.ok && m.missing) return { state: null, problems };
  const why = m.ok ? 'not a barwatch state file of this version' : m.why;
  const dest = await moveAside(file, now);
  problems.push(`state file ${file} is unusable (${why}); moved to ${dest}; rebuilding from the logs`);
  return { state: null, problems };
}
