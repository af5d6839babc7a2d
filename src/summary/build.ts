/**
 * The nightly summary: per run, the findings that hold (by severity, with what to do), the rounds done, the boundary reward's mean and variance per round
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
import { SEVERITY_RANK, type Finding } from '../detectors/types.js';
import { runChartSvg, svgToPng, type RoundCurve, type RunChart } from './chart.js';

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
  round?: number | null;
  /** A resolved line of a run-wide finding that moved on to another round (null: the run as a whole). */
  moved_to?: number | null;
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

/** A time as the summary's readers read it: date and time in `timeZone` (summary.timezone). */
export function localTime(ms: number, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(ms);
  const v = (t: string): string => parts.find((p) => p.type === t)?.value ?? '';
  return `${v('year')}-${v('month')}-${v('day')} ${v('hour')}:${v('minute')} ${timeZone}`;
}

/** A file name for a run's chart: the run folder's name, made safe, and its place in the summary. */
function chartName(run: string, i: number, kind: string): string {
  const base = (run.split(/[\\/]/).filter(Boolean).pop() ?? 'run').replace(/[^\w.-]+/g, '_').slice(0, 60);
  return `${base}-${i + 1}-${kind}.png`;
}

export interface SummaryOptions {
  withCharts?: boolean;
  /** Findings that hold now, listed per run by severity with their message and what to do. */
  findings?: readonly Finding[];
  /** summary.timezone: the times the summary prints. */
  timeZone?: string;
}

