/** What every benchmark shares: arguments, repetitions, medians, tables and the results folder. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BIN = path.join(REPO, 'bin', 'barwatch.js');

export function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

export interface Spread {
  median: number;
  min: number;
  max: number;
}

export function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)]!, min: s[0]!, max: s[s.length - 1]! };
}

/** The q-quantile (0..1) of xs, nearest rank. */
export function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function seconds(since: bigint): number {
  return Number(process.hrtime.bigint() - since) / 1e9;
}

/** Prints a markdown table and writes the numbers to bench/results/<name>.json. */
export function report(name: string, title: string, header: string[], rows: string[][], data: unknown): void {
  const lines = [title, `| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
  console.log(`${lines.join('\n')}\n`);
  const dir = path.join(REPO, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${name}.json`), JSON.stringify({ node: process.version, date: new Date().toISOString(), data }, null, 2));
}
