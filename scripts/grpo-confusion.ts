/**
 * The confusion table of the training-health scenarios (test/helpers/grpo-scenarios.ts): which
 * detectors each raises over seeds (both formats, four noise levels), and the findings of every
 * run that differs from its expectation. `node dist/scripts/grpo-confusion.js [seeds=16] [scenario]`
 */
import { grpoConfusion } from '../test/helpers/confusion.js';
import { asExpectedGrpo, GRPO_SCENARIO_NAMES, type GrpoScenarioName } from '../test/helpers/grpo-scenarios.js';

const n = Number(process.argv[2] ?? 16);
const only = process.argv[3] as GrpoScenarioName | undefined;
const { outcomes, table } = await grpoConfusion(
  Array.from({ length: n }, (_, i) => i + 1),
  only ? [only] : GRPO_SCENARIO_NAMES,
);
console.log(table);
for (const o of outcomes) {
  if (!asExpectedGrpo(o)) {
    console.log(`\n${o.scenario} seed ${o.seed}: ${o.ids.join(', ') || '(none)'}`);
    for (const f of o.findings) console.log(`  ${f.detector} r${f.round} s${f.step}: ${f.message}`);
  }
}
