/** A value after a trip through JSON, as a save and a restart see it. */
export function viaJson<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}
