/**
 * Numbers a reviewer asks about the tree: files over 300 lines, the longest functions, and import
 * cycles between the folders of src/. `node dist/scripts/code-metrics.js` from the repository.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { folderCycles, folderGraph, tsFiles } from '../test/helpers/source-graph.js';

const root = process.cwd();
const files = ['src', 'test', 'bench', 'scripts'].flatMap((d) => tsFiles(path.join(root, d)));

const long: [string, number][] = [];
const functions: { name: string; lines: number }[] = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const rel = path.relative(root, file);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > 300) long.push([rel, lines]);
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const named = node.name;
      const name =
        named !== undefined
          ? named.getText(sf)
          : ts.isArrowFunction(node) && ts.isVariableDeclaration(node.parent)
            ? node.parent.name.getText(sf)
            : '(anonymous)';
      // Test callbacks are whole scenarios, not functions a reader must hold in mind at once.
      if (!rel.startsWith('test/') || !ts.isCallExpression(node.parent))
        functions.push({ name: `${rel}:${start + 1} ${name}`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

long.sort((a, b) => b[1] - a[1]);
functions.sort((a, b) => b.lines - a.lines);
const cycles = folderCycles(folderGraph(path.join(root, 'src')));
process.stdout.write(`files over 300 lines: ${long.length}\n${long.map(([f, n]) => `  ${n} ${f}`).join('\n')}\n`);
process.stdout.write(
  `longest functions:\n${functions
    .slice(0, 8)
    .map((f) => `  ${f.lines} ${f.name}`)
    .join('\n')}\n`,
);
process.stdout.write(`import cycles between folders of src/: ${cycles.length}\n${cycles.map((c) => `  ${c.join(' -> ')}`).join('\n')}\n`);
