// The runs view: every run, most severe first, with its state, where it is and a sparkline of
// its boundary reward; a filter by name.
import { sparkline } from './chart.js';
import { ago, api, el, where } from './dom.js';

let filterText = '';

export function stateLabel(r) {
  if (r.state === 'healthy') return el('span', { class: 'state healthy' }, 'healthy');
  return el('span', { class: `state ${r.state} ${r.severity ?? ''}` }, `${r.state} (${r.severity ?? '?'})`);
}

export async function runsView(root) {
  const { runs } = await api('/api/v1/runs');
  const input = el('input', {
    type: 'search',
    id: 'run-filter',
    'data-key': 'filter',
    placeholder: 'filter by name',
    'aria-label': 'Filter runs by name',
    value: filterText,
  });
  const body = el('tbody');
  const fill = () => {
    const shown = runs.filter((r) => r.id.toLowerCase().includes(filterText.toLowerCase()));
    body.replaceChildren(
      ...shown.map((r) =>
        el(
          'tr',
          { 'data-run': r.id },
          el('td', {}, stateLabel(r)),
          el('td', {}, el('a', { href: `#/run/${encodeURIComponent(r.id)}`, 'data-key': `run:${r.id}` }, r.id)),
          el('td', {}, (r.formats ?? []).join(' + ') || '-'),
          el('td', { class: 'where' }, where(r)),
          el(
            'td',
            r.behind ? { title: r.behind.note, 'data-behind': String(r.behind.steps) } : {},
            r.finished
              ? 'finished'
              : r.behind
                ? `${ago(r.seconds_since_write)} (W&B: ~${r.behind.steps} steps behind)`
                : ago(r.seconds_since_write),
          ),
          el('td', { class: 'findings' }, r.finding_names.length === 0 ? 'none' : r.finding_names.join(', ')),
          el('td', {}, sparkline(r.spark, `boundary reward of ${r.id}`)),
        ),
      ),
    );
    if (shown.length === 0)
      body.append(
        el(
          'tr',
          {},
          el('td', { colspan: 7 }, runs.length === 0 ? 'No run yet: barwatch is waiting for training logs.' : 'No run matches the filter.'),
        ),
      );
  };
  input.addEventListener('input', () => {
    filterText = input.value;
    fill();
  });
  fill();
  root.append(
    el('h1', {}, `Runs (${runs.length})`),
    input,
    el(
      'table',
      { class: 'runs' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          ...['State', 'Run', 'Format', 'Now', 'Last write', 'Findings', 'Boundary reward'].map((h) => el('th', { scope: 'col' }, h)),
        ),
      ),
      body,
    ),
  );
}
