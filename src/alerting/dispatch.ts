/**
 * Grouping and deduplication (Alertmanager's dispatcher and dedup stage). Alerts are grouped by
 * run. A group's first notification waits `group_wait` so related findings arrive together;
 * later changes wait `group_interval`; a group that still fires is re-notified after
 * `repeat_interval`; resolved alerts are notified when `resolve_notify`. Every decision has a
 * reason, and every skip is reported with its reason too.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { AlertBook } from './lifecycle.js';
import type { SilenceStore } from './silences.js';
import type { Alert, Notification, NotifiedAlert, NotifyReason } from './types.js';

export interface DispatchOptions {
  groupWaitMs: number;
  groupIntervalMs: number;
  repeatIntervalMs: number;
  resolveNotify: boolean;
}

interface GroupState {
  nextFlush: number | null;
  lastFlush: number | null;
  /** Fingerprints of the firing alerts in the last notification. */
  notified: string[];
}

/** What the dispatcher decided for a group, in words for the log. */
export interface Decision {
  group: string;
  send: boolean;
  reason: string;
}

export interface DispatchResult {
  notifications: Omit<Notification, 'channel' | 'id' | 'dedupeKey'>[];
  decisions: Decision[];
}

export type Sparkline = (a: Alert) => string | null;

function toNotified(a: Alert, status: 'firing' | 'resolved', sparkline: Sparkline): NotifiedAlert {
  const f = a.finding;
  return {
    key: a.key,
    fingerprint: a.fingerprint,
    status,
    detector: f.detector,
    severity: f.severity,
    run: f.run,
    round: f.round,
    step: f.step,
    message: f.message,
    evidence: f.evidence,
    recommendation: f.recommendation,
    sparkline: sparkline(a),
    startsAt: new Date(a.firingSince ?? a.activeSince).toISOString(),
    endsAt: a.resolvedAt === null ? null : new Date(a.resolvedAt).toISOString(),
  };
}

/**
 * Whether a group's notified fingerprints hold this alert: by its key (run, detector, round), so
 * an alert judged again after a restart, with another step at which it first held, is the alert
 * already told of. A resolved alert leaves the list when its resolution is dealt with, so a later
 * episode of the same key is new.
 */
function told(notified: readonly string[], a: Alert): boolean {
  return notified.some((fp) => fp === a.fingerprint || fp.slice(0, fp.lastIndexOf('@')) === a.key);
}

export class Dispatcher {
  private readonly groups = new Map<string, GroupState>();
  /** Fingerprints already reported as silenced (each skip is logged once). */
  private readonly silencedSeen = new Set<string>();

  constructor(private readonly opts: DispatchOptions) {}

  /**
   * The firing alerts channels have been told about and that no silence covers, for a channel
   * that must hear them again to keep them (Alertmanager lets an alert lapse at its endsAt).
   */
  notifiedFiring(book: AlertBook, silences: SilenceStore, now: number, sparkline: Sparkline = () => null): NotifiedAlert[] {
    const silenced = silences.matcher(now);
    const out: NotifiedAlert[] = [];
    for (const a of book.alerts.values()) {
      if (a.state !== 'firing' || silenced(a) !== null) continue;
      if (!told(this.groups.get(a.finding.run)?.notified ?? [], a)) continue;
      out.push(toNotified(a, 'firing', sparkline));
    }
    return out;
  }

