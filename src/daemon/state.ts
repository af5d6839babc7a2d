/**
 * What the daemon saves, and when. The state file holds the read path's sections (offsets,
 * statistics, findings) and the alerting's, written together so they always agree. Saves run one
 * at a time, skip when nothing changed, and a timed save waits at least SAVE_SPACING times as
 * long as the last one took, and at least a second for every SAVE_BYTES_PER_S bytes it wrote:
 * a large state (200 busy runs: 26 MB) is saved every few minutes, a small one at every
 * checkpoint interval. What a kill -9 costs is a re-read of the lines written since the save.
 */
import path from 'node:path';
import type { AlertingJSON } from '../alerting/service.js';
import { z } from 'zod';
import type { ReadState } from '../pipeline/pipeline.js';
import { findingSchema, fitArray, fitReadState, fitRecord, why } from '../pipeline/state-schema.js';
import { writeAtomic } from '../state/atomic.js';
import { loadState, type LoadedState, type SetAside } from '../state/file.js';
import { makePrivateDir, makePrivateDirSync } from '../state/private.js';
import { StateLock } from '../state/lock.js';
import type { StateLayout } from '../state/layout.js';
import { FailureReport } from '../util/failures.js';
import type { Logger } from '../util/log.js';
import type { PieceSink } from '../util/pieces.js';

export interface DaemonState extends ReadState {
  /** Alerts and notification groups. */
  alerting?: AlertingJSON;
}

const alertSchema = z.looseObject({
  key: z.string().min(1),
  fingerprint: z.string().min(1),
  state: z.enum(['pending', 'firing', 'resolved']),
  finding: findingSchema,
  activeSince: z.number(),
  firingSince: z.number().nullable(),
  lastHeld: z.number(),
  resolvedAt: z.number().nullable(),
});
const groupSchema = z.looseObject({ nextFlush: z.number().nullable(), lastFlush: z.number().nullable(), notified: z.array(z.string()) });

/**
 * The daemon's state, each part that fits kept (see fitReadState). Alerts and notification groups
 * set aside are rebuilt: the findings that hold fire again as new alerts, and what each channel
 * was told comes back from the notification log (Dispatcher.reconcile).
 */
function fitDaemonState(v: Record<string, unknown>, aside: SetAside[]): DaemonState | null {
  const read = fitReadState(v, aside);
  if (read === null) return null;
  const out: DaemonState = read;
  if (v.alerting === undefined) return out;
  const a = z.looseObject({ alerts: z.unknown(), groups: z.unknown() }).safeParse(v.alerting);
  if (!a.success) {
    aside.push({ part: 'alerting', why: why(a.error), value: v.alerting });
    return out;
  }
  out.alerting = {
    alerts: fitArray(a.data.alerts, alertSchema, 'alerting.alerts', aside) as unknown as NonNullable<DaemonState['alerting']>['alerts'],
    groups: fitRecord(a.data.groups, groupSchema, 'alerting.groups', aside),
  };
  return out;
}

export function loadDaemonState(file: string, now: number): Promise<LoadedState<DaemonState>> {
  return loadState<DaemonState>(file, fitDaemonState, now);
}

/** Creates the state folder when needed and reads what the last run of the daemon saved (null: start afresh). */
export async function openState(layout: StateLayout, now: number, log: Logger): Promise<DaemonState | null> {
  await makePrivateDir(layout.dir).catch((err: NodeJS.ErrnoException) => {
    log.warn({ stateDir: layout.dir, code: err.code }, 'cannot create the state folder; state will not be saved');
  });
  const loaded = await loadDaemonState(layout.state, now);
  for (const p of loaded.problems) log.warn({ stateDir: layout.dir }, p);
  const s = loaded.state;
  if (s !== null) log.info({ files: Object.keys(s.files).length, runs: s.runs.length, savedAt: s.savedAt }, 'resuming from saved state');
  return s;
}

const SAVE_SPACING = 100;
/**
 * The average rate a large state is saved at, at most (bytes a second). Saving 200 busy runs (26
 * MB) every 30 s cost 1.3-1.8% of a core, a third of all such a daemon did at 200 lines/s, of
 * which the save's own wall time (SAVE_SPACING) saw a fraction (the collections and the kernel's
 * share came after it), and wrote 3 GB an hour: at this rate, a save of 26 MB every 3.4 minutes.
 */
