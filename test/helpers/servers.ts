/** Real servers on loopback for the notifier tests: an HTTP capture server and an SMTP server. */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Captured {
  method: string;
  path: string;
  body: string;
  json: unknown;
  /** The Authorization header, when one was sent. */
  authorization?: string;
  /** Every header, by its lower-case name. */
  headers: Record<string, string | string[] | undefined>;
}

/**
 * A request with the headers given as they are: fetch() drops a Host header (the Fetch standard
 * forbids it), so a test of another Host goes through node:http. A connection of its own each
 * time (no agent): it holds nothing open after the answer.
 */
export function rawRequest(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: u.pathname, method: opts.method ?? 'GET', headers: opts.headers, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/**
 * An answer, or 'hang': hold the request open without answering (a timeout on the client).
 * `endless`: the body never ends (chunks written until the client goes away).
 */
export type Responder = (
  req: Captured,
  n: number,
) => { status: number; body?: string; headers?: Record<string, string>; endless?: boolean } | 'hang';

/** An HTTP server that records every request and answers as `respond` says (default 200 "ok"). */
export class CaptureServer {
  readonly requests: Captured[] = [];
  respond: Responder = () => ({ status: 200, body: 'ok' });
  private server: Server | null = null;
  url = '';
  /** Bytes of endless answers written before each client went away. */
  readonly endlessWritten: number[] = [];

  /** Listens on `port` (0: any free port). */
  async start(port = 0): Promise<this> {
    this.server = createServer((req: IncomingMessage, res) => {
      // A client killed mid-request (kill -9 tests) resets its connection: not the test's failure.
      req.on('error', () => undefined);
      res.on('error', () => undefined);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: unknown = null;
        try {
          json = JSON.parse(body);
        } catch {
          // not JSON
        }
        const cap: Captured = { method: req.method ?? '', path: req.url ?? '', body, json, headers: req.headers };
        if (req.headers.authorization !== undefined) cap.authorization = req.headers.authorization;
        this.requests.push(cap);
        const r = this.respond(cap, this.requests.length);
        if (r === 'hang') return;
        res.writeHead(r.status, { 'content-type': 'text/plain', ...r.headers });
        if (r.endless === true) {
          const chunk = Buffer.alloc(64 << 10, 'ok ');
          let written = 0;
          const more = (): void => {
            while (!res.destroyed && res.write(chunk)) written += chunk.length;
          };
          res.on('drain', more);
          res.on('close', () => this.endlessWritten.push(written));
          more();
          return;
        }
        res.end(r.body ?? '');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A real SMTP server (smtp-server) on loopback; messages are parsed back with mailparser. */
export class SmtpCapture {
  readonly messages: ParsedMail[] = [];
  readonly auths: { user: string; pass: string }[] = [];
  /** Whether each message came over TLS (STARTTLS or implicit). */
  readonly secure: boolean[] = [];
  /** Connection errors the server reported (a client that went away mid-session). */
  readonly errors: Error[] = [];
  private server: SMTPServer | null = null;
  port = 0;

  constructor(private readonly opts: { user?: string; pass?: string; tls?: { key: string; cert: string; implicit: boolean } } = {}) {}

  async start(): Promise<this> {
    const needAuth = this.opts.user !== undefined;
    this.server = new SMTPServer({
      secure: this.opts.tls?.implicit === true,
      ...(this.opts.tls !== undefined ? { key: this.opts.tls.key, cert: this.opts.tls.cert } : { disabledCommands: ['STARTTLS'] }),
      authOptional: !needAuth,
      allowInsecureAuth: true,
      logger: false,
      onAuth: (auth, _session, cb) => {
        this.auths.push({ user: auth.username ?? '', pass: auth.password ?? '' });
        if (auth.username === this.opts.user && auth.password === this.opts.pass) cb(null, { user: auth.username });
        else cb(new Error('Invalid username or password'));
      },
      onData: (stream, session, cb) => {
        this.secure.push(session.secure);
        simpleParser(stream, { keepCidLinks: true })
          .then((m) => {
            this.messages.push(m);
            cb();
          })
          .catch((err: Error) => cb(err));
      },
    });
    // A client killed mid-session (kill -9 tests) resets its connection: SMTPServer reports it as
    // an 'error' event, which would otherwise end the test process.
    this.server.on('error', (err) => this.errors.push(err));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.port = ((this.server as unknown as { server: Server }).server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** A clock the test moves by hand. */
export class FakeClock {
  constructor(public t = Date.parse('2026-11-30T10:00:00Z')) {}
  now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

/** A loopback port nothing listens on right now (for a server started by another program). */
export async function freePort(): Promise<number> {
  const s = createTcpServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}
