/**
 * A reader for the Python literals that trainers print: `{'loss': 0.03, 'reward': '0.875',
 * 'x': nan, 'y': np.float64(0.1), 'z': tensor(0.5), 'ok': True, 'n': None, 'l': [1, 2]}`.
 * Also reads JSON (a subset). Returns undefined for anything that is not one complete literal.
 */

type Py = number | string | boolean | null | Py[] | { [key: string]: Py };

class Reader {
  i = 0;
  constructor(readonly s: string) {}

  fail(): never {
    throw new SyntaxError(`unexpected input at ${this.i}`);
  }

  ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 32 || c === 9 || c === 10 || c === 13) this.i++;
      else break;
    }
  }

  value(): Py {
    this.ws();
    const c = this.s[this.i];
    if (c === '{') return this.dict();
    if (c === '[' || c === '(') return this.list(c === '[' ? ']' : ')');
    if (c === "'" || c === '"') return this.string(c);
    return this.atom();
  }

  dict(): Py {
    const out: { [key: string]: Py } = {};
    this.i++;
    this.ws();
    if (this.s[this.i] === '}') {
      this.i++;
      return out;
    }
    for (;;) {
      const key = this.value();
      this.ws();
      if (this.s[this.i] !== ':') this.fail();
      this.i++;
      out[typeof key === 'string' ? key : JSON.stringify(key)] = this.value();
      this.ws();
      const c = this.s[this.i++];
      if (c === '}') return out;
      if (c !== ',') this.fail();
      this.ws();
      if (this.s[this.i] === '}') {
        this.i++;
        return out;
      }
    }
  }

  list(close: string): Py {
    const out: Py[] = [];
    this.i++;
    this.ws();
    if (this.s[this.i] === close) {
      this.i++;
      return out;
    }
    for (;;) {
      out.push(this.value());
      this.ws();
      const c = this.s[this.i++];
      if (c === close) return out;
      if (c !== ',') this.fail();
      this.ws();
      if (this.s[this.i] === close) {
        this.i++;
        return out;
      }
    }
  }

  string(quote: string): string {
    const s = this.s;
    let out = '';
    let start = ++this.i;
    while (this.i < s.length) {
      const c = s[this.i];
      if (c === quote) {
        out += s.slice(start, this.i);
        this.i++;
        return out;
      }
      if (c === '\\') {
        out += s.slice(start, this.i);
        const e = s[this.i + 1];
        out += e === 'n' ? '\n' : e === 't' ? '\t' : (e ?? '');
        this.i += 2;
        start = this.i;
        continue;
      }
      this.i++;
    }
    this.fail();
  }

  atom(): Py {
    const s = this.s;
    const start = this.i;
    while (this.i < s.length && /[A-Za-z0-9_.+-]/.test(s[this.i]!)) this.i++;
    const word = s.slice(start, this.i);
    if (word === '') this.fail();
    // Wrapped scalars: np.float64(0.1), tensor(0.5), np.int64(3)
    if (s[this.i] === '(') {
      this.i++;
      const inner = this.value();
      this.ws();
      // tensor(0.5, device='cuda:0'): keep the first argument
      while (this.i < s.length && s[this.i] !== ')') {
        if (s[this.i] === "'" || s[this.i] === '"') this.string(s[this.i]!);
        else this.i++;
      }
      if (s[this.i] !== ')') this.fail();
      this.i++;
      return inner;
    }
    switch (word) {
      case 'True':
      case 'true':
        return true;
      case 'False':
      case 'false':
        return false;
      case 'None':
      case 'null':
        return null;
      case 'nan':
      case 'NaN':
        return NaN;
      case 'inf':
      case 'Infinity':
        return Infinity;
      case '-inf':
      case '-Infinity':
        return -Infinity;
    }
    const n = Number(word);
    if (Number.isNaN(n)) this.fail();
    return n;
  }
}

/** Parses one Python literal that spans the whole text, or returns undefined. */
export function parsePythonLiteral(text: string): Py | undefined {
  const r = new Reader(text);
  try {
    const v = r.value();
    r.ws();
    return r.i === text.length ? v : undefined;
  } catch {
    return undefined;
  }
}
