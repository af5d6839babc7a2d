// Small SVG charts: lines, a shaded band, horizontal reference lines, shaded x ranges, bars and
// markers at an x. The API sends at most curve_buckets points a series, so plain SVG is enough.

const NS = 'http://www.w3.org/2000/svg';
const W = 640;
const H = 220;
const PAD = { left: 44, right: 12, top: 12, bottom: 26 };

function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function extent(values, fallback) {
  const xs = values.filter((v) => Number.isFinite(v));
  if (xs.length === 0) return fallback;
  let lo = Math.min(...xs);
  let hi = Math.max(...xs);
  if (lo === hi) {
    lo -= 0.5;
    hi += 0.5;
  }
  return [lo, hi];
}

function ticks(lo, hi, n = 4) {
  const step = (hi - lo) / n;
  return Array.from({ length: n + 1 }, (_, i) => lo + i * step);
}

/**
 * spec: { title, x: [lo, hi]?, y: [lo, hi]?, lines: [{x, y, cls, label}], band: {x, lo, hi}?,
 * hlines: [{y, cls, label}], spans: [{from, to, cls, label}], bars: [{x0, x1, y, cls}],
 * markers: [{x, cls, label, id}] }
 */
export function chart(spec) {
  const lines = spec.lines ?? [];
  const allX = [...lines.flatMap((l) => l.x), ...(spec.bars ?? []).flatMap((b) => [b.x0, b.x1]), ...(spec.markers ?? []).map((m) => m.x)];
  const allY = [
    ...lines.flatMap((l) => l.y),
    ...(spec.band ? [...spec.band.lo, ...spec.band.hi] : []),
    ...(spec.hlines ?? []).map((h) => h.y),
    ...(spec.bars ?? []).map((b) => b.y),
  ];
  const [x0, x1] = spec.x ?? extent(allX, [0, 1]);
  const [y0, y1] = spec.y ?? extent(allY, [0, 1]);
  const sx = (x) => PAD.left + ((x - x0) / (x1 - x0 || 1)) * (W - PAD.left - PAD.right);
  const sy = (y) => H - PAD.bottom - ((y - y0) / (y1 - y0 || 1)) * (H - PAD.top - PAD.bottom);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': spec.title });
  root.append(svg('title', {}, spec.title));
  for (const t of ticks(y0, y1)) {
    root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: sy(t), y2: sy(t), class: 'grid' }));
    root.append(svg('text', { x: PAD.left - 4, y: sy(t) + 4, class: 'tick', 'text-anchor': 'end' }, t.toFixed(2)));
  }
  for (const t of ticks(x0, x1))
    root.append(
      svg('text', { x: sx(t), y: H - 8, class: 'tick', 'text-anchor': 'middle' }, x1 - x0 <= 4 ? t.toFixed(2) : String(Math.round(t))),
    );
  for (const s of spec.spans ?? []) {
    const r = svg('rect', {
      x: sx(s.from),
      y: PAD.top,
      width: Math.max(1, sx(s.to) - sx(s.from)),
      height: H - PAD.top - PAD.bottom,
      class: s.cls,
    });
    r.append(svg('title', {}, s.label));
    root.append(r);
  }
  for (const b of spec.bars ?? []) {
    root.append(
      svg('rect', {
        x: sx(b.x0),
        y: sy(b.y),
        width: Math.max(0.5, sx(b.x1) - sx(b.x0) - 0.5),
        height: Math.max(0, sy(y0) - sy(b.y)),
        class: b.cls,
      }),
    );
  }
  if (spec.band && spec.band.x.length > 1) {
    const up = spec.band.x.map((x, i) => `${sx(x)},${sy(spec.band.hi[i])}`);
    const down = spec.band.x.map((x, i) => `${sx(x)},${sy(spec.band.lo[i])}`).reverse();
    root.append(svg('polygon', { points: [...up, ...down].join(' '), class: 'band' }));
  }
  for (const h of spec.hlines ?? []) {
    root.append(svg('line', { x1: PAD.left, x2: W - PAD.right, y1: sy(h.y), y2: sy(h.y), class: h.cls }));
    root.append(svg('text', { x: W - PAD.right - 2, y: sy(h.y) - 3, class: `label ${h.cls}`, 'text-anchor': 'end' }, h.label));
  }
  for (const l of lines) {
    const pts = l.x.map((x, i) => [x, l.y[i]]).filter(([, y]) => Number.isFinite(y));
    if (pts.length === 0) continue;
    const p = svg('polyline', { points: pts.map(([x, y]) => `${sx(x)},${sy(y)}`).join(' '), class: l.cls });
    p.append(svg('title', {}, l.label));
    root.append(p);
  }
  for (const m of spec.markers ?? []) {
    const g = svg('g', { class: `marker ${m.cls}`, 'data-finding': m.id });
    g.append(svg('line', { x1: sx(m.x), x2: sx(m.x), y1: PAD.top, y2: H - PAD.bottom }));
    g.append(svg('text', { x: sx(m.x) + 3, y: PAD.top + 10 }, m.label));
    g.append(svg('title', {}, m.label));
    root.append(g);
  }
  return root;
}

/** A sparkline of `values` (no axes). */
export function sparkline(values, label) {
  const w = 120;
  const h = 24;
  const root = svg('svg', { viewBox: `0 0 ${w} ${h}`, class: 'spark', role: 'img', 'aria-label': label });
  if (values.length < 2) return root;
  const [lo, hi] = extent(values, [0, 1]);
  const pts = values.map((v, i) => `${(i / (values.length - 1)) * w},${h - 2 - ((v - lo) / (hi - lo)) * (h - 4)}`);
  root.append(svg('polyline', { points: pts.join(' ') }));
  return root;
}
