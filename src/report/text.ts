/** `barwatch analyze` for people: per run, its rounds with the key series, the filter, findings. */
import type { FileSource } from '../sources/file-source.js';
import type { RoundState } from '../runs/round.js';
import type { RunState } from '../runs/run.js';
import { signalShares } from '../runs/signal.js';
import { fmt, pct } from '../util/format.js';
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

export function renderRun(run: RunState, files: FileSource[], findings: Finding[]): string {
  const lines: string[] = [];
  const malformed = files.reduce((a, f) => a + f.counters.malformed, 0);
  lines.push(`${run.id}`);
  lines.push(
    `  format ${run.format ?? '-'}, ${files.length} file(s), ${run.rounds.size} round(s)${malformed ? `, ${malformed} malformed line(s) skipped` : ''}`,
  );
  for (const r of run.orderedRounds()) {
    const steps = r.firstStep === null ? '' : `, steps ${r.firstStep}-${r.lastStep}`;
    lines.push(`  ${roundLabel(r)}: ${r.steps} step(s)${steps}`);
    const names = keySeries(r);
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
  const f = run.filter;
  if (!f.empty) {
    const counts = f.before !== null ? `, ${f.before} -> ${f.after} questions` : '';
    lines.push(`  filter: boundary share ${pct(f.preShare)} before, ${pct(f.postShare)} after (${f.preN} questions read${counts})`);
  }
  if (run.rollouts !== null || run.settings.rollouts !== undefined) {
    lines.push(`  rollouts K = ${run.rollouts?.k ?? run.settings.rollouts}`);
  }
  if (findings.length === 0) lines.push('  findings: none');
  else {
    lines.push(`  findings: ${findings.length}`);
    const groups = new Map<string, Finding[]>();
    for (const x of findings) {
      const key = x.round === null ? 'whole run' : `round ${x.round}`;
      groups.set(key, [...(groups.get(key) ?? []), x]);
    }
    const order = [...groups.entries()].sort(
      (a, b) =>
        Math.max(...b[1].map((x) => SEVERITY_RANK[x.severity])) - Math.max(...a[1].map((x) => SEVERITY_RANK[x.severity])) ||
        (a[0] < b[0] ? -1 : 1),
    );
    for (const [label, list] of order) {
      lines.push(`    ${label}:`);
      for (const x of [...list].sort((a, b) => SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity])) {
        const at = x.step !== null ? ` at step ${x.step}` : '';
        lines.push(`      [${x.severity}] ${x.detector}${at}: ${x.message}`);
        const spark = findingSparkline(run, x);
        if (spark !== null) lines.push(`        ${spark}`);
        if (x.recommendation) lines.push(`        -> ${x.recommendation}`);
      }
    }
  }
  return lines.join('\n');
}

export function renderText(
  runs: RunState[],
  filesByRun: Map<string, FileSource[]>,
  findings: Finding[] = [],
  notRead: readonly { path: string; reason: string }[] = [],
): string {
  const missing =
    notRead.length === 0 ? '' : `\nnot read (${notRead.length}):\n${notRead.map((p) => `  ${p.path}: ${p.reason}`).join('\n')}\n`;
  if (runs.length === 0) return `no training records found\n${missing}`;
  return (
    missing +
    runs
      .map((run) =>
        renderRun(
          run,
          filesByRun.get(run.id) ?? [],
          findings.filter((f) => f.run === run.id),
        ),
      )
      .join('\n\n') +
    '\n'
  );
}
