/**
 * Silences (`barwatch silence add --run GLOB --detector ID --for 2h --comment ...`), stored in
 * `<state_dir>/silences.json`. A silenced alert is not notified; it still resolves, quietly.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Alert } from './types.js';
import { writeAtomic } from '../state/atomic.js';
import { makePrivateDirSync, readPrivateSync } from '../state/private.js';
import { nodeCrypto } from '../util/lazy.js';

export interface Silence {
  id: string;
  /** Glob over the run path: `*` matches anything but `/`, `**` anything, `?` one character. */
  run: string;
  /** A detector id, or `*`. */
  detector: string;
  createdAt: string;
  endsAt: string;
  comment: string;
}

/** The longest run glob a silence takes (a path of a few folders is far shorter). */
export const MAX_GLOB = 1024;

type GlobToken = { kind: 'char'; c: string } | { kind: 'one' } | { kind: 'star' } | { kind: 'any' };

/**
 * A matcher for a run glob (`*` anything but `/`, `**` anything, `?` one character but `/`) that
 * runs in time linear in the path times the glob's length, whatever the glob: it follows every
 * place in the glob at once (no backtracking, unlike a RegExp built from it, which took seconds
 * on `**` repeated before a letter that does not match).
 */
export function globMatcher(glob: string): (path: string) => boolean {
  const tokens: GlobToken[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    let t: GlobToken;
    if (c === '*' && glob[i + 1] === '*') {
      t = { kind: 'any' };
      i++;
    } else if (c === '*') t = { kind: 'star' };
    else if (c === '?') t = { kind: 'one' };
    else t = { kind: 'char', c };
    // Stars in a row match what the widest of them matches.
    const last = tokens[tokens.length - 1];
    if ((t.kind === 'star' || t.kind === 'any') && (last?.kind === 'star' || last?.kind === 'any')) {
      if (t.kind === 'any') tokens[tokens.length - 1] = t;
      continue;
    }
    tokens.push(t);
  }
  const m = tokens.length;
  const starAt = tokens.map((t) => t.kind === 'star' || t.kind === 'any');
  /** Adds the places reachable from `at` by stars matching nothing. */
  const close = (set: Uint8Array): void => {
    for (let i = 0; i < m; i++) if (set[i] === 1 && starAt[i]) set[i + 1] = 1;
  };
  return (path) => {
    let cur = new Uint8Array(m + 1);
    let next = new Uint8Array(m + 1);
    cur[0] = 1;
    close(cur);
    for (const c of path) {
      next.fill(0);
      let alive = false;
      for (let i = 0; i < m; i++) {
        if (cur[i] !== 1) continue;
        const t = tokens[i]!;
        if (t.kind === 'any' || (t.kind === 'star' && c !== '/')) next[i] = 1;
        else if ((t.kind === 'one' && c !== '/') || (t.kind === 'char' && t.c === c)) next[i + 1] = 1;
        else continue;
        alive = true;
      }
      if (!alive) return false;
      close(next);
      [cur, next] = [next, cur];
    }
    return cur[m] === 1;
  };
}

export class SilenceStore {
  private list: Silence[] = [];
  private mtime = -1;
  /** Counts the times the list read from the file changed (see `revision`). */
  private changes = 0;

  /** `warn` hears once of a silences file that cannot be read (then no silence applies). */
  constructor(
    readonly file: string,
    private readonly warn?: (message: string) => void,
  ) {}

  /** Re-reads the file when it changed (the CLI writes it while the daemon runs). */
  load(): Silence[] {
    let m: number | undefined;
    try {
      // (Looked at every second: a missing file answers undefined, not an error made and thrown.)
      m = statSync(this.file, { throwIfNoEntry: false })?.mtimeMs;
    } catch {
      m = undefined;
    }
    if (m === undefined) {
      // Gone: no silence applies, and a file put back (even with its old mtime) is read again.
      if (this.mtime !== -1 || this.list.length > 0) this.changes++;
      this.mtime = -1;
      this.list = [];
      return this.list;
    }
    if (m !== this.mtime) {
      this.mtime = m;
      this.changes++;
      try {
        const v = JSON.parse(readPrivateSync(this.file)) as unknown;
        if (!Array.isArray(v)) throw new Error('not a list');
        this.list = v as Silence[];
      } catch (err) {
        this.list = [];
        this.warn?.(
          `cannot read ${this.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); no silence applies until it is fixed or rewritten by \`barwatch silence add\``,
        );
      }
    }
    return this.list;
  }

  /** Changes whenever the list of silences does (the file is looked at): equal revisions, the same silences. */
  get revision(): number {
    this.load();
    return this.changes;
  }

  /** When the first of the silences active at `now` ends (ms; Infinity when none is active). */
  nextEnd(now: number): number {
    let first = Infinity;
    for (const s of this.list) {
      const end = Date.parse(s.endsAt);
      if (end > now && end < first) first = end;
    }
    return first;
  }

  active(now: number): Silence[] {
    return this.load().filter((s) => Date.parse(s.endsAt) > now);
  }

  /** Which silence, of those active at `now`, covers an alert: the file is looked at once per matcher. */
  matcher(now: number): (a: Alert) => Silence | null {
    const list = this.active(now).map((s) => ({ s, run: globMatcher(typeof s.run === 'string' ? s.run.slice(0, MAX_GLOB) : '') }));
    return (a) => list.find(({ s, run }) => (s.detector === '*' || s.detector === a.finding.detector) && run(a.finding.run))?.s ?? null;
  }

  /** Adds a silence; a run glob longer than MAX_GLOB is refused (RangeError). */
  async add(s: Omit<Silence, 'id' | 'createdAt'>, now: number): Promise<Silence> {
    if (s.run.length > MAX_GLOB) throw new RangeError(`the run glob is ${s.run.length} characters long; at most ${MAX_GLOB}`);
    const silence: Silence = { id: nodeCrypto().randomUUID().slice(0, 8), createdAt: new Date(now).toISOString(), ...s };
    const list = this.load().filter((x) => Date.parse(x.endsAt) > now);
    list.push(silence);
    makePrivateDirSync(path.dirname(this.file));
    await writeAtomic(this.file, JSON.stringify(list, null, 2));
    this.mtime = -1;
    return silence;
  }

  async remove(id: string): Promise<boolean> {
    const list = this.load();
    const next = list.filter((s) => s.id !== id);
    if (next.length === list.length) return false;
    await writeAtomic(this.file, JSON.stringify(next, null, 2));
    this.mtime = -1;
    return true;
  }
}
