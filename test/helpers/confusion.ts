/** Runs every scenario over seeds through `analyze` (in process) and tallies the detector ids. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { analyzePaths } from '../../src/pipeline/analyze.js';
import { loadConfig } from '../../src/config/load.js';
import type { Finding } from '../../src/detectors/types.js';
import { silentLogger } from '../../src/util/log.js';
import { asExpectedGrpo, GRPO_EXPECTED, GRPO_SCENARIO_NAMES, writeGrpoScenario, type GrpoScenarioName } from './grpo-scenarios.js';
import { asExpectedScenario, EXPECTED, SCENARIO_NAMES, writeScenario, type ScenarioName } from './scenarios.js';

export interface Outcome {
  scenario: ScenarioName;
  seed: number;
  ids: string[];
  findings: Finding[];
}

/** Analyses, in process, what `write` puts in a fresh folder; the warning and critical findings. */
async function analyzeWritten(name: string, write: (dir: string, now: number) => void): Promise<{ ids: string[]; findings: Finding[] }> {
  const dir = mkdtempSync(path.join(tmpdir(), `barwatch-${name}-`));
  try {
    const now = Date.now();
    write(dir, now);
    const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => now);
    const findings = res.findings.filter((f) => f.severity !== 'info');
    return { ids: [...new Set(findings.map((f) => f.detector))].sort(), findings };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runScenario(name: ScenarioName, seed: number): Promise<Outcome> {
  return { scenario: name, seed, ...(await analyzeWritten(name, (dir, now) => writeScenario(dir, name, seed, now))) };
}

export interface GrpoOutcome {
  scenario: GrpoScenarioName;
  seed: number;
  ids: string[];
  findings: Finding[];
}

export async function runGrpoScenario(name: GrpoScenarioName, seed: number): Promise<GrpoOutcome> {
  return { scenario: name, seed, ...(await analyzeWritten(name, (dir) => writeGrpoScenario(dir, name, seed))) };
}

export async function grpoConfusion(
  seeds: number[],
  names: GrpoScenarioName[] = GRPO_SCENARIO_NAMES,
): Promise<{ outcomes: GrpoOutcome[]; table: string }> {
  const outcomes: GrpoOutcome[] = [];
  for (const name of names) for (const seed of seeds) outcomes.push(await runGrpoScenario(name, seed));
  return { outcomes, table: tableOf(outcomes, GRPO_EXPECTED, names, seeds.length, asExpectedGrpo) };
}

export async function confusion(seeds: number[], names: ScenarioName[] = SCENARIO_NAMES): Promise<{ outcomes: Outcome[]; table: string }> {
  const outcomes: Outcome[] = [];
  for (const name of names) for (const seed of seeds) outcomes.push(await runScenario(name, seed));
  return { outcomes, table: tableOf(outcomes, EXPECTED, names, seeds.length, asExpectedScenario) };
}

/**
 * The markdown table of which detectors fired per scenario, and how many runs were as expected
 * (`ok`; by default exactly the expected ids).
 */
export function tableOf<O extends { scenario: string; ids: string[] }>(
  outcomes: O[],
  expected: Record<string, string[]>,
  names: string[],
  seeds: number,
  ok: (o: O) => boolean = (o) => o.ids.join() === [...expected[o.scenario]!].sort().join(),
): string {
  const ids = [...new Set([...Object.values(expected).flat(), ...outcomes.flatMap((o) => o.ids)])].sort();
  const lines = [
    `| scenario (${seeds} seeds) | expected | as expected | ${ids.join(' | ')} |`,
    `|---|---|---|${ids.map(() => '---').join('|')}|`,
  ];
  for (const name of names) {
    const mine = outcomes.filter((o) => o.scenario === name);
    const exact = mine.filter(ok).length;
    const counts = ids.map((id) => mine.filter((o) => o.ids.includes(id)).length);
    lines.push(
      `| ${name} | ${expected[name]!.join(', ') || '(none)'} | ${exact}/${mine.length} | ${counts.map((c) => (c === 0 ? '.' : String(c))).join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** Whether a finding's round is the latest round its message names (messages naming none pass). */
export function placeMatchesStory(f: { round: number | null; message: string }): boolean {
  const named = [...f.message.matchAll(/\bround (\d+)\b/g)].map((m) => Number(m[1]));
  return named.length === 0 || f.round === Math.max(...named);
}
