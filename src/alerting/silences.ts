/**
 * Silences (`barwatch silence add --run GLOB --detector ID --for 2h --comment ...`), stored in
 * `<state_dir>/silences.json`. A silenced alert is not notified; it still resolves, quietly.
 */
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { Alert } from './types.js';
import { writeAtomic } from '../state/atomic.js';
import { makePrivateDirSync, readPrivateSync } from '../state/private.js';

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

export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else re += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

export class SilenceStore {
  private list: Silence[] = [];
  private mtime = -1;

  /** `warn` hears once of a silences file that cannot be read (then no silence applies). */
  constructor(
    readonly file: string,
    private readonly warn?: (message: string) => void,
  ) {}

  /** Re-reads the file when it changed (the CLI writes it while the daemon runs). */
  load(): Silence[] {
    let m: number;
    try {
      m = statSync(this.file).mtimeMs;
    } catch {
      this.list = [];
      return this.list;
    }
    if (m !== this.mtime) {
      this.mtime = m;
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

  active(now: number): Silence[] {
    return this.load().filter((s) => Date.parse(s.endsAt) > now);
  }

  /** Which silence, of those active at `now`, covers an alert: the file is looked at once per matcher. */
  matcher(now: number): (a: Alert) => Silence | null {
    const list = this.active(now).map((s) => ({ s, run: globToRegExp(s.run) }));
    return (a) =>
      list.find(({ s, run }) => (s.detector === '*' || s.detector === a.finding.detector) && run.test(a.finding.run))?.s ?? null;
  }

  async add(s: Omit<Silence, 'id' | 'createdAt'>, now: number): Promise<Silence> {
    const silence: Silence = { id: randomUUID().slice(0, 8), createdAt: new Date(now).toISOString(), ...s };
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
