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
  const script = new Script(Module.wrap(readFileSync(bundle, 'utf8')), { filename: bundle, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, Module.createRequire(bundle), module, bundle, path.dirname(bundle));
  const cache = cachedData === undefined ? 'no code cache' : script.cachedDataRejected ? 'code cache refused' : 'code cache used';
  tell(`started from ${bundle} (${cache})`);
  // The build writes the cache after a run, so it holds the functions that run compiled.
  if (process.env.BARWATCH_CODE_CACHE === 'write') process.once('beforeExit', () => writeFileSync(cacheFile, script.createCachedData()));
  return module.exports;
}

/** BARWATCH_START_INFO=1: what the command started from, on stderr (the build and the tests check it). */
function tell(what) {
  if (process.env.BARWATCH_START_INFO === '1') process.stderr.write(`barwatch: ${what}\n`);
}

/**
 * Freed memory kept for reuse in a one-shot pass (`analyze`, `compare`). glibc hands freed heap
 * back to the kernel once more than its trim threshold is free at the top (128 KiB at first) and
 * serves blocks past its mmap threshold from fresh mappings; every page given back is faulted in
 * again at its next use (`analyze` of a 30,000-row W&B file: 36,000-40,000 page faults, about
 * 10 µs each on the machines we measure). Freeing one mapped block raises both thresholds to its
 * size (glibc's dynamic threshold, at most 32 MiB; the trim threshold to twice that), as
 * MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ would, which glibc reads only before a process
 * starts. The block is never touched (a fresh mapping is zero: calloc does not write it) and is
 * freed at the first collection. Made here, before the bundle loads: V8 counts it against its
 * external memory and collects early, which costs nothing on the small heap of this moment and
 * 15-20 ms once the bundle is in (BENCHMARKS.md, session 30). Other allocators ignore it. Not for
 * the daemon: it would keep up to 62 MiB of freed heap for its life.
 */
function keepFreedMemory() {
  const command = process.argv[2];
  // Just under 32 MiB: a larger block leaves the thresholds where they are.
  if (command === 'analyze' || command === 'compare') void new ArrayBuffer(31 * 1024 * 1024);
}

async function start() {
  keepFreedMemory();
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
