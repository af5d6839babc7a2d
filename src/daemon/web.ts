/**
 * The daemon's HTTP side: the web page, its API and event stream, /healthz and /metrics on
 * http.listen. Watching matters more than the page: a port that cannot be bound is logged and
 * watching goes on.
 */
import { isLoopback, type Config } from '../config/load.js';
import type { EventHub } from '../http/events.js';
import { Metrics, type HealthSnapshot } from '../http/metrics.js';
import { connectionCaps, type ConnectionCaps } from '../http/limits.js';
import type { HttpServer } from '../http/server.js';
import type { WebSource } from '../http/source.js';
import { buildWebServer } from '../http/web.js';
import type { Logger } from '../util/log.js';

export interface Serving {
  server: HttpServer;
  /** The page's address as people reach it. */
  url: string;
}

export async function serveWeb(
  config: Config,
  source: WebSource,
  events: EventHub,
  snapshot: () => HealthSnapshot,
  log: Logger,
  caps: ConnectionCaps = connectionCaps(),
): Promise<Serving | null> {
  const listen = config.http.listen;
  if (listen === undefined) return null;
  const token = config.http.token;
  const server = buildWebServer(
    {
      host: listen.host,
      port: listen.port,
      expose: config.http.expose,
      maxConnections: caps.connections,
      ...(config.http.externalUrl !== undefined ? { externalUrl: config.http.externalUrl } : {}),
      ...(token !== undefined ? { token: () => token.reveal() } : {}),
    },
    source,
    new Metrics(snapshot, {
      source,
      options: { retentionMs: config.http.metricsRetentionMs, maxRuns: config.http.metricsMaxRuns },
    }),
    events,
  );
  try {
    const at = await server.start();
    const host = at.host.includes(':') ? `[${at.host}]` : at.host;
    const url = config.http.externalUrl ?? `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${at.port}/`;
    const message = `web page at ${url} (and /healthz, /metrics)`;
    if (isLoopback(listen.host)) log.info({ host: at.host, port: at.port, url }, message);
    else log.warn({ host: at.host, port: at.port, url }, `${message}, reachable beyond this machine (http.expose is true)`);
    return { server, url };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    log.error(
      { host: listen.host, port: listen.port, code },
      `cannot serve the web page, /healthz and /metrics on ${listen.host}:${listen.port} (${code}); watching continues without them`,
    );
    return null;
  }
}
