/**
 * A writer process for the fault tests (child_process.fork): it does to files what trainers,
 * logrotate and operators do (append, cut a line short, copy and truncate, rename, delete, remove
 * folders, change permissions, make symlinks), one command at a time, answering each when done.
 * The test decides the order and waits for the daemon in between.
 */
import {
  appendFileSync,
  chmodSync,
  closeSync,
  copyFileSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type Op =
  | { op: 'append'; file: string; text: string }
  | { op: 'bytes'; file: string; base64: string }
  /** One line of `bytes` bytes, `{"pad": "xxx...` written in 1 MiB pieces, never held whole. */
  | { op: 'long-line'; file: string; bytes: number }
  | { op: 'copytruncate'; file: string }
  | { op: 'rename'; from: string; to: string }
  | { op: 'rm'; path: string }
  | { op: 'chmod'; path: string; mode: number }
  | { op: 'symlink'; target: string; path: string };

function apply(o: Op): void {
  switch (o.op) {
    case 'append':
      mkdirSync(path.dirname(o.file), { recursive: true });
      appendFileSync(o.file, o.text);
      return;
    case 'bytes':
      mkdirSync(path.dirname(o.file), { recursive: true });
      appendFileSync(o.file, Buffer.from(o.base64, 'base64'));
      return;
    case 'long-line': {
      const fd = openSync(o.file, 'a');
      const piece = Buffer.alloc(1 << 20, 'x');
      writeSync(fd, '{"pad": "');
      for (let left = o.bytes; left > 0; left -= piece.length) writeSync(fd, piece, 0, Math.min(left, piece.length));
      writeSync(fd, '"}\n');
      closeSync(fd);
      return;
    }
    case 'copytruncate':
      copyFileSync(o.file, `${o.file}.1`);
      truncateSync(o.file, 0);
      return;
    case 'rename':
      renameSync(o.from, o.to);
      return;
    case 'rm':
      rmSync(o.path, { recursive: true, force: true });
      return;
    case 'chmod':
      chmodSync(o.path, o.mode);
      return;
    case 'symlink':
      symlinkSync(o.target, o.path);
      return;
  }
}

/** The test's handle on the process. */
export class Actor {
  private readonly child: ChildProcess;
  private waiting: ((err: string | null) => void) | null = null;

  constructor() {
    this.child = fork(fileURLToPath(import.meta.url), ['--actor'], { stdio: 'inherit' });
    this.child.on('message', (m: { error: string | null }) => this.waiting?.(m.error));
  }

  do(o: Op): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiting = (err) => (err === null ? resolve() : reject(new Error(err)));
      this.child.send(o);
    });
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    if (this.child.connected) this.child.disconnect();
    else this.child.kill();
    await exited;
  }
}

if (process.argv[2] === '--actor') {
  process.on('message', (o: Op) => {
    try {
      apply(o);
      process.send!({ error: null });
    } catch (err) {
      process.send!({ error: (err as Error).message });
    }
  });
}
