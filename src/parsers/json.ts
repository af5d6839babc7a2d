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
