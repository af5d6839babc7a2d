/** `barwatch analyze`: one pass over finished or running output with the daemon's read path. */
import { Option, type Command } from 'commander';
import { analyzePaths, InputError } from '../pipeline/analyze.js';
import { analyzeDocument } from '../report/json.js';
import { renderText } from '../report/text.js';
import { createLogger, silentLogger } from '../util/log.js';
import { configOrExit, EXIT, fail } from './common.js';

export function registerAnalyze(program: Command): void {
  program
    .command('analyze')
    .description('one pass over finished or running output, then exit (0 healthy, 1 findings, 2 usage/input error)')
    .argument('<paths...>', 'run folders, roots of many runs, or single log files')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('-v, --verbose', 'log what is read to stderr')
    .option('--strict', 'exit 3 when part of the input could not be read (listed in the report)')
    .action(async (paths: string[], opts: { config?: string; format: 'text' | 'json'; verbose?: boolean; strict?: boolean }) => {
      const config = configOrExit(opts.config);
      const log = opts.verbose === true ? createLogger({ ...config.log, level: 'debug' }) : createLogger({ ...config.log, level: 'warn' });
      let result;
      try {
        result = await analyzePaths(paths, config, opts.verbose === true ? log : silentLogger());
      } catch (err) {
        if (err instanceof InputError) fail(err.message);
        throw err;
      }
      if (opts.format === 'json') {
        process.stdout.write(
          JSON.stringify(analyzeDocument(result.runs, result.filesByRun, result.findings, result.notRead), null, 2) + '\n',
        );
      } else {
        process.stdout.write(renderText(result.runs, result.filesByRun, result.findings, result.notRead));
      }
      const bad = result.findings.some((f) => f.severity === 'warning' || f.severity === 'critical');
      process.exitCode = opts.strict === true && result.notRead.length > 0 ? EXIT.partial : bad ? EXIT.findings : EXIT.ok;
    });
}
