/**
 * Grouping and deduplication (Alertmanager's dispatcher and dedup stage). Alerts are grouped by
 * run. A group's first notification waits `group_wait` so related findings arrive together;
 * later changes wait `group_interval`; a group that still fires is re-notified after
 * `repeat_interval`; resolved alerts are notified when `resolve_notify`. Every decision has a
 * reason, and every skip is reported with its reason too.
 *
 * A tick runs four stages, each a function of what the one before gave, as Alertmanager's notify
 * pipeline does: group (the alerts of each run), silence (which of them a silence covers),
 * decide (what the group's channels must hear and why) and schedule (when it may be said). Only
 * `Dispatcher.tick` changes anything: the alert book and the groups' records, from what the
 * stages decided.
 */
import type { AlertBook } from './lifecycle.js';
import type { Silence, SilenceStore } from './silences.js';
import type { Alert, Notification, NotifiedAlert, NotifyReason } from './types.js';
import { nodeCrypto } from '../util/lazy.js';

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

/** Stage 1, group: the alerts that may be notified (pending ones wait for `for`), by run. */
function groupByRun(book: AlertBook): Map<string, Alert[]> {
  const byGroup = new Map<string, Alert[]>();
  for (const a of book.alerts.values()) {
    if (a.state === 'pending') continue;
    const list = byGroup.get(a.finding.run);
    if (list === undefined) byGroup.set(a.finding.run, [a]);
    else list.push(a);
  }
  return byGroup;
}

/** A group's alerts after the silence stage. */
interface Unsilenced {
  firing: Alert[];
  resolved: Alert[];
  silenced: { alert: Alert; by: Silence }[];
}

/** Stage 2, silence: which of a group's alerts a silence covers; the others may be told. */
function applySilences(alerts: readonly Alert[], silenced: (a: Alert) => Silence | null): Unsilenced {
  const out: Unsilenced = { firing: [], resolved: [], silenced: [] };
  for (const a of alerts) {
    const by = silenced(a);
    if (by !== null) out.silenced.push({ alert: a, by });
    else (a.state === 'firing' ? out.firing : out.resolved).push(a);
  }
  return out;
}

/** What a group's channels must hear now, and which resolved alerts are done with. */
interface Verdict {
  /** Null: nothing to say. */
  reason: NotifyReason | null;
  /** The resolved alerts to send as resolved (their firing was told, and resolve_notify is on). */
  resolving: Alert[];
  /** Resolved alerts dealt with without a word: never told as firing, or resolve_notify is off. */
  quiet: Alert[];
}

/** Stage 3, decide: what the group's channels must hear, from what they were last told. */
function decide(g: Readonly<GroupState>, u: Unsilenced, now: number, opts: DispatchOptions): Verdict {
  const toldResolved = u.resolved.filter((a) => told(g.notified, a));
  const neverTold = u.resolved.filter((a) => !told(g.notified, a));
  const resolving = opts.resolveNotify ? toldResolved : [];
  const quiet = opts.resolveNotify ? neverTold : [...neverTold, ...toldResolved];
  let reason: NotifyReason | null = null;
  if (u.firing.some((a) => !told(g.notified, a))) reason = g.lastFlush === null ? 'first notification of the group' : 'new alerts in group';
  else if (resolving.length > 0) reason = 'alerts resolved';
  else if (u.firing.length > 0 && g.lastFlush !== null && now - g.lastFlush >= opts.repeatIntervalMs) reason = 'repeat interval elapsed';
  return { reason, resolving, quiet };
}

/** Stage 4, schedule: when a group with something to say may say it. */
function flushAt(g: Readonly<GroupState>, reason: NotifyReason, now: number, opts: DispatchOptions): number {
  if (reason === 'repeat interval elapsed') return now;
  if (g.lastFlush === null) return now + opts.groupWaitMs;
  return Math.max(now, g.lastFlush + opts.groupIntervalMs);
}

/** The group's record without these alerts: a later episode of the same key is new. */
function untold(notified: readonly string[], alerts: readonly Alert[]): string[] {
  return notified.filter((fp) => !alerts.some((a) => told([fp], a)));
}

/** What a tick read, and until when a tick that reads the same decides nothing (see Dispatcher.tick). */
interface Quiet {
  alerts: number;
  silences: number;
  until: number;
}

export class Dispatcher {
  private readonly groups = new Map<string, GroupState>();
  /** Fingerprints already reported as silenced (each skip is logged once). */
  private readonly silencedSeen = new Set<string>();
  /** After a tick: what it read and until when nothing can change without a change of it; null: tick in full. */
  private quiet: Quiet | null = null;

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

