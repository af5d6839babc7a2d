/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing
 * bench/results/<name>.json. `npm run bench -- --quick`: each at a small size, about 100 s in
 * all (a look, not a result). One benchmark: node dist/bench/<name>.js [--quick]. Not here:
 * bench/scale.ts (2,000 runs) and bench/steady.ts (10 minutes), reported in BENCHMARKS.md.
 */
const t0 = Date.now();
for (const name of ['startup', 'ingest', 'follow', 'latency', 'idle', 'memory', 'heap', 'web', 'tfevents', 'wandb']) {
  const t = Date.now();
  const m = (await import(`./${name}.js`)) as { main: () => Promise<void> | void };
  await m.main();
  console.log(`(${name}: ${((Date.now() - t) / 1000).toFixed(0)} s)\n`);
}
console.log(`all benchmarks: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
