// Building the page: every value from the API (run paths, metric names, messages) reaches the
// DOM as text (textContent, attribute setters), never as HTML.

/** An element with attributes (`on*` functions become listeners) and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

/** Seconds as `12s`, `4m`, `3h 10m`. */
export function ago(s) {
  if (s === null || s === undefined) return '-';
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function fmt(x, digits = 3) {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(digits);
}

export function pct(x) {
  return x === null || x === undefined || !Number.isFinite(x) ? '-' : `${Math.round(x * 100)}%`;
}

/** The last folder names of a run path, for a title. */
export function shortName(id) {
  const parts = id.split('/').filter(Boolean);
  return parts.slice(-2).join('/') || id;
}

export async function api(path, init) {
  const res = await fetch(path, init);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

/** An ISO time as the reader's local date and time (the ISO text stays in the title). */
export function localTime(iso) {
  if (iso === null || iso === undefined) return '-';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : el('time', { datetime: iso, title: iso }, d.toLocaleString());
}

/**
 * Where a run is: "selector round 2, step 40"; a run with no roles or rounds (a verl or TRL log)
 * just "step 435".
 */
export function where(r) {
  if (r.role === null) return '-';
  const place = [r.role !== 'unknown' ? r.role : null, r.round !== null ? `round ${r.round}` : null].filter((x) => x !== null).join(' ');
  const step = `step ${r.step ?? '-'}`;
  return place === '' ? step : `${place}, ${step}`;
}
