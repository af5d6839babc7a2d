/**
 * Every channel, in one list: a channel is its folder (its notifier and channel.ts) and one line
 * here. Console and alerts.jsonl are always on (console.ts).
 */
import type { z } from 'zod';
import { alertmanagerChannel } from './alertmanager/channel.js';
import type { ChannelCommon, ChannelSpec } from './channel.js';
import { emailChannel } from './email/channel.js';
import { slackChannel } from './slack/channel.js';
import { webhookChannel } from './webhook/channel.js';
import type { Notifier } from './types.js';

export const CHANNELS = [slackChannel, emailChannel, alertmanagerChannel, webhookChannel] as const;

type Channels = (typeof CHANNELS)[number];
export type ChannelId = Channels['id'];

/** The channels that can carry the nightly summary (summary.channels). */
export const SUMMARY_CHANNELS = CHANNELS.filter((c) => c.summary).map((c) => c.id);

/** `notify` as the config gives it: each channel's schema under its id. */
export type NotifyShape = { [C in Channels as C['id']]: z.ZodOptional<C['schema']> };
export const NOTIFY_SHAPE = Object.fromEntries(CHANNELS.map((c) => [c.id, c.schema.optional()])) as unknown as NotifyShape;

/** Each configured channel's resolved settings (ChannelSpec.settings). */
export type ChannelSettings = { [C in Channels as C['id']]?: C extends ChannelSpec<string, z.ZodType, infer R> ? R : never };

export function buildNotifiers(settings: ChannelSettings, common: ChannelCommon): Notifier[] {
  const out: Notifier[] = [];
  for (const c of CHANNELS as readonly ChannelSpec[]) {
    const s = (settings as Record<string, unknown>)[c.id];
    if (s !== undefined) out.push(...c.create(s, common));
  }
  return out;
}
