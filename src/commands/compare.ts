/**
 * `barwatch compare BEFORE AFTER`: did a fix work? Exit 0 improved, 1 not improved, 2 usage or
 * input error. BEFORE and AFTER are run folders; by default each run's last complete selector
 * round is compared, `--before-round N` / `--after-round N` pick others (the same run may be
 * given twice to compare two of its rounds).
 */
import { Option, type Command } from 'commander';
import { analyzePaths, InputError } from '../pipeline/analyze.js';
import { compare, targetsOf, type Comparison, type Criterion } from '../pipeline/compare.js';
import { silentLogger } from '../util/log.js';
import { EXIT, exitWhenWritten, fail } from './common.js';
import { setup } from './setup.js';
import type { Config } from '../config/load.js';

function num(x: number | boolean | null): string {
  if (x === null) return '-';
  if (typeof x === 'boolean') return x ? 'yes' : 'no';
  if (Number.isInteger(x)) return String(x);
  return Math.abs(x) < 1e-3 && x !== 0 ? x.toExponential(2) : x.toFixed(3);
}

const MARK: Record<Criterion['outcome'], string> = { better: 'better', held: 'held', worse: 'WORSE', unknown: '?' };

export function renderComparison(c: Comparison): string {
  const lines = [
    `before: ${c.before.run}, selector round ${c.before.round ?? '-'} (${c.before.chosen}, ${c.before.steps} steps)`,
    `after:  ${c.after.run}, selector round ${c.after.round ?? '-'} (${c.after.chosen}, ${c.after.steps} steps)`,
    '',
  ];
  const w = Math.max(...c.criteria.map((x) => x.name.length));
  for (const x of c.criteria) {
    const p = x.p === null ? '' : `, p=${x.p.toPrecision(2)}`;
    lines.push(
      `  ${x.name.padEnd(w)}  ${num(x.before).padStart(8)} -> ${num(x.after).padEnd(8)} ${MARK[x.outcome].padEnd(6)} (${x.test}${p})`,
    );
  }
  lines.push('');
  lines.push(c.verdict === 'improved' ? 'verdict: improved' : `verdict: not improved: ${c.worse.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

async function oneRun(path: string, config: Config) {
  const res = await analyzePaths([path], config, silentLogger());
  if (res.runs.length !== 1) fail(`${path} holds ${res.runs.length} runs; name one run folder`);
  return { run: res.runs[0]!, findings: res.findings };
}

function roundArg(v: string | undefined, name: string): number | null {
  if (v === undefined) return null;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) fail(`${name} must be a round number, not ${v}`);
  return n;
}

export function registerCompare(program: Command): void {
  program
    .command('compare')
    .description('compare two runs (or two rounds) on the guide criteria: exit 0 improved, 1 not improved, 2 usage/input error')
    .argument('<before>', 'run folder before the fix')
    .argument('<after>', 'run folder after the fix (may be the same folder, with --before-round and --after-round)')
    .option('--before-round <n>', 'selector round of BEFORE (default: its last complete one)')
    .option('--after-round <n>', 'selector round of AFTER (default: its last complete one)')
    .option('-c, --config <file>', 'configuration file (YAML)')
    .addOption(new Option('-f, --format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(
      async (
        before: string,
        after: string,
        opts: { beforeRound?: string; afterRound?: string; config?: string; format: 'text' | 'json' },
      ) => {
        const where = setup(opts);
        const config = where.config;
        if (where.configFile !== null && opts.config === undefined) process.stderr.write(`barwatch: config ${where.configFile}\n`);
        const br = roundArg(opts.beforeRound, '--before-round');
        const ar = roundArg(opts.afterRound, '--after-round');
        let b, a;
        try {
          b = await oneRun(before, config);
          a = await oneRun(after, config);
        } catch (err) {
          if (err instanceof InputError) fail(err.message);
          throw err;
        }
        const c = compare({ ...b, round: br }, { ...a, round: ar }, targetsOf(config.detectors));
        if (typeof c === 'string') fail(c);
        process.stdout.write(opts.format === 'json' ? JSON.stringify({ version: 1, ...c }, null, 2) + '\n' : renderComparison(c));
        exitWhenWritten(c.verdict === 'improved' ? EXIT.ok : EXIT.findings);
      },
    );
}
