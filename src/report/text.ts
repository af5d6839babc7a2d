/** `barwatch analyze` for people: per run, its rounds with the key series, the filter, findings. */
import type { FileSource } from '../sources/file-source.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import { signalShares } from '../runs/signal.js';
import { fmt, pct, printable } from '../util/format.js';
import { SEVERITY_RANK, type Finding } from '../detectors/types.js';
import { sparkline } from './sparkline.js';

const CANONICAL = ['boundary', 'accuracy', 'total', 'reward', 'relevance', 'format', 'count', 'boundary_share'];
const INTERESTING = /(^|\/)(reward|score|acc|accuracy)(\/|$|_|@)|rewards\//;
const MAX_SERIES = 6;

/** The series worth a line in a summary: the canonical ones, then rewards, scores and accuracies. */
export function keySeries(r: RoundState): string[] {
  const names = [...r.series.keys()];
  const picked = CANONICAL.filter((n) => r.series.has(n));
  for (const n of names.sort()) {
    if (picked.length >= MAX_SERIES) break;
    if (!picked.includes(n) && !n.endsWith('_std') && !/^(timing|perf)/.test(n) && INTERESTING.test(n) && !/(max|min)(@|$)/.test(n))
      picked.push(n);
  }
  return picked.slice(0, MAX_SERIES);
}

function roundLabel(r: RoundState): string {
  const role = r.role === 'unknown' ? 'training' : r.role;
  return r.round === null ? role : `${role} round ${r.round}`;
}

/** `boundary, selector round 2: ▁▃▇█▆▃▁▂▅█▇▄` for the series a finding is about. */
export function findingSparkline(run: RunState, f: Finding): string | null {
  if (f.series === undefined) return null;
  const r = run.round(f.series.role, f.series.round);
  const s = r?.series.get(f.series.name);
  if (r === undefined || s === undefined || s.history.length < 2) return null;
  const role = r.role === 'unknown' ? '' : `, ${r.role} round ${r.round ?? '-'}`;
  return `${f.series.name}${role}: ${sparkline(s.history.points().values, 48)}`;
}

/** How much `analyze` prints: findings only, findings and a line per round, or every key series. */
export type Detail = 'quiet' | 'normal' | 'verbose';

export interface TextOptions {
  detail?: Detail;
  /** ANSI colours for severities (a terminal without NO_COLOR). */
  color?: boolean;
}

const SEVERITY_COLOUR = { critical: '\x1b[1;31m', warning: '\x1b[33m', info: '\x1b[36m' } as const;

function severityTag(x: Finding, color: boolean): string {
  const tag = `[${x.severity}]`;
  return color ? `${SEVERITY_COLOUR[x.severity]}${tag}\x1b[0m` : tag;
}

function place(x: Finding): string {
  if (x.round === null) return x.step === null ? 'whole run' : `step ${x.step}`;
  return x.step === null ? `round ${x.round}` : `round ${x.round}, step ${x.step}`;
}

/** A run's findings, most severe first, each with where, what and what to do. */
function renderFindings(run: RunState, findings: Finding[], o: Required<TextOptions>): string[] {
  if (findings.length === 0) return ['  findings: none'];
  const lines = [`  findings: ${findings.length}`];
  const sorted = [...findings].sort(
    (a, b) =>
      SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] || (a.round ?? 0) - (b.round ?? 0) || (a.detector < b.detector ? -1 : 1),
  );
  for (const x of sorted) {
    lines.push(`    ${severityTag(x, o.color)} ${x.detector} (${place(x)}): ${printable(x.message)}`);
    const spark = o.detail === 'quiet' ? null : findingSparkline(run, x);
    if (spark !== null) lines.push(`      ${spark}`);
    if (x.recommendation) lines.push(`      -> ${printable(x.recommendation)}`);
  }
  return lines;
}

