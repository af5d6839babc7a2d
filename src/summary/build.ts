/**
 * The nightly summary: per run, the rounds done, the boundary reward's mean and variance per round
 * with the direction of change, the accuracy against the target c, the boundary share, the
 * boundary's share of the reward signal, the alerts fired and resolved in the last 24 hours, and
 * charts of the boundary reward and the accuracy per round.
 */
import { roundsOf, targetOf } from '../detectors/queries.js';
import { CHARTED, seriesFor } from '../runs/quantities.js';
import type { RunState } from '../runs/run.js';
import { Journal } from '../state/journal.js';
import { signalShares } from '../runs/signal.js';
import { escapeHtml, pct } from '../util/format.js';
import { lineChartSvg, svgToPng, type Line } from './chart.js';

export interface Chart {
  cid: string;
  filename: string;
  svg: string;
  png: Buffer;
}

export interface Summary {
  subject: string;
  text: string;
  html: string;
  charts: Chart[];
}

export interface AlertLine {
  time: string;
  status: string;
  detector: string;
  run: string;
  severity: string;
}

export async function readAlertLog(file: string, since: number): Promise<AlertLine[]> {
  const out: AlertLine[] = [];
  for await (const l of new Journal(file).lines()) {
    try {
      const a = JSON.parse(l) as AlertLine;
      if (Date.parse(a.time) >= since) out.push(a);
    } catch {
      // a torn line
    }
  }
  return out;
}

const f3 = (x: number | null | undefined): string => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(3));

function arrow(prev: number | undefined, cur: number): string {
  if (prev === undefined) return '';
  const d = cur - prev;
  return Math.abs(d) < 1e-3 ? ' (=)' : d > 0 ? ` (up ${d.toFixed(3)})` : ` (down ${(-d).toFixed(3)})`;
}

export function buildSummary(runs: RunState[], allAlerts: AlertLine[], now: number, withCharts = true): Summary {
  const alerts = allAlerts.filter((a) => Date.parse(a.time) >= now - 86_400_000);
  const text: string[] = [`barwatch summary, ${new Date(now).toISOString().slice(0, 16).replace('T', ' ')} UTC`, ''];
  const html: string[] = [`<h2>barwatch summary</h2><p>${escapeHtml(new Date(now).toISOString())}</p>`];
  const charts: Chart[] = [];
  runs.forEach((run, i) => {
    const { c } = targetOf(run);
    const sel = roundsOf(run, 'selector');
    const gen = roundsOf(run, 'generator');
    text.push(run.id, `  rounds: ${sel.length} selector, ${gen.length} generator${run.finished ? ' (finished)' : ''}`);
    html.push(
      `<h3>${escapeHtml(run.id)}</h3><p>rounds: ${sel.length} selector, ${gen.length} generator${run.finished ? ' (finished)' : ''}</p>`,
    );
    const rows: string[] = [];
    let prevMean: number | undefined;
    let prevVar: number | undefined;
    for (const r of sel) {
      const b = r.series.get('boundary');
      const acc = r.series.get('accuracy');
      const share = signalShares(r, run.settings.weights)?.share.boundary;
      const bm = b?.summary.mean ?? NaN;
      const bv = b?.summary.variance ?? NaN;
      const line = `  selector round ${r.round ?? '-'}: boundary mean ${f3(bm)}${Number.isFinite(bm) ? arrow(prevMean, bm) : ''}, variance ${f3(bv)}${Number.isFinite(bv) ? arrow(prevVar, bv) : ''}; accuracy ${f3(acc?.window.mean)} vs c=${c}; boundary signal share ${pct(share)}`;
      text.push(line);
      rows.push(
        `<tr><td>${r.round ?? '-'}</td><td>${f3(bm)}${escapeHtml(Number.isFinite(bm) ? arrow(prevMean, bm) : '')}</td><td>${f3(bv)}${escapeHtml(Number.isFinite(bv) ? arrow(prevVar, bv) : '')}</td><td>${f3(acc?.window.mean)}</td><td>${pct(share)}</td></tr>`,
      );
      if (Number.isFinite(bm)) prevMean = bm;
      if (Number.isFinite(bv)) prevVar = bv;
    }
    if (rows.length > 0) {
      html.push(
        `<table border="1" cellpadding="4" cellspacing="0"><tr><th>selector round</th><th>boundary mean</th><th>boundary variance</th><th>accuracy (c=${c})</th><th>boundary signal share</th></tr>${rows.join('')}</table>`,
      );
    }
    // Any run (a verl or TRL log, or a BAR-RAG round's own training): the health series' levels.
    for (const r of run.orderedRounds()) {
      const parts = CHARTED.flatMap((q) => {
        const found = seriesFor(r, q);
        return found === null || found.stats.window.n === 0 ? [] : [`${found.name} ${f3(found.stats.window.mean)}`];
      });
      if (parts.length === 0 || (r.role === 'selector' && r.series.has('boundary'))) continue;
      const where = r.role === 'unknown' ? 'training' : `${r.role} round ${r.round ?? '-'}`;
      text.push(`  ${where} (${r.steps} steps, recent means): ${parts.join(', ')}`);
      html.push(`<p>${escapeHtml(where)} (${r.steps} steps, recent means): ${escapeHtml(parts.join(', '))}</p>`);
    }
    const share = run.filter.postShare;
    if (share !== null) {
      text.push(`  filter: boundary share ${pct(run.filter.preShare)} before, ${pct(share)} after`);
      html.push(`<p>filter: boundary share ${pct(run.filter.preShare)} before, ${pct(share)} after</p>`);
    }
    const mine = alerts.filter((a) => a.run === run.id);
    const fired = mine.filter((a) => a.status === 'firing');
    const resolved = mine.filter((a) => a.status === 'resolved');
    text.push(
      `  last 24 h: ${fired.length} alert(s) fired, ${resolved.length} resolved${fired.length ? ` (${[...new Set(fired.map((a) => a.detector))].join(', ')})` : ''}`,
      '',
    );
    html.push(
      `<p>last 24 h: ${fired.length} alert(s) fired, ${resolved.length} resolved${fired.length ? ` (${escapeHtml([...new Set(fired.map((a) => a.detector))].join(', '))})` : ''}</p>`,
    );
    if (withCharts) {
      const curve = (list: typeof sel, name: string): Line[] =>
        list
          .filter((r) => r.series.has(name))
          .map((r) => ({ label: `round ${r.round ?? '-'}`, values: r.series.get(name)!.curve.means() }));
      const boundary = curve(sel, 'boundary');
      const accuracy = curve(sel.some((r) => r.series.has('accuracy')) ? sel : gen, 'accuracy');
      for (const [kind, lines, target] of [
        ['boundary', boundary, undefined],
        ['accuracy', accuracy, c],
      ] as const) {
        if (lines.length === 0) continue;
        const svg = lineChartSvg(
          `${kind === 'boundary' ? 'boundary reward' : 'accuracy'} per round`,
          lines,
          target !== undefined ? { target } : {},
        );
        const cid = `${kind}-${i}@barwatch`;
        charts.push({ cid, filename: `${kind}-${i}.png`, svg, png: svgToPng(svg) });
        html.push(`<p><img src="cid:${cid}" alt="${kind} per round" width="560" height="220"></p>`);
      }
    }
  });
  const bad = alerts.filter((a) => a.status === 'firing').length;
  return {
    subject: `barwatch summary: ${runs.length} run(s), ${bad} alert(s) in the last 24 h`,
    text: text.join('\n'),
    html: `<!doctype html><html><body style="font-family:sans-serif">${html.join('\n')}</body></html>`,
    charts,
  };
}
