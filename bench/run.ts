/**
 * `npm run bench`: every benchmark in turn, each printing its table and writing
 * bench/results/<name>.json (about 9.5 minutes on the slow 2-core machine of 2026-12-01). One benchmark: node dist/bench/<name>.js
 */
const t0 = Date.now();
for (const name of ['ingest', 'latency', 'idle', 'memory', 'heap', 'web', 'tfevents']) {
  const t = Date.now();
  const m = (await import(`./${name}.js`)) as { main: () => Promise<void> };
  await m.main();
  console.log(`(${name}: ${((Date.now() - t) / 1000).toFixed(0)} s)\n`);
}
console.log(`all benchmarks: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
