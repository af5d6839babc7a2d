/** The nightly summary in the daemon: scheduled by summary.cron when a channel can carry it. */
import cron, { type ScheduledTask } from 'node-cron';
import type { Config } from '../config/load.js';
import type { Notifier } from '../notifiers/types.js';
import type { RunState } from '../runs/run.js';
import { sendSummary, summaryOf } from '../summary/send.js';
import { standaloneHtml } from '../summary/build.js';
import type { Finding } from '../detectors/types.js';
import { stateLayout } from '../state/layout.js';
import { writeAtomic } from '../state/atomic.js';
import type { Logger } from '../util/log.js';

export function scheduleNightly(config: Config, send: () => Promise<void>, log: Logger): ScheduledTask | null {
  if (!config.summary.channels.some((c) => config.notify[c] !== undefined)) return null;
  const task = cron.schedule(config.summary.cron, () => void send(), { timezone: config.summary.timezone });
  log.info(
    { cron: config.summary.cron, timezone: config.summary.timezone, channels: config.summary.channels },
    'nightly summary scheduled',
  );
  return task;
}

/** Builds the summary from the runs as they stand and sends it to summary.channels, logging each result. */
export async function sendNightly(
  config: Config,
  runs: RunState[],
  findings: readonly Finding[],
  notifiers: Notifier[],
  now: number,
  log: Logger,
): Promise<void> {
  const s = await summaryOf(config, runs, now, true, findings);
  // The last summary, for a browser: the page links it (/summary).
  await writeAtomic(stateLayout(config.stateDir).summary, standaloneHtml(s)).catch((err: unknown) =>
    log.warn({ err: (err as Error).message }, 'could not keep the summary for the page'),
  );
  for (const r of await sendSummary(config, notifiers, s)) {
    if (r.ok) log.info({ notifier: r.channel }, `summary sent to ${r.channel}`);
    else log.warn({ notifier: r.channel }, `summary not sent to ${r.channel}: ${r.error}`);
  }
}
