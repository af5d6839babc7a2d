/**
 * Charts for the nightly summary: one line per round on shared axes, drawn as SVG and rendered to
 * PNG with resvg (email clients do not show SVG).
 */
import { Resvg } from '@resvg/resvg-js';

export interface Line {
  label: string;
  values: number[];
}

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function lineChartSvg(title: string, lines: Line[], opts: { width?: number; height?: number; target?: number } = {}): string {
  const W = opts.width ?? 560;
  const H = opts.height ?? 220;
  const pad = { l: 48, r: 110, t: 28, b: 28 };
  const all = lines.flatMap((l) => l.values).filter(Number.isFinite);
  if (opts.target !== undefined) all.push(opts.target);
  let lo = all.length ? Math.min(...all) : 0;
  let hi = all.length ? Math.max(...all) : 1;
  if (hi - lo < 1e-9) {
    lo -= 0.05;
    hi += 0.05;
  }
  const maxLen = Math.max(2, ...lines.map((l) => l.values.length));
  const x = (i: number): number => pad.l + (i / (maxLen - 1)) * (W - pad.l - pad.r);
  const y = (v: number): number => pad.t + (1 - (v - lo) / (hi - lo)) * (H - pad.t - pad.b);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${pad.l}" y="18" font-family="sans-serif" font-size="13" fill="#222">${esc(title)}</text>`,
    `<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#999"/>`,
    `<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#999"/>`,
    `<text x="${pad.l - 6}" y="${pad.t + 4}" font-family="sans-serif" font-size="10" text-anchor="end" fill="#555">${hi.toFixed(2)}</text>`,
    `<text x="${pad.l - 6}" y="${H - pad.b}" font-family="sans-serif" font-size="10" text-anchor="end" fill="#555">${lo.toFixed(2)}</text>`,
    `<text x="${(W - pad.r + pad.l) / 2}" y="${H - 8}" font-family="sans-serif" font-size="10" text-anchor="middle" fill="#555">progress through the round</text>`,
  ];
  if (opts.target !== undefined) {
    parts.push(
      `<line x1="${pad.l}" y1="${y(opts.target)}" x2="${W - pad.r}" y2="${y(opts.target)}" stroke="#888" stroke-dasharray="4 3"/>`,
    );
    parts.push(
      `<text x="${W - pad.r + 4}" y="${y(opts.target) + 3}" font-family="sans-serif" font-size="10" fill="#555">target ${opts.target}</text>`,
    );
  }
  lines.forEach((l, i) => {
    const color = COLORS[i % COLORS.length]!;
    const n = l.values.length;
    const pts = l.values
      .map((v, j) => (Number.isFinite(v) ? `${x(n > 1 ? (j / (n - 1)) * (maxLen - 1) : 0).toFixed(1)},${y(v).toFixed(1)}` : null))
      .filter((p) => p !== null);
    if (pts.length > 0) parts.push(`<polyline fill="none" stroke="${color}" stroke-width="1.8" points="${pts.join(' ')}"/>`);
    parts.push(`<rect x="${W - pad.r + 8}" y="${pad.t + 16 * i + 12}" width="10" height="3" fill="${color}"/>`);
    parts.push(
      `<text x="${W - pad.r + 22}" y="${pad.t + 16 * i + 17}" font-family="sans-serif" font-size="11" fill="#222">${esc(l.label)}</text>`,
    );
  });
  parts.push('</svg>');
  return parts.join('\n');
}

export function svgToPng(svg: string): Buffer {
  const r = new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'sans-serif' } });
  return Buffer.from(r.render().asPng());
}
