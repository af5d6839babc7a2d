/**
 * The simulator's confusion table: every scenario of docs/simulator.md run to completion over
 * seeds and analysed. `node dist/scripts/sim-confusion.js [seeds=10] [scenario,...]`
 */
import { SIM_SCENARIO_NAMES, type SimScenarioName } from '../src/sim/scenarios.js';
import { tableOf } from '../test/helpers/confusion.js';
import { asExpected, runSim, SIM_EXPECTED, type SimOutcome } from '../test/helpers/sim-confusion.js';

const n = Number(process.argv[2] ?? 10);
const names = process.argv[3] ? (process.argv[3].split(',') as SimScenarioName[]) : SIM_SCENARIO_NAMES;
const outcomes: SimOutcome[] = [];
for (const name of names) for (let seed = 1; seed <= n; seed++) outcomes.push(await runSim(name, seed));
console.log(tableOf(outcomes, SIM_EXPECTED, names, n, asExpected));
for (const name of names) console.log(`${name}: ${outcomes.filter((o) => o.scenario === name && asExpected(o)).length}/${n} as expected`);
for (const o of outcomes) {
  if (!asExpected(o)) {
    console.log(`\n${o.scenario} seed ${o.seed}: ${o.ids.join(', ') || '(none)'}`);
    for (const f of o.findings) console.log(`  ${f.detector} r${f.round} s${f.step}: ${f.message.slice(0, 300)}`);
  }
}
