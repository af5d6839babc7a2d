/**
 * GET /api/v1/events: Server-Sent Events that say what changed (a run, the alerts, the silences)
 * so an open page asks the API for that piece only. Changes to one run are sent at most every
 * RUN_EVERY_MS; a comment line every 15 s keeps proxies from closing an idle stream.
 */
import type { ServerResponse } from 'node:http';
import { sendError, type Route } from './server.js';

const RUN_EVERY_MS = 500;
const KEEPALIVE_MS = 15_000;

export class EventHub {
  private readonly clients = new Set<ServerResponse>();
  private readonly pendingRuns = new Set<string>();
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly keepalive: NodeJS.Timeout;

  /** `maxClients`: event streams held at once; one more is answered 503 (see limits.ts). */
  constructor(private readonly maxClients = Infinity) {
    this.keepalive = setInterval(() => this.write(': keepalive\n\n'), KEEPALIVE_MS);
    this.keepalive.unref();
  }

  get size(): number {
    return this.clients.size;
  }

  /** A run read new records (or appeared). */
  run(id: string): void {
    if (this.clients.size === 0) return;
    this.pendingRuns.add(id);
    this.flushTimer ??= setTimeout(() => this.flushRuns(), RUN_EVERY_MS);
    this.flushTimer.unref();
  }

  alerts(): void {
    this.send('alerts', {});
  }

  silences(): void {
    this.send('silences', {});
  }

  private flushRuns(): void {
    this.flushTimer = null;
    const ids = [...this.pendingRuns];
    this.pendingRuns.clear();
    if (ids.length > 0) this.send('runs', { ids });
  }

  private send(event: string, data: unknown): void {
    this.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  private write(text: string): void {
    for (const c of this.clients) c.write(text);
  }

  route(): Route {
    return {
      method: 'GET',
      path: /^\/api\/v1\/events$/,
      handle: (req, res) => {
        if (this.clients.size >= this.maxClients) {
          // The connection is closed with the answer: a page told to wait must not hold a descriptor.
          sendError(res, 503, `${this.clients.size} pages are open and live already; close some (or reload this one later)`, {
            connection: 'close',
          });
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
        res.write(': connected\n\n');
        this.clients.add(res);
        req.on('close', () => this.clients.delete(res));
      },
    };
  }

  close(): void {
    clearInterval(this.keepalive);
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    for (const c of this.clients) c.end();
    this.clients.clear();
  }
}
