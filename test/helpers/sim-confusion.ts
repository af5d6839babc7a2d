/**
 * Runs every simulator scenario to completion over seeds, analyses each run in process, and
 * tallies the detector ids (scripts/sim-confusion.ts prints the table).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { analyzePaths } from '../../src/pipeline/analyze.js';
import type { Finding } from '../../src/detectors/types.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger } from '../../src/util/log.js';
import { SIM_SCENARIO_NAMES, SIM_SCENARIOS, type SimScenario, type SimScenarioName } from '../../src/sim/scenarios.js';
import { simulate } from '../../src/sim/simulate.js';

export interface SimOutcome {
  scenario: SimScenarioName;
  seed: number;
  ids: string[];
  findings: Finding[];
}

export async function runSim(name: SimScenarioName, seed: number, rounds = 3): Promise<SimOutcome> {
  const dir = mkdtempSync(path.join(tmpdir(), `barwatch-sim-${name}-`));
  try {
    await simulate(dir, { scenario: name, seed, rounds, speed: null });
    const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => Date.now());
    const findings = res.findings.filter((f) => f.severity !== 'info');
    return { scenario: name, seed, ids: [...new Set(findings.map((f) => f.detector))].sort(), findings };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const SIM_EXPECTED = Object.fromEntries(SIM_SCENARIO_NAMES.map((n) => [n, SIM_SCENARIOS[n].expected as string[]])) as Record<
  SimScenarioName,
  string[]
>;

/** Whether a run reported every expected id and nothing beyond the scenario's mayAlso. */
export function asExpected(o: SimOutcome): boolean {
  const s: SimScenario = SIM_SCENARIOS[o.scenario];
  const may = new Set([...s.expected, ...(s.mayAlso?.ids ?? [])]);
  return s.expected.every((id) => o.ids.includes(id)) && o.ids.every((id) => may.has(id));
}
