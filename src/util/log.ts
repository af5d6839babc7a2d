/** pino, to stderr: JSON for journald and shippers, pretty on a terminal. */
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

export interface LogOptions {
  level: string;
  format: 'auto' | 'json' | 'pretty';
}

export function createLogger(opts: LogOptions, stream: NodeJS.WritableStream = process.stderr): Logger {
  const usePretty = opts.format === 'pretty' || (opts.format === 'auto' && (stream as { isTTY?: boolean }).isTTY === true);
  const base = { level: opts.level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime };
  if (usePretty) {
    return pino(
      base,
      pretty({
        destination: stream,
        sync: true,
        colorize: (stream as { isTTY?: boolean }).isTTY === true,
        ignore: 'component',
        translateTime: 'SYS:HH:MM:ss',
      }),
    );
  }
  return pino(base, stream === process.stderr ? pino.destination({ fd: 2, sync: true }) : stream);
}

/** A logger that drops everything (tests, and `analyze` without --verbose). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