  tick(book: AlertBook, silences: SilenceStore, now: number, sparkline: Sparkline = () => null): DispatchResult {
    const out: DispatchResult = { notifications: [], decisions: [] };
    const silenced = silences.matcher(now);
    const byGroup = new Map<string, Alert[]>();
    for (const a of book.alerts.values()) {
      if (a.state === 'pending') continue;
      const list = byGroup.get(a.finding.run) ?? [];
      list.push(a);
      byGroup.set(a.finding.run, list);
    }
    for (const name of new Set([...byGroup.keys(), ...this.groups.keys()])) {
      const alerts = byGroup.get(name) ?? [];
      const g = this.groups.get(name) ?? { nextFlush: null, lastFlush: null, notified: [] };
      this.groups.set(name, g);
      const firing: Alert[] = [];
      const resolved: Alert[] = [];
      for (const a of alerts) {
        const s = silenced(a);
        if (s !== null) {
          if (!this.silencedSeen.has(a.fingerprint)) {
            this.silencedSeen.add(a.fingerprint);
            out.decisions.push({
              group: name,
              send: false,
              reason: `${a.finding.detector} silenced by ${s.id} until ${s.endsAt}${s.comment ? ` (${s.comment})` : ''}`,
            });
          }
          if (a.state === 'resolved') book.forget(a.key);
          else if (told(g.notified, a)) g.notified = g.notified.filter((x) => !told([x], a));
          continue;
        }
        (a.state === 'firing' ? firing : resolved).push(a);
      }
      // Resolved alerts that were never notified as firing resolve quietly.
      const toResolve = resolved.filter((a) => told(g.notified, a));
      for (const a of resolved) if (!told(g.notified, a)) book.forget(a.key);
      const fresh = firing.filter((a) => !told(g.notified, a));
      const resolving = this.opts.resolveNotify ? toResolve : [];
      if (!this.opts.resolveNotify) {
        for (const a of toResolve) book.forget(a.key);
        g.notified = g.notified.filter((fp) => !toResolve.some((a) => told([fp], a)));
      }
      let reason: NotifyReason | null = null;
      if (fresh.length > 0) reason = g.lastFlush === null ? 'first notification of the group' : 'new alerts in group';
      else if (resolving.length > 0) reason = 'alerts resolved';
      else if (firing.length > 0 && g.lastFlush !== null && now - g.lastFlush >= this.opts.repeatIntervalMs)
        reason = 'repeat interval elapsed';
      if (reason === null) {
        if (firing.length === 0 && resolved.length === 0 && alerts.length === 0) this.groups.delete(name);
        g.nextFlush = null;
        continue;
      }
      if (g.nextFlush === null) {
        g.nextFlush =
          reason === 'repeat interval elapsed'
            ? now
            : g.lastFlush === null
              ? now + this.opts.groupWaitMs
              : Math.max(now, g.lastFlush + this.opts.groupIntervalMs);
        out.decisions.push({ group: name, send: false, reason: `${reason}: waiting until ${new Date(g.nextFlush).toISOString()}` });
      }
      if (g.nextFlush > now) continue;
      const alertsOut = [
        ...firing.map((a) => toNotified(a, 'firing', sparkline)),
        ...resolving.map((a) => toNotified(a, 'resolved', sparkline)),
      ];
      out.notifications.push({ group: name, reason, createdAt: new Date(now).toISOString(), alerts: alertsOut });
      out.decisions.push({ group: name, send: true, reason });
      g.notified = firing.map((a) => a.fingerprint);
      g.lastFlush = now;
      g.nextFlush = null;
      for (const a of resolving) book.forget(a.key);
    }
    return out;
  }

  toJSON(): Record<string, GroupState> {
    return Object.fromEntries(this.groups);
  }

  restore(j: Record<string, GroupState> | undefined): void {
    for (const [k, v] of Object.entries(j ?? {})) this.groups.set(k, { ...v });
  }

  /**
   * After a restart: each group as its channels were last told (Outbox.notifiedGroups), where that
   * is newer than the checkpoint the groups were restored from. A daemon killed after a send and
   * before its next checkpoint would otherwise take the group for new and send it all again.
   */
  reconcile(told: ReadonlyMap<string, { at: number; firing: string[] }>): void {
    for (const [name, t] of told) {
      const g = this.groups.get(name);
      if (g !== undefined && g.lastFlush !== null && g.lastFlush >= t.at) continue;
      this.groups.set(name, { nextFlush: null, lastFlush: t.at, notified: [...t.firing] });
    }
  }
}

/** The same content to the same channel gives the same key, across restarts. */
export function dedupeKey(channel: string, n: Omit<Notification, 'channel' | 'id' | 'dedupeKey'>, repeatEpoch: string): string {
  const parts = n.alerts.map((a) => `${a.status}:${a.fingerprint}`).sort();
  return createHash('sha1')
    .update(`${channel}\n${n.group}\n${parts.join('\n')}\n${repeatEpoch}`)
    .digest('hex')
    .slice(0, 20);
}

export function newId(): string {
  return randomUUID();
}
