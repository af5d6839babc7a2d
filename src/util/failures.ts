/**
 * "Log a failure once until it changes": a failing thing is reported when it starts failing and
 * when its cause changes, and its recovery once; retries in between stay quiet (STYLE: explain
 * every send and skip, but do not repeat a failure on every retry).
 */
export class FailureReport<K = string> {
  private readonly causes = new Map<K, string>();

  /** `key` fails with `cause`. True when that is news: it was working, or failed for another cause. */
  failed(key: K, cause: string): boolean {
    if (this.causes.get(key) === cause) return false;
    this.causes.set(key, cause);
    return true;
  }

  /** `key` works. True when it had been failing (worth one line saying so). */
  recovered(key: K): boolean {
    return this.causes.delete(key);
  }

  /** The cause `key` fails with now, or null. */
  cause(key: K): string | null {
    return this.causes.get(key) ?? null;
  }

  /** Everything failing now, with its cause. */
  get failing(): ReadonlyMap<K, string> {
    return this.causes;
  }
}
