/**
 * A secret (webhook URL, SMTP password) that cannot leak by accident: printing, logging or
 * serialising it shows `[redacted]`. Only `reveal()` gives the value, at the point of use.
 */
import { inspect } from 'node:util';

export class Secret {
  readonly #value: string;

  constructor(
    value: string,
    /** Where it came from, for messages: `env BARWATCH_SMTP_PASS`, `file /etc/barwatch/pass`. */
    readonly source: string,
  ) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return '[redacted]';
  }

  toJSON(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return `Secret(${this.source})`;
  }
}

/** Removes every secret value from a text (error messages from libraries may quote a URL). */
export function redact(text: string, secrets: readonly (Secret | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    if (s === undefined) continue;
    const v = s.reveal();
    if (v.length >= 4) out = out.split(v).join('[redacted]');
  }
  return out;
}
