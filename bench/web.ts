/**
 * The web page's cost: how fast the API answers for 200 runs and for a run of 1M steps, how
 * fast the page is ready in Chromium, and what the event stream costs with 10 open pages while
 * 200 runs append. Baselines in the same run: a bare node:http server answering the same bytes
 * (API), and the same bytes as a static page (browser). `node dist/bench/web.js [--runs 200]
 * [--steps 1000000] [--seconds 20]`; BARWATCH_CHROMIUM names the browser (default /usr/bin/chromium).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { appendLines, arg, jsonlLine, quantile, report, usage, Watcher } from './common.js';

const CHROMIUM = process.env['BARWATCH_CHROMIUM'] ?? '/usr/bin/chromium';

async function timeGets(url: string, n: number): Promise<{ p50: number; p95: number; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const body = await (await fetch(url)).arrayBuffer();
    ms.push(performance.now() - t);
    bytes = body.byteLength;
  }
  return { p50: quantile(ms, 0.5), p95: quantile(ms, 0.95), bytes };
}

async function bareServer(bodies: Map<string, Buffer>): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const b = bodies.get(req.url ?? '') ?? Buffer.from('');
    res.writeHead(200, { 'content-type': req.url?.endsWith('.html') ? 'text/html' : 'application/json' });
    res.end(b);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function main(): Promise<void> {
  const runs = arg('runs', 200, 20);
  const steps = arg('steps', 1_000_000, 100_000);
  const seconds = arg('seconds', 20, 3);
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-bench-web-'));
  try {
    const root = path.join(dir, 'runs');
    const files: string[] = [];
    for (let r = 0; r < runs; r++) {
      const f = path.join(root, `run-${r}`, 'outputs', 'selector_round1', 'reward_history.jsonl');
      mkdirSync(path.dirname(f), { recursive: true });
      appendLines(f, 1, 200, jsonlLine);
      files.push(f);
    }
    const big = path.join(root, 'big', 'outputs', 'selector_round1', 'reward_history.jsonl');
    mkdirSync(path.dirname(big), { recursive: true });
    appendLines(big, 1, steps, jsonlLine);
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, `state_dir: ${dir}/state\nwatch: {status_interval: 1s}\nhttp: {listen: "127.0.0.1:0"}\nlog: {format: json}\n`);
    const w = new Watcher([root, '--config', cfg]);
    await w.until(runs * 200 + steps);
    while (w.port === null) await new Promise((r) => setTimeout(r, 50));
    const base = `http://127.0.0.1:${w.port}`;
    const bigUrl = `${base}/api/v1/runs/${encodeURIComponent(path.dirname(path.dirname(path.dirname(big))))}`;
    const list = await timeGets(`${base}/api/v1/runs`, 30);
    const one = await timeGets(bigUrl, 30);
    // The same bytes from a bare server.
    const listBody = Buffer.from(await (await fetch(`${base}/api/v1/runs`)).arrayBuffer());
    const oneBody = Buffer.from(await (await fetch(bigUrl)).arrayBuffer());
    const bare = await bareServer(
      new Map([
        ['/runs', listBody],
        ['/one', oneBody],
      ]),
    );
    const bareList = await timeGets(`${bare.base}/runs`, 30);
    const bareOne = await timeGets(`${bare.base}/one`, 30);

    const rows: string[][] = [
      [
        'GET /api/v1/runs (' + (runs + 1) + ' runs)',
        `${list.p50.toFixed(1)} / ${list.p95.toFixed(1)}`,
        `${bareList.p50.toFixed(1)} / ${bareList.p95.toFixed(1)}`,
        `${(list.bytes / 1024).toFixed(0)} KiB`,
        '< 100',
      ],
      [
        `GET /api/v1/runs/<id> (${steps} steps)`,
        `${one.p50.toFixed(1)} / ${one.p95.toFixed(1)}`,
        `${bareOne.p50.toFixed(1)} / ${bareOne.p95.toFixed(1)}`,
        `${(one.bytes / 1024).toFixed(0)} KiB`,
        '< 300',
      ],
    ];
    const data: Record<string, unknown> = { runs, steps, list, one, bareList, bareOne };

    if (existsSync(CHROMIUM)) {
      const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
      const page = await browser.newPage();
      const ready = async (url: string, selector: string): Promise<number> => {
        const ms: number[] = [];
        for (let i = 0; i < 5; i++) {
          await page.goto('about:blank');
          const t = performance.now();
          await page.goto(url);
          await page.waitForSelector(selector);
          ms.push(performance.now() - t);
        }
        return quantile(ms, 0.5);
      };
      const runsReady = await ready(`${base}/#/`, `table.runs tbody tr:nth-child(${runs + 1})`);
      const runReady = await ready(
        `${base}/#/run/${encodeURIComponent(bigUrl.split('/api/v1/runs/')[1]!)}`.replace(/%25/g, '%'),
        'figure svg polyline',
      );
      // Baseline: a static page of the same size as the list's JSON, shown as text.
      const bareHtml = Buffer.from(
        `<!doctype html><title>bare</title><pre id="x">${listBody.toString('utf8').replace(/</g, '&lt;')}</pre>`,
      );
      const bare2 = await bareServer(new Map([['/page.html', bareHtml]]));
      const bareReady = await ready(`${bare2.base}/page.html`, '#x');
      bare2.server.close();
      rows.push([
        `page ready: runs view (${runs + 1} runs)`,
        `${runsReady.toFixed(0)}`,
        `${bareReady.toFixed(0)} (static page of the same bytes)`,
        '',
        '< 1000',
      ]);
      rows.push([`page ready: run view (${steps} steps, charts drawn)`, `${runReady.toFixed(0)}`, '', '', '< 1000']);
      Object.assign(data, { runsReady, runReady, bareReady });

      // The event stream: daemon CPU while every run appends one line a second, without and with 10 open pages.
      const phase = async (pages: number): Promise<number> => {
        const open = await Promise.all(Array.from({ length: pages }, () => browser.newPage()));
        await Promise.all(open.map((p) => p.goto(`${base}/#/`)));
        let next = 201;
        const t = setInterval(() => {
          for (const f of files) appendLines(f, next, next, jsonlLine);
          next++;
        }, 1000);
        const u0 = usage(w.child.pid!);
        const t0 = performance.now();
        await new Promise((r) => setTimeout(r, seconds * 1000));
        const u1 = usage(w.child.pid!);
        const cpu = (u1.cpu - u0.cpu) / ((performance.now() - t0) / 1000);
        clearInterval(t);
        await Promise.all(open.map((p) => p.close()));
        return cpu;
      };
      const without = await phase(0);
      const withPages = await phase(10);
      rows.push([
        `daemon CPU, ${runs} runs appending 1 line/s`,
        `${(withPages * 100).toFixed(1)}% with 10 pages`,
        `${(without * 100).toFixed(1)}% with none`,
        '',
        '',
      ]);
      Object.assign(data, { cpuWithout: without, cpuWith10Pages: withPages });
      await browser.close();
    } else {
      rows.push([`page and event stream: no browser at ${CHROMIUM}`, '', '', '', '']);
    }
    bare.server.close();
    await w.stop();
    report(
      'web',
      '## Web page (ms: median / p95 of 30 requests; page: median of 5 loads)',
      ['measure', 'barwatch', 'baseline', 'size', 'target'],
      rows,
      data,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('web.js')) await main();
