/** Runs `barwatch watch` as a real process and reads its JSON log lines. */
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after } from 'node:test';
import { binFor, type User } from './users.js';

import { spawnWatch, type LogLine } from './watch-child.js';

export type { LogLine };

export class DaemonProcess {
  readonly logs: LogLine[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;

  /**
   * `user` runs it as another user (the tests running as root use `nobody` so permissions apply).
   * `listen` is passed as --listen: off by default, so daemons of tests running side by side do
   * not compete for the page's port; null leaves http.listen to the config.
   */
  constructor(
    args: string[],
    opts: {
      cwd?: string;
      env?: NodeJS.ProcessEnv;
      user?: User;
      listen?: string | null;
      /** A command the daemon runs under, which execs it (`prlimit --nofile=120:120`). */
      under?: string[];
    } = {},
  ) {
    const listen = opts.listen === undefined ? ['--listen', 'off'] : opts.listen === null ? [] : ['--listen', opts.listen];
    const argv = [process.execPath, binFor(opts.user), 'watch', ...args, ...listen];
    this.child = spawnWatch(
      [...(opts.under ?? []), ...argv],
      {
        ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
        ...(opts.user !== undefined ? { uid: opts.user.uid, gid: opts.user.gid } : {}),
        env: { ...process.env, ...opts.env },
      },
      (l) => this.logs.push(l),
    );
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    // A failed assertion must not leave the daemon running (it would keep the test process alive).
    after(() => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    });
  }

  /** Waits until a log line satisfies `pred`; throws with the log after `timeoutMs`. */
  async waitFor(pred: (l: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const hit = this.logs.find(pred);
      if (hit !== undefined) return hit;
      await sleep(25);
    }
    throw new Error(`timed out; log so far:\n${this.logs.map((l) => JSON.stringify(l)).join('\n')}`);
  }

  /**
   * Waits until alerting has settled, as the daemon reports it: `lines` status lines in a row
   * (the first after this call) with an empty outbox and the same count of notifications sent.
   * Status lines come every watch.status_interval, so this spans that many intervals at least.
   */
  async waitQuiet(lines = 3, timeoutMs = 30_000): Promise<void> {
    const from = this.logs.length;
    await this.waitFor(() => {
      const status = this.logs.slice(from).filter((l) => l.msg.startsWith('status:'));
      const last = status.slice(-lines);
      return last.length === lines && last.every((l) => l['outbox'] === 0 && l['sent'] === last[0]!['sent']);
    }, timeoutMs);
  }

  /** The page's address, from the line that announces it (a daemon started with --listen). */
  async pageUrl(): Promise<string> {
    const l = await this.waitFor((x) => typeof x['url'] === 'string' && x.msg.startsWith('web page at'));
    return l['url'] as string;
  }

  /** Sends SIGTERM and waits for the exit code. */
  async stop(): Promise<number | null> {
    this.child.kill('SIGTERM');
    return this.exited;
  }
}

/** A config for a daemon under test: its state in `dir`/state, status and sweeps every few hundred ms, JSON logs. Returns its path. */
export function quickWatchConfig(dir: string): string {
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(
    cfg,
    `state_dir: ${path.join(dir, 'state')}\nwatch: {status_interval: 200ms, sweep_interval: 300ms}\nlog: {format: json}\n`,
  );
  return cfg;
}
