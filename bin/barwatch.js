#!/usr/bin/env node
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

// A checkout runs from its build (npm run build); an installed package carries it.
const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('barwatch: not built yet (no dist/): run `npm run build` in this checkout first\n');
  process.exit(2);
}
const { main } = await import(cli.href);
await main(process.argv);
