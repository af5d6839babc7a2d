/**
 * A writer process for live tests (child_process.fork): appends planned writes to their files in
 * order, pausing briefly every few writes so a watcher sees the run grow.
 *
 * argv: <plan.json>  with {"writes": [{"file": abs path, "text": "..."}], "every": N, "pauseMs": M}
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

interface Plan {
  writes: { file: string; text: string }[];
  every: number;
  pauseMs: number;
}

const plan = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Plan;
const dirs = new Set<string>();
for (const [i, w] of plan.writes.entries()) {
  const dir = path.dirname(w.file);
  if (!dirs.has(dir)) {
    mkdirSync(dir, { recursive: true });
    dirs.add(dir);
  }
  appendFileSync(w.file, w.text);
  if ((i + 1) % plan.every === 0) await sleep(plan.pauseMs);
}
