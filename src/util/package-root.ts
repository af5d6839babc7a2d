/**
 * The folder barwatch is installed in (where package.json, web/ and bin/ are), found from this
 * module's own place: the compiled modules (dist/src/...) and the bundle (dist/bundle/) sit at
 * different depths below it, so a fixed `../..` would be right for only one of them.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function find(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`barwatch: no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

export const PACKAGE_ROOT = find();
