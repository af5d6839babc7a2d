/**
 * `node dist/scripts/bundle.js` (the last step of `npm run build`): dist/src/ bundled by esbuild into one
 * file, dist/bundle/barwatch.cjs, and V8's code cache for it, dist/bundle/barwatch.cjs.cache
 * (issue 32: start-up). A command then reads two files instead of resolving and compiling ~300
 * modules, and the functions a run of `analyze` compiled come from the cache, not the compiler.
 * bin/barwatch.js uses them when they are as new as dist/src/; V8 refuses a cache made by another
 * Node version, and the bundle is then compiled as usual.
 *
 * Left out of the bundle: @resvg/resvg-js (a native addon) and the packages src/util/lazy.ts
 * requires on first use. `--meta` prints what the bundle holds.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { analyzeMetafile, build, type Plugin } from 'esbuild';
import { exitRecord, historyRecord, runRecord, WandbWriter } from '../src/sim/wandb-writer.js';

// This file runs as dist/scripts/bundle.js.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const outdir = path.join(root, 'dist', 'bundle');
const outfile = path.join(outdir, 'barwatch.cjs');
/** The decode thread's module beside it (CommonJS: see sources/decode-ahead.ts). */
const WORKER = 'decode-worker.cjs';

/**
 * zod re-exports its ~50 locales as one namespace, which keeps all of them (350 KB) in the bundle;
 * barwatch's config messages are English (zod's classic API loads `en` itself), so the namespace
 * holds `en` alone.
 */
const englishOnly: Plugin = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, () => ({
      contents: "export { default as en } from './en.js';\n",
      loader: 'js',
    }));
  },
};

/**
 * commander requires node:child_process when it loads, for subcommands that are programs of their
 * own (barwatch has none); loading it costs ~8 ms of every start (it brings node:net and
 * node:stream with it). In the bundle, commander's three spawn() calls load it when one is made.
 */
const commanderSpawnsLazily: Plugin = {
  name: 'commander-spawns-lazily',
  setup(b) {
    b.onLoad({ filter: /[\\/]commander[\\/]lib[\\/]command\.js$/ }, (args) => {
      const eager = "const childProcess = require('node:child_process');";
      const text = readFileSync(args.path, 'utf8');
      // Another commander: stop the build rather than guess at its code.
      if (!text.includes(eager) || /childProcess\.(?!spawn\()/.test(text))
        throw new Error(`bundle: ${args.path} no longer loads child_process as expected`);
      return {
        contents: text.replace(eager, "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };"),
        loader: 'js',
      };
    });
  },
};

/** import.meta.url (package-root.ts, lazy.ts) made a CommonJS file's own place. */
const OWN_URL = {
  banner: { js: "const __barwatchModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__barwatchModuleUrl' },
};

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  entryPoints: [path.join(root, 'dist', 'src', 'cli.js')],
  bundle: true,
  // CommonJS, because only a script (not an ES module) can be compiled with a code cache in Node 20.
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outfile,
  external: ['@resvg/resvg-js'],
  banner: OWN_URL.banner,
  define: { ...OWN_URL.define, __barwatchDecodeWorker: JSON.stringify(`./${WORKER}`) },
  plugins: [englishOnly, commanderSpawnsLazily],
  // Without comments and indentation (a third smaller: less to read, hash and scan at each
  // start, and ASCII only, so V8 holds the source in one byte a character), with a source map
  // beside it for readable stack traces (node --enable-source-maps).
  minifyWhitespace: true,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
});
if (readFileSync(outfile).some((b) => b > 0x7f)) throw new Error('bundle: barwatch.cjs holds a character past ASCII');
if (process.argv.includes('--meta')) console.log(await analyzeMetafile(result.metafile));
// The decode thread's module, beside the bundle as dist/src/sources/decode-worker.js is beside
// decode-ahead.js (a worker starts from a file of its own). CommonJS, as the bundle is, with
// import.meta.url made its own place the same way.
await build({
  entryPoints: [path.join(root, 'dist', 'src', 'sources', 'decode-worker.js')],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outfile: path.join(outdir, WORKER),
  external: ['@resvg/resvg-js'],
  ...OWN_URL,
  plugins: [englishOnly],
  minifyWhitespace: true,
  sourcemap: 'linked',
  logLevel: 'warning',
});

/** verl's metric names for the warm-up's W&B run (a GRPO run's usual step). */
const VERL_KEYS = [
  'critic/score/mean',
  'critic/rewards/mean',
  'actor/entropy',
  'actor/kl_loss',
  'actor/ppo_kl',
  'actor/pg_clipfrac',
  'actor/grad_norm',
  'response_length/mean',
  'response_length/clip_ratio',
  'val-core/gsm8k/reward/mean@1',
];

// The cache is written after one `analyze` of two small runs (a selector's reward history and a
// verl run's W&B file), so it holds what analyze compiles for either.
const tmp = mkdtempSync(path.join(tmpdir(), 'barwatch-bundle-'));
try {
  const file = path.join(tmp, 'run', 'outputs', 'selector_round1', 'reward_history.jsonl');
  mkdirSync(path.dirname(file), { recursive: true });
  let lines = '';
  for (let step = 1; step <= 60; step++) {
    const b = 0.5 + 0.2 * Math.sin(step * 0.37);
    lines += `${JSON.stringify({ step, boundary: b, relevance: 0.3, format: 1, count: -0.5, total: b, accuracy: 0.47, boundary_share: 0.3, rollouts: 8 })}\n`;
  }
  writeFileSync(file, lines);
  // And a verl run as W&B writes it (the run file, and what the GRPO health detectors read), so
  // that reader's and those detectors' functions are in the cache too.
  const w = new WandbWriter(path.join(tmp, 'run', 'wandb', 'run-20260101_000000-warmup', 'run-warmup.wandb'));
  w.append(
    runRecord({
      project: 'verl-grpo',
      name: 'warmup',
      id: 'warmup',
      start: 1_790_000_000_000,
      config: { actor_rollout_ref: { rollout: { n: 8 } } },
    }),
  );
  for (let step = 1; step <= 60; step++) {
    const values: Record<string, number> = {};
    VERL_KEYS.forEach((k, i) => (values[k] = 1 + Math.sin(step * 0.37 + i)));
    w.append(historyRecord(step, values, 1_790_000_000 + step * 10));
  }
  w.append(exitRecord(0));
  w.finish();
  const out = spawnSync(process.execPath, [path.join(root, 'bin', 'barwatch.js'), 'analyze', path.join(tmp, 'run')], {
    env: { ...process.env, BARWATCH_CODE_CACHE: 'write' },
    encoding: 'utf8',
  });
  // Exit 1: findings (the W&B run's sinusoids make some), which warms the report's code too.
  if ((out.status !== 0 && out.status !== 1) || !existsSync(`${outfile}.cache`))
    throw new Error(`bundle: analyze of the warm-up run failed (exit ${out.status}):\n${out.stderr}${out.stdout}`);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
