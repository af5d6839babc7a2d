/**
 * The import graph of src/, read with TypeScript's own pre-processor (every static import,
 * `export ... from` and `import()`), for the architecture test and scripts/code-metrics.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Every .ts file below `dir`, as absolute paths. */
export function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out.sort();
}

/** The folder of `file` directly under `srcDir` (`state`, `detectors`), or `.` for a file at its top. */
export function topFolder(srcDir: string, file: string): string {
  const rel = path.relative(srcDir, file).split(path.sep);
  return rel.length === 1 ? '.' : rel[0]!;
}

/** The project files `file` imports (relative specifiers only, `.js` mapped back to `.ts`). */
export function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((s) => s.startsWith('.'))
    .map((s) => path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts')));
}

/** Folder -> the folders its files import (a file at the top of src/ counts as folder `.`). */
export function folderGraph(srcDir: string): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of tsFiles(srcDir)) {
    const from = topFolder(srcDir, file);
    const edges = graph.get(from) ?? new Map<string, string[]>();
    graph.set(from, edges);
    for (const imp of importsOf(file)) {
      const to = topFolder(srcDir, imp);
      if (to === from) continue;
      const why = edges.get(to) ?? [];
      why.push(`${path.relative(srcDir, file)} -> ${path.relative(srcDir, imp)}`);
      edges.set(to, why);
    }
  }
  return graph;
}

/** Every cycle between folders, each as a list of folders starting and ending at the same one. */
export function folderCycles(graph: Map<string, Map<string, string[]>>): string[][] {
  const cycles: string[][] = [];
  const seen = new Set<string>();
  const visit = (node: string, stack: string[]): void => {
    const at = stack.indexOf(node);
    if (at >= 0) {
      const cycle = [...stack.slice(at), node];
      const key = [...cycle.slice(0, -1)].sort().join(',');
      if (!seen.has(key)) {
        seen.add(key);
        cycles.push(cycle);
      }
      return;
    }
    for (const next of graph.get(node)?.keys() ?? []) visit(next, [...stack, node]);
  };
  for (const node of graph.keys()) visit(node, []);
  return cycles;
}
