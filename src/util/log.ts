/** pino, to stderr: JSON for journald and shippers, pretty on a terminal. */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { printable } from './format.js';

export type { Logger };

export interface LogOptions {
  level: string;
  format: 'auto' | 'json' | 'pretty';
}

/** Whether logs go out for a person (a terminal, or format: pretty) rather than as JSON lines. */
export function forPeople(opts: LogOptions, stream: NodeJS.WritableStream = process.stderr): boolean {
  return opts.format === 'pretty' || (opts.format === 'auto' && (stream as { isTTY?: boolean }).isTTY === true);
}

/** Colour only on a terminal, and never when NO_COLOR is set (no-color.org). */
export function colours(stream: NodeJS.WritableStream = process.stderr): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true && (process.env['NO_COLOR'] ?? '') === '';
}

export function createLogger(opts: LogOptions, stream: NodeJS.WritableStream = process.stderr): Logger {
  const usePretty = forPeople(opts, stream);
  const base = { level: opts.level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  if (usePretty) {
    return pino(
      base,
      pretty({
        destination: stream,
        sync: true,
        colorize: colours(stream),
        // One line per entry, its fields after the message.
        singleLine: true,
        ignore: 'component',
        translateTime: 'SYS:HH:MM:ss',
        // Messages quote file and folder names: a name holding a line break or an escape
        // sequence is shown escaped, never able to forge a line or drive the terminal.
        messageFormat: (log, key) => {
          const msg = log[key];
          return printable(typeof msg === 'string' ? msg : JSON.stringify(msg ?? ''));
        },
      }),
    );
  }
  return pino(base, stream === process.stderr ? pino.destination({ fd: 2, sync: true }) : stream);
}

/** A logger that drops everything (tests, and `analyze` without --verbose). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
