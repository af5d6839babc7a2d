/**
 * False positives of boundary-oscillation on long runs with no oscillation: rounds of healthy
 * boundary reward (flat, linear or saturating ramps) with white or AR(1) noise, judged the way the
 * detector judges a round as it grows (every 16 steps from the first full span). Prints, per noise
 * model, the evaluations and windows judged and how many rounds and evaluations fired.
 * `node dist/scripts/noise-fp.js [rounds=2000] [steps=300]`
 */
import { noiseFalsePositives, NOISE_MODELS } from '../test/helpers/noise.js';

const rounds = Number(process.argv[2] ?? 2000);
const steps = Number(process.argv[3] ?? 300);
console.log(`| noise model (${rounds} rounds of ${steps} steps) | evaluations | windows | evaluations firing | rounds firing |`);
console.log('|---|---|---|---|---|');
for (const m of NOISE_MODELS) {
  const r = noiseFalsePositives(m, rounds, steps);
  const rate = (a: number, b: number): string => `${a} (${((100 * a) / b).toFixed(3)}%)`;
  console.log(
    `| ${m.name} | ${r.evaluations} | ${r.windows} | ${rate(r.firingEvaluations, r.evaluations)} | ${rate(r.firingRounds, rounds)} |`,
  );
}
