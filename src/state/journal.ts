/**
 * The append-only logs of the state folder (`alerts.jsonl`, `notifications.jsonl`): one JSON line
 * per event, rotated so they never grow without bound. When the current file would pass
 * `maxBytes`, or its first record is older than `maxAgeMs`, it is renamed to `<file>.1` (replacing
 * the generation before) and a new file is started: at most two generations, about 2 x maxBytes,
 * are kept. Reading streams both generations, oldest first, a line at a time.
 */
import { openSync, readSync, closeSync, renameSync, promises as fsp } from 'node:fs';
import { createInterface } from 'node:readline';
import { appendPrivate, READ_NOFOLLOW } from './private.js';

export interface JournalLimits {
  maxBytes: number;
  maxAgeMs: number;
}

/** 16 MiB or 30 days per generation, two generations kept. */
export const JOURNAL_LIMITS: JournalLimits = { maxBytes: 16 * 1024 * 1024, maxAgeMs: 30 * 86_400_000 };

/** The time of the file's first record (its `time` field), or null when it has none. */
function firstRecordTime(file: string): number | null {
  let fd: number;
  try {
    fd = openSync(file, READ_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const buf = Buffer.alloc(4096);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const line = buf.toString('utf8', 0, n).split('\n')[0] ?? '';
    const m = /"time":"([^"]+)"/.exec(line);
    const t = m?.[1] === undefined ? NaN : Date.parse(m[1]);
    return Number.isFinite(t) ? t : null;
  } finally {
    closeSync(fd);
  }
}

export class Journal {
  /** When the current generation began (its first record); undefined until looked at. */
  private startedAt: number | null | undefined;

  constructor(
    readonly file: string,
    private readonly limits: JournalLimits = JOURNAL_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  get previous(): string {
    return `${this.file}.1`;
  }

  /** Appends lines (each ending in '\n'), rotating first when the limits say so. Throws on a write failure. */
  append(lines: string): void {
    if (lines === '') return;
    appendPrivate(this.file, lines, (size) => {
      if (size === 0) {
        this.startedAt = this.now();
        return false;
      }
      this.startedAt ??= firstRecordTime(this.file);
      const old = this.startedAt !== null && this.now() - this.startedAt > this.limits.maxAgeMs;
      if (size + Buffer.byteLength(lines) <= this.limits.maxBytes && !old) return false;
      renameSync(this.file, this.previous);
      this.startedAt = this.now();
      return true;
    });
  }

  /** Every line of both generations, oldest first; missing files are empty. */
  async *lines(): AsyncGenerator<string> {
    for (const file of [this.previous, this.file]) {
      let fh;
      try {
        fh = await fsp.open(file, READ_NOFOLLOW);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const stream = fh.createReadStream({ encoding: 'utf8' });
      const rl = createInterface({ input: stream, crlfDelay: Infinity });
      try {
        for await (const line of rl) if (line.trim() !== '') yield line;
      } finally {
        rl.close();
        stream.destroy();
      }
    }
  }
}
