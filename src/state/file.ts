/**
 * The state file: one JSON document whose sections (file offsets, run statistics, findings,
 * alerts) are saved together so they always agree. This module knows the envelope (version, save
 * time) and how a save survives a crash; what the sections hold is up to whoever saves them.
 * On start the temporary file of an interrupted save is preferred when it is complete (a crash
 * between fsync and rename). A state file that does not read is moved aside and barwatch starts
 * over from the logs.
 */
import { promises as fsp } from 'node:fs';
import { READ_NOFOLLOW } from './private.js';

/** Bumped when a section changes shape in a way an older barwatch cannot read. */
export const STATE_VERSION = 1;

export interface StateEnvelope {
  version: number;
  savedAt: string;
}

export interface LoadedState<S extends StateEnvelope> {
  state: S | null;
  /** What was wrong, for a warning: files moved aside. */
  problems: string[];
}

async function readJson(file: string): Promise<{ ok: true; value: unknown } | { ok: false; missing: boolean; why: string }> {
  let text: string;
  try {
    text = await fsp.readFile(file, { encoding: 'utf8', flag: READ_NOFOLLOW });
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

/**
 * Reads the state saved in `file`. `sections` checks the parts beyond the envelope (a state of
 * this version whose sections do not check is treated as unusable, like one that does not parse).
 */
export async function loadState<S extends StateEnvelope>(
  file: string,
  sections: (v: Record<string, unknown>) => boolean,
  now = Date.now(),
): Promise<LoadedState<S>> {
  const valid = (v: unknown): v is S =>
    v !== null && typeof v === 'object' && (v as StateEnvelope).version === STATE_VERSION && sections(v as Record<string, unknown>);
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
