#!/usr/bin/env node
// A checkout runs from its build (npm run build); an installed package carries it. The build
// compiles src/ to dist/src/ and bundles that into dist/bundle/barwatch.cjs with V8's code cache
// beside it (scripts/bundle.ts): two files to read instead of ~300 modules to resolve and
// compile (start-up, issue 32). The bundle is used only when it is as new as the compiled
// modules in a checkout, so a `tsc` alone after an edit is never shadowed by an older bundle;
// an installed package has no sources to edit, and npm gives its files the time they were
// unpacked (in the tarball's order), so there the bundle is always used. This file is CommonJS
// (bin/package.json): an ES module entry costs Node another ~10 ms before it runs.
'use strict';
const { existsSync, readFileSync, statSync, writeFileSync } = require('node:fs');
const Module = require('node:module');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { Script } = require('node:vm');

const cli = path.join(__dirname, '..', 'dist', 'src', 'cli.js');
const bundle = path.join(__dirname, '..', 'dist', 'bundle', 'barwatch.cjs');
const checkout = existsSync(path.join(__dirname, '..', 'src', 'cli.ts'));

/** The bundle's exports, compiled with its code cache when V8 accepts it (the same Node version). */
function loadBundle() {
  const cacheFile = `${bundle}.cache`;
  const cachedData = existsSync(cacheFile) ? readFileSync(cacheFile) : undefined;
  // ASCII only (scripts/bundle.ts refuses anything else), so read as Latin-1: the same string
  // without a UTF-8 decoding pass, about 4 ms less at every start.
  const script = new Script(Module.wrap(readFileSync(bundle, 'latin1')), { filename: bundle, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, Module.createRequire(bundle), module, bundle, path.dirname(bundle));
  const cache = cachedData === undefined ? 'no code cache' : script.cachedDataRejected ? 'code cache refused' : 'code cache used';
  tell(`started from ${bundle} (${cache})`);
  // The build writes the cache after a run, so it holds the functions that run compiled (at
  // 'exit': analyze ends by process.exit, which skips 'beforeExit').
  if (process.env.BARWATCH_CODE_CACHE === 'write') process.once('exit', () => writeFileSync(cacheFile, script.createCachedData()));
  return module.exports;
}

/** BARWATCH_START_INFO=1: what the command started from, on stderr (the build and the tests check it). */
function tell(what) {
  if (process.env.BARWATCH_START_INFO === '1') process.stderr.write(`barwatch: ${what}\n`);
}

async function start() {
  if (!existsSync(cli)) {
    process.stderr.write('barwatch: not built yet (no dist/): run `npm run build` in this checkout first\n');
    process.exit(2);
  }
  const fresh = existsSync(bundle) && (!checkout || statSync(bundle).mtimeMs >= statSync(cli).mtimeMs);
  if (!fresh) tell(`started from ${cli} (${existsSync(bundle) ? 'the bundle is older' : 'no bundle'})`);
  const { main } = fresh ? loadBundle() : await import(pathToFileURL(cli).href);
  await main(process.argv);
}

void start();
