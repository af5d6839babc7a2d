// The run view: per round, the boundary reward with its rolling mean and a +-1 sd band (the
// round before overlaid), the accuracy on the selected evidence against c and the guide's 48%
// mark, each reward component's share of the signal; the filter's histograms; every finding drawn
// where it first held and listed with its evidence and recommendation; the config barwatch read.
import { chart } from './chart.js';
import { api, el, fmt, pct, shortName } from './dom.js';
import { stateLabel } from './runs.js';

function findingId(f) {
  return `${f.detector}:${f.round ?? '-'}`;
}

function markersFor(findings, round, series) {
  return findings
    .filter(
      (f) =>
        f.step !== null &&
        f.round === round.round &&
        (f.series === null ? series === 'boundary' && round.role === 'selector' : f.series.name === series && f.series.role === round.role),
    )
    .map((f) => ({ x: f.step - (round.first_step ?? 0) + 1, cls: f.severity, label: `${f.detector} (${f.severity})`, id: findingId(f) }));
}

function rel(curve, first) {
  return curve.step.map((s) => s - first + 1);
}

/** The round before, drawn faint on the same steps from the round's start. */
function overlay(previous, series) {
  const c = previous[series];
  return { x: rel(c, previous.first_step ?? 0), y: c.mean, cls: 'previous', label: `round ${previous.round}` };
}

function figure(caption, svg) {
  return el('figure', {}, el('figcaption', {}, caption), svg);
}

function roundCharts(run, round, previous) {
  const first = round.first_step ?? 0;
  const out = [];
  const b = round.boundary;
  if (b !== null) {
    const x = rel(b, first);
    const lines = [
      { x, y: b.mean, cls: 'mean', label: 'boundary reward' },
      { x, y: b.roll_mean, cls: 'roll', label: 'rolling mean' },
    ];
    if (previous?.boundary) lines.unshift(overlay(previous, 'boundary'));
    out.push(
      figure(
        `Boundary reward, ${round.role} round ${round.round ?? '-'} (rolling mean, +-1 sd band${previous?.boundary ? `; faint: round ${previous.round}` : ''})`,
        chart({
          title: `Boundary reward, ${round.role} round ${round.round ?? '-'}`,
          lines,
          band: { x, lo: b.roll_mean.map((m, i) => m - b.roll_sd[i]), hi: b.roll_mean.map((m, i) => m + b.roll_sd[i]) },
          markers: markersFor(run.findings, round, 'boundary'),
        }),
      ),
    );
  }
  const a = round.accuracy;
  if (a !== null) {
    const x = rel(a, first);
    const lines = [{ x, y: a.mean, cls: 'mean', label: 'accuracy' }];
    if (previous?.accuracy) lines.unshift(overlay(previous, 'accuracy'));
    out.push(
      figure(
        `Accuracy${round.role === 'selector' ? ' on the selected evidence' : ''}, ${round.role} round ${round.round ?? '-'} (target c = ${run.target.c})`,
        chart({
          title: `Accuracy, ${round.role} round ${round.round ?? '-'}`,
          lines,
          hlines: [
            { y: run.target.c, cls: 'target', label: `c = ${run.target.c}` },
            { y: run.guide_accuracy, cls: 'guide', label: `${Math.round(run.guide_accuracy * 100)}%` },
          ],
          markers: markersFor(run.findings, round, 'accuracy'),
        }),
      ),
    );
  }
  // The series of ordinary RL training (reward, entropy, KL, length, clipped ratio, grad norm),
  // for every run: a verl or TRL log has these and nothing of BAR-RAG's.
  for (const t of round.training ?? []) {
    const c = t.curve;
    const x = rel(c, first);
    const where = `${round.role === 'unknown' ? 'run' : `${round.role} round ${round.round ?? '-'}`}`;
    out.push(
      figure(
        `${t.label} (${t.series}), ${where}: rolling mean, +-1 sd band`,
        chart({
          title: `${t.label}, ${where}`,
          lines: [
            { x, y: c.mean, cls: 'mean', label: t.series },
            { x, y: c.roll_mean, cls: 'roll', label: 'rolling mean' },
          ],
          band: { x, lo: c.roll_mean.map((m, i) => m - c.roll_sd[i]), hi: c.roll_mean.map((m, i) => m + c.roll_sd[i]) },
          markers: markersFor(run.findings, round, t.series),
        }),
      ),
    );
  }
  if (round.signal !== null) {
    out.push(
      el(
        'div',
        { class: 'signal' },
        el('h4', {}, 'Share of the reward signal'),
        el(
          'ul',
          {},
          ...Object.entries(round.signal.share).map(([k, v]) =>
            el(
              'li',
              {},
              el('span', { class: `share-bar ${k}`, style: null }, `${k}: ${pct(v)}`),
              ` (weight ${fmt(round.signal.weights[k], 2)})`,
            ),
          ),
        ),
      ),
    );
  }
  return out;
}

