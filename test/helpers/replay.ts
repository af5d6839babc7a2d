/**
 * A writer process for live tests (child_process.fork): appends planned writes to their files in
 * order, pausing briefly every few writes so a watcher sees the run grow.
 *
 * argv: <plan.json>  with {"writes": [{"file": abs path, "text": "..."}], "every": N, "pauseMs": M, "gated"?: true}
 *
 * Gated, it writes only up to the write its parent allows (a `{ upTo: n }` message), so a test can
 * stop a daemon at moments of its choosing within the writing, however slow the machine is.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

interface Plan {
  writes: { file: string; text: string }[];
  every: number;
  pauseMs: number;
  gated?: boolean;
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Plan;
let upTo = plan.gated === true ? 0 : Infinity;
let wake: (() => void) | null = null;
process.on('message', (m: { upTo: number }) => {
  upTo = m.upTo;
  wake?.();
});
const dirs = new Set<string>();
for (const [i, w] of plan.writes.entries()) {
  while (i >= upTo) await new Promise<void>((resolve) => (wake = resolve));
  const dir = path.dirname(w.file);
  if (!dirs.has(dir)) {
    mkdirSync(dir, { recursive: true });
    dirs.add(dir);
  }
  appendFileSync(w.file, w.text);
  if ((i + 1) % plan.every === 0) await sleep(plan.pauseMs);
}
process.disconnect?.();
