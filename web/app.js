// The page: one view at a time (#/ runs, #/run/<id>, #/alerts, #/silences), drawn from the JSON
// API and redrawn when the event stream says that what it shows changed.
import { el } from './dom.js';
import { runsView } from './runs.js';
import { runView } from './run.js';
import { alertsView, silencesView } from './alerts.js';

const main = document.getElementById('main');
const live = document.getElementById('live');

/** The current view: its name, what it shows, and how to draw it again. */
let current = { name: 'runs', id: null, draw: async () => {} };
let redrawing = null;
let again = false;

function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [pathPart, query = ''] = hash.split('?');
  const params = new URLSearchParams(query);
  if (pathPart.startsWith('/run/')) {
    const id = decodeURIComponent(pathPart.slice(5));
    return { name: 'run', id, draw: (root) => runView(root, id) };
  }
  if (pathPart === '/alerts') return { name: 'alerts', id: null, draw: (root) => alertsView(root) };
  if (pathPart === '/silences') return { name: 'silences', id: null, draw: (root) => silencesView(root, params) };
  if (pathPart === '/' || pathPart === '') return { name: 'runs', id: null, draw: (root) => runsView(root) };
  return { name: 'unknown', id: null, draw: (root) => notFound(root, pathPart) };
}

function notFound(root, pathPart) {
  root.append(
    el('h1', {}, 'No such page'),
    el(
      'p',
      { role: 'alert' },
      `There is no page at #${pathPart}. The pages are: #/ (the runs), #/run/<run path> (one run), #/alerts and #/silences.`,
    ),
    el('p', {}, el('a', { href: '#/', 'data-key': 'home' }, 'All runs')),
  );
}

/** Draws the current view into a fresh container, keeping the focused control focused. */
async function redraw() {
  if (redrawing !== null) {
    again = true;
    return redrawing;
  }
  redrawing = (async () => {
    const focusKey = document.activeElement?.getAttribute?.('data-key');
    const next = el('div', { class: 'view', 'data-view': current.name });
    try {
      await current.draw(next);
    } catch (err) {
      next.replaceChildren(el('p', { class: 'error', role: 'alert' }, `Could not load this view: ${err.message}`));
    }
    // What was typed while the view was drawn, and where the caret was, carry over to the new view.
    const was = document.activeElement;
    const typed = was instanceof HTMLInputElement && was.getAttribute('data-key') === focusKey ? was : null;
    main.replaceChildren(next);
    if (focusKey) {
      const now = next.querySelector(`[data-key="${CSS.escape(focusKey)}"]`);
      now?.focus();
      if (typed !== null && now instanceof HTMLInputElement) {
        if (now.value !== typed.value) {
          now.value = typed.value;
          now.dispatchEvent(new Event('input'));
        }
        now.setSelectionRange(typed.selectionStart, typed.selectionEnd);
      }
    }
  })().finally(() => {
    redrawing = null;
    if (again) {
      again = false;
      void redraw();
    }
  });
  return redrawing;
}

function navigate() {
  current = route();
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.getAttribute('data-nav') === (current.name === 'run' ? 'runs' : current.name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  void redraw().then(() => main.focus({ preventScroll: true }));
}

function connect() {
  const es = new EventSource('/api/v1/events');
  es.addEventListener('open', () => (live.textContent = 'live'));
  es.addEventListener('error', () => (live.textContent = 'reconnecting…'));
  es.addEventListener('runs', (e) => {
    const { ids } = JSON.parse(e.data);
    if (current.name === 'runs' || (current.name === 'run' && ids.includes(current.id))) void redraw();
  });
  es.addEventListener('alerts', () => {
    if (current.name !== 'silences') void redraw();
  });
  es.addEventListener('silences', () => {
    if (current.name === 'silences' || current.name === 'alerts') void redraw();
  });
}

window.addEventListener('hashchange', navigate);
navigate();
connect();
