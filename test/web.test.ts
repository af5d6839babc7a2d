/**
 * The web page in a real browser (Debian's chromium, driven by playwright-core, which never
 * downloads one) against a real daemon while `barwatch simulate` writes a run: the run appears
 * and grows without a reload, findings are drawn and listed, a silence made on the page is the
 * CLI's, names from folders stay text, changes need the token when exposed, and the keyboard
 * reaches every action. Screenshots go to a temporary folder (printed as a diagnostic).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { barwatch } from './helpers/cli.js';
import { DaemonProcess } from './helpers/daemon.js';
import { rawRequest } from './helpers/servers.js';
import { BIN, tempDir } from './helpers/fs.js';
import { writeGrpoScenario } from './helpers/grpo-scenarios.js';

const CHROMIUM = process.env['BARWATCH_CHROMIUM'] ?? '/usr/bin/chromium';
const SKIP = existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM} (apt-get install chromium, or set BARWATCH_CHROMIUM)`;
const XSS = '<img src=x onerror=alert(1)>';

/**
 * Every control a keyboard user must reach in the view, and the ones Tab reached, by their
 * data-key (a live update redraws the view and gives focus back by data-key).
 */
async function tabWalk(page: Page): Promise<{ actions: string[]; reached: Set<string> }> {
  const keysIn = (): Promise<string[]> =>
    page.$$eval('main a[href], main button, main input, main select', (els: { getAttribute(k: string): string | null }[]) =>
      els.map((e) => e.getAttribute('data-key') ?? '(a control without data-key)'),
    );
  const actions = await keysIn();
  await page.focus('body');
  const reached = new Set<string>();
  for (let i = 0; i < actions.length + 8; i++) {
    await page.keyboard.press('Tab');
    const k = await page.evaluate<string | null>('document.activeElement?.getAttribute("data-key") ?? null');
    if (k !== null) reached.add(k);
  }
  return { actions, reached };
}

