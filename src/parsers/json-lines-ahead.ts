/**
 * JSON lines read ahead on the decode thread (sources/decode-ahead.ts): a backlog of a metrics
 * JSONL file is split into lines there, and every line that is a flat object of numbers has its
 * keys and values read, so the reading thread only checks the keys against what its parser
 * learned and hands the values over (RewardHistoryParser.fromValues). Reading the numbers of a
 * line out of its text is about half of what `analyze` does with a reward_history.jsonl
 * (BENCHMARKS.md, session 32).
 *
 * Nothing here needs a parser's state. A line is read only when it is exactly a JSON object whose
 * keys are printable ASCII without escapes and whose values are numbers as JsonNumberReader reads
 * them (JSON's, and Python's NaN and Infinity): the grammar of the parser's own fast path
 * (reward-history.ts ShapedLineReader), so the parser gives the same record from the values as
 * from the text. Any other line (a string, a nested object, other bytes) is left to the parser,
 * which reads its text as before. Such a line is pure ASCII, so the part is decoded as Latin-1 in
 * one piece: the same characters as UTF-8 for every line read here.
 *
 * The lines of a part are those after its first newline: the bytes before it may continue a line
 * of the part before, which only the reading thread holds (FileTailer joins them).
 */
import { JsonNumberReader, skipSpace } from './json.js';
import type { AheadFraming } from './types.js';

/** What the decode thread read of one part's lines, as the reading thread takes it (receive). */
export interface AheadLines {
  /** Where every newline of the part is (the reading thread splits the part by them). */
  readonly newlines: Int32Array;
  /** Key lists by id, shared by every part read (an id's list is the same array every time). */
  readonly keys: readonly (readonly string[])[];
  /** Per line after the part's first newline: the id of its keys, or -1 where it was not read. */
  readonly ids: Int32Array;
  /** Where each read line's values start in `values` (one a key, in the keys' order). */
  readonly at: Int32Array;
  readonly values: Float64Array;
}

/** What crosses between the threads for one part. */
interface Decoded {
  /** Key lists given ids in this part, the first of them `first`. */
  first: number;
  newKeys: string[][];
  newlines: Int32Array;
  ids: Int32Array;
  at: Int32Array;
  values: Float64Array;
}

/**
 * Reads lines of flat objects of numbers (on the decode thread). The text between the values of
 * the last line read is kept: a line written the same way is matched piece by piece, with the
 * keys of the line before; any other is walked by the grammar.
 */
class FlatLineReader {
  private readonly number = new JsonNumberReader();
  private readonly ids = new Map<string, number>();
  readonly keys: string[][] = [];
  /** The text before each value of the last line read, and after its last; empty: none. */
  private between: string[] = [];
  private after = '';
  private lastId = -1;
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  values = new Float64Array(1 << 12);
  count = 0;

  /** The id of the keys of the line s[start, end) (end at its newline), its values appended; -1 where it is not one read here. */
  read(s: string, start: number, end: number): number {
    const from = this.count;
    if (this.between.length > 0 && this.byPieces(s, start, end)) return this.lastId;
    this.count = from;
    const id = this.byChars(s, start, end);
    if (id < 0) this.count = from;
    return id;
  }

  private push(v: number): void {
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = v;
  }

  private byPieces(s: string, start: number, end: number): boolean {
    const between = this.between;
    let i = start;
    for (let k = 0; k < between.length; k++) {
      const piece = between[k]!;
      if (s.slice(i, i + piece.length) !== piece) return false;
      const v = this.number.read(s, i + piece.length);
      if (v === undefined) return false;
      this.push(v);
      i = this.number.end;
    }
    return i + this.after.length === end && s.startsWith(this.after, i);
  }

  private byChars(s: string, start: number, end: number): number {
    let i = skipSpace(s, start);
    if (i >= end || s.charCodeAt(i) !== 123 /* { */) return -1;
    const keys: string[] = [];
    for (;;) {
      i = skipSpace(s, i + 1);
      if (i >= end || s.charCodeAt(i) !== 34) return -1;
      const k0 = i + 1;
      let j = k0;
      let c = s.charCodeAt(j);
      while (c >= 32 && c <= 126 && c !== 34 && c !== 92) c = s.charCodeAt(++j);
      if (c !== 34 || j >= end) return -1;
      keys.push(s.slice(k0, j));
      i = skipSpace(s, j + 1);
      if (i >= end || s.charCodeAt(i) !== 58 /* : */) return -1;
      i = skipSpace(s, i + 1);
      this.starts[keys.length - 1] = i;
      const v = this.number.read(s, i);
      if (v === undefined || this.number.end > end) return -1;
      this.push(v);
      i = this.number.end;
      this.ends[keys.length - 1] = i;
      i = skipSpace(s, i);
      if (i >= end) return -1;
      const c2 = s.charCodeAt(i);
      if (c2 === 125 /* } */) break;
      if (c2 !== 44 /* , */) return -1;
    }
    if (skipSpace(s, i + 1) < end) return -1;
    const n = keys.length;
    this.between = Array.from({ length: n }, (_, k) => s.slice(k === 0 ? start : this.ends[k - 1], this.starts[k]));
    this.after = s.slice(this.ends[n - 1], end);
    const name = keys.join('\n');
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.keys.push(keys) - 1;
      this.ids.set(name, id);
    }
    this.lastId = id;
    return id;
  }
}

/** The decode thread's reader (its keys' ids run over every part), and the reading thread's list of them. */
let reader: FlatLineReader | null = null;
let sent = 0;
const received: (readonly string[])[] = [];

export const JSON_LINES_AHEAD: AheadFraming = {
  decode(buf, _at, share, hurry) {
    const r = (reader ??= new FlatLineReader());
    const s = buf.toString('latin1');
    const found: number[] = [];
    for (let i = s.indexOf('\n'); i !== -1; i = s.indexOf('\n', i + 1)) found.push(i);
    const nl = Int32Array.from(found);
    const lines = Math.max(0, nl.length - 1);
    const ids = new Int32Array(lines).fill(-1);
    const at = new Int32Array(lines);
    const read = Math.floor(lines * share);
    r.count = 0;
    for (let j = 0; j < read; j++) {
      // The reading thread waits for this part: what is not read yet is left to it.
      if ((j & 255) === 0 && hurry?.() === true) break;
      at[j] = r.count;
      ids[j] = r.read(s, nl[j]! + 1, nl[j + 1]!);
    }
    const values = r.values.slice(0, r.count);
    const decoded: Decoded = { first: sent, newKeys: r.keys.slice(sent), newlines: nl, ids, at, values };
    sent = r.keys.length;
    // The bytes stay the reading thread's to split: nothing here is a record of its own.
    return {
      frames: { records: [], consumed: buf.length, badData: 0, corruptAt: null },
      decoded,
      transfer: [nl.buffer, ids.buffer, at.buffer, values.buffer],
    };
  },
  receive(decoded): AheadLines {
    const d = decoded as Decoded;
    d.newKeys.forEach((k, i) => (received[d.first + i] = k));
    return { newlines: d.newlines, keys: received, ids: d.ids, at: d.at, values: d.values };
  },
};
