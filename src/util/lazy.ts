/**
 * A package loaded the first time it is used, not when barwatch starts: `analyze` of one file
 * should not pay for the SMTP client, the pretty printer or the CSV parser it never calls
 * (issue 32: each costs 10-50 ms of start-up). The packages named here are CommonJS, so the load
 * stays synchronous and the code that uses them does not change shape.
 */
import type * as Crypto from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** `load()` gives the package `id`, required on the first call; `T` is its type (`typeof import('id')`). */
export function lazy<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}

/**
 * node:crypto, loaded by the first hash, HMAC or random id: `analyze` of a run without a line
 * file needs none, and loading it costs ~5 ms of every start (issue 32).
 */
export const nodeCrypto = lazy<typeof Crypto>('node:crypto');
