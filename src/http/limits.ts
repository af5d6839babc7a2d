/**
 * How many connections the HTTP server takes, from the process's descriptor limit: the page, its
 * event streams and /healthz must never take the descriptors the daemon needs to read logs and
 * watch folders (idle event streams under a 600-descriptor limit made /healthz and new runs fail).
 */
import { readFileSync } from 'node:fs';

/** Assumed when /proc does not say (not Linux). */
const DEFAULT_DESCRIPTORS = 1024;

/** The soft limit on open files (`Max open files` in /proc/self/limits), or the default. */
export function descriptorLimit(limits = '/proc/self/limits'): number {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync(limits, 'utf8'));
    if (m === null) return DEFAULT_DESCRIPTORS;
    return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
  } catch {
    return DEFAULT_DESCRIPTORS;
  }
}

export interface ConnectionCaps {
  /** Connections the server accepts at once (more are closed as they come). */
  connections: number;
  /** Event streams at once (more are answered 503): half of the connections, so /healthz keeps room. */
  streams: number;
}

/** A quarter of the descriptors for HTTP (between 16 and 1,024), half of that for event streams. */
export function connectionCaps(descriptors = descriptorLimit()): ConnectionCaps {
  const connections = Math.max(16, Math.min(1024, Math.floor(descriptors / 4)));
  return { connections, streams: Math.floor(connections / 2) };
}
