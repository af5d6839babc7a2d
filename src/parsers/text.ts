/** Clean-up shared by the free-text formats: ANSI colours, Ray prefixes, timestamps. */

// CSI sequences (colours, cursor moves) and OSC sequences.
// eslint-disable-next-line no-control-regex -- ESC and BEL are what these sequences are made of
const ANSI = /\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*(?:\x07|\x1b\\)/g;
// `(TaskRunner pid=123)`, `(WorkerDict pid=456, ip=10.0.0.1)`
const RAY_PREFIX = /^\s*\([A-Za-z_][\w.]*\s+pid=\d+[^)]*\)\s*/;
// `[2026-11-30 10:00:00]`, `[2026-11-30T10:00:00.123Z]`
const BRACKET_TIME = /^\s*\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]\s*/;
// `2025-05-22 07:03:31,997	INFO ...` (Python logging)
const LOGGING_TIME = /^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[.,](\d+))?/;

export function stripAnsi(s: string): string {
  return s.indexOf('\x1b') === -1 ? s : s.replace(ANSI, '');
}

export interface CleanLine {
  text: string;
  time?: number;
}

function parseStamp(stamp: string): number | undefined {
  const iso = stamp.replace(' ', 'T').replace(',', '.');
  const t = Date.parse(/Z|[+-]\d\d:?\d\d$/.test(iso) ? iso : iso + 'Z');
  return Number.isNaN(t) ? undefined : t;
}

/** Removes colour codes and the prefixes SPEC 3.3 names; keeps the time a prefix carried. */
export function cleanLine(raw: string): CleanLine {
  let text = stripAnsi(raw);
  let time: number | undefined;
  for (let i = 0; i < 3; i++) {
    const ray = RAY_PREFIX.exec(text);
    if (ray !== null) {
      text = text.slice(ray[0].length);
      continue;
    }
    const bt = BRACKET_TIME.exec(text);
    if (bt !== null) {
      time ??= parseStamp(bt[1]!);
      text = text.slice(bt[0].length);
      continue;
    }
    break;
  }
  if (time === undefined) {
    const lt = LOGGING_TIME.exec(text);
    if (lt !== null) time = parseStamp(lt[2] !== undefined ? `${lt[1]}.${lt[2]}` : lt[1]!);
  }
  return time === undefined ? { text } : { text, time };
}
