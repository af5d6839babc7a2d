/**
 * verl's file logger (`trainer.logger=['file']`): `{"step": N, "data": {"critic/score/mean": ...}}`.
 * The file is opened with "wb", so a restarted run truncates it to zero; the tailer handles that.
 * Once unwrapped, a record reads like reward_history.jsonl, so reward-history.ts does the rest.
 */

/** The record under `data`, with the outer `step` carried in; null when the record is not wrapped. */
export function unwrapVerlRecord(rec: Record<string, unknown>): Record<string, unknown> | null {
  const data = rec['data'];
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return null;
  const inner = data as Record<string, unknown>;
  return { ...inner, step: rec['step'] ?? inner['step'] ?? inner['training/global_step'] };
}
