/** `notify.email`: SMTP, the password only inside TLS unless allowed; it carries the nightly summary. */
import { z } from 'zod';
import { emailAddress } from '../../util/schema.js';
import { defineChannel } from '../channel.js';
import { createEmailNotifier } from './index.js';

export const emailChannel = defineChannel({
  id: 'email',
  schema: z.strictObject({
    smtp: z
      .strictObject({
        host: z.string().min(1).default('localhost'),
        port: z.number().int().min(1).max(65535).default(587),
        secure: z.boolean().default(false),
        user: z.string().optional(),
        pass: z.string().optional(),
        pass_file: z.string().min(1).optional(),
        /** STARTTLS required before the login; on by default whenever a password is configured. */
        require_tls: z.boolean().optional(),
        /** Lets a password go without TLS (a relay on loopback): require_tls is then off by default. */
        allow_plaintext_auth: z.boolean().default(false),
      })
      .prefault({}),
    from: emailAddress.default('barwatch@localhost'),
    to: z.array(emailAddress).min(1),
  }),
  settings: (raw, ctx) => {
    const smtp = raw.smtp;
    const pass = ctx.secret('smtp.pass', smtp.pass, smtp.pass_file, 'BARWATCH_SMTP_PASS', false);
    if (pass !== undefined && smtp.user === undefined) ctx.problem('smtp.user', 'is required when a password is given');
    // A password goes out only inside TLS: implicit TLS (secure), or STARTTLS required.
    const plaintextRisk = pass !== undefined && !smtp.secure && !smtp.allow_plaintext_auth;
    if (smtp.require_tls === false && plaintextRisk)
      ctx.problem(
        'smtp.require_tls',
        'false would send the SMTP password in clear text to a server without STARTTLS; set allow_plaintext_auth: true to allow that (a relay on loopback)',
      );
    return {
      smtp: {
        host: smtp.host,
        port: smtp.port,
        secure: smtp.secure,
        requireTls: smtp.require_tls ?? plaintextRisk,
        ...(smtp.user !== undefined ? { user: smtp.user } : {}),
        ...(pass !== undefined ? { pass } : {}),
      },
      from: raw.from,
      to: raw.to,
    };
  },
  create: (s, common) => [createEmailNotifier({ ...s, timeoutMs: common.timeoutMs })],
  summary: true,
});
