/** Temp folders and paths shared by the tests. */
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = path.join(REPO, 'bin', 'barwatch.js');
/** `../shared/real-logs/` beside the repository; tests that need it skip when it is absent. */
export const REAL_LOGS = path.resolve(REPO, '..', 'shared', 'real-logs');
export const HAVE_REAL_LOGS = existsSync(REAL_LOGS);
export const REAL_LOGS_SKIP = HAVE_REAL_LOGS ? false : `real logs not found at ${REAL_LOGS}`;

/** A fresh temp folder, removed when the test file ends. */
export function tempDir(prefix = 'barwatch-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
