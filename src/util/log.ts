/** pino, to stderr: JSON for journald and shippers, pretty on a terminal. */
import type * as Pino from 'pino';
import type Pretty from 'pino-pretty';
import { lazy } from './lazy.js';
import { printable } from './format.js';

/**
 * What barwatch logs through: the part of pino's logger it uses. A silent one needs no pino,
 * so `analyze` without --verbose does not load it (issue 32).
 */
export interface Logger {
  level: string;
  error: Pino.LogFn;
  warn: Pino.LogFn;
  info: Pino.LogFn;
  debug: Pino.LogFn;
  child(bindings: Pino.Bindings): Logger;
}

/** Loaded by the first logger that writes. */
const pino = lazy<typeof Pino>('pino');

/** Loaded by the first logger for a person; JSON logs and `analyze` never need it. */
const pretty = lazy<typeof Pretty>('pino-pretty');

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
  const { pino: create, stdTimeFunctions, destination } = pino();
  const base = { level: opts.level, base: undefined, timestamp: stdTimeFunctions.isoTime };
  if (usePretty) {
    return create(
      base,
      pretty()({
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
  return create(base, stream === process.stderr ? destination({ fd: 2, sync: true }) : stream);
}

/** A logger that drops everything (tests, and `analyze` without --verbose). */
export function silentLogger(): Logger {
  const silent: Logger = { level: 'silent', error: nothing, warn: nothing, info: nothing, debug: nothing, child: () => silent };
  return silent;
}

function nothing(): void {}
