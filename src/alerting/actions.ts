/**
 * `actions`: a command run when an alert of a given detector and severity fires (after `for`,
 * not silenced), to act on the run: `scancel`, `ray job stop`, a `kill -TERM` of a pid read from
 * a file, a `curl` to a scheduler. At most once per alert and action, across restarts and kill -9:
 * that it starts is written (and synced) to `<state_dir>/actions.jsonl` before it starts, and
 * how it ended after. The alert goes in its environment (BARWATCH_ALERT_*) and as JSON on its
 * stdin; it runs without a shell unless `shell: true`, as the daemon's user, with a timeout
 * (SIGTERM, then SIGKILL 5 s later), and with no BARWATCH_* variable of the daemon's own in its
 * environment (webhook URLs, passwords: secrets). `dry_run` logs what would run and runs nothing.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { SEVERITY_RANK, type Severity } from '../detectors/types.js';
import type { Logger } from '../util/log.js';
import type { AlertBook } from './lifecycle.js';
import type { SilenceStore } from './silences.js';
import type { Alert } from './types.js';

export interface ActionSpec {
  name: string;
  /** A detector id, or `*`. */
  detector: string;
  /** The least severity it acts on. */
  severity: Severity;
  /** The words of the command (`{{field}}` in a word is filled from the alert), or a shell line with `shell`. */
  command: string[] | string;
  shell: boolean;
  timeoutMs: number;
  dryRun: boolean;
}

/** How an action went, as recorded (and shown on the page and in the alert's next notification). */
export interface ActionRecord {
  action: string;
  fingerprint: string;
  run: string;
  detector: string;
  round: number | null;
  /** What was run, as words (secrets never are: they are not in the alert). */
  command: string;
  state: 'running' | 'ok' | 'failed' | 'timed-out' | 'dry-run' | 'interrupted';
  startedAt: string;
  endedAt?: string;
  exitCode?: number | null;
  signal?: string | null;
  /** The first OUTPUT_BYTES of its stdout and stderr together. */
  output?: string;
  error?: string;
}

const OUTPUT_BYTES = 4096;
const KILL_GRACE_MS = 5000;

/** The fields of an alert a command can use: in its environment as BARWATCH_ALERT_<NAME>, in its words as {{name}}. */
export function alertFields(a: Alert): Record<string, string> {
  const f = a.finding;
  return {
    detector: f.detector,
    severity: f.severity,
    run: f.run,
    round: f.round === null ? '' : String(f.round),
    step: f.step === null ? '' : String(f.step),
    message: f.message,
    recommendation: f.recommendation ?? '',
    fingerprint: a.fingerprint,
  };
}

/** The words of an action's command for an alert: `{{field}}` filled (each word stays one word: no shell). */
export function commandWords(spec: ActionSpec, a: Alert): string[] {
  const fields = alertFields(a);
  const fill = (w: string): string => w.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k: string) => fields[k] ?? '');
  return typeof spec.command === 'string' ? [spec.command] : spec.command.map(fill);
}

/** The environment of an action: the daemon's without its own BARWATCH_* variables, and the alert's fields. */
export function actionEnv(a: Alert, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(base)) if (!k.startsWith('BARWATCH_')) env[k] = v;
  for (const [k, v] of Object.entries(alertFields(a))) env[`BARWATCH_ALERT_${k.toUpperCase()}`] = v;
  return env;
}

export function matches(spec: ActionSpec, a: Alert): boolean {
  return (
    (spec.detector === '*' || spec.detector === a.finding.detector) && SEVERITY_RANK[a.finding.severity] >= SEVERITY_RANK[spec.severity]
  );
}

export class Actions {
  /** By `<action>|<fingerprint>`: the latest record of each. */
  private readonly records = new Map<string, ActionRecord>();
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly specs: readonly ActionSpec[],
    private readonly file: string,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {}

