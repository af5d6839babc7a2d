/**
 * A detector's parameters are declared once, by their defaults in the detector's own file: the
 * type of each default is the parameter's type (a default that reads as a duration, such as
 * '10m', makes a duration), `enabled` and `severity` are every detector's. The config schema's
 * `detectors` section is built from these (config/schema.ts), so nothing repeats the list.
 */
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';
import type { Detector, Params } from './types.js';

export const DURATION_MESSAGE = 'must be a duration such as 500ms, 10s, 5m or 4h';

/** Node's timers hold at most 2^31-1 ms (about 24.8 days); a longer one fires after 1 ms. */
export const MAX_TIMER = '24d';

/**
 * A duration as the config writes it (`500ms`, `10s`, `5m`, `4h`, `1d`, `1h30m`), between `min`
 * and `max` (both written as durations, said in the message when one is out of range).
 */
export function boundedDuration(min = '0s', max = MAX_TIMER): z.ZodType<string> {
  const lo = parseDuration(min)!;
  const hi = parseDuration(max)!;
  return z
    .custom<string>((v) => typeof v === 'string' && parseDuration(v) !== null, { message: DURATION_MESSAGE })
    .superRefine((v, ctx) => {
      const ms = parseDuration(v)!;
      if (ms < lo || ms > hi) ctx.addIssue({ code: 'custom', message: `must be from ${min} to ${max}` });
    });
}

/** A whole number from `min` to `max`; a value outside is refused with the range named. */
export function boundedInt(min: number, max: number): z.ZodNumber {
  const message = `must be from ${min} to ${max}`;
  return z.number().int().min(min, { message }).max(max, { message });
}

/** A detector parameter that counts steps, points, windows or segments: a whole number from 1. */
const COUNT_PARAM =
  /^(window|windows|segments|horizon|min_period|max_period|min_points|min_steps|min_intervals|min_k|min_questions|early_points|count|min_after|before_points|points)$/;
const MAX_COUNT = 1_000_000;

/** Any duration a timer can hold. */
export const durationSchema = boundedDuration();

function paramSchema(key: string, def: unknown): z.ZodType {
  if (typeof def === 'boolean') return z.boolean();
  if (typeof def === 'number' && COUNT_PARAM.test(key)) return boundedInt(1, MAX_COUNT);
  if (typeof def === 'number' && key === 'alpha')
    return z.number().refine((v) => v > 0 && v < 1, { message: 'must be between 0 and 1 (a significance level such as 0.01)' });
  if (typeof def === 'number')
    return z.number().refine((v) => v >= 0 && v <= 1e9, { message: 'must be from 0 to 1000000000 (not negative)' });
  if (typeof def === 'string' && parseDuration(def) !== null) return durationSchema;
  return z.string();
}

/** The schema of `detectors.<id>`: every parameter optional (its default applies), no unknown one. */
export function detectorSchema(d: Detector<Params>): z.ZodType {
  const shape: Record<string, z.ZodType> = {};
  for (const [k, def] of Object.entries(d.defaults)) {
    shape[k] = k === 'severity' ? z.enum(['info', 'warning', 'critical']).optional() : paramSchema(k, def).optional();
  }
  return z.strictObject(shape);
}
