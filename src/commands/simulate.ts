/** `barwatch simulate`: a small simulated BAR-RAG training written as it goes (docs/simulator.md). */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Option, type Command } from 'commander';
import { SIM_SCENARIO_NAMES, SIM_SCENARIOS, type SimScenarioName } from '../sim/scenarios.js';
import { fail, invokedAs } from './common.js';
import type { SimLogger } from '../sim/writers.js';

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('run a small simulated BAR-RAG training and write its logs (docs/simulator.md)')
    .argument('<out_dir>', 'where the run is written')
    .addOption(new Option('--scenario <name>', 'what goes wrong').choices(SIM_SCENARIO_NAMES).default('healthy'))
    .option('--seed <n>', 'random seed', '1')
    .option('--speed <steps_per_second>', "pace of the training; 'max' for as fast as it can", 'max')
    .option('--rounds <r>', 'alternating rounds', '3')
    .addOption(
      new Option(
        '--logger <logger>',
        "how the training is written: 'files' (SPEC 3.1's layout) or 'wandb' (W&B run files, as BAR-RAG's official scripts leave them)",
      )
        .choices(['files', 'wandb'])
        .default('files'),
    )
    .option('--force', 'write into a folder that already holds files')
    .action(
      async (
        out: string,
        opts: { scenario: SimScenarioName; seed: string; speed: string; rounds: string; logger: SimLogger; force?: boolean },
      ) => {
        const seed = Number(opts.seed);
        const rounds = Number(opts.rounds);
        const speed = opts.speed === 'max' ? null : Number(opts.speed);
        if (!Number.isInteger(seed)) fail(`--seed must be an integer, not ${opts.seed}`);
        if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) fail(`--rounds must be an integer from 1 to 100, not ${opts.rounds}`);
        if (speed !== null && !(speed > 0)) fail(`--speed must be a positive number of steps per second or 'max', not ${opts.speed}`);
        const dir = path.resolve(out);
        const present = existsSync(dir) ? readdirSync(dir) : [];
        if (present.length > 0 && opts.force !== true) {
          fail(
            `${dir} already holds ${present.length} entr${present.length === 1 ? 'y' : 'ies'}: a second run would be appended to the same logs; choose an empty folder, or add --force`,
          );
        }
        const t0 = Date.now();
        const { simulate } = await import('../sim/simulate.js');
        await simulate(dir, { scenario: opts.scenario, seed, rounds, speed, logger: opts.logger });
        const s = SIM_SCENARIOS[opts.scenario];
        process.stdout.write(
          `wrote ${rounds} round(s) of scenario ${opts.scenario} (${s.change})${opts.logger === 'wandb' ? ' as W&B run files in the official layout' : ''} to ${dir} in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
        );
        process.stdout.write(
          `expected findings: ${s.expected.join(', ') || 'none'}; check with: ${invokedAs()} analyze ${JSON.stringify(dir)}\n`,
        );
      },
    );
}
