/** What every command shares: the exit statuses of SPEC 5 and how a bad config or argument ends a command. */
import path from 'node:path';
import { ConfigError, listenAddress, loadConfig, type Config } from '../config/load.js';

/** Exit statuses of SPEC 5; `partial` is analyze --strict's: part of the input could not be read. */
export const EXIT = { ok: 0, findings: 1, usage: 2, partial: 3 } as const;

/** Ends the command with a usage or input error (exit 2), the message on stderr. */
export function fail(message: string): never {
  process.stderr.write(`barwatch: ${message}\n`);
  process.exit(EXIT.usage);
}

/**
 * Ends a command that has written all it had to write (analyze, compare) with `code`, once stdout
 * has taken it. A process left to end when its event loop empties frees its heaps first (the
 * reading thread's and the decode thread's: about 20 ms after `analyze` of a 40 MB W&B file, 5 ms
 * after a small run: BENCHMARKS.md, session 31), and nobody waits for that.
 */
export function exitWhenWritten(code: number): void {
  process.exitCode = code;
  process.stdout.write('', () => process.exit(code));
}

/** The config at `file`, or the built-in defaults; a broken one ends the command with every problem listed. */
export function configOrExit(file: string | undefined): Config {
  try {
    return loadConfig(file ?? null);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`barwatch: invalid configuration\n${err.message}\n`);
      process.exit(EXIT.usage);
    }
    throw err;
  }
}

/** Applies `--listen host:port|off` over the config's http.listen; a bad address ends the command. */
export function applyListen(config: Config, listen: string | undefined): void {
  if (listen === undefined) return;
  const l = listenAddress(listen, config.http.expose);
  if (typeof l === 'string') fail(`--listen ${listen}: ${l}`);
  if (l === null) delete config.http.listen;
  else config.http.listen = l;
}

/**
 * The command as the user ran it, for hints: `barwatch` when it was started from the PATH,
 * else `node <the script as typed relative to here>`.
 */
export function invokedAs(argv: readonly string[] = process.argv): string {
  const script = argv[1] ?? 'barwatch';
  if (path.basename(script) === 'barwatch') return 'barwatch';
  const rel = path.relative(process.cwd(), script);
  return `node ${rel.startsWith('..') ? script : rel}`;
}
