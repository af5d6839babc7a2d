/**
 * Nothing lost: every notification is written to `<state_dir>/outbox/` (temp file, fsync,
 * rename) before it is sent, and removed only after the channel accepted it and the send was
 * appended to `<state_dir>/notifications.jsonl`. Failures retry with exponential backoff and equal
 * jitter (half the delay fixed, half random) per channel, honouring Retry-After; 4xx other than 429 are not retried and move to
 * `outbox/failed/`. After a restart the outbox resumes; the notification log stops a repeat of
 * anything a channel had accepted. (A crash in the instant between the channel's answer and the
 * log write can still repeat that one message: no webhook offers an idempotency key.)
 *
 * A state folder that cannot be written (full disk, read-only) never stops delivery: the entries
 * and the record of what was sent are kept in memory, the failure is logged once, and the
 * recovery is logged when a write succeeds again.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../util/log.js';
import type { Channel, Notification } from './types.js';
import { writeAtomic } from '../state/atomic.js';
import { Journal } from '../state/journal.js';
import { makePrivateDir, READ_NOFOLLOW } from '../state/private.js';
import type { StateLayout } from '../state/layout.js';
import { FailureReport } from '../util/failures.js';

export interface OutboxOptions {
  baseBackoffMs: number;
  maxBackoffMs: number;
  /** Jitter source in [0, 1); injected so tests are repeatable. */
  random?: () => number;
  /**
   * The longest a channel's Retry-After is honoured (default an hour): a server asking for
   * 999,999,999 s would otherwise park the channel for decades.
   */
  maxRetryAfterMs?: number;
}

const MAX_RETRY_AFTER_MS = 3_600_000;

interface Entry {
  notification: Notification;
  attempts: number;
  nextAttempt: number;
  lastError: string | null;
}

/** The last thing that happened to a group's notification on one channel (for the page). */
export interface DeliveryStatus {
  group: string;
  channel: string;
  state: 'queued' | 'retrying' | 'sent' | 'failed';
  at: string;
  attempts: number;
  error: string | null;
}

interface ChannelState {
  failures: number;
  nextAttempt: number;
  /** The error last logged, so a failure is logged when it starts and when it changes. */
  logged: string | null;
}

export interface DeliveryRecord {
  time: string;
  id: string;
  dedupeKey: string;
  channel: string;
  group: string;
  attempts: number;
  /** When the dispatcher decided the notification (its createdAt). */
  created_at?: string;
  /** The fingerprints of the firing alerts it carried: what the group's channels have been told. */
  firing?: string[];
}

/** What a group's channels were last told, from the record of deliveries and the queue. */
export interface GroupNotified {
  /** When that notification was decided (ms). */
  at: number;
  /** The fingerprints of its firing alerts. */
  firing: string[];
}

/**
 * How many delivered notifications are remembered to stop a repeat (the most recent ones):
 * notifications.jsonl itself is rotated (state/journal.ts), read as a stream at start.
 */
export const SENT_KEEP = 10_000;

/** A set that forgets its oldest members beyond `limit`. */
class RecentSet {
  private readonly items = new Set<string>();
  constructor(private readonly limit: number) {}
  add(x: string): void {
    this.items.delete(x);
    this.items.add(x);
    if (this.items.size > this.limit)
      for (const old of this.items) {
        this.items.delete(old);
        break;
      }
  }
  has(x: string): boolean {
    return this.items.has(x);
  }
  get size(): number {
    return this.items.size;
  }
}

export class Outbox {
  readonly dir: string;
  private readonly failedDir: string;
  readonly logFile: string;
  private readonly journal: Journal;
  private readonly entries = new Map<string, Entry>();
  private readonly sent = new RecentSet(SENT_KEEP);
  /** Per group: the latest notification decided for it, delivered or queued (see notifiedGroups). */
  private readonly lastByGroup = new Map<string, GroupNotified>();
  private readonly channels = new Map<string, ChannelState>();
  private pumping: Promise<void> | null = null;
  /** Writes to the state folder that fail, logged once until the cause changes. */
  private readonly diskFailure = new FailureReport();
  /** The latest delivery status of each group on each channel, since start (`group\nchannel`). */
  private readonly statuses = new Map<string, DeliveryStatus>();
  /** Deliveries and permanent failures, for tests and metrics. */
  readonly counters = { sent: new Map<string, number>(), failed: new Map<string, number>() };

