/**
 * verl's console logger: `step:120 - critic/score/mean:0.610 - val-core/nq/acc/mean@1:0.47`.
 * Values come with 3, 6 or full decimals, or wrapped as `np.float64(0.1)`.
 */
import { JsonNumberReader } from './json.js';
import { canonicalKey, ListedRecord, toNumber } from './keys.js';
import type { MetricRecord } from './types.js';

const STEP_LINE = /(?:^|\s)step:\s*(\d+)\s+-\s+/;
const WRAPPED = /^(?:np\.)?(?:float|int)\d*\((.*)\)$/;
const SEP = ' - ';

export function looksLikeVerlConsole(text: string): boolean {
  return text.includes('step:') && STEP_LINE.test(text);
}

/** Whether a value that starts with `c` (a char code) may be read by Number alone: a digit, `-`, `+` or `.`. */
function plainNumberStart(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 45 || c === 43 || c === 46;
}

/**
 * Reads verl step lines. verl writes the same keys in the same order on every step, so the keys
 * of the last line and their series names are kept: a line whose every part is a known key at
 * its place followed by a plain number is read without slicing or canonicalising a key
 * (a ListedRecord). Any other line is read part by part, with the same result, and teaches the
 * shape when every part of it is a value.
 */
export class VerlConsoleReader {
  private keys: string[] = [];
  private names: string[] = [];
  private readonly number = new JsonNumberReader();

  constructor(private readonly keyMap: Record<string, string> | undefined) {}

  /** Returns the record, null when the line is not a verl step line, or an error. */
  parse(text: string): MetricRecord | null | { error: string } {
    const m = STEP_LINE.exec(text);
    if (m === null) return null;
    const step = Number(m[1]);
    const from = m.index + m[0].length;
    const nums = this.keys.length === 0 ? null : this.byShape(text, from);
    if (nums !== null) return new ListedRecord(step, this.names, nums);
    return this.byParts(step, text.slice(from));
  }

  /** The values of a line with the learned shape, or null when it differs in any part. */
  private byShape(text: string, from: number): number[] | null {
    const keys = this.keys;
    const nums: number[] = [];
    let pos = from;
    let i = 0;
    const number = this.number;
    while (pos < text.length) {
      const key = keys[i];
      // A slice compared whole: startsWith walks a matching key character by character (~3x slower here).
      if (key === undefined || text.slice(pos, pos + key.length) !== key) return null;
      const at = pos + key.length;
      if (text.charCodeAt(at) !== 58 || !plainNumberStart(text.charCodeAt(at + 1))) return null;
      // A number in JSON's spelling that reaches the next ` - ` (or the end) is read in place;
      // anything else (`.5`, `1.`, a space before the separator) by Number() of its text.
      let v = number.read(text, at + 1);
      let end = number.end;
      if (v === undefined || (end !== text.length && !text.startsWith(SEP, end))) {
        end = text.indexOf(SEP, pos);
        if (end === -1) end = text.length;
        v = Number(text.slice(at + 1, end));
      }
      if (Number.isNaN(v)) return null;
      nums.push(v);
      i++;
      pos = end + SEP.length;
    }
    return i === keys.length ? nums : null;
  }

  private byParts(step: number, body: string): MetricRecord | { error: string } {
    const values: Record<string, number> = {};
    const keys: string[] = [];
    const names: string[] = [];
    let clean = true;
    for (const part of body.split(SEP)) {
      const colon = part.lastIndexOf(':');
      const key = colon <= 0 ? '' : part.slice(0, colon).trim();
      let raw = colon <= 0 ? '' : part.slice(colon + 1).trim();
      // np.float64(0.1), float(0.1), int(3): only a value that starts with a letter can be wrapped.
      const c0 = raw.charCodeAt(0);
      if (c0 >= 97 && c0 <= 122) {
        const w = WRAPPED.exec(raw);
        if (w !== null) raw = w[1]!;
        clean = false;
      }
      const v = toNumber(raw);
      if (v === undefined || key === '') {
        if (part !== '') clean = false;
        continue;
      }
      const name = canonicalKey(key, this.keyMap);
      if (key !== part.slice(0, colon) || Object.hasOwn(values, name)) clean = false;
      values[name] = v;
      keys.push(key);
      names.push(name);
    }
    if (names.length === 0) return { error: 'verl step line without values' };
    // The shape is learned only from a line the fast path would read the same way.
    this.keys = clean ? keys : [];
    this.names = clean ? names : [];
    return { kind: 'metrics', step, values };
  }
}
