/** Alerts and notifications: what the alerting stages pass between them. */
import type { Finding } from '../detectors/types.js';

export type AlertState = 'pending' | 'firing' | 'resolved';

/** A finding followed over time, keyed by (run, detector, round). */
export interface Alert {
  key: string;
  /** Identity that survives restarts: the key and the step at which the finding first held. */
  fingerprint: string;
  state: AlertState;
  finding: Finding;
  /** When the finding was first seen holding (ms). */
  activeSince: number;
  firingSince: number | null;
  /** The last time the finding was seen holding. */
  lastHeld: number;
  resolvedAt: number | null;
}

/** A finding as a notification carries it: the finding's fields plus its alert state. */
export type NotifiedAlert = Omit<Finding, 'series'> & {
  key: string;
  fingerprint: string;
  status: 'firing' | 'resolved';
  sparkline: string | null;
  startsAt: string;
  endsAt: string | null;
  /** The actions run for it (alerting/actions.ts), as they stand when the notification is made. */
  actions?: { action: string; state: string; command: string; exitCode?: number | null }[];
};

/** Why a notification is sent: what the dispatcher and the outbox decide on, and what the log says. */
export type NotifyReason =
  | 'first notification of the group'
  | 'new alerts in group'
  | 'alerts resolved'
  | 'repeat interval elapsed'
  | 'firing alerts sent again so they do not lapse'
  | 'test-alert';

/** One message to one channel about one group (a run): its firing and resolved alerts. */
export interface Notification {
  id: string;
  /** Same content, same dedupe key: a notification is never queued twice for a channel. */
  dedupeKey: string;
  channel: string;
  group: string;
  reason: NotifyReason;
  createdAt: string;
  alerts: NotifiedAlert[];
  /** A test notification (barwatch test-alert). */
  test?: boolean;
  /**
   * The firing alerts sent again to a channel that forgets them otherwise: a newer refresh
   * replaces one still queued, and a refresh is not recorded as a delivery (sending it twice is
   * harmless).
   */
  refresh?: boolean;
}

/** Where the outbox delivers notifications: one notifier (notifiers/ implements each channel). */
export interface Channel {
  /** The channel name: slack, email, alertmanager. */
  readonly name: string;
  /** Set by a channel that lets a firing alert lapse unless it is sent again (Alertmanager): how often to send them again. */
  readonly refreshMs?: number;
  /** One attempt. Never throws; never puts a secret into the result. */
  send(n: Notification): Promise<SendResult>;
  close?(): Promise<void>;
}

/** What a notifier says about one attempt (Alertmanager's (retry bool, err)). */
export type SendResult = { ok: true } | { ok: false; retry: boolean; retryAfterMs?: number; error: string };
