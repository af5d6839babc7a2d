/** The whole HTTP side in one place: the page's files, its API and event stream, /healthz and /metrics. */
import { readFile } from 'node:fs/promises';
import { alertRoutes } from './api-alerts.js';
import { runRoutes } from './api-runs.js';
import { silenceRoutes } from './api-silences.js';
import type { EventHub } from './events.js';
import type { Metrics } from './metrics.js';
import { HttpServer, sendError, type ServerOptions } from './server.js';
import type { WebSource } from './source.js';

export function buildWebServer(opts: ServerOptions, src: WebSource, metrics: Metrics, events: EventHub): HttpServer {
  return new HttpServer(opts).add(
    {
      method: 'GET',
      path: /^\/healthz$/,
      handle: (_req, res) => {
        const h = metrics.healthz();
        res.writeHead(h.status, { 'content-type': 'application/json' });
        res.end(h.body);
      },
    },
    {
      method: 'GET',
      path: /^\/metrics$/,
      handle: async (_req, res) => {
        const text = await metrics.registry.metrics();
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      },
    },
    ...runRoutes(src),
    ...alertRoutes(src),
    ...silenceRoutes(src),
    events.route(),
    {
      // The last nightly summary, as the daemon kept it (`barwatch summary --html` writes the same).
      method: 'GET',
      path: /^\/summary$/,
      handle: async (_req, res) => {
        const html = await readFile(src.summaryFile(), 'utf8').catch(() => null);
        if (html === null)
          return sendError(
            res,
            404,
            'no nightly summary yet: the daemon keeps the last one it sent; `barwatch summary --html FILE` builds one now',
          );
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(html);
      },
    },
    // Browsers ask for an icon; there is none.
    { method: 'GET', path: /^\/favicon\.ico$/, handle: (_req, res) => void res.writeHead(204).end() },
    { method: 'GET', path: /^\/api\/.*$/, handle: (req, res) => sendError(res, 404, `no API at ${req.url ?? ''}`) },
  );
}
