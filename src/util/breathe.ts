/**
 * Long work in small steps that resolve at once (synchronous reads behind async functions) runs
 * as one chain of microtasks: timers, HTTP requests and signals wait until all of it is done (a
 * 30 GiB hole in a log kept /healthz unanswered for 45 s). `breathe()` between steps lets the event
 * loop run once the work has held it for SLICE_MS.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long work may hold the event loop before it lets other callbacks run. */
const SLICE_MS = 20;

let since = performance.now();

/**
 * Whether the work since the last yield took SLICE_MS or more: `if (breatheDue()) await breathe()`
 * on a path taken for every line read (an async call that returns at once still makes a promise
 * and suspends its caller once).
 */
export function breatheDue(): boolean {
  return performance.now() - since >= SLICE_MS;
}

/** Yields to the event loop when the work since the last yield took SLICE_MS or more. */
export async function breathe(): Promise<void> {
  if (!breatheDue()) return;
  await nextTurn();
  since = performance.now();
}
