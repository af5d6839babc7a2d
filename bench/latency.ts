/**
 * Alert latency: time from a writer's write() of a line that completes a finding (a NaN boundary
 * reward: nonfinite-reward fires at once) to the alert arriving at a loopback webhook receiver,
 * over N appends to N runs, against a bare fs.watch reader measured in the same run (it watches the
 * same files, reads new bytes on each event and posts when it sees the line).
 *
 *   node dist/bench/latency.js [--appends N]
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { arg, BIN, followNewBytes, quantile, report } from './common.js';

const GOOD =
  '{"step": 1, "boundary": 0.5, "relevance": 0.3, "format": 1, "count": 0}\n{"step": 2, "boundary": 0.52, "relevance": 0.3, "format": 1, "count": 0}\n';
const BAD = '{"step": 3, "boundary": NaN, "relevance": 0.3, "format": 1, "count": 0}\n';

/** The receiver: resolves the waiter of the run a post names. */
async function receiver(): Promise<{ url: string; wait: (run: string) => Promise<number>; close: () => void }> {
  const waiters = new Map<string, (t: number) => void>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const t = performance.now();
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      const m = /run-(\d{4})/.exec(body);
      if (m !== null) waiters.get(m[1]!)?.(t);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    wait: (run) => new Promise<number>((resolve) => waiters.set(run, resolve)),
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** The bare reader (a child process): fs.watch on every file, read what is new, post on NaN. */
function bareReader(files: string[], url: string): void {
  followNewBytes(files, (f, text) => {
    if (text.includes('NaN')) void fetch(url, { method: 'POST', body: JSON.stringify({ text: f }) });
  });
  process.send!('ready');
}

async function measure(
  label: string,
  files: string[],
  start: () => Promise<ChildProcess>,
  rx: Awaited<ReturnType<typeof receiver>>,
  pauseMs: number,
  diagnose?: (id: string) => string,
): Promise<number[]> {
  const child = await start();
  const out: number[] = [];
  try {
    for (const [i, f] of files.entries()) {
      const id = String(i).padStart(4, '0');
      const arrived = rx.wait(id);
      const t0 = performance.now();
      appendFileSync(f, BAD);
      const t = await Promise.race([arrived, sleep(30_000).then(() => NaN)]);
      if (Number.isNaN(t))
        throw new Error(`${label}: no alert for run ${id} within 30 s${diagnose === undefined ? '' : `\n${diagnose(id)}`}`);
      out.push(t - t0);
      await sleep(pauseMs);
    }
  } finally {
    child.kill('SIGTERM');
  }
  return out;
}

export async function main(): Promise<void> {
  const n = arg('appends', 1000, 200);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-latency-'));
  const rx = await receiver();
  try {
    const make = (root: string): string[] =>
      Array.from({ length: n }, (_, i) => {
        const f = path.join(root, `run-${String(i).padStart(4, '0')}`, 'outputs', 'selector_round1', 'reward_history.jsonl');
        mkdirSync(path.dirname(f), { recursive: true });
        writeFileSync(f, GOOD);
        return f;
      });
    const bareFiles = make(path.join(dir, 'bare'));
    const bare = await measure(
      'bare fs.watch reader',
      bareFiles,
      async () => {
        const c = fork(fileURLToPath(import.meta.url), ['--bare-reader', rx.url, ...bareFiles]);
        await new Promise((resolve) => c.once('message', resolve));
        return c;
      },
      rx,
      5,
    );
    const files = make(path.join(dir, 'runs'));
    let daemonLog = '';
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(
      cfg,
      `state_dir: ${dir}/state\nalerting: {group_wait: 0s, group_interval: 0s}\nnotify:\n  slack: {webhook_url: "${rx.url}/hook"}\nlog: {level: info, format: json}\n`,
    );
    const ours = await measure(
      'barwatch watch',
      files,
      async () => {
        const c = spawn(process.execPath, [BIN, 'watch', path.join(dir, 'runs'), '--config', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
        c.stderr.setEncoding('utf8');
        c.stderr.on('data', (chunk: string) => (daemonLog += chunk));
        // Ready when the first status line... at warn level there is none: wait for the state file.
        for (let i = 0; i < 600; i++) {
          await sleep(100);
          try {
            statSync(path.join(dir, 'state', 'state.json'));
            break;
          } catch {
            // not yet
          }
        }
        await sleep(500);
        return c;
      },
      rx,
      5,
      (id) =>
        daemonLog
          .split('\n')
          .filter((l) => l.includes(`run-${id}`) || l.includes('"level":50') || l.includes('"level":40'))
          .slice(-20)
          .join('\n'),
    );
    const row = (name: string, xs: number[]): string[] => [
      name,
      String(xs.length),
      quantile(xs, 0.5).toFixed(1),
      quantile(xs, 0.99).toFixed(1),
      Math.max(...xs).toFixed(1),
    ];
    report(
      'latency',
      `Alert latency, write() of the line completing a finding to the post at a loopback webhook, ${n} appends to ${n} runs (ms)`,
      ['reader', 'appends', 'p50', 'p99', 'max'],
      [row('bare fs.watch reader', bare), row('barwatch watch (detector, alerting, outbox, Slack notifier)', ours)],
      { bare, barwatch: ours },
    );
    console.log(
      `p99 difference: ${(quantile(ours, 0.99) - quantile(bare, 0.99)).toFixed(1)} ms (target: within 20 ms, issue 20); alerts later than 1 s: barwatch ${ours.filter((x) => x > 1000).length}, bare reader ${bare.filter((x) => x > 1000).length}\n`,
    );
  } finally {
    rx.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--bare-reader') bareReader(process.argv.slice(4), process.argv[3]!);
else if (process.argv[1]?.endsWith('latency.js')) await main();