export function buildSummary(runs: RunState[], allAlerts: AlertLine[], now: number, opts: SummaryOptions = {}): Summary {
  const withCharts = opts.withCharts ?? true;
  const tz = opts.timeZone ?? 'UTC';
  const active = opts.findings ?? [];
  const alerts = allAlerts.filter((a) => Date.parse(a.time) >= now - 86_400_000);
  const text: string[] = [`barwatch summary, ${localTime(now, tz)}`, ''];
  const html: string[] = [`<h2>barwatch summary</h2><p>${escapeHtml(localTime(now, tz))}</p>`];
  const charts: Chart[] = [];
  runs.forEach((run, i) => {
    const { c } = targetOf(run);
    const sel = roundsOf(run, 'selector');
    const gen = roundsOf(run, 'generator');
    text.push(run.id, `  rounds: ${sel.length} selector, ${gen.length} generator${run.finished ? ' (finished)' : ''}`);
    html.push(
      `<h3>${escapeHtml(run.id)}</h3><p>rounds: ${sel.length} selector, ${gen.length} generator${run.finished ? ' (finished)' : ''}</p>`,
    );
    const mineNow = active.filter((f) => f.run === run.id).sort((a, b) => SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity]);
    if (mineNow.length > 0) {
      text.push(`  active findings (${mineNow.length}):`);
      html.push('<ul>');
      for (const f of mineNow) {
        const at = [f.round !== null ? `round ${f.round}` : '', f.step !== null ? `step ${f.step}` : ''].filter(Boolean).join(', ');
        text.push(`    [${f.severity}] ${f.detector}${at ? ` (${at})` : ''}: ${f.message}`);
        if (f.recommendation) text.push(`      -> ${f.recommendation}`);
        html.push(
          `<li><b>[${escapeHtml(f.severity)}] ${escapeHtml(f.detector)}</b>${at ? ` (${escapeHtml(at)})` : ''}: ${escapeHtml(f.message)}${f.recommendation ? `<br>What to do: ${escapeHtml(f.recommendation)}` : ''}</li>`,
        );
      }
      html.push('</ul>');
    } else {
      text.push('  active findings: none');
      html.push('<p>active findings: none</p>');
    }
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
      // BAR-RAG's rounds have their own lines above and below; theirs only where the trainer logged more than a reward.
      if (parts.length === 0 || (r.role !== 'unknown' && parts.length < 2) || (r.role === 'selector' && r.series.has('boundary'))) continue;
      const where = r.role === 'unknown' ? 'training' : `${r.role} round ${r.round ?? '-'}`;
      text.push(`  ${where} (${r.steps} steps, recent means): ${parts.join(', ')}`);
      html.push(`<p>${escapeHtml(where)} (${r.steps} steps, recent means): ${escapeHtml(parts.join(', '))}</p>`);
    }
    for (const r of gen) {
      const acc = r.series.get('accuracy');
      const reward = r.series.get('reward');
      const line = `generator round ${r.round ?? '-'}: ${r.steps} steps; accuracy ${f3(acc?.summary.mean)} (last ${f3(acc?.window.mean)}); reward ${f3(reward?.summary.mean)}`;
      text.push(`  ${line}`);
      html.push(`<p>${escapeHtml(line)}</p>`);
    }
    const share = run.filter.postShare;
    if (share !== null) {
      text.push(`  filter: boundary share ${pct(run.filter.preShare)} before, ${pct(share)} after`);
      html.push(`<p>filter: boundary share ${pct(run.filter.preShare)} before, ${pct(share)} after</p>`);
    }
    const mine = alerts.filter((a) => a.run === run.id);
    const fired = mine.filter((a) => a.status === 'firing' || a.status === 'escalated');
    // A finding that moved on to another round resolved its old alert and fired a new one: it
    // stopped nowhere, so it is said as a move, not among what resolved.
    const resolved = mine.filter((a) => a.status === 'resolved' && a.moved_to === undefined);
    const moved = mine.filter((a) => a.status === 'resolved' && a.moved_to !== undefined);
    const where = (r: number | null | undefined): string => (r == null ? 'the run as a whole' : `round ${r}`);
    const names = (xs: AlertLine[]): string =>
      [...new Set(xs.map((a) => `${a.detector}${a.round != null ? ` (round ${a.round})` : ''}`))].join(', ');
    const moves = [...new Set(moved.map((a) => `${a.detector} from ${where(a.round)} to ${where(a.moved_to)}`))].join(', ');
    const day =
      `last 24 h: ${fired.length} alert(s) fired${fired.length ? ` (${names(fired)})` : ''}; ` +
      `${resolved.length} resolved${resolved.length ? ` (${names(resolved)})` : ''}` +
      (moved.length > 0 ? `; ${moved.length} moved on to another round (${moves})` : '');
    text.push(`  ${day}`, '');
    html.push(`<p>${escapeHtml(day)}</p>`);
    if (withCharts) {
      // Each series over the whole run: its rounds one after another on one axis of steps.
      const curves = (list: typeof sel, name: string): RoundCurve[] =>
        list
          .filter((r) => r.series.has(name))
          .map((r) => {
            const buckets = r.series.get(name)!.curve.buckets();
            return {
              label: `round ${r.round ?? '-'}`,
              steps: buckets.map((b) => Math.round((b.firstStep + b.lastStep) / 2)),
              values: buckets.map((b) => b.mean),
            };
          });
      const accuracyOf = sel.some((r) => r.series.has('accuracy')) ? sel : gen;
      const role = (list: typeof sel): string => (list === gen ? 'generator' : 'selector');
      const specs: { kind: string; chart: RunChart }[] = [
        {
          kind: 'boundary',
          chart: {
            title: `Boundary reward, round after round`,
            series: 'boundary reward',
            xTitle: 'selector steps, round after round',
            rounds: curves(sel, 'boundary'),
          },
        },
        {
          kind: 'accuracy',
          chart: {
            title: `Accuracy${accuracyOf === sel ? ' on the selected evidence' : ' of the generator'}, round after round`,
            series: 'accuracy',
            xTitle: `${role(accuracyOf)} steps, round after round`,
            rounds: curves(accuracyOf, 'accuracy'),
            target: { value: c, label: `target c = ${c}` },
          },
        },
      ];
      for (const { kind, chart } of specs) {
        if (chart.rounds.length === 0) continue;
        const svg = runChartSvg(chart);
        const cid = `${kind}-${i}@barwatch`;
        charts.push({ cid, filename: chartName(run.id, i, kind), svg, png: svgToPng(svg) });
        html.push(`<p><img src="cid:${cid}" alt="${escapeHtml(chart.title)}" width="640" height="260"></p>`);
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

/** The summary as one HTML file for a browser, its charts inlined (`barwatch summary --html FILE`). */
export function standaloneHtml(s: Summary): string {
  let html = s.html;
  for (const c of s.charts) html = html.split(`cid:${c.cid}`).join(`data:image/png;base64,${c.png.toString('base64')}`);
  return html.replace('<body', `<head><meta charset="utf-8"><title>${escapeHtml(s.subject)}</title></head><body`);
}
