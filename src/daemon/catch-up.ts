/**
 * What a (re)started daemon does before it watches: reads what is already there as analyze does
 * (every file known before the first is read, each run's rounds in training order, detectors
 * judging as records are applied) with its alerts held, judges every run once with everything
 * read, and then reports what changed since it last stopped: a finding that came and went in the
 * backlog raises no alert, and one that holds names the step at which it first held, the step
 * analyze names. Files that appear meanwhile are picked up by the watcher.
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import type { DetectorEngine, Transition } from '../detectors/engine.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import { discover, type FoundFile } from '../sources/discover.js';
import { placeFile } from '../sources/place.js';
import type { Reach } from '../sources/reach.js';
import type { WatchRoot } from '../sources/watcher.js';
import type { Logger } from '../util/log.js';

/**
 * The files barwatch follows under `dir`, with the filters of the root it lies in (a single run's
 * folders only) and the daemon's reach (the symlinks it follows, never the state folder).
 */
export async function filesUnder(dir: string, roots: readonly WatchRoot[], reach: Reach): Promise<FoundFile[]> {
  const root = roots.find((r) => dir === r.path || dir.startsWith(r.path + path.sep));
  const only = root?.only;
  const found = await discover([dir], only === undefined ? undefined : (d, name) => d !== root!.path || only.includes(name), reach).catch(
    () => null,
  );
  return (found?.files ?? []).map((f) => ({ file: f.file, kind: f.kind, place: placeFile(f.file, f.kind) }));
}

export async function catchUp(
  p: Pipeline,
  engine: DetectorEngine,
  roots: readonly WatchRoot[],
  reach: Reach,
  log: Logger,
  onTransitions: (t: Transition[]) => void,
): Promise<void> {
  for (const r of roots) {
    const exists = await fsp.stat(r.path).then(
      () => true,
      () => false,
    );
    if (!exists) log.warn({ root: r.path }, 'watched root does not exist yet; waiting for it');
  }
  const before = engine.findings();
  p.holdAlerts = true;
  const files: string[] = [];
  for (const r of roots) {
    for (const f of await filesUnder(r.path, roots, reach)) {
      p.track(f.file, f.kind, f.place);
      files.push(f.file);
    }
  }
  try {
    for (const f of files) await p.drain(f);
    for (const run of p.registry.all()) engine.evaluate(run, p.detectContext());
  } finally {
    p.holdAlerts = false;
  }
  const t = engine.changesSince(before);
  if (t.length > 0) onTransitions(t);
}
