/** Builds the summary from a run registry and the alert log, and sends it to summary.channels. */
import path from 'node:path';
import type { Config } from '../config/load.js';
import type { Notifier } from '../notifiers/types.js';
import type { RunState } from '../runs/run.js';
import { buildSummary, readAlertLog, type Summary } from './build.js';

export function summaryOf(config: Config, runs: RunState[], now: number, withCharts = true): Summary {
  const alerts = readAlertLog(path.join(config.stateDir, 'alerts.jsonl'), now - 86_400_000);
  return buildSummary(runs, alerts, now, withCharts);
}

export interface ChannelResult {
  channel: string;
  ok: boolean;
  error?: string;
}

export async function sendSummary(config: Config, notifiers: Notifier[], s: Summary): Promise<ChannelResult[]> {
  const out: ChannelResult[] = [];
  for (const channel of config.summary.channels) {
    const n = notifiers.find((x) => x.name === channel);
    if (n === undefined || n.sendSummary === undefined) {
      out.push({ channel, ok: false, error: `notify.${channel} is not configured` });
      continue;
    }
    const r = await n.sendSummary(s);
    out.push(r.ok ? { channel, ok: true } : { channel, ok: false, error: r.error });
  }
  return out;
}
