/** Builds the summary from a run registry and the alert log, and sends it to summary.channels. */
import type { RunState } from '../runs/run.js';
import type { Finding } from '../detectors/types.js';
import { stateLayout } from '../state/layout.js';
import { buildSummary, readAlertLog, type Summary } from './build.js';

/** What the summary needs of the config: where the alert log is, the time zone and the channels. */
export interface SummaryConfig {
  stateDir: string;
  summary: { timezone: string; channels: readonly string[] };
}

export async function summaryOf(
  config: SummaryConfig,
  runs: RunState[],
  now: number,
  withCharts = true,
  findings: readonly Finding[] = [],
): Promise<Summary> {
  const alerts = await readAlertLog(stateLayout(config.stateDir).alerts, now - 86_400_000);
  return buildSummary(runs, alerts, now, { withCharts, findings, timeZone: config.summary.timezone });
}

/** A channel that can carry the summary (notifiers/ implements it for email and Slack). */
export interface SummaryChannel {
  readonly name: string;
  sendSummary?(s: Summary): Promise<{ ok: true } | { ok: false; error: string }>;
}

export interface ChannelResult {
  channel: string;
  ok: boolean;
  error?: string;
}

export async function sendSummary(config: SummaryConfig, notifiers: readonly SummaryChannel[], s: Summary): Promise<ChannelResult[]> {
  const out: ChannelResult[] = [];
  for (const channel of config.summary.channels) {
    // A channel of several notifiers (each webhook is `webhook:<name>`) sends the summary to each.
    const ns = notifiers.filter((x) => (x.name === channel || x.name.startsWith(`${channel}:`)) && x.sendSummary !== undefined);
    if (ns.length === 0) {
      out.push({ channel, ok: false, error: `notify.${channel} is not configured` });
      continue;
    }
    for (const n of ns) {
      const r = await n.sendSummary!(s);
      out.push(r.ok ? { channel: n.name, ok: true } : { channel: n.name, ok: false, error: r.error });
    }
  }
  return out;
}
