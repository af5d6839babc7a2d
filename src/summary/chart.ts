/**
 * Charts for the nightly summary, drawn as SVG and rendered to PNG with resvg (email clients do
 * not show SVG): a series over the whole run, each round's curve laid after the one before on one
 * axis of steps, a divider and label at each round's start, round ticks on both axes, axis titles
 * and a legend above the plot (nothing drawn over the lines).
 */
import { Resvg } from '@resvg/resvg-js';

export interface RoundCurve {
  /** "round 2" */
  label: string;
  /** The steps of the round's points, from its first step. */
  steps: number[];
  values: number[];
}

export interface RunChart {
  title: string;
  /** What the line is ("boundary reward"): the legend and the y axis. */
  series: string;
  /** What the x axis counts ("selector steps, round after round"). */
  xTitle: string;
  rounds: RoundCurve[];
  /** A reference level (the target c) with its legend text. */
  target?: { value: number; label: string };
}

const FONT = 'font-family="sans-serif"';
const LINE = '#1f5fbf';
const TARGET = '#1e6b3a';

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Round ticks inside [lo, hi]: steps of 1, 2 or 5 times a power of ten, about `n` of them, whole
 * numbers when `integer`. (The page's charts, web/chart.js, pick theirs the same way.)
 */
export function niceTicks(lo: number, hi: number, n = 5, integer = false): number[] {
  const raw = (hi - lo) / n;
  if (!(raw > 0) || !Number.isFinite(raw)) return [lo];
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  if (integer) step = Math.max(1, Math.round(step));
  const out: number[] = [];
  for (let t = Math.ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toPrecision(12));
  return out;
}

function tickText(t: number, ticks: number[]): string {
  const step = ticks.length > 1 ? Math.abs(ticks[1]! - ticks[0]!) : 1;
  return t.toFixed(step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step) - 1e-9)));
}

export function runChartSvg(c: RunChart, opts: { width?: number; height?: number } = {}): string {
  const W = opts.width ?? 640;
  const H = opts.height ?? 260;
  const pad = { l: 58, r: 16, t: 50, b: 42 };
  // The rounds one after another: round k starts where round k-1 ended.
  const xs: number[] = [];
  const ys: number[] = [];
  const starts: { x: number; label: string }[] = [];
  let offset = 0;
  for (const r of c.rounds) {
    const first = r.steps[0] ?? 1;
    starts.push({ x: offset + 1, label: r.label });
    r.steps.forEach((s, i) => {
      xs.push(offset + s - first + 1);
      ys.push(r.values[i]!);
    });
    offset += Math.max(1, (r.steps[r.steps.length - 1] ?? first) - first + 1);
  }
  const finite = ys.filter(Number.isFinite);
  if (c.target !== undefined) finite.push(c.target.value);
  let lo = finite.length > 0 ? Math.min(...finite) : 0;
  let hi = finite.length > 0 ? Math.max(...finite) : 1;
  if (hi - lo < 1e-9) {
    lo -= 0.05;
    hi += 0.05;
  }
  const yTicks = niceTicks(lo, hi, 5);
  lo = Math.min(lo, yTicks[0]!);
  hi = Math.max(hi, yTicks[yTicks.length - 1]!);
  const xTicks = niceTicks(1, Math.max(2, offset), 6, true);
  const x = (v: number): number => pad.l + ((v - 1) / Math.max(1, offset - 1)) * (W - pad.l - pad.r);
  const y = (v: number): number => pad.t + (1 - (v - lo) / (hi - lo)) * (H - pad.t - pad.b);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${pad.l}" y="16" ${FONT} font-size="13" fill="#222">${esc(c.title)}</text>`,
  ];
  // The legend, above the plot.
  parts.push(`<line x1="${pad.l}" y1="31" x2="${pad.l + 18}" y2="31" stroke="${LINE}" stroke-width="2"/>`);
  parts.push(`<text x="${pad.l + 22}" y="35" ${FONT} font-size="11" fill="#222">${esc(c.series)}</text>`);
  if (c.target !== undefined) {
    const at = pad.l + 40 + c.series.length * 6.5;
    parts.push(`<line x1="${at}" y1="31" x2="${at + 18}" y2="31" stroke="${TARGET}" stroke-dasharray="4 3" stroke-width="2"/>`);
    parts.push(`<text x="${at + 22}" y="35" ${FONT} font-size="11" fill="#222">${esc(c.target.label)}</text>`);
  }
  for (const t of yTicks) {
    parts.push(`<line x1="${pad.l}" y1="${y(t).toFixed(1)}" x2="${W - pad.r}" y2="${y(t).toFixed(1)}" stroke="#eceef2"/>`);
    parts.push(
      `<text x="${pad.l - 6}" y="${(y(t) + 4).toFixed(1)}" ${FONT} font-size="10" text-anchor="end" fill="#555">${tickText(t, yTicks)}</text>`,
    );
  }
  for (const t of xTicks)
    parts.push(`<text x="${x(t).toFixed(1)}" y="${H - pad.b + 14}" ${FONT} font-size="10" text-anchor="middle" fill="#555">${t}</text>`);
  parts.push(`<line x1="${pad.l}" y1="${H - pad.b}" x2="${W - pad.r}" y2="${H - pad.b}" stroke="#999"/>`);
  parts.push(`<line x1="${pad.l}" y1="${pad.t}" x2="${pad.l}" y2="${H - pad.b}" stroke="#999"/>`);
  parts.push(
    `<text x="${(pad.l + W - pad.r) / 2}" y="${H - 8}" ${FONT} font-size="11" text-anchor="middle" fill="#555">${esc(c.xTitle)}</text>`,
  );
  const cy = (pad.t + H - pad.b) / 2;
  parts.push(
    `<text x="14" y="${cy}" ${FONT} font-size="11" text-anchor="middle" fill="#555" transform="rotate(-90 14 ${cy})">${esc(c.series)}</text>`,
  );
  for (const s of starts) {
    parts.push(
      `<line x1="${x(s.x).toFixed(1)}" y1="${pad.t}" x2="${x(s.x).toFixed(1)}" y2="${H - pad.b}" stroke="#8a8f98" stroke-dasharray="2 2"/>`,
    );
    parts.push(`<text x="${(x(s.x) + 3).toFixed(1)}" y="${pad.t + 11}" ${FONT} font-size="10" fill="#444">${esc(s.label)}</text>`);
  }
  if (c.target !== undefined)
    parts.push(
      `<line x1="${pad.l}" y1="${y(c.target.value).toFixed(1)}" x2="${W - pad.r}" y2="${y(c.target.value).toFixed(1)}" stroke="${TARGET}" stroke-dasharray="4 3"/>`,
    );
  // One polyline per round: a round's end is not joined to the next one's start.
  let k = 0;
  for (const r of c.rounds) {
    const pts: string[] = [];
    for (let i = 0; i < r.steps.length; i++, k++) if (Number.isFinite(ys[k]!)) pts.push(`${x(xs[k]!).toFixed(1)},${y(ys[k]!).toFixed(1)}`);
    if (pts.length > 0) parts.push(`<polyline fill="none" stroke="${LINE}" stroke-width="1.6" points="${pts.join(' ')}"/>`);
  }
  parts.push('</svg>');
  return parts.join('\n');
}

export function svgToPng(svg: string): Buffer {
  const r = new Resvg(svg, { font: { loadSystemFonts: true, defaultFontFamily: 'sans-serif' } });
  return Buffer.from(r.render().asPng());
}
