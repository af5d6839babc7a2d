/** argv -> commands (commander). Thin: each command in commands/ builds what it needs and sets the exit code. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { registerAnalyze } from './commands/analyze.js';
import { registerCompare } from './commands/compare.js';
import { EXIT } from './commands/common.js';
import { registerDemo } from './commands/demo.js';
import { registerSilence } from './commands/silence.js';
import { registerSimulate } from './commands/simulate.js';
import { registerSummary } from './commands/summary.js';
import { registerTestAlert } from './commands/test-alert.js';
import { registerValidate } from './commands/validate.js';
import { registerWatch } from './commands/watch.js';
import { PACKAGE_ROOT } from './util/package-root.js';

export { EXIT };

/** The version in package.json, which ships beside dist/ in the package. */
export const VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

export function buildProgram(): Command {
  const program = new Command('barwatch')
    .description('Watchdog for alternating RL training runs (BAR-RAG): tails reward logs, detects failure modes, alerts.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  for (const register of [
    registerWatch,
    registerAnalyze,
    registerCompare,
    registerValidate,
    registerSilence,
    registerTestAlert,
    registerSummary,
    registerSimulate,
    registerDemo,
  ]) {
    register(program);
  }
  return program;
}
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help')
        process.exit(EXIT.ok);
      process.exit(EXIT.usage);
    }
    process.stderr.write(`barwatch: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(EXIT.usage);
  }
}