function filterChart(run) {
  const f = run.filter;
  if (f === null) return null;
  const bins = (h) => h.map((n, i) => ({ x0: i / h.length, x1: (i + 1) / h.length, y: n }));
  const markers = [];
  const s = run.settings;
  if (s.easyThreshold !== undefined) markers.push({ x: s.easyThreshold, cls: 'threshold', label: `easy ${s.easyThreshold}`, id: 'easy' });
  if (s.unsolvableThreshold !== undefined)
    markers.push({ x: s.unsolvableThreshold, cls: 'threshold', label: `unsolvable ${s.unsolvableThreshold}`, id: 'unsolvable' });
  for (const x of run.findings.filter((x) => x.detector.startsWith('boundary-share')))
    markers.push({ x: 0.5, cls: x.severity, label: `${x.detector} (${x.severity})`, id: findingId(x) });
  return figure(
    `Filter: questions by generator accuracy, before (${f.pre_n}, boundary share ${pct(f.pre_share)}) and after (${f.post_n}, ${pct(f.post_share)})`,
    chart({
      title: 'Filter histograms',
      x: [0, 1],
      bars: [...bins(f.pre).map((b) => ({ ...b, cls: 'pre' })), ...bins(f.post).map((b) => ({ ...b, cls: 'post' }))],
      spans: [{ from: f.zone[0], to: f.zone[1], cls: 'zone', label: `boundary zone ${f.zone[0]}-${f.zone[1]}` }],
      markers,
    }),
  );
}

function findingItem(f) {
  const evidence = Object.entries(f.evidence).filter(([, v]) => ['number', 'string', 'boolean'].includes(typeof v));
  const silence = `#/silences?run=${encodeURIComponent(f.run)}&detector=${encodeURIComponent(f.detector)}`;
  return el(
    'li',
    { class: `finding ${f.severity}`, id: `finding-${findingId(f)}`, 'data-finding': findingId(f) },
    el(
      'p',
      {},
      el('strong', {}, `[${f.severity}] ${f.detector}`),
      f.round !== null ? ` round ${f.round}` : '',
      f.step !== null ? `, step ${f.step}` : '',
      ': ',
      f.message,
    ),
    f.recommendation ? el('p', { class: 'recommendation' }, 'What to do: ', f.recommendation) : null,
    evidence.length > 0
      ? el('dl', { class: 'evidence' }, ...evidence.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]))
      : null,
    el('a', { href: silence, class: 'button', 'data-key': `silence:${findingId(f)}` }, 'Silence…'),
  );
}

function settingsList(run) {
  const s = run.settings;
  const rows = [
    ['target c', `${run.target.c} (${run.target.source})`],
    ['easy threshold', s.easyThreshold],
    ['unsolvable threshold', s.unsolvableThreshold],
    ['variance minimum', s.varMin],
    ['rollouts K', run.rollouts?.k ?? s.rollouts],
    ...Object.entries(s.weights ?? {}).map(([k, v]) => [`weight ${k}`, v]),
  ].filter(([, v]) => v !== undefined && v !== null);
  return el('dl', { class: 'settings' }, ...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, String(v))]));
}

export async function runView(root, id) {
  const run = await api(`/api/v1/runs/${encodeURIComponent(id)}`);
  const byRole = (role) => run.rounds.filter((r) => r.role === role);
  const sections = [];
  for (const role of ['selector', 'generator', 'unknown']) {
    const rounds = byRole(role);
    rounds.forEach((r, i) => {
      sections.push(
        el(
          'section',
          { class: 'round', 'aria-label': `${role} round ${r.round ?? '-'}` },
          el('h3', {}, `${role} round ${r.round ?? '-'} (${r.steps} steps)`),
          ...roundCharts(run, r, rounds[i - 1]),
        ),
      );
    });
  }
  const filter = filterChart(run);
  root.append(
    el('p', {}, el('a', { href: '#/', 'data-key': 'back' }, '← all runs')),
    el('h1', {}, shortName(run.id)),
    el('p', { class: 'run-id' }, run.id),
    el(
      'p',
      {},
      stateLabel(run),
      ` · ${run.format ?? '-'} · ${run.role === null ? '-' : `${run.role} round ${run.round ?? '-'}, step ${run.step ?? '-'}`}${run.finished ? ' · finished' : ''}`,
    ),
    el('h2', {}, `Findings (${run.findings.length})`),
    run.findings.length === 0
      ? el('p', {}, 'Nothing wrong found so far.')
      : el('ul', { class: 'findings' }, ...run.findings.map(findingItem)),
    el('h2', {}, 'Config barwatch read'),
    settingsList(run),
    filter !== null ? el('h2', {}, 'Filter') : null,
    filter,
    el('h2', {}, 'Rounds'),
    ...sections,
  );
}
