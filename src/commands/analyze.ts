/** `barwatch analyze`: one pass over finished or running output with the daemon's read path. */
import { Option, type Command } from 'commander';
import { analyzePaths, InputError } from '../pipeline/analyze.js';
import { analyzeDocument } from '../report/json.js';
import { renderText } from '../report/text.js';
import { colours, createLogger, silentLogger } from '../util/log.js';
import { ProgressLine } from '../util/progress.js';
import { EXIT, exitWhenWritten, fail } from './common.js';
import { setup } from './setup.js';

export function registerAnalyze(program: Command): void {
  program
    .command('analyze')
    .description('one pass over finished or running output, then exit (0 healthy, 1 findings, 2 usage/input error)')
    .argument('<paths...>', 'run folders, roots of many runs, or single log files')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('-q, --quiet', 'findings only (runs without findings left out)')
    .option('-v, --verbose', 'every key series of every round, and log what is read to stderr')
    .option('--no-color', 'no colours on a terminal (NO_COLOR=1 does the same)')
    .option('--strict', 'exit 3 when part of the input could not be read (listed in the report)')
    .action(
      async (
        paths: string[],
        opts: { config?: string; format: 'text' | 'json'; quiet?: boolean; verbose?: boolean; strict?: boolean; color: boolean },
      ) => {
        if (!opts.color) process.env['NO_COLOR'] = '1';
        const where = setup(opts);
        const config = where.config;
        // A config found by barwatch changes what analyze reads and judges: say which.
        if (where.configFile !== null && opts.config === undefined) process.stderr.write(`barwatch: config ${where.configFile}\n`);
        // Only --verbose logs; without it nothing is written, and no logger is built.
        const log = opts.verbose === true ? createLogger({ ...config.log, level: 'debug' }) : silentLogger();
        let result;
        try {
          // With --verbose the log says what is read, line by line: no progress line between.
          const progress = new ProgressLine(opts.verbose === true ? null : process.stderr);
          try {
            result = await analyzePaths(paths, config, log, Date.now, (done, total) =>
              progress.update(`reading: ${done} of ${total} file(s)`),
            );
          } finally {
            progress.clear();
          }
        } catch (err) {
          if (err instanceof InputError) fail(err.message);
          throw err;
        }
        if (opts.format === 'json') {
          process.stdout.write(
            JSON.stringify(analyzeDocument(result.runs, result.filesByRun, result.findings, result.notRead), null, 2) + '\n',
          );
        } else {
          const detail = opts.quiet === true ? 'quiet' : opts.verbose === true ? 'verbose' : 'normal';
          process.stdout.write(
            renderText(result.runs, result.filesByRun, result.findings, result.notRead, { detail, color: colours(process.stdout) }),
          );
        }
        const bad = result.findings.some((f) => f.severity === 'warning' || f.severity === 'critical');
        exitWhenWritten(opts.strict === true && result.notRead.length > 0 ? EXIT.partial : bad ? EXIT.findings : EXIT.ok);
      },
    );
}
