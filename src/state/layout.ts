/**
 * Every path under `state_dir`, named in one place. The daemon owns the folder; `analyze` never
 * writes to it, and the `silence` and `summary` commands read or change the files named here.
 */
import path from 'node:path';

export interface StateLayout {
  dir: string;
  /** Offsets, statistics, findings and alerts, saved together (state/file.ts). */
  state: string;
  /** One JSON line per alert transition (fired, escalated, resolved). */
  alerts: string;
  /** One JSON line per notification delivered or given up on. */
  notifications: string;
  /** Notifications waiting to be sent, one file each. */
  outbox: string;
  /** Notifications that will never be sent (refused by the channel), kept for a person to read. */
  outboxFailed: string;
  /** Active and expired silences. */
  silences: string;
}

export function stateLayout(dir: string): StateLayout {
  return {
    dir,
    state: path.join(dir, 'state.json'),
    alerts: path.join(dir, 'alerts.jsonl'),
    notifications: path.join(dir, 'notifications.jsonl'),
    outbox: path.join(dir, 'outbox'),
    outboxFailed: path.join(dir, 'outbox', 'failed'),
    silences: path.join(dir, 'silences.json'),
  };
}
