/**
 * The confusion table of the scenario generator (test/helpers/scenarios.ts): which detectors each
 * scenario raises over seeds, and the findings of every run that differs from its expectation.
 * `node dist/scripts/confusion.js [seeds=20] [scenario]`
 */
import { confusion } from '../test/helpers/confusion.js';
import { asExpectedScenario, SCENARIO_NAMES, type ScenarioName } from '../test/helpers/scenarios.js';

const n = Number(process.argv[2] ?? 20);
const only = process.argv[3] as ScenarioName | undefined;
const { outcomes, table } = await confusion(
  Array.from({ length: n }, (_, i) => i + 1),
  only ? [only] : SCENARIO_NAMES,
);
console.log(table);
for (const o of outcomes) {
  if (!asExpectedScenario(o)) {
    console.log(`\n${o.scenario} seed ${o.seed}: ${o.ids.join(', ') || '(none)'}`);
    for (const f of o.findings) console.log(`  ${f.detector} r${f.round} s${f.step}: ${f.message}`);
  }
}
