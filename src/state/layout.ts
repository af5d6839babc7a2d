/**
 * Every path under `state_dir`, named in one place. The daemon owns the folder; `analyze` never
 * writes to it, and the `silence` and `summary` commands read or change the files named here.
 */
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import path from 'node:path';

/**
 * node:crypto, loaded when a state folder is named after its paths: `analyze` never is, and loading
 * it costs ~5 ms of every start (issue 32). util/lazy.ts does this elsewhere; state/ imports nothing.
 */
const require = createRequire(import.meta.url);
let cryptoModule: typeof Crypto | null = null;

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
  /** The PID of the daemon using the folder (state/lock.ts). */
  lock: string;
  /** The last nightly summary as one HTML file, for the page's link. */
  summary: string;
  /** One JSON line per action started, and one when it ended (alerting/actions.ts). */
  actions: string;
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
    lock: path.join(dir, 'lock'),
    summary: path.join(dir, 'summary.html'),
    actions: path.join(dir, 'actions.jsonl'),
  };
}

/**
 * Where `barwatch watch PATH...` without a config keeps its state: one folder per set of roots
 * under the user's state folder ($XDG_STATE_HOME, else ~/.local/state), so two daemons on
 * different roots never share one, and none lands in the current folder by accident.
 */
export function defaultStateDir(roots: readonly string[], env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env['XDG_STATE_HOME'] !== undefined && env['XDG_STATE_HOME'] !== '' ? env['XDG_STATE_HOME'] : path.join(homedir(), '.local', 'state');
  const sorted = [...roots].sort();
  cryptoModule ??= require('node:crypto') as typeof Crypto;
  const id = cryptoModule.createHash('sha256').update(sorted.join('\0')).digest('hex').slice(0, 12);
  const name = path.basename(sorted[0] ?? '').replace(/[^\w.-]/g, '_') || 'root';
  return path.join(base, 'barwatch', `${name}-${id}`);
}