  constructor(
    layout: StateLayout,
    private readonly notifiers: Map<string, Channel>,
    private readonly log: Logger,
    private readonly now: () => number,
    private readonly opts: OutboxOptions = { baseBackoffMs: 1000, maxBackoffMs: 60_000 },
  ) {
    this.dir = layout.outbox;
    this.failedDir = layout.outboxFailed;
    this.logFile = layout.notifications;
    this.journal = new Journal(this.logFile, undefined, now);
  }

  /** Loads what a previous process left: queued entries and the log of what was sent. */
  async init(): Promise<void> {
    const created = await this.disk('create the outbox folder', async () => {
      await makePrivateDir(this.dir);
      await makePrivateDir(this.failedDir);
    });
    if (!created) return;
    try {
      for await (const l of this.journal.lines()) {
        try {
          const rec = JSON.parse(l) as DeliveryRecord;
          this.sent.add(rec.dedupeKey);
          if (rec.created_at !== undefined && rec.firing !== undefined) this.noteGroup(rec.group, Date.parse(rec.created_at), rec.firing);
        } catch {
          // A torn last line (kill -9 mid-append) is ignored.
        }
      }
    } catch (err) {
      this.log.warn(
        { file: this.logFile, code: (err as NodeJS.ErrnoException).code },
        'cannot read the record of sent notifications; a notification queued before the restart may be sent twice',
      );
    }
    for (const name of await fsp.readdir(this.dir)) {
      if (!name.endsWith('.json')) continue;
      try {
        const e = JSON.parse(await fsp.readFile(path.join(this.dir, name), { encoding: 'utf8', flag: READ_NOFOLLOW })) as Entry;
        if (this.sent.has(e.notification.dedupeKey)) {
          await fsp.rm(path.join(this.dir, name), { force: true });
          continue;
        }
        this.entries.set(e.notification.id, e);
        this.noteDecision(e.notification);
      } catch (err) {
        const dest = path.join(this.failedDir, `${name}.unreadable`);
        await fsp.rename(path.join(this.dir, name), dest).catch(() => undefined);
        this.log.warn({ file: path.join(this.dir, name) }, `unreadable outbox entry (${(err as Error).message}); moved to ${dest}`);
      }
    }
    if (this.entries.size > 0) this.log.info({ queued: this.entries.size }, 'resuming the notification outbox');
  }

  get depth(): number {
    return this.entries.size;
  }

  /**
   * Per group, what its channels were last told: the newest notification decided for it that was
   * delivered (notifications.jsonl, appended at each delivery) or is queued (the outbox, written
   * before it is sent). A restarted daemon rebuilds its groups from this, not from its last
   * checkpoint, so an alert already sent is not sent again as new (Alerting.init).
   */
  notifiedGroups(): ReadonlyMap<string, GroupNotified> {
    return this.lastByGroup;
  }

  private noteDecision(n: Notification): void {
    if (n.refresh === true || n.test === true) return;
    this.noteGroup(
      n.group,
      Date.parse(n.createdAt),
      n.alerts.filter((a) => a.status === 'firing').map((a) => a.fingerprint),
    );
  }

  private noteGroup(group: string, at: number, firing: string[]): void {
    if (!Number.isFinite(at)) return;
    const prev = this.lastByGroup.get(group);
    if (prev === undefined || at >= prev.at) this.lastByGroup.set(group, { at, firing: [...firing] });
  }

