/** `notify.slack`: an incoming webhook; it carries the nightly summary. */
import { z } from 'zod';
import { httpUrl } from '../../util/schema.js';
import { defineChannel } from '../channel.js';
import { createSlackNotifier } from './index.js';

export const slackChannel = defineChannel({
  id: 'slack',
  schema: z.strictObject({
    webhook_url: httpUrl.optional(),
    webhook_url_file: z.string().min(1).optional(),
  }),
  settings: (raw, ctx) => {
    const webhookUrl = ctx.secret('webhook_url', raw.webhook_url, raw.webhook_url_file, 'BARWATCH_SLACK_WEBHOOK_URL', true);
    return webhookUrl === undefined ? undefined : { webhookUrl };
  },
  create: (s, common) => [createSlackNotifier({ webhookUrl: s.webhookUrl, timeoutMs: common.timeoutMs })],
  summary: true,
});
