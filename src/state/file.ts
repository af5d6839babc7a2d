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

/** A part of a state that did not fit its shape: where it was, why, and what it held. */
export interface SetAside {
  part: string;
  why: string;
  value: unknown;
}

/**
 * Checks the sections beyond the envelope: returns the state with the parts that fit (pushing
 * the others to `aside`), or null when nothing of it is usable.
 */
export type FitState<S> = (v: Record<string, unknown>, aside: SetAside[]) => S | null;

/** Most parts set aside that a warning names; the file beside the state holds them all. */
const ASIDE_NAMED = 5;

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
 * Reads the state saved in `file`. `fit` checks the parts beyond the envelope: parts that do not
 * fit are written beside the state file (`state.json.set-aside-<time>`, for a look) and left out
 * with a warning, the rest is used; a state of another version, or one `fit` finds nothing usable
 * in, is moved aside whole, like one that does not parse.
 */
export async function loadState<S extends StateEnvelope>(file: string, fit: FitState<S>, now = Date.now()): Promise<LoadedState<S>> {
  const problems: string[] = [];
  const usable = (v: unknown): { state: S; aside: SetAside[] } | null => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || (v as StateEnvelope).version !== STATE_VERSION) return null;
    const aside: SetAside[] = [];
    const state = fit(v as Record<string, unknown>, aside);
    return state === null ? null : { state, aside };
  };
  const tmp = `${file}.tmp`;
  const t = await readJson(tmp);
  const fromTmp = t.ok ? usable(t.value) : null;
  if (fromTmp !== null) {
    await fsp.rename(tmp, file).catch(() => undefined);
    return { state: fromTmp.state, problems: await setAside(file, fromTmp.aside, now, problems) };
  }
  if (!t.ok && !t.missing) problems.push(`incomplete ${tmp} ignored (${t.why})`);
  if (t.ok || !t.missing) await fsp.rm(tmp, { force: true }).catch(() => undefined);
  const m = await readJson(file);
  const fromFile = m.ok ? usable(m.value) : null;
  if (fromFile !== null) return { state: fromFile.state, problems: await setAside(file, fromFile.aside, now, problems) };
  if (!m.ok && m.missing) return { state: null, problems };
  const why = m.ok ? 'not a barwatch state file of this version' : m.why;
  const dest = await moveAside(file, now);
  problems.push(`state file ${file} is unusable (${why}); moved to ${dest}; rebuilding from the logs`);
  return { state: null, problems };
}

/** Writes the parts that did not fit beside the state file, and says so in `problems`. */
async function setAside(file: string, aside: SetAside[], now: number, problems: string[]): Promise<string[]> {
  if (aside.length === 0) return problems;
  const dest = `${file}.set-aside-${new Date(now).toISOString().replace(/[:.]/g, '-')}`;
  const text = JSON.stringify(aside, null, 1);
  const wrote = await fsp.writeFile(dest, text, { mode: 0o600, flag: 'wx' }).then(
    () => true,
    () => false,
  );
  const named = aside
    .slice(0, ASIDE_NAMED)
    .map((a) => `${a.part} (${a.why})`)
    .join('; ');
  const more = aside.length > ASIDE_NAMED ? ` and ${aside.length - ASIDE_NAMED} more` : '';
  problems.push(
    `state file ${file}: ${aside.length} part${aside.length === 1 ? '' : 's'} did not fit and ${aside.length === 1 ? 'was' : 'were'} left out: ${named}${more}; ${wrote ? `moved to ${dest}` : 'could not be saved beside it'}; what they held is rebuilt from the logs`,
  );
  return problems;
}
