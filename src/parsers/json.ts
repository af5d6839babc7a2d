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
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/** Significant digits read in place (see exactDecimal); a number with more goes through Number(). */
export const EXACT_DIGITS = 17;
const TWO53 = 2 ** 53;
/** Veltkamp's constant: splits a double into two halves whose products are exact. */
const SPLIT = 2 ** 27 + 1;
/** 2^(e - 1075): the unit in the last place of a double whose biased exponent is e. */
const ULP = Array.from({ length: 2047 }, (_, e) => 2 ** (e - 1075));
const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);
/** The double's bits are read through a typed array: the low word first on a little-endian machine. */
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
/** How close to halfway between two doubles a decimal may be for exactDecimal to decide (relative). */
const MARGIN = 2 ** -30;

/** a*b - fl(a*b), exactly (Dekker's product; `p` is fl(a*b)). */
function productError(a: number, b: number, p: number): number {
  let c = SPLIT * a;
  const ah = c - (c - a);
  const al = a - ah;
  c = SPLIT * b;
  const bh = c - (c - b);
  const bl = b - bh;
  return ah * bh - p + ah * bl + al * bh + al * bl;
}

/**
 * The double nearest to the decimal (hi * 10^loDigits + lo) * 10^exp, where hi holds the first
 * nine significant digits and lo the rest (at most EXACT_DIGITS in all), or NaN when it cannot
 * tell cheaply (the caller then reads the text with Number()). An integer part under 2^53 with a
 * power of ten up to 22 is Clinger's fast path: both operands exact, one rounding. Above 2^53
 * (most of the 16 and 17 digits Python writes for a float) the quotient by an exact power of ten
 * is checked: the remainder of the decimal less candidate times the power, computed exactly in
 * two doubles (the integer as a sum of two, Dekker's product), says whether the candidate is the
 * nearest double or its neighbour is; a decimal within 2^-30 of half a unit of halfway between
 * two doubles (a tie among them) is left to Number().
 */
export function exactDecimal(hi: number, lo: number, loDigits: number, exp: number): number {
  const big = hi * POW10[loDigits]!; // < 10^9 * 5^8 * 2^8: exact
  const s = big + lo;
  if (s < TWO53) {
    // The integer is exact (a sum that rounded would be at least 2^53).
    if (exp < 0) return exp >= -22 ? s / POW10[-exp]! : NaN;
    return exp <= 22 ? s * POW10[exp]! : NaN;
  }
  if (exp >= 0 || exp < -22 || !LITTLE_ENDIAN) return NaN;
  const e = lo - (s - big); // the integer is s + e exactly (big >= lo)
  const p = POW10[-exp]!;
  let q = s / p;
  for (let tries = 0; tries < 3; tries++) {
    const qp = q * p;
    // (s + e) - q*p: s - qp is exact (the two are within a factor of two), the rest is small.
    const r = s - qp + (e - productError(q, p, qp));
    if (r === 0) return q;
    F64[0] = q;
    const ulp = ULP[U32[1]! >>> 20]!;
    // Below a power of two the doubles are twice as dense.
    const below = (U32[1]! & 0xfffff) === 0 && U32[0] === 0 ? ulp / 2 : ulp;
    const half = p * (r > 0 ? ulp : below) * 0.5;
    const away = r > 0 ? r : -r;
    if (away < half * (1 - MARGIN)) return q;
    if (away <= half * (1 + MARGIN)) return NaN;
    q = r > 0 ? q + ulp : q - below;
  }
  return NaN;
}

/**
 * The significant digits of a decimal as a reader meets them, kept as exactDecimal takes them: the
 * first nine in hi, the next eight in lo, those past them only counted; exp the power of ten the
 * digits kept are scaled by. One instance per reader, reset for each number.
 */
export class DecimalDigits {
  hi = 0;
  lo = 0;
  count = 0;
  exp = 0;

  reset(): void {
    this.hi = 0;
    this.lo = 0;
    this.count = 0;
    this.exp = 0;
  }

  /** A digit (0-9) before the decimal point. */
  whole(d: number): void {
    if (++this.count <= 9) this.hi = this.hi * 10 + d;
    else if (this.count <= EXACT_DIGITS) this.lo = this.lo * 10 + d;
    else this.exp++;
  }

  /** A digit (0-9) after the decimal point. */
  fraction(d: number): void {
    if (this.count === 0 && d === 0)
      this.exp--; // leading zeros of 0.000123
    else if (++this.count <= 9) {
      this.hi = this.hi * 10 + d;
      this.exp--;
    } else if (this.count <= EXACT_DIGITS) {
      this.lo = this.lo * 10 + d;
      this.exp--;
    }
  }

  /** The decimal's value times 10^e (its sign aside), or NaN where exactDecimal cannot tell. */
  value(e: number): number {
    return this.count <= EXACT_DIGITS ? exactDecimal(this.hi, this.lo, this.count > 9 ? this.count - 9 : 0, this.exp + e) : NaN;
  }
}

/**
 * A number of JSON text (or Python's `NaN`, `Infinity`, `-Infinity`) that starts at `start`,
 * read in place with the grammar JSON.parse applies: `end` is where it stopped. Up to
 * EXACT_DIGITS significant digits with a power of ten up to 22 are computed exactly and
 * correctly rounded (exactDecimal); anything else through Number() of its text. Undefined for
 * anything that is not a number.
 */
export class JsonNumberReader {
  end = 0;
  private readonly digits = new DecimalDigits();

  read(s: string, start: number): number | undefined {
    let i = start;
    let c = s.charCodeAt(i);
    const neg = c === 45; /* - */
    if (neg) c = s.charCodeAt(++i);
    if (c === 78 /* N */) return !neg && s.startsWith('NaN', i) ? this.at(i + 3, NaN) : undefined;
    if (c === 73 /* I */) return s.startsWith('Infinity', i) ? this.at(i + 8, neg ? -Infinity : Infinity) : undefined;
    const d = this.digits;
    d.reset();
    if (c === 48 /* 0 */) c = s.charCodeAt(++i);
    else if (c >= 49 && c <= 57) for (; c >= 48 && c <= 57; c = s.charCodeAt(++i)) d.whole(c - 48);
    else return undefined;
    if (c === 46 /* . */) {
      c = s.charCodeAt(++i);
      if (!(c >= 48 && c <= 57)) return undefined;
      for (; c >= 48 && c <= 57; c = s.charCodeAt(++i)) d.fraction(c - 48);
    }
    let exp = 0;
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
    const v = d.value(exp);
    if (v !== v) return this.at(i, Number(s.slice(start, i)));
    return this.at(i, neg ? -v : v);
  }

  private at(end: number, v: number): number {
    this.end = end;
    return v;
  }
}

/** The first position from `i` that is not JSON whitespace. */
export function skipSpace(s: string, i: number): number {
  let c = s.charCodeAt(i);
  while (c === 32 || c === 9 || c === 10 || c === 13) c = s.charCodeAt(++i);
  return i;
}
