// Small SVG charts: lines, a shaded band, horizontal reference lines, shaded x ranges, bars and
// markers at an x. The API sends at most curve_buckets points a series, so plain SVG is enough.

const NS = 'http://www.w3.org/2000/svg';
const W = 960;
const H = 260;
/** Pixels a character of the 11 px labels takes, for laying out the legend and marker labels. */
const CHAR = 6.2;

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

/**
 * Round ticks inside [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `n` of them; whole
 * numbers only when `integer` (steps, counts).
 */
export function niceTicks(lo, hi, n = 5, integer = false) {
  const raw = (hi - lo) / n;
  if (!(raw > 0) || !Number.isFinite(raw)) return [lo];
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const out = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toPrecision(12));
  return out;
}

function tickText(t, ticks) {
  const step = ticks.length > 1 ? Math.abs(ticks[1] - ticks[0]) : 1;
  const digits = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step) - 1e-9));
  return t.toFixed(digits);
}

/**
 * spec: { title, xTitle?, yTitle?, xInteger?, yInteger?, x: [lo, hi]?, y: [lo, hi]?,
 * lines: [{x, y, cls, label}], band: {x, lo, hi, label?}?, hlines: [{y, cls, label}],
 * spans: [{from, to, cls, label}], bars: [{x0, x1, y, cls}], barLabels: {cls: label},
 * dividers: [{x, label}] (round starts in a whole-run chart), markers: [{x, cls, label, id}] }.
 * Every line, band, reference line, span and kind of bar is named in the legend above the plot;
 * marker labels are stacked where they would overlap.
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
  const yTicks = niceTicks(y0, y1, 5, spec.yInteger === true);
  const xTicks = niceTicks(x0, x1, 8, spec.xInteger ?? x1 - x0 > 8);

  // The legend: one entry per line, band, reference line, span and kind of bar.
  const legend = [
    ...lines.map((l) => ({ kind: 'line', cls: l.cls, label: l.label })),
    ...(spec.band ? [{ kind: 'band', cls: 'band', label: spec.band.label ?? '+-1 sd around the rolling mean' }] : []),
    ...(spec.hlines ?? []).map((h) => ({ kind: 'hline', cls: h.cls, label: h.label })),
    ...(spec.spans ?? []).map((s) => ({ kind: 'span', cls: s.cls, label: s.label })),
    ...Object.entries(spec.barLabels ?? {}).map(([cls, label]) => ({ kind: 'bar', cls, label })),
  ];
  const legendRows = [];
  let row = [];
  let used = 0;
  const left = 56;
  for (const e of legend) {
    const w = 22 + e.label.length * CHAR + 14;
    if (row.length > 0 && left + used + w > W - 8) {
      legendRows.push(row);
      row = [];
      used = 0;
    }
    row.push({ ...e, at: left + used });
    used += w;
  }
  if (row.length > 0) legendRows.push(row);
  const pad = { left, right: 14, top: 10 + legendRows.length * 16 + 6, bottom: spec.xTitle ? 44 : 28 };

  // Marker labels in rows: a label goes in the first row where it does not touch the one before.
  const markers = [...(spec.markers ?? [])].sort((a, b) => a.x - b.x);
  const sx = (x) => pad.left + ((x - x0) / (x1 - x0 || 1)) * (W - pad.left - pad.right);
  const ends = [];
  const placed = markers.map((m) => {
    const width = m.label.length * CHAR + 6;
    const px = sx(m.x);
    const anchorEnd = px + width > W - pad.right;
    const from = anchorEnd ? px - width : px;
    let r = ends.findIndex((end) => end < from);
    if (r === -1) r = ends.length;
    ends[r] = from + width;
    return { ...m, row: r, anchorEnd };
  });
  pad.top += ends.length * 12;
  const sy = (y) => H - pad.bottom - ((y - y0) / (y1 - y0 || 1)) * (H - pad.top - pad.bottom);
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': spec.title });
  root.append(svg('title', {}, spec.title));

  for (const [i, r] of legendRows.entries()) {
    const y = 14 + i * 16;
    for (const e of r) {
      const g = svg('g', { class: `legend ${e.kind} ${e.cls}` });
      if (e.kind === 'line' || e.kind === 'hline') g.append(svg('line', { x1: e.at, x2: e.at + 18, y1: y - 4, y2: y - 4, class: e.cls }));
      else g.append(svg('rect', { x: e.at, y: y - 9, width: 18, height: 10, class: e.cls }));
      g.append(svg('text', { x: e.at + 22, y, class: 'legend-text' }, e.label));
      root.append(g);
    }
  }
  for (const t of yTicks) {
    root.append(svg('line', { x1: pad.left, x2: W - pad.right, y1: sy(t), y2: sy(t), class: 'grid' }));
    root.append(svg('text', { x: pad.left - 4, y: sy(t) + 4, class: 'tick', 'text-anchor': 'end' }, tickText(t, yTicks)));
  }
  for (const t of xTicks)
    root.append(svg('text', { x: sx(t), y: H - pad.bottom + 17, class: 'tick', 'text-anchor': 'middle' }, tickText(t, xTicks)));
  if (spec.xTitle)
    root.append(svg('text', { x: (pad.left + W - pad.right) / 2, y: H - 7, class: 'axis-title', 'text-anchor': 'middle' }, spec.xTitle));
  if (spec.yTitle) {
    const cy = (pad.top + H - pad.bottom) / 2;
    root.append(
      svg('text', { x: 12, y: cy, class: 'axis-title', 'text-anchor': 'middle', transform: `rotate(-90 12 ${cy})` }, spec.yTitle),
    );
  }
  for (const s of spec.spans ?? []) {
    const r = svg('rect', {
      x: sx(s.from),
      y: pad.top,
      width: Math.max(1, sx(s.to) - sx(s.from)),
      height: H - pad.top - pad.bottom,
      class: s.cls,
    });
    r.append(svg('title', {}, s.label));
    root.append(r);
  }
  for (const d of spec.dividers ?? []) {
    root.append(svg('line', { x1: sx(d.x), x2: sx(d.x), y1: pad.top, y2: H - pad.bottom, class: 'divider' }));
    root.append(svg('text', { x: sx(d.x) + 3, y: H - pad.bottom - 4, class: 'divider-label' }, d.label));
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
    const l = svg('line', { x1: pad.left, x2: W - pad.right, y1: sy(h.y), y2: sy(h.y), class: h.cls });
    l.append(svg('title', {}, h.label));
    root.append(l);
  }
  for (const l of lines) {
    const pts = l.x.map((x, i) => [x, l.y[i]]).filter(([, y]) => Number.isFinite(y));
    if (pts.length === 0) continue;
    const p = svg('polyline', { points: pts.map(([x, y]) => `${sx(x)},${sy(y)}`).join(' '), class: l.cls });
    p.append(svg('title', {}, l.label));
    root.append(p);
  }
  const markerTop = 10 + legendRows.length * 16 + 6;
  for (const m of placed) {
    const g = svg('g', { class: `marker ${m.cls}`, 'data-finding': m.id });
    const ty = markerTop + 10 + m.row * 12;
    g.append(svg('line', { x1: sx(m.x), x2: sx(m.x), y1: ty + 2, y2: H - pad.bottom }));
    g.append(svg('text', { x: m.anchorEnd ? sx(m.x) - 3 : sx(m.x) + 3, y: ty, 'text-anchor': m.anchorEnd ? 'end' : 'start' }, m.label));
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
