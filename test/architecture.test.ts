/**
 * The folders of src/ and what each may import, as the README's Architecture section states
 * them: no folder imports beyond its list, and no two folders import each other.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { REPO } from './helpers/fs.js';
import { folderCycles, folderGraph } from './helpers/source-graph.js';

const SRC = path.join(REPO, 'src');

/** Folder -> the folders it may import, from the README's list (`cli.ts` stands for the top of src/). */
function documented(): Map<string, Set<string>> {
  const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  const section = /^## Architecture\n([\s\S]*?)^## /m.exec(readme)?.[1];
  assert.ok(section !== undefined, 'README.md has an Architecture section');
  const folders = [...section.matchAll(/^- `([\w.-]+)\/?`:/gm)].map((m) => m[1]!);
  const allowed = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const m = /^- `([\w.-]+?)\/?`: (.*)$/.exec(line);
    if (m === null) continue;
    const name = m[1] === 'cli.ts' ? '.' : m[1]!;
    const may = /May import (.*)$/.exec(m[2]!)?.[1] ?? '';
    const every = /every folder above/.test(may);
    const listed = every ? folders.slice(0, folders.indexOf(m[1]!)) : [...may.matchAll(/`([\w-]+)\/`/g)].map((x) => x[1]!);
    allowed.set(name, new Set(listed));
  }
  return allowed;
}

test('every folder of src/ imports only what the README says it may, and there is no cycle', () => {
  const allowed = documented();
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  assert.deepEqual(
    folders.filter((f) => !allowed.has(f)),
    [],
    'folders of src/ missing from the README Architecture list',
  );
  const graph = folderGraph(SRC);
  const beyond: string[] = [];
  for (const [from, edges] of graph) {
    for (const [to, why] of edges) if (!(allowed.get(from)?.has(to) ?? false)) beyond.push(`${from} -> ${to}: ${why.join(', ')}`);
  }
  assert.deepEqual(beyond, [], 'imports the README does not allow');
  assert.deepEqual(folderCycles(graph), []);
});

test('the cycle finder finds a cycle', () => {
  const g = new Map([
    ['a', new Map([['b', ['a.ts -> b.ts']]])],
    ['b', new Map([['a', ['b.ts -> a.ts']]])],
  ]);
  assert.deepEqual(folderCycles(g), [['a', 'b', 'a']]);
});
