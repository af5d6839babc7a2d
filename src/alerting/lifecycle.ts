/**
 * Findings become alerts as a Prometheus alerting rule's results do: pending while a finding must
 * hold for `for`, then firing; a firing alert whose finding stops holding resolves after
 * `keep_firing_for`.
 * A pending alert whose finding goes away never fired and is dropped without a word.
 */
import { findingKey, type Finding } from '../detectors/types.js';
import type { Alert } from './types.js';

export interface LifecycleOptions {
  forMs: number;
  keepFiringForMs: number;
}

export function alertKey(f: Finding): string {
  return findingKey(f.run, f.detector, f.round);
}

export class AlertBook {
  readonly alerts = new Map<string, Alert>();
  /** Counts changes of the alerts' states (one added, fired, resolved or forgotten): equal revisions, the same states. */
  private changes = 0;

  constructor(private readonly opts: LifecycleOptions) {}

  /** Brings the alerts up to date with the findings that hold now. */
  update(findings: readonly Finding[], now: number): void {
    const holding = new Set<string>();
    for (const f of findings) {
      const key = alertKey(f);
      holding.add(key);
      let a = this.alerts.get(key);
      if (a === undefined || a.state === 'resolved') {
        a = {
          key,
          fingerprint: `${key}@${f.step ?? '-'}`,
          state: 'pending',
          finding: f,
          activeSince: now,
          firingSince: null,
          lastHeld: now,
          resolvedAt: null,
        };
        this.alerts.set(key, a);
        this.changes++;
      }
      a.finding = f;
      a.lastHeld = now;
      if (a.state === 'pending' && now - a.activeSince >= this.opts.forMs) {
        a.state = 'firing';
        a.firingSince = now;
        this.changes++;
      }
    }
    for (const a of this.alerts.values()) {
      if (holding.has(a.key)) continue;
      if (a.state === 'pending') {
        this.alerts.delete(a.key);
        this.changes++;
      } else if (a.state === 'firing' && now - a.lastHeld >= this.opts.keepFiringForMs) {
        a.state = 'resolved';
        a.resolvedAt = now;
        this.changes++;
      }
    }
  }

  /** Forgets a resolved alert once its resolution has been dealt with. */
  forget(key: string): void {
    const a = this.alerts.get(key);
    if (a?.state === 'resolved' && this.alerts.delete(key)) this.changes++;
  }

  get revision(): number {
    return this.changes;
  }

  toJSON(): Alert[] {
    return [...this.alerts.values()];
  }

  restore(list: Alert[] | undefined): void {
    for (const a of list ?? []) this.alerts.set(a.key, a);
    this.changes++;
  }
}
