/**
 * Email over SMTP (nodemailer): STARTTLS on 587 or TLS on 465, optional auth; a plain-text and an
 * HTML part, content HTML-escaped, a subject that says severity, run and detector. SMTP 4xx
 * replies and connection errors are retried; 5xx replies are not. The password never leaves.
 */
import type Nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer';
import { lazy } from '../../util/lazy.js';
import type { Notification, SendResult } from '../../alerting/types.js';
import { redact, type Secret } from '../../util/secret.js';
import { keyEvidence, messageOf, plainText, title } from '../render.js';
import type { Summary } from '../../summary/build.js';
import { causeOf } from '../answers.js';
import { type Notifier } from '../types.js';
import { where, escapeHtml } from '../../util/format.js';

/** Loaded by the first email notifier, not by every command. */
const nodemailer = lazy<typeof Nodemailer>('nodemailer');

export interface EmailOptions {
  /** `requireTls`: STARTTLS before anything else (by default whenever a password is given without implicit TLS). */
  smtp: { host: string; port: number; secure: boolean; requireTls?: boolean; user?: string; pass?: Secret };
  from: string;
  to: string[];
  /** Connection, greeting and socket timeout. */
  timeoutMs?: number;
  /** Loopback tests use self-signed certificates. */
  tls?: { rejectUnauthorized: boolean };
}

export function emailHtml(n: Notification): string {
  if (n.test === true) return '<p>This is a test notification from barwatch: this channel works.</p>';
  const parts: string[] = [];
  for (const a of n.alerts) {
    const color =
      a.status === 'resolved' ? '#2e7d32' : a.severity === 'critical' ? '#c62828' : a.severity === 'warning' ? '#ef6c00' : '#1565c0';
    const at = where(a);
    parts.push(
      `<h3 style="color:${color}">${a.status === 'resolved' ? 'RESOLVED' : a.severity.toUpperCase()} ${escapeHtml(a.detector)}</h3>`,
    );
    parts.push(`<p><b>Run</b> ${escapeHtml(a.run)}${at ? ` &middot; ${escapeHtml(at)}` : ''}</p>`);
    parts.push(`<p>${escapeHtml(messageOf(a, n.alerts))}</p>`);
    if (a.status === 'firing') {
      const ev = keyEvidence(a);
      if (ev.length > 0) parts.push(`<ul>${ev.map((e) => `<li>${escapeHtml(e)}</li>`).join('')}</ul>`);
      if (a.sparkline) parts.push(`<pre>${escapeHtml(a.sparkline)}</pre>`);
      if (a.recommendation) parts.push(`<p><b>Recommendation</b> ${escapeHtml(a.recommendation)}</p>`);
    }
  }
  return `<!doctype html><html><body style="font-family:sans-serif">${parts.join('\n')}</body></html>`;
}

export function createEmailNotifier(opts: EmailOptions): Notifier {
  const requireTls = opts.smtp.requireTls ?? (opts.smtp.pass !== undefined && !opts.smtp.secure);
  const transport = nodemailer().createTransport({
    host: opts.smtp.host,
    port: opts.smtp.port,
    secure: opts.smtp.secure,
    requireTLS: requireTls,
    ...(opts.smtp.user !== undefined ? { auth: { user: opts.smtp.user, pass: opts.smtp.pass?.reveal() ?? '' } } : {}),
    connectionTimeout: opts.timeoutMs ?? 10_000,
    greetingTimeout: opts.timeoutMs ?? 10_000,
    socketTimeout: opts.timeoutMs ?? 10_000,
    ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
  });
  const secrets = [opts.smtp.pass];
  const where = `${opts.smtp.host}:${opts.smtp.port}`;
  const deliver = async (mail: SendMailOptions): Promise<SendResult> => {
    try {
      await transport.sendMail({ from: opts.from, to: opts.to, ...mail });
      return { ok: true };
    } catch (err) {
      const e = err as { responseCode?: number; code?: string; message: string; command?: string };
      if (e.command === 'STARTTLS' && requireTls) {
        // Retried: the server's TLS may be mended; the password is never sent meanwhile.
        return {
          ok: false,
          retry: true,
          error: `SMTP server ${where} offers no STARTTLS (it answered ${e.responseCode ?? e.code ?? 'an error'}); the password is not sent without TLS (notify.email.smtp.allow_plaintext_auth: true allows it, for a relay on loopback)`,
        };
      }
      if (typeof e.responseCode === 'number') {
        const transient = e.responseCode >= 400 && e.responseCode < 500;
        return {
          ok: false,
          retry: transient,
          error: redact(
            `SMTP server ${where} ${e.code === 'EAUTH' ? 'refused the login:' : e.code === 'EENVELOPE' ? 'refused the sender or recipients:' : 'answered'} ${e.responseCode}${transient ? '' : ' (not retried)'}`,
            secrets,
          ),
        };
      }
      const permanent = e.code === 'EAUTH' || e.code === 'EENVELOPE';
      const what =
        e.code === 'EAUTH'
          ? 'refused the login (EAUTH)'
          : e.code === 'EENVELOPE'
            ? 'refused the sender or recipients (EENVELOPE)'
            : e.code === 'ETLS'
              ? `TLS failed: ${causeOf(err, opts.timeoutMs ?? 10_000)} (ETLS)`
              : `unreachable: ${causeOf(err, opts.timeoutMs ?? 10_000)}`;
      return { ok: false, retry: !permanent, error: redact(`SMTP server ${where} ${what}${permanent ? ' (not retried)' : ''}`, secrets) };
    }
  };
  return {
    name: 'email',
    send: (n: Notification) => deliver({ subject: title(n), text: plainText(n), html: emailHtml(n) }),
    sendSummary: (s: Summary) =>
      deliver({
        subject: s.subject,
        text: s.text,
        html: s.html,
        attachments: s.charts.map((c) => ({ filename: c.filename, content: c.png, contentType: 'image/png', cid: c.cid })),
      }),
    close(): Promise<void> {
      transport.close();
      return Promise.resolve();
    },
  };
}
