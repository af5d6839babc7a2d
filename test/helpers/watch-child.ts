/**
 * `barwatch watch` as a child process whose JSON log lines (stderr) are handed over one by one:
 * what the tests' DaemonProcess and the benchmarks' Watcher are both built on.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** Spawns `argv` (its first element is the command) and calls `onLine` with each log line; a line that is not JSON comes as level 60. */
export function spawnWatch(argv: string[], opts: SpawnOptions, onLine: (l: LogLine) => void): ChildProcess {
  const [cmd, ...rest] = argv;
  const child = spawn(cmd!, rest, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  let pending = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop()!;
    for (const l of lines) {
      if (l.trim() === '') continue;
      let line: LogLine;
      try {
        line = JSON.parse(l) as LogLine;
      } catch {
        line = { level: 60, msg: `(not JSON) ${l}` };
      }
      onLine(line);
    }
  });
  child.stdout.resume();
  return child;
}
