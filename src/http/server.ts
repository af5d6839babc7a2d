/**
 * The daemon's HTTP side: the web page (static files from `web/`), its JSON API, the event
 * stream, /healthz and /metrics. Thin: each route is declared with the methods it answers, and
 * the handlers (api-*.ts) turn what runs/, detectors/ and alerting/ hold into JSON.
 *
 * Every answer carries a Content-Security-Policy without inline scripts and no CORS header. A
 * request whose Host is not this server's (DNS rebinding) is refused. A change (POST, DELETE)
 * must come from this page's own origin, and when the server is exposed beyond loopback it must
 * carry the token (`Authorization: Bearer ...`); exposed without a token, the page is read-only.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import path from 'node:path';
import { timingSafeEqual } from 'node:crypto';
import { PACKAGE_ROOT } from '../util/package-root.js';

export type Method = 'GET' | 'POST' | 'DELETE';

export interface Route {
  method: Method;
  /** Matched against the path; capture groups are passed to the handler, URI-decoded. */
  path: RegExp;
  handle(req: IncomingMessage, res: ServerResponse, params: string[]): void | Promise<void>;
}

export interface ServerOptions {
  host: string;
  port: number;
  /** True when listening beyond loopback: changes then need the token. */
  expose: boolean;
  /** The address people reach the page at through a proxy (its host is accepted too). */
  externalUrl?: string;
  /** The value changes must carry in `Authorization: Bearer ...` when exposed. */
  token?: () => string;
  /** Connections accepted at once (see limits.ts); more are closed as they come. */
  maxConnections?: number;
}

/** The page's own files: `web/` at the top of the package. */
export const WEB_DIR = path.join(PACKAGE_ROOT, 'web') + path.sep;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(value));
}

export function sendError(res: ServerResponse, status: number, message: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', ...extra });
  res.end(JSON.stringify({ error: message }));
}

/** Reads a JSON request body of at most `limit` bytes. */
export async function readJson(req: IncomingMessage, limit = 64 << 10): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > limit) throw new RequestError(413, `request body over ${limit} bytes`);
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new RequestError(400, 'the request body is not JSON');
  }
}

/** A request the handler refuses, with the status to answer. */
export class RequestError extends Error {
  override readonly name = 'RequestError';

  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sameToken(given: string, want: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class HttpServer {
  private server: Server | null = null;
  private readonly routes: Route[] = [];
  private allowedHosts = new Set<string>();

  constructor(private readonly opts: ServerOptions) {}

  add(...routes: Route[]): this {
    this.routes.push(...routes);
    return this;
  }

  /** Starts listening; resolves with the address actually bound (port 0 picks a free one). */
  async start(): Promise<{ host: string; port: number }> {
    this.server = createServer((req, res) => {
      this.serve(req, res).catch((err: unknown) => {
        if (!res.headersSent) sendError(res, 500, `internal error: ${(err as Error).message}`);
        else res.end();
      });
    });
    if (this.opts.maxConnections !== undefined) this.server.maxConnections = this.opts.maxConnections;
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.opts.port, this.opts.host, () => resolve());
    });
    const addr = this.server.address() as { address: string; port: number };
    const port = addr.port;
    const hosts = [this.opts.host, 'localhost', '127.0.0.1', '[::1]', addr.address.includes(':') ? `[${addr.address}]` : addr.address];
    this.allowedHosts = new Set(hosts.map((h) => `${h}:${port}`.toLowerCase()));
    if (this.opts.externalUrl !== undefined) this.allowedHosts.add(new URL(this.opts.externalUrl).host.toLowerCase());
    return { host: addr.address, port };
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = (req.headers.host ?? '').toLowerCase();
    // Anything listening on 0.0.0.0 is reached by its own addresses too: accept those only when exposed.
    if (!this.allowedHosts.has(host) && !this.opts.expose) {
      sendError(res, 421, `this server answers as ${[...this.allowedHosts][0]}, not ${host || '(no Host)'}`);
      return;
    }
    const url = new URL(req.url ?? '/', 'http://local');
    const matching = this.routes.map((r) => ({ r, m: r.path.exec(url.pathname) })).filter((x) => x.m !== null);
    if (matching.length === 0) {
      if (req.method === 'GET' || req.method === 'HEAD') await this.staticFile(url.pathname, res);
      else sendError(res, 404, `nothing at ${url.pathname}`);
      return;
    }
    const hit = matching.find((x) => x.r.method === req.method);
    if (hit === undefined) {
      sendError(res, 405, `${req.method ?? '?'} is not allowed here`, { allow: matching.map((x) => x.r.method).join(', ') });
      return;
    }
    if (hit.r.method !== 'GET') {
      const refused = this.refuseChange(req);
      if (refused !== null) {
        sendError(res, refused.status, refused.message);
        return;
      }
    }
    let params: string[];
    try {
      params = hit.m!.slice(1).map((p) => decodeURIComponent(p ?? ''));
    } catch {
      // A lone or malformed % escape (/api/v1/runs/%): the request is wrong, not the server.
      sendError(res, 400, `${url.pathname} is not a valid address: a % must start an escape such as %2F`);
      return;
    }
    try {
      await hit.r.handle(req, res, params);
    } catch (err) {
      if (err instanceof RequestError) sendError(res, err.status, err.message);
      else throw err;
    }
  }

  /** Why a change is refused, or null: another origin (CSRF), or no valid token when exposed. */
  private refuseChange(req: IncomingMessage): { status: number; message: string } | null {
    const origin = req.headers.origin;
    // Exposed, the page is reached by whatever name the network gives this machine
    // (http://gpu-node-17:9464): a change from the page at the Host the request came to is from
    // this page. The token still decides (a rebound name has no token).
    const fromThisHost = this.opts.expose && origin !== undefined && originHost(origin) === (req.headers.host ?? '').toLowerCase();
    if (origin !== undefined && !fromThisHost && !this.allowedHosts.has(originHost(origin))) {
      const hint = this.opts.expose ? '; if the page is reached at that address through a proxy, set http.external_url to it' : '';
      return { status: 403, message: `changes are accepted from this page only, not from ${origin}${hint}` };
    }
    if (!(req.headers['content-type'] ?? '').startsWith('application/json') && req.method === 'POST') {
      return { status: 415, message: 'send the change as application/json' };
    }
    // On loopback only this machine's users reach the page: the same-origin check is enough.
    if (!this.opts.expose) return null;
    const want = this.opts.token?.();
    if (want === undefined) {
      return { status: 403, message: 'the page is read-only: it is exposed beyond this machine and http.auth_token_file is not set' };
    }
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ')) return { status: 401, message: 'changes need the token (Authorization: Bearer ...)' };
    if (!sameToken(auth.slice(7), want)) return { status: 401, message: 'the token is not right' };
    return null;
  }

  private async staticFile(pathname: string, res: ServerResponse): Promise<void> {
    const rel = pathname === '/' ? 'index.html' : pathname.slice(1);
    const file = path.resolve(WEB_DIR, rel);
    const type = TYPES[path.extname(file)];
    if (!file.startsWith(WEB_DIR) || type === undefined) {
      sendError(res, 404, `nothing at ${pathname}`);
      return;
    }
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      sendError(res, 404, `nothing at ${pathname}`);
      return;
    }
    res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-cache' });
    res.end(body);
  }
}

/** The host of an Origin header, lower-cased; '' for one that is no URL (`null`, garbage): refused as another origin. */
function originHost(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}
