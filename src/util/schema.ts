/**
 * Building blocks of the config schema that are not about any one part: durations and whole
 * numbers within bounds, addresses a channel can be reached at. The config, each channel's
 * settings and each detector's parameters are made of these.
 */
import { z } from 'zod';
import { parseDuration } from './duration.js';

// Without zod's compiled parsers: zod makes one with `new Function` for each object schema at its
// first parse (and probes `new Function` once to see whether it may), but barwatch parses a config
// once a run, and code made that way is never in the bundle's code cache (issue 32: start-up, ~10
// ms). Set before the schemas below are made, as zod reads it when each is made. Loading a saved
// state of 200 runs takes as long either way (525 ms).
z.config({ jitless: true });

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

/** Any duration a timer can hold. */
export const durationSchema = boundedDuration();

/** An address a channel can be reached at: http(s) with a host (`htp:/host` parses as a URL but reaches nothing). */
export const httpUrl = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
    } catch {
      return false;
    }
  },
  { message: 'must be an http:// or https:// URL with a host' },
);
export const emailAddress = z.string().regex(/^[^\s@<>,;]+@[^\s@<>,;]+$/, { message: 'must be an email address such as name@example.org' });
