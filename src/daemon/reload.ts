/**
 * What a new configuration changes in a running daemon. The keys the file changed (Config.written,
 * before and after) are each applied at once or kept for the next restart:
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

/** `singleRun`: the daemon watches one run folder it was started in, not the config's roots. */
export function planReload(running: Config, next: Config, singleRun: boolean): ReloadPlan {
  const before = running.written;
  const after = next.written;
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => before[k] !== after[k]).sort();
  const changed = keys.filter(isLive);
  const needRestart = keys.filter((k) => !isLive(k) && !(singleRun && k.startsWith('watch.roots')));
  const applied: Config = {
    ...running,
    written: next.written,
    detectors: next.detectors,
    alerting: next.alerting,
    notify: next.notify,
    log: { ...running.log, level: next.log.level },
    summary: { ...running.summary, channels: next.summary.channels },
    watch: { ...running.watch, settleAfterMs: next.watch.settleAfterMs },
  };
  return { applied, changed, needRestart };
}
