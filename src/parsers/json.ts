/**
 * JSON as Python writes it: `json.dumps` emits bare `NaN`, `Infinity` and `-Infinity` by default.
 * Standard JSON.parse runs first (the common case stays fast); only a line it rejects and that
 * mentions one of those tokens is rewritten, outside strings, and parsed again.
 */

const NAN = '\u0000NaN';
const POS_INF = '\u0000+Inf';
const NEG_INF = '\u0000-Inf';

function revive(_key: string, value: unknown): unknown {
  if (typeof value === 'string' && value.charCodeAt(0) === 0) {
    if (value === NAN) return NaN;
    if (value === POS_INF) return Infinity;
    if (value === NEG_INF) return -Infinity;
  }
  return value;
}

/** Parses one JSON text, accepting Python's non-finite tokens. Throws SyntaxError like JSON.parse. */
export function parseJsonLenient(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
    return JSON.parse(replaceNonFinite(text), revive);
  }
}

function replaceNonFinite(text: string): string {
  let out = '';
  let last = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
      continue;
    }
    if (c === 34) {
      inString = true;
      continue;
    }
    let token: string | null = null;
    let len = 0;
    if (text.startsWith('NaN', i)) [token, len] = [NAN, 3];
    else if (text.startsWith('-Infinity', i)) [token, len] = [NEG_INF, 9];
    else if (text.startsWith('Infinity', i)) [token, len] = [POS_INF, 8];
    if (token !== null) {
      out += text.slice(last, i) + JSON.stringify(token);
      i += len - 1;
      last = i + 1;
    }
  }
  return out + text.slice(last);
}

/** Powers of ten a double holds exactly. */
export const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/**
 * A number of JSON text (or Python's `NaN`, `Infinity`, `-Infinity`) that starts at `start`,
 * read in place with the grammar JSON.parse applies: `end` is where it stopped. Up to 15
 * significant digits and a power of ten up to 22 are computed exactly (the integer of the digits
 * times or over an exact power of ten: one rounding, as the correctly rounded parse gives);
 * longer numbers through Number() of their text. Undefined for anything that is not a number.
 */
export class JsonNumberReader {
  end = 0;

  read(s: string, start: number): number | undefined {
    let i = start;
    let c = s.charCodeAt(i);
    const neg = c === 45; /* - */
    if (neg) c = s.charCodeAt(++i);
    if (c === 78 /* N */) return !neg && s.startsWith('NaN', i) ? this.at(i + 3, NaN) : undefined;
    if (c === 73 /* I */) return s.startsWith('Infinity', i) ? this.at(i + 8, neg ? -Infinity : Infinity) : undefined;
    let m = 0;
    let digits = 0;
    let exp = 0;
    if (c === 48 /* 0 */) c = s.charCodeAt(++i);
    else if (c >= 49 && c <= 57) {
      for (; c >= 48 && c <= 57; c = s.charCodeAt(++i)) {
        if (++digits <= 15) m = m * 10 + (c - 48);
        else exp++;
      }
    } else return undefined;
    if (c === 46 /* . */) {
      c = s.charCodeAt(++i);
      if (!(c >= 48 && c <= 57)) return undefined;
      for (; c >= 48 && c <= 57; c = s.charCodeAt(++i)) {
        if (digits === 0 && c === 48)
          exp--; // leading zeros of 0.000123
        else if (++digits <= 15) {
          m = m * 10 + (c - 48);
          exp--;
        }
      }
    }
    if (c === 101 || c === 69 /* e E */) {
      c = s.charCodeAt(++i);
      let eneg = false;
      if (c === 45 || c === 43) {
        eneg = c === 45;
        c = s.charCodeAt(++i);
      }
      if (!(c >= 48 && c <= 57)) return undefined;
      let e = 0;
      for (; c >= 48 && c <= 57; c = s.charCodeAt(++i)) if (e < 100_000) e = e * 10 + (c - 48);
      exp += eneg ? -e : e;
    }
    let v: number;
    if (digits <= 15 && exp >= -22 && exp <= 22) v = exp < 0 ? m / POW10[-exp]! : m * POW10[exp]!;
    else return this.at(i, Number(s.slice(start, i)));
    return this.at(i, neg ? -v : v);
  }

  private at(end: number, v: number): number {
    this.end = end;
    return v;
  }
}
