/** Text shared by the notifiers: titles, evidence lines, escaping for Slack and HTML. */
import { resolvedMessage } from '../detectors/index.js';
import type { Notification, NotifiedAlert } from '../alerting/types.js';
import { where } from '../util/format.js';

export function escapeSlack(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function title(n: Notification): string {
  if (n.test === true) return 'barwatch test notification';
  const firing = n.alerts.filter((a) => a.status === 'firing');
  const top = firing[0] ?? n.alerts[0]!;
  const more = n.alerts.length > 1 ? ` (+${n.alerts.length - 1} more)` : '';
  const state = firing.length > 0 ? top.severity.toUpperCase() : 'RESOLVED';
  return `[${state}] ${top.detector} in ${top.run}${more}`;
}

/** The few evidence numbers worth a line: scalars only, at most `max`. */
export function keyEvidence(a: NotifiedAlert, max = 6): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(a.evidence)) {
    if (out.length >= max) break;
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') out.push(`${k}: ${v}`);
  }
  return out;
}

/**
 * What an alert of a notification says: its message, or for a resolved one what changed (and,
 * where the same run-wide finding fires for another round in the same notification, that it
 * moved on there).
 */
export function messageOf(a: NotifiedAlert, all: readonly NotifiedAlert[]): string {
  if (a.status !== 'resolved') return a.message;
  const moved = all.find((x) => x.status === 'firing' && x.run === a.run && x.detector === a.detector && x.round !== a.round);
  return resolvedMessage(a, moved === undefined ? undefined : moved.round);
}

export function plainText(n: Notification): string {
  if (n.test === true) return 'This is a test notification from barwatch: this channel works.\n';
  const lines: string[] = [];
  for (const a of n.alerts) {
    const at = where(a);
    lines.push(`${a.status === 'resolved' ? 'RESOLVED' : a.severity.toUpperCase()} ${a.detector} - ${a.run}${at ? ` (${at})` : ''}`);
    lines.push(messageOf(a, n.alerts));
    if (a.status === 'firing') {
      const ev = keyEvidence(a);
      if (ev.length > 0) lines.push(`Evidence: ${ev.join('; ')}`);
      if (a.sparkline) lines.push(a.sparkline);
      if (a.recommendation) lines.push(`Recommendation: ${a.recommendation}`);
    }
    for (const x of a.actions ?? []) lines.push(actionLine(x));
    lines.push('');
  }
  return lines.join('\n');
}

/** What an action run for an alert did, in a line. */
export function actionLine(x: NonNullable<NotifiedAlert['actions']>[number]): string {
  const how = x.state === 'ok' ? 'done' : x.state === 'dry-run' ? 'dry run, nothing was run' : x.state;
  return `Action ${x.action}: ${x.command} (${how}${x.exitCode !== undefined && x.exitCode !== null ? `, exit ${x.exitCode}` : ''})`;
}