  /** Queues a notification durably; false (with the reason logged) when it was already queued or sent. */
  async enqueue(n: Notification): Promise<boolean> {
    if (n.refresh === true) await this.dropQueuedRefreshes(n.channel);
    const queued = [...this.entries.values()].some((e) => e.notification.dedupeKey === n.dedupeKey);
    if (queued || this.sent.has(n.dedupeKey)) {
      this.log.info(
        { channel: n.channel, group: n.group, notifier: n.channel },
        `not queued: the same notification was already ${queued ? 'queued' : 'sent'}`,
      );
      return false;
    }
    const e: Entry = { notification: n, attempts: 0, nextAttempt: this.now(), lastError: null };
    this.entries.set(n.id, e);
    this.noteDecision(n);
    this.note(e, 'queued');
    await this.disk('queue a notification on disk', () => this.write(path.join(this.dir, `${n.id}.json`), e));
    return true;
  }

  /** A newer refresh carries every firing alert: older ones still queued for the channel are dropped. */
  private async dropQueuedRefreshes(channel: string): Promise<void> {
    for (const [id, e] of this.entries) {
      if (e.notification.refresh !== true || e.notification.channel !== channel) continue;
      this.entries.delete(id);
      await fsp.rm(path.join(this.dir, `${id}.json`), { force: true }).catch(() => undefined);
    }
  }

  /** Writes an entry, creating its folder first (it may have been impossible to create at start). */
  private async write(file: string, e: Entry): Promise<void> {
    await makePrivateDir(path.dirname(file));
    await writeAtomic(file, JSON.stringify(e));
  }

  /**
   * Runs one write to the state folder; a failure is logged once per error code (with what is
   * kept in memory instead) and the recovery once. True when the write succeeded.
   */
  private async disk(what: string, write: () => Promise<unknown> | void): Promise<boolean> {
    try {
      await write();
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      if (this.diskFailure.failed('disk', code)) {
        this.log.error(
          { stateDir: path.dirname(this.dir), code },
          `cannot ${what} (${code}); notifications and the record of what was sent are kept in memory until the state folder can be written`,
        );
      }
      return false;
    }
    if (this.diskFailure.recovered('disk')) this.log.info({ stateDir: path.dirname(this.dir) }, 'the outbox is written to disk again');
    return true;
  }

  /** Sends what is due, oldest first, one channel in backoff never delaying the others. */
  pump(): Promise<void> {
    this.pumping ??= this.pumpOnce().finally(() => {
      this.pumping = null;
    });
    return this.pumping;
  }

  private backoff(failures: number, retryAfter?: number): number {
    if (retryAfter !== undefined) return Math.min(retryAfter, this.opts.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS);
    const exp = Math.min(this.opts.maxBackoffMs, this.opts.baseBackoffMs * 2 ** Math.max(0, failures - 1));
    const r = (this.opts.random ?? Math.random)();
    return Math.round(exp / 2 + (exp / 2) * r);
  }

  private async pumpOnce(): Promise<void> {
    const order = [...this.entries.values()].sort((a, b) => a.notification.createdAt.localeCompare(b.notification.createdAt));
    const byChannel = new Map<string, Entry[]>();
    for (const e of order) {
      const list = byChannel.get(e.notification.channel) ?? [];
      list.push(e);
      byChannel.set(e.notification.channel, list);
    }
    // Channels send side by side: one that hangs until its timeout holds up only its own queue.
    await Promise.all([...byChannel].map(([channel, list]) => this.pumpChannel(channel, list)));
  }

