/**
 * The alerting stages in order: findings -> alert lifecycle -> grouping, dedup and silences ->
 * durable outbox -> notifiers. Time is injected; `tick` is called by a timer in the daemon and
 * directly by tests with a simulated clock.
 */
import type { Finding } from '../detectors/types.js';
import type { Logger } from '../util/log.js';
import { dedupeKey, Dispatcher, newId, type DispatchOptions, type Sparkline } from './dispatch.js';
import { AlertBook, type LifecycleOptions } from './lifecycle.js';
import { Actions, type ActionSpec } from './actions.js';
import { Outbox, type OutboxOptions } from './outbox.js';
import { SilenceStore } from './silences.js';
import type { Alert, Channel, NotifiedAlert } from './types.js';
import type { StateLayout } from '../state/layout.js';

export interface AlertingOptions {
  /** Where the outbox, the notification log and the silences live. */
  layout: StateLayout;
  lifecycle: LifecycleOptions;
  dispatch: DispatchOptions;
  notifiers: Channel[];
  log: Logger;
  now: () => number;
  outbox?: OutboxOptions;
  sparkline?: Sparkline;
  /** Commands run when an alert fires (off by default). */
  actions?: readonly ActionSpec[];
}

export interface AlertingJSON {
  alerts: Alert[];
  groups: ReturnType<Dispatcher['toJSON']>;
}

export class Alerting {
  readonly book: AlertBook;
  readonly dispatcher: Dispatcher;
  readonly silences: SilenceStore;
  readonly outbox: Outbox;
  readonly actions: Actions;
  private readonly log: Logger;
  /** When each refreshing channel last heard the firing alerts again. */
  private readonly lastRefresh = new Map<string, number>();

  constructor(private readonly opts: AlertingOptions) {
    this.book = new AlertBook(opts.lifecycle);
    this.dispatcher = new Dispatcher(opts.dispatch);
    this.log = opts.log.child({ component: 'alerting' });
    this.silences = new SilenceStore(opts.layout.silences, (m) => this.log.warn(m));
    this.outbox = new Outbox(opts.layout, new Map(opts.notifiers.map((n) => [n.name, n])), this.log, opts.now, opts.outbox);
    this.actions = new Actions(opts.actions ?? [], opts.layout.actions, this.log, opts.now);
  }

  get channels(): string[] {
    return this.opts.notifiers.map((n) => n.name);
  }

  async init(restored?: AlertingJSON): Promise<void> {
    this.book.restore(restored?.alerts);
    this.dispatcher.restore(restored?.groups);
    await this.outbox.init();
    this.actions.init();
    // What was sent or queued after the checkpoint the state came from counts, not the checkpoint.
    this.dispatcher.reconcile(this.outbox.notifiedGroups());
  }

  /** Advances alerts with the findings that hold now, queues what is due, sends what it can. */
  async tick(findings: readonly Finding[]): Promise<void> {
    const now = this.opts.now();
    this.book.update(findings, now);
    this.actions.consider(this.book, this.silences, now);
    const res = this.dispatcher.tick(this.book, this.silences, now, this.opts.sparkline);
    // With no channel configured nothing is sent anywhere but the console: the decisions are debug detail.
    const level = this.channels.length > 0 ? 'info' : 'debug';
    for (const d of res.decisions) {
      this.log[level]({ group: d.group, send: d.send, channels: this.channels }, `${d.send ? 'notify' : 'hold'}: ${d.reason}`);
    }
    for (const raw of res.notifications) {
      // What was done about an alert goes with its next notification.
      const n = this.actions.configured ? { ...raw, alerts: raw.alerts.map((a) => this.withActions(a)) } : raw;
      const epoch = n.reason === 'repeat interval elapsed' ? n.createdAt : '';
      for (const channel of this.channels) {
        await this.outbox.enqueue({ ...n, id: newId(), channel, dedupeKey: dedupeKey(channel, n, epoch) });
      }
    }
    await this.refresh(now);
    await this.outbox.pump();
  }

  /** Channels with a refresh interval hear the firing alerts again when it has passed. */
  private async refresh(now: number): Promise<void> {
    for (const ch of this.opts.notifiers) {
      if (ch.refreshMs === undefined) continue;
      const last = this.lastRefresh.get(ch.name);
      if (last !== undefined && now - last < ch.refreshMs) continue;
      if (last === undefined) {
        // The first interval starts now: the alerts were just sent, or are about to be.
        this.lastRefresh.set(ch.name, now);
        continue;
      }
      this.lastRefresh.set(ch.name, now);
      const alerts = this.dispatcher.notifiedFiring(this.book, this.silences, now, this.opts.sparkline);
      if (alerts.length === 0) continue;
      const createdAt = new Date(now).toISOString();
      await this.outbox.enqueue({
        id: newId(),
        dedupeKey: `${ch.name}|refresh|${createdAt}`,
        channel: ch.name,
        group: 'refresh',
        reason: 'firing alerts sent again so they do not lapse',
        createdAt,
        alerts,
        refresh: true,
      });
    }
  }

  private withActions(a: NotifiedAlert): NotifiedAlert {
    const done = this.actions.of(a.fingerprint);
    if (done.length === 0) return a;
    return {
      ...a,
      actions: done.map((r) => ({
        action: r.action,
        state: r.state,
        command: r.command,
        ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
      })),
    };
  }

  toJSON(): AlertingJSON {
    return { alerts: this.book.toJSON(), groups: this.dispatcher.toJSON() };
  }

  async close(): Promise<void> {
    await this.actions.settled();
    for (const n of this.opts.notifiers) await n.close?.();
  }
}
