// The alerts and silences views: active and recently resolved alerts, each group's last
// delivery per channel, the outbox; silences listed, created (pre-filled from an alert) and
// expired through the same store as `barwatch silence`.
import { api, el, localTime } from './dom.js';

function alertRow(a) {
  const silence = `#/silences?run=${encodeURIComponent(a.run)}&detector=${encodeURIComponent(a.detector)}`;
  return el(
    'tr',
    {},
    el('td', {}, el('span', { class: `state ${a.state} ${a.severity}` }, `${a.state} (${a.severity})`)),
    el('td', {}, el('div', {}, a.detector), el('div', { class: 'message' }, a.message)),
    el('td', {}, el('a', { href: `#/run/${encodeURIComponent(a.run)}`, 'data-key': `alert-run:${a.key}` }, a.run)),
    el('td', {}, [a.round !== null ? `round ${a.round}` : '', a.step !== null ? `step ${a.step}` : ''].filter(Boolean).join(', ') || '-'),
    el('td', {}, localTime(a.resolved_at ?? a.firing_since ?? a.active_since ?? null)),
    el('td', {}, a.silenced_by ?? '-'),
    el(
      'td',
      {},
      a.state === 'resolved' ? '' : el('a', { href: silence, class: 'button', 'data-key': `alert-silence:${a.key}` }, 'Silence…'),
    ),
  );
}

function table(headers, rows, empty) {
  if (rows.length === 0) return el('p', {}, empty);
  return el('table', {}, el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { scope: 'col' }, h)))), el('tbody', {}, ...rows));
}

export async function alertsView(root) {
  const a = await api('/api/v1/alerts');
  const heads = ['State', 'Detector and message', 'Run', 'Where', 'Since (local time)', 'Silenced by', ''];
  root.append(
    el('h1', {}, 'Alerts'),
    el(
      'p',
      {},
      `Outbox: ${a.outbox_depth} notification(s) waiting. Channels: ${a.channels.length > 0 ? a.channels.join(', ') : 'console only'}.`,
    ),
    el('h2', {}, `Active (${a.active.length})`),
    table(heads, a.active.map(alertRow), 'No alert is pending or firing.'),
    el('h2', {}, `Resolved in the last 24 h (${a.resolved.length})`),
    table(heads, a.resolved.map(alertRow), 'None.'),
    el('h2', {}, 'Last notification per group and channel'),
    table(
      ['Group', 'Channel', 'State', 'At', 'Attempts', 'Error'],
      a.deliveries.map((d) =>
        el(
          'tr',
          {},
          el('td', {}, d.group),
          el('td', {}, d.channel),
          el('td', {}, d.state),
          el('td', {}, localTime(d.at)),
          el('td', {}, String(d.attempts)),
          el('td', {}, d.error ?? ''),
        ),
      ),
      'Nothing sent since barwatch started.',
    ),
    el('h2', {}, 'Actions run'),
    table(
      ['Action', 'Detector', 'Run', 'Command', 'State', 'Started (local time)', 'Exit', 'Output'],
      (a.actions ?? []).map((x) =>
        el(
          'tr',
          { 'data-action': x.action },
          el('td', {}, x.action),
          el('td', {}, x.detector),
          el('td', {}, x.run),
          el('td', {}, el('code', {}, x.command)),
          el('td', {}, x.state),
          el('td', {}, localTime(x.started_at)),
          el('td', {}, x.exit_code === null ? '' : String(x.exit_code)),
          el('td', {}, (x.error ?? '') + (x.output ? ` ${x.output.slice(0, 300)}` : '')),
        ),
      ),
      'No action has run (actions are off unless configured).',
    ),
  );
}

/** The token for changes when the page is exposed beyond this machine; kept for this tab only. */
function tokenHeader() {
  const t = sessionStorage.getItem('barwatch-token');
  return t ? { authorization: `Bearer ${t}` } : {};
}

async function change(path, init) {
  try {
    return await api(path, { ...init, headers: { 'content-type': 'application/json', ...tokenHeader(), ...(init.headers ?? {}) } });
  } catch (err) {
    if (/token/.test(err.message)) {
      const t = window.prompt(`${err.message}. Token:`);
      if (t) {
        sessionStorage.setItem('barwatch-token', t);
        return api(path, { ...init, headers: { 'content-type': 'application/json', authorization: `Bearer ${t}` } });
      }
    }
    throw err;
  }
}

export async function silencesView(root, params) {
  const { silences, detectors } = await api('/api/v1/silences');
  const status = el('p', { role: 'status', id: 'silence-status' });
  const run = el('input', {
    id: 'silence-run',
    name: 'run',
    required: true,
    value: params.get('run') ?? '',
    size: 60,
    'data-key': 'silence-run',
  });
  const detector = el(
    'select',
    { id: 'silence-detector', name: 'detector', 'data-key': 'silence-detector' },
    ...['*', ...detectors].map((d) => el('option', { value: d, selected: d === (params.get('detector') ?? '*') }, d)),
  );
  const duration = el('input', { id: 'silence-duration', name: 'duration', value: '2h', size: 8, 'data-key': 'silence-duration' });
  const comment = el('input', { id: 'silence-comment', name: 'comment', size: 40, 'data-key': 'silence-comment' });
  const form = el(
    'form',
    { class: 'silence-form' },
    el('label', { for: 'silence-run' }, 'Run (a path, or a glob: * within a folder name, ** across folders)'),
    run,
    el('label', { for: 'silence-detector' }, 'Detector'),
    detector,
    el('label', { for: 'silence-duration' }, 'For (30m, 2h, 1d)'),
    duration,
    el('label', { for: 'silence-comment' }, 'Comment'),
    comment,
    el('button', { type: 'submit', 'data-key': 'silence-create' }, 'Create silence'),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    change('/api/v1/silences', {
      method: 'POST',
      body: JSON.stringify({ run: run.value, detector: detector.value, duration: duration.value, comment: comment.value }),
    }).then(
      (r) => {
        status.textContent = `Silence ${r.silence.id} created until ${r.silence.endsAt}.`;
        location.hash = '#/silences';
      },
      (err) => (status.textContent = `Not created: ${err.message}`),
    );
  });
  const rows = silences.map((s) =>
    el(
      'tr',
      { 'data-silence': s.id },
      el('td', {}, s.id),
      el('td', {}, s.detector),
      el('td', {}, s.run),
      el('td', {}, s.endsAt),
      el('td', {}, s.comment),
      el(
        'td',
        {},
        el(
          'button',
          {
            type: 'button',
            'data-key': `expire:${s.id}`,
            onclick: () =>
              change(`/api/v1/silences/${encodeURIComponent(s.id)}`, { method: 'DELETE' }).then(
                () => (status.textContent = `Silence ${s.id} expired.`),
                (err) => (status.textContent = `Not expired: ${err.message}`),
              ),
          },
          'Expire',
        ),
      ),
    ),
  );
  root.append(
    el('h1', {}, 'Silences'),
    el('h2', {}, 'New silence'),
    form,
    status,
    el('h2', {}, `Active (${silences.length})`),
    table(['Id', 'Detector', 'Run', 'Until', 'Comment', ''], rows, 'No active silence.'),
  );
}
