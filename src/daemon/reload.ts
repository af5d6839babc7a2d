/**
 * What a new configuration changes in a running daemon. The keys the file changed (its document
 * before and after, as written) are each applied at once or kept for the next restart:
 * detectors, alerting, the channels, the log level, summary.channels and watch.settle_after
 * apply live; everything else (what is read and how, where state lives, the HTTP listener, the
 * timers, the summary's schedule) keeps its running value, and the log names the keys.
 */
import type { Config } from '../config/load.js';

export interface ReloadPlan {
  /** The config the daemon runs on now: the new one where it applies live, the running one elsewhere. */
  applied: Config;
  /** Changed keys that took effect. */
  changed: string[];
  /** Changed keys whose new values wait for a restart. */
  needRestart: string[];
}

/** Keys (and the keys under them) a running daemon applies at once. */
const LIVE = ['detectors', 'alerting', 'notify', 'log.level', 'summary.channels', 'watch.settle_after'];

const isLive = (key: string): boolean => LIVE.some((p) => key === p || key.startsWith(`${p}.`));

/** A document's values by dotted key (lists are values). */
function flatten(doc: unknown, prefix = '', out = new Map<string, string>()): Map<string, string> {
  if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) {
    for (const [k, v] of Object.entries(doc)) flatten(v, prefix === '' ? k : `${prefix}.${k}`, out);
  } else if (prefix !== '') out.set(prefix, JSON.stringify(doc));
  return out;
}

/** `singleRun`: the daemon watches one run folder it was started in, not the config's roots. */
export function planReload(running: Config, next: Config, singleRun: boolean): ReloadPlan {
  const before = flatten(running.doc);
  const after = flatten(next.doc);
  const keys = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k)).sort();
  const changed = keys.filter(isLive);
  const needRestart = keys.filter((k) => !isLive(k) && !(singleRun && k.startsWith('watch.roots')));
  const applied: Config = {
    ...running,
    doc: next.doc,
    detectors: next.detectors,
    alerting: next.alerting,
    notify: next.notify,
    log: { ...running.log, level: next.log.level },
    summary: { ...running.summary, channels: next.summary.channels },
    watch: { ...running.watch, settleAfterMs: next.watch.settleAfterMs },
  };
  return { applied, changed, needRestart };
}
