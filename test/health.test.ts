/** /healthz and /metrics of a running daemon. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { DaemonProcess } from './helpers/daemon.js';
import { tempDir } from './helpers/fs.js';

test('/healthz says ok with the counts; /metrics has barwatch metrics in Prometheus format', async () => {
  const dir = tempDir();
  const sel = path.join(dir, 'runs', 'r1', 'outputs', 'selector_round1');
  mkdirSync(sel, { recursive: true });
  writeFileSync(path.join(sel, 'reward_history.jsonl'), '{"step": 1, "boundary": 0.5}\n{"step": 2, "boundary": NaN}\nbroken\n');
  const cfg = path.join(dir, 'c.yaml');
  writeFileSync(cfg, `state_dir: ${dir}/state\nhttp: {listen: "127.0.0.1:0"}\nlog: {format: json}\n`);
  const d = new DaemonProcess([path.join(dir, 'runs'), '--config', cfg], { listen: null });
  const listening = await d.waitFor((l) => typeof l['port'] === 'number' && l.msg.startsWith('web page at'));
  await d.waitFor((l) => l.msg.startsWith('firing: nonfinite-reward'));
  const base = `http://127.0.0.1:${listening['port'] as number}`;
  const h = await fetch(`${base}/healthz`);
  assert.equal(h.status, 200);
  const body = (await h.json()) as Record<string, unknown>;
  // A read may be queued at this instant (a re-check after the last event): the lag is small, not 0.
  assert.ok((body['ingest_lag_seconds'] as number) < 5, JSON.stringify(body));
  assert.deepEqual(
    { ...body, ingest_lag_seconds: 0 },
    {
      status: 'ok',
      runs: 1,
      files: 1,
      ingest_lag_seconds: 0,
      outbox_depth: 0,
      last_error: null,
      unwatched_folders: 0,
      catching_up: false,
      channels_waiting: [],
    },
  );
  const m = await (await fetch(`${base}/metrics`)).text();
  assert.match(m, /^barwatch_lines_read_total 3$/m);
  assert.match(m, /^barwatch_records_ingested_total 2$/m);
  assert.match(m, new RegExp(`^barwatch_parse_errors_total\\{file="${sel.replace(/\//g, '\\/')}\\/reward_history\\.jsonl"\\} 1$`, 'm'));
  assert.match(m, /^barwatch_active_alerts\{detector="nonfinite-reward",severity="critical"\} 1$/m);
  assert.match(m, /^barwatch_outbox_depth 0$/m);
  assert.match(m, /^nodejs_eventloop_lag_seconds /m);
  assert.equal((await fetch(`${base}/nope`)).status, 404);
  assert.equal(await d.stop(), 0);
});
