/** Running the real `barwatch` command. */
import { spawn, spawnSync } from 'node:child_process';
import { BIN } from './fs.js';

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function barwatch(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): CliResult {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    cwd: opts.cwd,
    env: { ...process.env, ...opts.env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The same, without blocking this process (for tests whose servers run in it). */
export function barwatchAsync(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: opts.cwd, env: { ...process.env, ...opts.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

/** `barwatch analyze --format json`, parsed; asserts exactly one JSON document on stdout. */
export function analyzeJson(paths: string[], extra: string[] = []): { status: number | null; doc: AnalyzeDoc; stderr: string } {
  const r = barwatch(['analyze', ...paths, '--format', 'json', ...extra]);
  return { status: r.status, doc: JSON.parse(r.stdout) as AnalyzeDoc, stderr: r.stderr };
}

export interface SeriesDoc {
  n: number;
  mean: number | null;
  sd: number | null;
  last: number | null;
  last_step: number | null;
  nonfinite: number;
  window: { n: number; mean: number | null; sd: number | null };
}

export interface RoundDoc {
  role: string;
  round: number | null;
  steps: number;
  first_step: number | null;
  last_step: number | null;
  series: Record<string, SeriesDoc>;
  signal_share?: { share: Record<string, number> };
  resumed?: { times: number; replaced: number; last_to: number; last_from: number | null; exact: boolean };
}

export interface FindingDoc {
  detector: string;
  severity: string;
  round: number | null;
  step: number | null;
  message: string;
  evidence: Record<string, unknown>;
  recommendation: string | null;
}

export interface RunDoc {
  run: string;
  format: string;
  rounds: RoundDoc[];
  findings: FindingDoc[];
  settings: Record<string, unknown>;
  rollouts: { k: number } | null;
  filter: Record<string, number | null> | null;
  files: { path: string; format: string; malformed: number; records: number; role: string; round: number | null }[];
  problems: { path: string; reason: string }[];
}

export interface AnalyzeDoc {
  version: number;
  runs: RunDoc[];
}