  /** Sends one channel's due notifications, oldest first, until one fails (then the channel backs off). */
  private async pumpChannel(channel: string, list: Entry[]): Promise<void> {
    const ch = this.channels.get(channel) ?? { failures: 0, nextAttempt: 0, logged: null };
    this.channels.set(channel, ch);
    for (const e of list) {
      const n = e.notification;
      const now = this.now();
      if (ch.nextAttempt > now) return;
      // Dropped meanwhile (a newer refresh), or not due yet.
      if (!this.entries.has(n.id) || e.nextAttempt > now) continue;
      const notifier = this.notifiers.get(channel);
      if (notifier === undefined) {
        await this.fail(e, `channel ${channel} is no longer configured`);
        continue;
      }
      e.attempts++;
      const r = await notifier.send(n);
      const log = this.log.child({ notifier: channel, group: n.group });
      if (r.ok) {
        await this.delivered(e);
        if (ch.logged !== null) log.info({ attempts: e.attempts }, `${channel} accepts notifications again`);
        ch.failures = 0;
        ch.nextAttempt = 0;
        ch.logged = null;
        log[n.refresh === true ? 'debug' : 'info'](
          { id: n.id, reason: n.reason, alerts: n.alerts.length, attempts: e.attempts },
          `sent to ${channel}: ${n.reason}`,
        );
        continue;
      }
      if (!r.retry) {
        log.error({ id: n.id, attempts: e.attempts }, `${channel} refused a notification: ${r.error}; not retried, kept in outbox/failed`);
        await this.fail(e, r.error);
        continue;
      }
      ch.failures++;
      const wait = this.backoff(ch.failures, r.retryAfterMs);
      ch.nextAttempt = this.now() + wait;
      e.nextAttempt = ch.nextAttempt;
      e.lastError = r.error;
      this.note(e, 'retrying');
      if (ch.logged !== r.error) {
        log.warn(
          { id: n.id, attempts: e.attempts, retryInMs: wait, queued: this.entries.size },
          `cannot send to ${channel}: ${r.error}; retrying with backoff`,
        );
        ch.logged = r.error;
      }
      await this.disk('update a queued notification', () => this.write(path.join(this.dir, `${n.id}.json`), e));
      return;
    }
  }

  /** Channels waiting to try again after a failure: until when, and the error that made them wait. */
  backingOff(): { channel: string; retryAt: number; error: string | null }[] {
    const now = this.now();
    return [...this.channels]
      .filter(([, ch]) => ch.nextAttempt > now)
      .map(([channel, ch]) => ({ channel, retryAt: ch.nextAttempt, error: ch.logged }));
  }

  /** Each group's latest delivery status per channel. */
  deliveries(): DeliveryStatus[] {
    return [...this.statuses.values()];
  }

  private note(e: Entry, state: DeliveryStatus['state']): void {
    const n = e.notification;
    const at = new Date(this.now()).toISOString();
    this.statuses.set(`${n.group}\n${n.channel}`, {
      group: n.group,
      channel: n.channel,
      state,
      at,
      attempts: e.attempts,
      error: e.lastError,
    });
  }

  private async delivered(e: Entry): Promise<void> {
    const n = e.notification;
    this.note(e, 'sent');
    const rec: DeliveryRecord = {
      time: new Date(this.now()).toISOString(),
      id: n.id,
      dedupeKey: n.dedupeKey,
      channel: n.channel,
      group: n.group,
      attempts: e.attempts,
      ...(n.test !== true
        ? { created_at: n.createdAt, firing: n.alerts.filter((a) => a.status === 'firing').map((a) => a.fingerprint) }
        : {}),
    };
    this.entries.delete(n.id);
    this.counters.sent.set(n.channel, (this.counters.sent.get(n.channel) ?? 0) + 1);
    // A refresh is sent again by design: not remembered, not recorded (it would crowd out the record of the rest).
    if (n.refresh !== true) {
      this.sent.add(n.dedupeKey);
      await this.disk('record a delivery in notifications.jsonl', () => this.journal.append(JSON.stringify(rec) + '\n'));
    }
    // Removed even when the record could not be written: a restart must not send it again.
    await fsp.rm(path.join(this.dir, `${n.id}.json`), { force: true }).catch(() => undefined);
  }

  private async fail(e: Entry, error: string): Promise<void> {
    const n = e.notification;
    e.lastError = error;
    this.note(e, 'failed');
    this.entries.delete(n.id);
    this.counters.failed.set(n.channel, (this.counters.failed.get(n.channel) ?? 0) + 1);
    await this.disk('move a refused notification to outbox/failed', () => this.write(path.join(this.failedDir, `${n.id}.json`), e));
    await fsp.rm(path.join(this.dir, `${n.id}.json`), { force: true }).catch(() => undefined);
  }
}