/** Series of a round that say something new: one of two series with the same numbers is enough (total and reward often are). */
function distinctSeries(r: RoundState): string[] {
  const seen = new Set<string>();
  return keySeries(r).filter((n) => {
    const s = r.series.get(n)!;
    const key = `${s.summary.n}|${fmt(s.summary.mean)}|${fmt(s.summary.sd)}|${fmt(s.window.mean)}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What the steps of a round are, where they are not the trainer's, and a resumed round in words. */
function resumedNote(r: RoundState): string {
  const entries = r.counted > 0 ? '  (steps are entry numbers: the log gives no step)' : '';
  const x = r.resumed();
  if (x === null) return entries;
  const times = x.times > 1 ? `${x.times} times, last ` : '';
  const inexact = x.inexact ? '; some replaced values were older than the points kept and stay in the whole-round statistics' : '';
  const again = x.lastFrom === null || x.lastFrom === x.lastTo ? `step ${x.lastTo}` : `steps ${x.lastTo}-${x.lastFrom}`;
  return `${entries}  resumed ${times}at step ${x.lastTo} (${again} written again: the later values count${inexact})`;
}

function renderRounds(run: RunState, detail: Detail): string[] {
  const lines: string[] = [];
  for (const r of run.orderedRounds()) {
    const behind = r.behind(run.finished);
    if (behind !== null) lines.push(`  ${roundLabel(r)}: ${behind}`);
    const names = distinctSeries(r);
    if (detail === 'normal') {
      const parts = names
        .slice(0, 2)
        .map((n) => `${n} ${fmt(r.series.get(n)!.summary.mean)} ${sparkline(r.series.get(n)!.curve.means(), 12)}`);
      lines.push(`  ${roundLabel(r)}: ${r.steps} step(s)${parts.length > 0 ? `  ${parts.join('  ')}` : ''}${resumedNote(r)}`);
      continue;
    }
    const steps = r.firstStep === null ? '' : `, steps ${r.firstStep}-${r.lastStep}`;
    lines.push(`  ${roundLabel(r)}: ${r.steps} step(s)${steps}${resumedNote(r)}`);
    const width = Math.max(...names.map((n) => n.length), 8);
    for (const n of names) {
      const s = r.series.get(n)!;
      const nf = s.nonfinite.count > 0 ? `  ${s.nonfinite.count} non-finite` : '';
      lines.push(
        `    ${n.padEnd(width)}  mean ${fmt(s.summary.mean)} sd ${fmt(s.summary.sd)}  last ${s.window.n}: ${fmt(s.window.mean)}±${fmt(s.window.sd)}  ${sparkline(s.curve.means(), 24)}${nf}`,
      );
    }
    const share = signalShares(r, run.settings.weights);
    if (share !== null) {
      const parts = Object.entries(share.share).map(([c, v]) => `${c} ${pct(v)}`);
      lines.push(`    signal share  ${parts.join(', ')}`);
    }
  }
  return lines;
}

/** One run: its findings first, then what was read (a line per round, or every key series with --verbose). */
export function renderRun(run: RunState, files: FileSource[], findings: Finding[], opts: TextOptions = {}): string {
  const o: Required<TextOptions> = { detail: opts.detail ?? 'normal', color: opts.color ?? false };
  const lines: string[] = [printable(run.id), ...renderFindings(run, findings, o)];
  if (o.detail === 'quiet') return lines.join('\n');
  const malformed = files.reduce((a, f) => a + f.counters.malformed, 0);
  const formats = run.formatsByRecords();
  const about = [
    `${formats.length > 1 ? 'formats' : 'format'} ${formats.length > 0 ? formats.join(' + ') : '-'}, ${files.length} file(s), ${run.rounds.size} round(s)`,
  ];
  if (malformed) about.push(`${malformed} malformed line(s) skipped`);
  const f = run.filter;
  if (!f.empty) {
    const counts = f.before !== null || f.after !== null ? `, ${f.before ?? '?'} -> ${f.after ?? '?'} questions` : '';
    const read = f.preN > 0 ? `${f.preN} questions read` : `${f.postN} kept questions with an accuracy read`;
    const s = run.settings;
    const kept =
      s.unsolvableThreshold !== undefined || s.easyThreshold !== undefined
        ? `; kept ${s.unsolvableThreshold ?? '-'} < accuracy < ${s.easyThreshold ?? '-'}${s.varMin !== undefined ? `, variance >= ${s.varMin}` : ''}`
        : '';
    about.push(`filter: boundary share ${pct(f.preShare)} before, ${pct(f.postShare)} after (${read}${counts})${kept}`);
  }
  if (run.rollouts !== null || run.settings.rollouts !== undefined) about.push(`rollouts K = ${run.rollouts?.k ?? run.settings.rollouts}`);
  lines.push(`  ${about.join('; ')}`);
  for (const d of run.debug.describe()) lines.push(`  ${d}`);
  lines.push(...renderRounds(run, o.detail));
  return lines.join('\n');
}

/** Across runs: how many have findings, of which severity, and which detectors fired where. */
export function renderTally(runs: RunState[], findings: Finding[]): string {
  const worst = new Map<string, Finding['severity']>();
  for (const f of findings) {
    const w = worst.get(f.run);
    if (w === undefined || SEVERITY_RANK[f.severity] > SEVERITY_RANK[w]) worst.set(f.run, f.severity);
  }
  const count = (sev: Finding['severity']): number => [...worst.values()].filter((v) => v === sev).length;
  const healthy = runs.length - worst.size;
  const bySeverity = (['critical', 'warning', 'info'] as const).filter((v) => count(v) > 0).map((v) => `${count(v)} ${v}`);
  const lines = [
    `${runs.length} run(s): ${worst.size} with findings${bySeverity.length > 0 ? ` (worst: ${bySeverity.join(', ')})` : ''}, ${healthy} without`,
  ];
  const byDetector = new Map<string, Set<string>>();
  for (const f of findings) byDetector.set(f.detector, (byDetector.get(f.detector) ?? new Set()).add(f.run));
  for (const [d, set] of [...byDetector.entries()].sort((a, b) => b[1].size - a[1].size || (a[0] < b[0] ? -1 : 1)))
    lines.push(`  ${d}: ${set.size} run(s)`);
  return lines.join('\n');
}

export function renderText(
  runs: RunState[],
  filesByRun: Map<string, FileSource[]>,
  findings: Finding[] = [],
  notRead: readonly { path: string; reason: string }[] = [],
  opts: TextOptions = {},
): string {
  const missing =
    notRead.length === 0
      ? ''
      : `\nnot read (${notRead.length}):\n${notRead.map((p) => `  ${printable(p.path)}: ${p.reason}`).join('\n')}\n`;
  if (runs.length === 0) return `no training records found\n${missing}`;
  const quiet = opts.detail === 'quiet';
  // Runs with something wrong first, the worst first; healthy runs after (left out with --quiet).
  const worst = (run: RunState): number => Math.max(-1, ...findings.filter((f) => f.run === run.id).map((f) => SEVERITY_RANK[f.severity]));
  const shown = runs.filter((r) => !quiet || worst(r) >= 0).sort((a, b) => worst(b) - worst(a) || (a.id < b.id ? -1 : 1));
  const body = shown
    .map((run) =>
      renderRun(
        run,
        filesByRun.get(run.id) ?? [],
        findings.filter((f) => f.run === run.id),
        opts,
      ),
    )
    .join('\n\n');
  if (quiet) return `${shown.length === 0 ? 'findings: none' : body}\n${missing}`;
  const tally = runs.length > 1 ? `\n\n${renderTally(runs, findings)}` : '';
  return `${missing}${body}${tally}\n`;
}
