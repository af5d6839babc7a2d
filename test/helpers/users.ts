/**
 * A second user for the permission tests. Running as root, the daemon under test runs as
 * `nobody` so that file permissions apply to it. That user must reach the built program: when
 * the checkout sits in a folder it cannot enter (a clone under /root, or any 0700 folder), the
 * program is copied once into a temporary folder it can read.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BIN, REPO } from './fs.js';

export interface User {
  name: string;
  uid: number;
  gid: number;
}

export const IS_ROOT = process.getuid?.() === 0;

function lookup(name: string): User | null {
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const f = line.split(':');
      if (f[0] === name && f.length >= 4) return { name, uid: Number(f[2]), gid: Number(f[3]) };
    }
  } catch {
    // No /etc/passwd: no second user to run as.
  }
  return null;
}

/** `nobody`, when this process is root and the user exists; null otherwise. */
export const NOBODY: User | null = IS_ROOT ? lookup('nobody') : null;

/** Why the tests that need a second user cannot run here, or false when they can. */
export const SECOND_USER_SKIP: string | false = !IS_ROOT
  ? false
  : NOBODY === null
    ? 'running as root and there is no user nobody in /etc/passwd to run the daemon as'
    : false;

let copied: string | null = null;

/** The `barwatch` program `user` can run: the checkout's, or a copy where the checkout is out of its reach. */
export function binFor(user: User | undefined): string {
  if (user === undefined) return BIN;
  const reach = spawnSync(process.execPath, ['-e', `require('fs').accessSync(${JSON.stringify(BIN)}, require('fs').constants.R_OK)`], {
    uid: user.uid,
    gid: user.gid,
  });
  if (reach.status === 0) return BIN;
  if (copied === null) {
    const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-program-'));
    chmodSync(dir, 0o755);
    // Hard links where the file system allows them (no copy of node_modules' bytes), else a copy.
    for (const part of ['bin', 'dist', 'node_modules', 'package.json']) {
      const from = path.join(REPO, part);
      const to = path.join(dir, part);
      try {
        const r = spawnSync('cp', ['-al', from, to]);
        if (r.status !== 0) throw new Error(String(r.stderr));
      } catch {
        cpSync(from, to, { recursive: true });
      }
    }
    // Kept for every test of this process (an `after` hook would remove it when the first test ends).
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    copied = dir;
  }
  return path.join(copied, 'bin', 'barwatch.js');
}