const SAVE_BYTES_PER_S = 128 * 1024;

export interface SaverOptions {
  file: string;
  /** Pushes the state as pieces of one JSON text into the sink (see Pipeline.statePieces): called during the save, and written as it pushes. */
  pieces: (sink: PieceSink) => void;
  /** Counts of what the state holds (records read, transitions, notifications): all as at the last save, nothing to save. */
  mark: () => readonly number[];
  log: Logger;
  /** The clock saves are timed by (ms; performance.now() unless a test gives one). */
  now?: () => number;
}

function sameCounts(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export class StateSaver {
  private saving: Promise<void> = Promise.resolve();
  private savedMark: readonly number[] = [];
  /** How long the last save took, when it ended (performance.now() ms) and the bytes it wrote. */
  private last = { ms: 0, endedAt: -Infinity, bytes: 0 };
  private readonly failure = new FailureReport();

  private readonly now: () => number;

  constructor(private readonly opts: SaverOptions) {
    this.now = opts.now ?? (() => performance.now());
  }

  /** The error code of the last failed save, or null. */
  get error(): string | null {
    return this.failure.cause('save');
  }

  /** Whether a timed save is due: the last one ended long enough ago for its cost and its size. */
  due(): boolean {
    const wait = Math.max(SAVE_SPACING * this.last.ms, (1000 * this.last.bytes) / SAVE_BYTES_PER_S);
    return this.now() - this.last.endedAt >= wait;
  }

  /** Saves offsets, statistics and alerts together, after any save under way. `force` saves even when nothing changed. */
  save(force = false): Promise<void> {
    this.saving = this.saving.then(() => this.saveOnce(force));
    return this.saving;
  }

  private async saveOnce(force: boolean): Promise<void> {
    const mark = this.opts.mark();
    if (sameCounts(mark, this.savedMark) && this.error === null && !force) return;
    const start = this.now();
    try {
      const bytes = await writeAtomic(this.opts.file, this.opts.pieces);
      this.savedMark = mark;
      const end = this.now();
      this.last = { ms: end - start, endedAt: end, bytes };
      if (this.failure.recovered('save')) this.opts.log.info({ stateDir: path.dirname(this.opts.file) }, 'state saved again');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (this.failure.failed('save', code)) {
        this.opts.log.error(
          { stateDir: path.dirname(this.opts.file), code },
          `cannot save state (${code}); a restart will re-read the logs from the last saved point`,
        );
      }
    }
  }
}

/** Another daemon uses the state folder: this one must not start (it would overwrite the other's state). */
export class StateDirInUse extends Error {
  override readonly name = 'StateDirInUse';
}

/**
 * Takes the state folder for this daemon (creating it when needed). A folder that cannot be
 * created is warned about and not locked: nothing will be saved there anyway.
 */
export function lockState(layout: StateLayout, log: Logger): StateLock | null {
  try {
    makePrivateDirSync(layout.dir);
  } catch (err) {
    log.warn(
      { stateDir: layout.dir, code: (err as NodeJS.ErrnoException).code },
      'cannot create the state folder; state will not be saved',
    );
    return null;
  }
  let got;
  try {
    got = StateLock.acquire(layout.lock);
  } catch (err) {
    log.warn(
      { stateDir: layout.dir, code: (err as NodeJS.ErrnoException).code },
      `cannot lock the state folder (${(err as Error).message})`,
    );
    return null;
  }
  if ('heldBy' in got) {
    throw new StateDirInUse(
      `the state folder ${layout.dir} is in use by barwatch PID ${got.heldBy.pid}; stop that daemon, or give this one its own state folder (state_dir in a config, or watch other paths)`,
    );
  }
  if (got.tookOver !== null)
    log.info(
      { stateDir: layout.dir, pid: got.tookOver.pid },
      `took over the state folder from PID ${got.tookOver.pid}, which is no longer running`,
    );
  return got.lock;
}
