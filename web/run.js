// The run view: per round, the boundary reward with its rolling mean and a +-1 sd band (the
// round before overlaid), the accuracy on the selected evidence against c and the guide's 48%
// mark, each reward component's share of the signal; the filter's histograms; every finding drawn
// where it first held and listed with its evidence and recommendation; the config barwatch read.
import { chart } from './chart.js';
import { api, el, fmt, pct, shortName, where } from './dom.js';
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
          xTitle: `step of ${roundName(round.role, round.round)}`,
          yTitle: 'boundary reward',
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
          xTitle: `step of ${roundName(round.role, round.round)}`,
          yTitle: 'accuracy',
          lines,
          hlines: [
            { y: run.target.c, cls: 'target', label: `target c = ${run.target.c}` },
            { y: run.guide_accuracy, cls: 'guide', label: `the guide's ${Math.round(run.guide_accuracy * 100)}% mark` },
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
    const where = roundName(round.role, round.round);
    out.push(
      figure(
        `${t.label} (${t.series}), ${where}: rolling mean, +-1 sd band`,
        chart({
          title: `${t.label}, ${where}`,
          xTitle: `step of ${where}`,
          yTitle: t.label,
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

/**
 * The whole run across rounds: each round's curve of a series laid after the one before on one
 * axis of steps, a divider at each round's start, the run's findings where they first held.
 */
function wholeRunChart(run, role, series, label, extra = {}) {
  const rounds = run.rounds.filter((r) => r.role === role && r[series] !== null && r[series] !== undefined);
  if (rounds.length < 2) return null;
  const x = [];
  const y = [];
  const dividers = [];
  const markers = [];
  let offset = 0;
  for (const r of rounds) {
    const c = r[series];
    const first = r.first_step ?? 0;
    dividers.push({ x: offset + 1, label: `round ${r.round ?? '-'}` });
    for (const [i, st] of c.step.entries()) {
      x.push(offset + st - first + 1);
      y.push(c.mean[i]);
    }
    for (const m of markersFor(run.findings, r, series)) markers.push({ ...m, x: offset + m.x });
    offset += r.steps;
  }
  return figure(
    `Whole run: ${label}, ${role} rounds ${rounds[0].round}-${rounds[rounds.length - 1].round} one after another`,
    chart({
      title: `Whole run: ${label}`,
      xTitle: `${role} steps, round after round`,
      yTitle: label,
      lines: [{ x, y, cls: 'mean', label }],
      dividers,
      markers,
      ...extra,
    }),
  );
}

function wholeRun(run) {
  const target = [
    { y: run.target.c, cls: 'target', label: `target c = ${run.target.c}` },
    { y: run.guide_accuracy, cls: 'guide', label: `the guide's ${Math.round(run.guide_accuracy * 100)}% mark` },
  ];
  const charts = [
    wholeRunChart(run, 'selector', 'boundary', 'boundary reward'),
    wholeRunChart(run, 'selector', 'accuracy', 'accuracy on the selected evidence', run.target.c != null ? { hlines: target } : {}),
    wholeRunChart(run, 'generator', 'accuracy', 'generator accuracy'),
  ].filter((c) => c !== null);
  return charts.length === 0 ? [] : [el('h2', {}, 'Whole run'), ...charts];
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
      xTitle: "the generator's accuracy on the question",
      yTitle: 'questions',
      yInteger: true,
      bars: [...bins(f.pre).map((b) => ({ ...b, cls: 'pre' })), ...bins(f.post).map((b) => ({ ...b, cls: 'post' }))],
      barLabels: { pre: 'before the filter', post: 'after the filter' },
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

/** "selector round 2"; a log without roles or rounds is just "training". */
function roundName(role, round) {
  const name = [role === 'unknown' ? null : role, round === null ? null : `round ${round}`].filter((x) => x !== null).join(' ');
  return name === '' ? 'training' : name;
}

function settingsList(run) {
  const s = run.settings;
  const rows = [
    // The target c means something for a BAR-RAG run (a selector, or a c read from its config).
    [
      'target c',
      run.target?.c == null || (!run.rounds.some((r) => r.role === 'selector') && run.target.source === 'default (paper)')
        ? null
        : `${run.target.c} (${run.target.source ?? 'default'})`,
    ],
    ['easy threshold', s.easyThreshold],
    ['unsolvable threshold', s.unsolvableThreshold],
    ['variance minimum', s.varMin],
    ['rollouts K', run.rollouts?.k ?? s.rollouts],
    ...Object.entries(s.weights ?? {}).map(([k, v]) => [`weight ${k}`, v]),
  ].filter(([, v]) => v !== undefined && v !== null);
  if (rows.length === 0) return el('p', {}, 'None: no run config, reward weights, filter thresholds or rollout count was read.');
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
          { class: 'round', 'aria-label': roundName(role, r.round) },
          el('h3', {}, `${roundName(role, r.round)} (${r.steps} steps)`),
          ...roundCharts(run, r, rounds[i - 1]),
        ),
      );
    });
  }
  const filter = filterChart(run);
  // (The DOM's own append writes a null as the text "null": the parts left out are dropped first.)
  const parts = [
    el('p', {}, el('a', { href: '#/', 'data-key': 'back' }, '← all runs')),
    el('h1', {}, shortName(run.id)),
    el('p', { class: 'run-id' }, run.id),
    el('p', {}, stateLabel(run), ` · ${(run.formats ?? []).join(' + ') || '-'} · ${where(run)}${run.finished ? ' · finished' : ''}`),
    el('h2', {}, `Findings (${run.findings.length})`),
    run.findings.length === 0
      ? el('p', {}, 'Nothing wrong found so far.')
      : el('ul', { class: 'findings' }, ...run.findings.map(findingItem)),
    el('h2', {}, 'Config barwatch read'),
    settingsList(run),
    filter !== null ? el('h2', {}, 'Filter') : null,
    filter,
    ...wholeRun(run),
    el('h2', {}, 'Rounds'),
    ...sections,
  ];
  root.append(...parts.filter((x) => x !== null && x !== undefined));
}