test('web page in a browser', { skip: SKIP }, async (t) => {
  const dialogs: string[] = [];
  const root = tempDir();
  const shots = path.join(root, 'screenshots');
  mkdirSync(shots);
  const runs = path.join(root, 'runs');
  const odd = path.join(runs, XSS, 'outputs', 'selector_round1');
  mkdirSync(odd, { recursive: true });
  writeFileSync(path.join(odd, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n');
  const cfg = path.join(root, 'barwatch.yaml');
  writeFileSync(cfg, `state_dir: ${root}/state\nalerting: {group_wait: 0s}\nlog: {format: json}\n`);
  const d = new DaemonProcess([runs, '--config', cfg], { listen: '127.0.0.1:0' });
  const base = await d.pageUrl();
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  after(() => browser.close());
  const page: Page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.on('dialog', (dlg) => {
    dialogs.push(dlg.message());
    void dlg.dismiss();
  });
  await t.test('a run being written appears, grows without a reload, and its findings are drawn where they began', async (st) => {
    const run = path.join(root, 'runs', 'bar-rag');
    const writer = spawn(process.execPath, [BIN, 'simulate', run, '--scenario', 'aggressive-filter', '--seed', '2', '--speed', '120'], {
      stdio: 'ignore',
    });
    after(() => writer.kill());
    await page.goto(base);
    const row = page.locator(`tr[data-run="${run}"]`);
    await row.waitFor({ timeout: 20_000 });
    await page.screenshot({ path: path.join(shots, 'runs.png') });
    // The run's own page: the step shown moves on within 2 s, with no reload.
    await row.locator('a').click();
    await page.waitForSelector('figure svg');
    const loads: string[] = [];
    page.on('framenavigated', (f) => loads.push(f.url()));
    const stepText = async (): Promise<number> =>
      Number(/step (\d+)/.exec((await page.locator('main > .view > p').nth(2).textContent()) ?? '')?.[1]);
    const first = await stepText();
    const deadline = Date.now() + 2000;
    let now = first;
    while (now === first && Date.now() < deadline) {
      await page.waitForTimeout(100);
      now = await stepText();
    }
    assert.notEqual(now, first, `the step stayed at ${first} for 2 s`);
    assert.deepEqual(loads, [], 'the page was not reloaded');
    // The filter finding: listed with its recommendation and drawn on the filter chart.
    const finding = page.locator('li[data-finding="boundary-share-low:-"]');
    await finding.waitFor({ timeout: 60_000 });
    assert.match((await finding.textContent()) ?? '', /What to do: Set easy_threshold/);
    assert.equal(await page.locator('svg g.marker[data-finding="boundary-share-low:-"]').count(), 1);
    // A round finding is drawn on its round's chart at the step it first held.
    const roundFinding = page.locator('svg g.marker[data-finding^="generator-"]').first();
    await roundFinding.waitFor({ timeout: 60_000 });
    // The whole run across rounds: one axis of steps, a divider at each round's start.
    const whole = page.locator('figure', { hasText: 'Whole run: boundary reward' });
    await whole.locator('line.divider').nth(1).waitFor({ state: 'attached', timeout: 60_000 });
    assert.match((await whole.textContent()) ?? '', /round 1[\s\S]*round 2/);
    // Charts say what they show: axis titles, a legend naming every line, band and bar.
    const boundary = page.locator('figure', { hasText: 'Boundary reward, selector round 1' });
    const text = (await boundary.textContent()) ?? '';
    for (const want of ['step of selector round 1', 'boundary reward', 'rolling mean', '+-1 sd around the rolling mean'])
      assert.ok(text.includes(want), `the boundary chart does not say "${want}"`);
    const filter = (await page.locator('figure', { hasText: 'Filter: questions by generator accuracy' }).textContent()) ?? '';
    for (const want of ['before the filter', 'after the filter', 'questions', "the generator's accuracy on the question"])
      assert.ok(filter.includes(want), `the filter chart does not say "${want}"`);
    for (const width of [1400, 800]) {
      await page.setViewportSize({ width, height: 900 });
      // Charts use the width there is, and no two labels of a chart overlap.
      // (Run in the page, where the DOM is: a string, since this file is compiled without DOM types.)
      const sizes = await page.evaluate<{ main: number; widths: number[]; overlaps: string[] }>(`(() => {
        const main = document.querySelector('main').getBoundingClientRect().width;
        const charts = [...document.querySelectorAll('svg.chart')];
        const overlaps = [];
        for (const c of charts) {
          const boxes = [...c.querySelectorAll('text')].map((t) => ({ t: t.textContent, r: t.getBoundingClientRect() }));
          for (let i = 0; i < boxes.length; i++)
            for (let j = i + 1; j < boxes.length; j++) {
              const a = boxes[i].r;
              const b = boxes[j].r;
              if (a.width > 0 && b.width > 0 && a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
                overlaps.push('"' + boxes[i].t + '" over "' + boxes[j].t + '"');
            }
        }
        return { main, widths: charts.map((c) => c.getBoundingClientRect().width), overlaps };
      })()`);
      assert.ok(sizes.widths.length > 0);
      for (const w of sizes.widths) assert.ok(w >= sizes.main * 0.85, `a chart ${w} px wide in a ${sizes.main} px page at ${width} px`);
      assert.deepEqual(sizes.overlaps, [], `labels overlap at ${width} px`);
      await page.screenshot({ path: path.join(shots, `run-${width}.png`), fullPage: true });
    }
    await page.setViewportSize({ width: 1200, height: 900 });
    st.diagnostic(`screenshots in ${shots}`);
  });

  await t.test('a silence made on the page is listed by barwatch silence list and silences the alert', async () => {
    const run = path.join(root, 'runs', 'bar-rag');
    await page.goto(`${base}#/silences?run=${encodeURIComponent(run)}&detector=boundary-share-low`);
    await page.waitForSelector('#silence-run');
    assert.equal(await page.inputValue('#silence-run'), run);
    await page.fill('#silence-comment', 'filter being fixed');
    await page.click('button[type="submit"]');
    const row = page.locator('tr[data-silence]');
    await row.waitFor({ timeout: 10_000 });
    const id = (await row.getAttribute('data-silence'))!;
    const list = barwatch(['silence', 'list', '--config', cfg]);
    assert.match(list.stdout, new RegExp(`^${id}\\s+boundary-share-low\\s+${run.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'));
    const alerts = (await (await fetch(`${base}api/v1/alerts`)).json()) as { active: { detector: string; silenced_by: string | null }[] };
    assert.equal(alerts.active.find((a) => a.detector === 'boundary-share-low')?.silenced_by, id);
    await page.screenshot({ path: path.join(shots, 'silences.png') });
  });

  await t.test(
    'a verl run with nothing of BAR-RAG gets charts of its training series, its finding drawn on the entropy chart',
    async (st) => {
      const run = path.join(root, 'runs', 'verl-entropy');
      writeGrpoScenario(run, 'grpo-entropy-collapse', 2);
      await page.goto(`${base}#/run/${encodeURIComponent(run)}`);
      const entropy = page.locator('figure', { hasText: 'Policy entropy (actor/entropy)' });
      await entropy.waitFor({ timeout: 20_000 });
      const captions = await page.locator('figure figcaption').allTextContents();
      for (const want of [
        'Reward (critic/score/mean)',
        'KL to the reference policy (actor/kl_loss)',
        'Mean response length (tokens) (response_length/mean)',
        'Responses cut at the length limit',
        'Gradient norm (actor/grad_norm)',
      ])
        assert.ok(
          captions.some((c) => c.startsWith(want)),
          `no chart "${want}" among ${captions.join(' | ')}`,
        );
      await entropy.locator('g.marker[data-finding="entropy-collapse:-"]').waitFor({ timeout: 20_000 });
      assert.equal(await page.locator('li[data-finding="entropy-collapse:-"]').count(), 1);
      // A log without roles or rounds: the header says the step, the round is "training", and no
      // BAR-RAG setting was read (no "null" anywhere).
      const view = (await page.locator('main').textContent()) ?? '';
      assert.doesNotMatch(view, /null|unknown round|round -/);
      assert.match(view, /verl-console · step \d+/);
      assert.match(view, /training \(\d+ steps\)/);
      assert.match(view, /Config barwatch readNone: no run config/);
      for (const width of [1400, 800]) {
        await page.setViewportSize({ width, height: 900 });
        await page.screenshot({ path: path.join(shots, `verl-run-${width}.png`), fullPage: true });
      }
      await page.setViewportSize({ width: 1200, height: 900 });
      st.diagnostic(`screenshots in ${shots}`);
    },
  );

  await t.test('the runs filter keeps what is typed while runs update; the list names findings; an unknown route says so', async () => {
    const writer = spawn(process.execPath, [BIN, 'simulate', path.join(root, 'runs', 'busy'), '--scenario', 'healthy', '--speed', '150'], {
      stdio: 'ignore',
    });
    after(() => writer.kill());
    await page.goto(base);
    await page.locator('tr[data-run]').first().waitFor();
    await page.click('#run-filter');
    await page.keyboard.type('verl-ent', { delay: 120 });
    assert.equal(await page.inputValue('#run-filter'), 'verl-ent');
    const rows = page.locator('table.runs tbody tr[data-run]');
    assert.equal(await rows.count(), 1);
    assert.match((await rows.first().locator('td.findings').textContent()) ?? '', /entropy-collapse/);
    writer.kill();
    await page.goto(`${base}#/runs/nothing-here`);
    await page.getByRole('alert').waitFor();
    assert.match((await page.getByRole('alert').textContent()) ?? '', /There is no page at #\/runs\/nothing-here/);
    const summary = await fetch(`${base}summary`);
    assert.equal(summary.status, 404);
    assert.match(await summary.text(), /no nightly summary yet/);
    await page.goto(`${base}#/alerts`);
    const since = page.locator('table time').first();
    await since.waitFor();
    assert.doesNotMatch((await since.textContent()) ?? '', /T\d\d:\d\d:\d\d/, 'a local time, not ISO');
    assert.ok((await page.locator('td .message').count()) > 0, 'alerts show their message');
    await page.fill('#run-filter', '').catch(() => undefined);
  });

  await t.test('a run folder named like HTML shows as text', async () => {
    await page.goto(base);
    const link = page.locator('table.runs a', { hasText: XSS });
    await link.waitFor();
    assert.equal(await link.textContent(), path.join(root, 'runs', XSS));
    assert.equal(await page.locator('main img').count(), 0);
    assert.deepEqual(dialogs, []);
  });

  await t.test('the keyboard reaches every action of the runs, run, alerts and silences views', async () => {
    const views = everyView(path.join(root, 'runs', 'bar-rag'));
    for (const [hash, view] of views) {
      await page.goto(`${base}${hash}`);
      // A hash change redraws in place: wait for this view, not the one before it.
      await page.waitForSelector(`main .view[data-view="${view}"]`);
      const { actions, reached } = await tabWalk(page);
      assert.ok(actions.length > 0, hash);
      assert.deepEqual(
        actions.filter((a) => !reached.has(a)),
        [],
        `${hash}: not reached by Tab`,
      );
    }
  });

  await t.test('every view at 1,400 and 800 px wide: nothing wider than the window; screenshots', async (st) => {
    const views = everyView(path.join(root, 'runs', 'bar-rag'));
    for (const width of [1400, 800]) {
      await page.setViewportSize({ width, height: 900 });
      for (const [hash, view] of views) {
        await page.goto(`${base}${hash}`);
        await page.waitForSelector(`main .view[data-view="${view}"]`);
        const wide = await page.evaluate<{ page: number; window: number }>(
          '({ page: document.documentElement.scrollWidth, window: window.innerWidth })',
        );
        assert.ok(wide.page <= wide.window + 1, `${hash} at ${width} px is ${wide.page} px wide`);
        await page.screenshot({ path: path.join(shots, `${view}-${width}.png`), fullPage: true });
      }
    }
    await page.setViewportSize({ width: 1200, height: 900 });
    st.diagnostic(`screenshots in ${shots}`);
  });
  await t.test(
    "a run of BAR-RAG's official scripts, written to W&B as it goes: the runs list says how far behind its file is",
    async () => {
      const run = path.join(root, 'runs', 'official');
      const writer = spawn(process.execPath, [BIN, 'simulate', run, '--logger', 'wandb', '--seed', '2', '--speed', '10'], {
        stdio: 'ignore',
      });
      after(() => writer.kill());
      await page.goto(base);
      const cell = page.locator(`tr[data-run="${run}"] td[data-behind]`);
      await cell.waitFor({ timeout: 60_000 });
      assert.match((await cell.textContent()) ?? '', /\(W&B: ~\d+ steps behind\)/);
      assert.match(
        (await cell.getAttribute('title')) ?? '',
        /^W&B writes its log in 32 KiB blocks: rows after step \d+ appear when the block fills, here about \d+ step\(s\)/,
      );
      writer.kill();
    },
  );
  assert.equal(await d.stop(), 0);
});

/** Every view of the page, with its data-view name: the runs, one run, the alerts, the silences. */
function everyView(run: string): [string, string][] {
  return [
    ['#/', 'runs'],
    [`#/run/${encodeURIComponent(run)}`, 'run'],
    ['#/alerts', 'alerts'],
    ['#/silences', 'silences'],
  ];
}

describe('web API changes', () => {
  test('exposed: a change without the token is refused, with it accepted; another origin is refused', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'runs'));
    writeFileSync(path.join(dir, 'token'), 'hunter2-web-token\n');
    const c = path.join(dir, 'c.yaml');
    writeFileSync(c, `state_dir: ${dir}/state\nhttp: {listen: "127.0.0.1:0", expose: true, auth_token_file: token}\nlog: {format: json}\n`);
    const d = new DaemonProcess([path.join(dir, 'runs'), '--config', c], { listen: null });
    const url = await d.pageUrl();
    const body = JSON.stringify({ run: '/runs/**', duration: '1h' });
    const post = (headers: Record<string, string>): Promise<Response> =>
      fetch(`${url}api/v1/silences`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    assert.equal((await post({})).status, 401);
    assert.equal((await post({ authorization: 'Bearer wrong' })).status, 401);
    assert.equal((await post({ authorization: 'Bearer hunter2-web-token', origin: 'http://evil.example' })).status, 403);
    // An Origin that is no URL (a sandboxed frame sends `null`) is another origin: 403, not a 500.
    for (const origin of ['null', 'not a url', 'http://[bad'])
      assert.equal((await post({ authorization: 'Bearer hunter2-web-token', origin })).status, 403, origin);
    assert.equal((await post({ authorization: 'Bearer hunter2-web-token' })).status, 201);
    // The page reached by the machine's name: its changes come from the Host they are sent to.
    const port = new URL(url).port;
    const byName = (headers: Record<string, string>): Promise<{ status: number; text: string }> =>
      rawRequest(`${url}api/v1/silences`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', host: `gpu-node-17:${port}`, ...headers },
      });
    const token = { authorization: 'Bearer hunter2-web-token' };
    assert.equal((await byName({ ...token, origin: `http://gpu-node-17:${port}` })).status, 201);
    assert.equal((await byName({ origin: `http://gpu-node-17:${port}` })).status, 401, 'the token still decides');
    const proxied = await byName({ ...token, origin: 'https://barwatch.example' });
    assert.equal(proxied.status, 403);
    assert.match(proxied.text, /set http\.external_url/);
    // A lone % in a run's address is a bad request, not a server error.
    const badEscape = await fetch(`${url}api/v1/runs/%`);
    assert.equal(badEscape.status, 400);
    assert.match(await badEscape.text(), /a % must start an escape/);
    const wrongHost = await rawRequest(`${url}api/v1/runs`, { headers: { host: 'evil.example' } });
    assert.equal(wrongHost.status, 200, 'exposed: any Host is answered (the token guards changes)');
    assert.equal((await fetch(`${url}api/v1/silences`, { method: 'PUT' })).status, 405);
    const page = await fetch(url);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.equal(page.headers.get('access-control-allow-origin'), null);
    assert.equal(await d.stop(), 0);
    assert.ok(!d.logs.some((l) => JSON.stringify(l).includes('hunter2-web-token')), 'the token never reaches the log');
  });

  test('loopback: a request for another Host is refused (DNS rebinding)', async () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'runs'));
    const d = new DaemonProcess([path.join(dir, 'runs')], { listen: '127.0.0.1:0', cwd: dir, env: { XDG_STATE_HOME: dir } });
    const url = await d.pageUrl();
    const { status } = await rawRequest(`${url}api/v1/runs`, { headers: { host: 'attacker.example' } });
    assert.equal(status, 421);
    assert.equal(await d.stop(), 0);
  });
});
