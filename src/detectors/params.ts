/**
 * A detector's parameters are declared once, by their defaults in the detector's own file: the
 * type of each default is the parameter's type (a default that reads as a duration, such as
 * '10m', makes a duration), `enabled` and `severity` are every detector's. The config schema's
 * `detectors` section is built from these (config/schema.ts), so nothing repeats the list.
 */
import { z } from 'zod';
import { parseDuration } from '../util/duration.js';
import { boundedInt, durationSchema } from '../util/schema.js';
import type { Detector, Params } from './types.js';

const MAX_COUNT = 1_000_000;

function paramSchema(key: string, def: unknown, count: boolean): z.ZodType {
  if (typeof def === 'boolean') return z.boolean();
  if (typeof def === 'number' && count) return boundedInt(1, MAX_COUNT);
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
    shape[k] =
      k === 'severity'
        ? z.enum(['info', 'warning', 'critical']).optional()
        : paramSchema(k, def, d.counts?.includes(k) === true).optional();
  }
  return z.strictObject(shape);
}