  /** Reads what was run before; an action that started and never ended was interrupted (and is not run again). */
  init(): void {
    if (!existsSync(this.file)) return;
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        const r = JSON.parse(line) as ActionRecord;
        this.records.set(`${r.action}|${r.fingerprint}`, r);
      } catch {
        // A line cut by a crash: what it said is lost, the line before it stands.
      }
    }
    for (const [k, r] of this.records)
      if (r.state === 'running') {
        const ended: ActionRecord = {
          ...r,
          state: 'interrupted',
          endedAt: new Date(this.now()).toISOString(),
          error: 'barwatch stopped while it ran; not run again',
        };
        this.records.set(k, ended);
        this.append(ended);
      }
  }

  get configured(): boolean {
    return this.specs.length > 0;
  }

  /** The records of an alert (for its next notification and the page). */
  of(fingerprint: string): ActionRecord[] {
    return [...this.records.values()].filter((r) => r.fingerprint === fingerprint);
  }

  all(): ActionRecord[] {
    return [...this.records.values()];
  }

  /** Starts the actions due: each firing alert not silenced, matched, and not acted on before. */
  consider(book: AlertBook, silences: SilenceStore, now: number): void {
    if (this.specs.length === 0) return;
    const silenced = silences.matcher(now);
    for (const a of book.alerts.values()) {
      if (a.state !== 'firing' || silenced(a) !== null) continue;
      for (const spec of this.specs) {
        if (!matches(spec, a) || this.records.has(`${spec.name}|${a.fingerprint}`)) continue;
        const p = this.start(spec, a).finally(() => this.running.delete(p));
        this.running.add(p);
      }
    }
  }

  /** Waits for the actions running now (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
  }

  private append(r: ActionRecord): void {
    this.records.set(`${r.action}|${r.fingerprint}`, r);
    const fd = openSync(this.file, 'a', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(r)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  private async start(spec: ActionSpec, a: Alert): Promise<void> {
    const words = commandWords(spec, a);
    const shown = spec.shell
      ? `sh -c ${JSON.stringify(words[0])}`
      : words.map((w) => (/^[\w./:=@%+-]+$/.test(w) ? w : JSON.stringify(w))).join(' ');
    const base: ActionRecord = {
      action: spec.name,
      fingerprint: a.fingerprint,
      run: a.finding.run,
      detector: a.finding.detector,
      round: a.finding.round,
      command: shown,
      state: spec.dryRun ? 'dry-run' : 'running',
      startedAt: new Date(this.now()).toISOString(),
    };
    const ctx = { action: spec.name, detector: a.finding.detector, run: a.finding.run, round: a.finding.round, command: shown };
    if (spec.dryRun) {
      this.append(base);
      this.log.warn(ctx, `action ${spec.name} (dry run): would run ${shown} for ${a.finding.detector} in ${a.finding.run}`);
      return;
    }
    // Written and synced before it starts: after a crash it is never started twice.
    this.append(base);
    this.log.warn(ctx, `action ${spec.name}: running ${shown} for ${a.finding.detector} in ${a.finding.run}`);
    const end = await run(words, spec, a);
    const done: ActionRecord = { ...base, ...end, endedAt: new Date(this.now()).toISOString() };
    this.append(done);
    const level = done.state === 'ok' ? 'info' : 'warn';
    this.log[level](
      { ...ctx, state: done.state, exit_code: done.exitCode, signal: done.signal },
      `action ${spec.name}: ${done.state === 'ok' ? 'done' : done.state}${done.exitCode !== undefined && done.exitCode !== null ? ` (exit ${done.exitCode})` : ''}${done.error !== undefined ? `: ${done.error}` : ''}`,
    );
  }
}

function run(
  words: string[],
  spec: ActionSpec,
  a: Alert,
): Promise<Pick<ActionRecord, 'state' | 'exitCode' | 'signal' | 'output' | 'error'>> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    let size = 0;
    let timedOut = false;
    const take = (b: Buffer): void => {
      if (size < OUTPUT_BYTES) out.push(b.subarray(0, OUTPUT_BYTES - size));
      size += b.length;
    };
    const child = spec.shell
      ? spawn('/bin/sh', ['-c', words[0]!], { env: actionEnv(a), stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(words[0]!, words.slice(1), { env: actionEnv(a), stdio: ['pipe', 'pipe', 'pipe'] });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS).unref();
    }, spec.timeoutMs);
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.stdin.on('error', () => undefined);
    child.stdin.end(
      JSON.stringify({ ...alertFields(a), evidence: a.finding.evidence, startsAt: new Date(a.firingSince ?? a.activeSince).toISOString() }),
    );
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ state: 'failed', exitCode: null, signal: null, output: '', error: `could not start: ${err.message}` });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const output = Buffer.concat(out).toString('utf8');
      if (timedOut)
        resolve({ state: 'timed-out', exitCode: code, signal, output, error: `no end within ${spec.timeoutMs / 1000} s: stopped` });
      else resolve({ state: code === 0 ? 'ok' : 'failed', exitCode: code, signal, output });
    });
  });
}