  /**
   * Runs the stages for every group and applies what they decided to the book and the groups.
   * A tick decides only from the alerts' states, the silences and the clock. After a tick that
   * changed nothing, another over the same alerts and silences changes nothing either until a
   * group's flush or repeat time comes or a silence ends: such a tick is skipped, so a daemon with
   * many alerts that hold does no work a second for them (the alert timer runs every second).
   */
  tick(book: AlertBook, silences: SilenceStore, now: number, sparkline: Sparkline = () => null): DispatchResult {
    const q = this.quiet;
    const silencesRevision = silences.revision;
    if (q !== null && q.alerts === book.revision && q.silences === silencesRevision && now < q.until)
      return { notifications: [], decisions: [] };
    const before = book.revision;
    const out = this.tickGroups(book, silences, now, sparkline);
    // Only a tick that changed nothing is known to be what the next one would do again: one that
    // forgot alerts or decided something is followed by a full tick (a group left without alerts,
    // say, is dropped at the tick after).
    const changed = book.revision !== before || out.decisions.length > 0 || out.notifications.length > 0;
    this.quiet = changed ? null : { alerts: before, silences: silencesRevision, until: this.nextTime(silences, now) };
    return out;
  }

  /** The earliest time at which a tick over unchanged alerts and silences could decide something. */
  private nextTime(silences: SilenceStore, now: number): number {
    let t = silences.nextEnd(now);
    for (const g of this.groups.values()) {
      if (g.nextFlush !== null) t = Math.min(t, g.nextFlush);
      if (g.lastFlush !== null) t = Math.min(t, g.lastFlush + this.opts.repeatIntervalMs);
    }
    return t;
  }

  private tickGroups(book: AlertBook, silences: SilenceStore, now: number, sparkline: Sparkline): DispatchResult {
    const out: DispatchResult = { notifications: [], decisions: [] };
    const byGroup = groupByRun(book);
    const silenced = silences.matcher(now);
    for (const name of new Set([...byGroup.keys(), ...this.groups.keys()])) {
      const alerts = byGroup.get(name) ?? [];
      const g = this.groups.get(name) ?? { nextFlush: null, lastFlush: null, notified: [] };
      this.groups.set(name, g);
      const u = applySilences(alerts, silenced);
      for (const { alert: a, by } of u.silenced) {
        if (!this.silencedSeen.has(a.fingerprint)) {
          this.silencedSeen.add(a.fingerprint);
          const why = `${a.finding.detector} silenced by ${by.id} until ${by.endsAt}${by.comment ? ` (${by.comment})` : ''}`;
          out.decisions.push({ group: name, send: false, reason: why });
        }
        // A silenced resolution is done with; a silenced firing alert is told again when the silence ends.
        if (a.state === 'resolved') book.forget(a.key);
      }
      g.notified = untold(
        g.notified,
        u.silenced.filter((x) => x.alert.state !== 'resolved').map((x) => x.alert),
      );
      const v = decide(g, u, now, this.opts);
      for (const a of v.quiet) book.forget(a.key);
      g.notified = untold(g.notified, v.quiet);
      if (v.reason === null) {
        if (alerts.length === 0) this.groups.delete(name);
        g.nextFlush = null;
        continue;
      }
      if (g.nextFlush === null) {
        g.nextFlush = flushAt(g, v.reason, now, this.opts);
        out.decisions.push({ group: name, send: false, reason: `${v.reason}: waiting until ${new Date(g.nextFlush).toISOString()}` });
      }
      if (g.nextFlush > now) continue;
      const sent = [
        ...u.firing.map((a) => toNotified(a, 'firing', sparkline)),
        ...v.resolving.map((a) => toNotified(a, 'resolved', sparkline)),
      ];
      out.notifications.push({ group: name, reason: v.reason, createdAt: new Date(now).toISOString(), alerts: sent });
      out.decisions.push({ group: name, send: true, reason: v.reason });
      g.notified = u.firing.map((a) => a.fingerprint);
      g.lastFlush = now;
      g.nextFlush = null;
      for (const a of v.resolving) book.forget(a.key);
    }
    return out;
  }

  toJSON(): Record<string, GroupState> {
    return Object.fromEntries(this.groups);
  }

  restore(j: Record<string, GroupState> | undefined): void {
    this.quiet = null;
    for (const [k, v] of Object.entries(j ?? {})) this.groups.set(k, { ...v });
  }

  /**
   * After a restart: each group as its channels were last told (Outbox.notifiedGroups), where that
   * is newer than the checkpoint the groups were restored from. A daemon killed after a send and
   * before its next checkpoint would otherwise take the group for new and send it all again.
   */
  reconcile(told: ReadonlyMap<string, { at: number; firing: string[] }>): void {
    this.quiet = null;
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
  return nodeCrypto()
    .createHash('sha1')
    .update(`${channel}\n${n.group}\n${parts.join('\n')}\n${repeatEpoch}`)
    .digest('hex')
    .slice(0, 20);
}

export function newId(): string {
  return nodeCrypto().randomUUID();
}
