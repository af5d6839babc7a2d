/**
 * GET, POST and DELETE /api/v1/silences: the same store as `barwatch silence`, so the command
 * line and the page agree. A POST takes {run, detector?, duration, comment?}; DELETE expires one.
 */
import { DETECTOR_IDS } from '../detectors/index.js';
import { MAX_GLOB } from '../alerting/silences.js';
import { parseDuration } from '../util/duration.js';
import { readJson, RequestError, sendJson, type Route } from './server.js';
import type { WebSource } from './source.js';

/** Longest silence the page creates (a year): a typo should not silence a run for ever. */
const MAX_MS = 365 * 86_400_000;

function field(body: Record<string, unknown>, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new RequestError(400, `${key} must be a string`);
  return v;
}

export function silenceRoutes(src: WebSource): Route[] {
  return [
    {
      method: 'GET',
      path: /^\/api\/v1\/silences$/,
      // The detector ids come along: the page offers them when a silence is made.
      handle: (_req, res) => sendJson(res, 200, { silences: src.silences().active(src.now()), detectors: DETECTOR_IDS }),
    },
    {
      method: 'POST',
      path: /^\/api\/v1\/silences$/,
      handle: async (req, res) => {
        const body = await readJson(req);
        if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new RequestError(400, 'send an object');
        const b = body as Record<string, unknown>;
        const run = field(b, 'run');
        if (run === undefined) throw new RequestError(400, 'run is required (a run path, or a glob over run paths)');
        if (run.length > MAX_GLOB) throw new RequestError(400, `run: at most ${MAX_GLOB} characters`);
        const detector = field(b, 'detector') ?? '*';
        if (detector !== '*' && !DETECTOR_IDS.includes(detector)) throw new RequestError(400, `unknown detector ${detector}`);
        const duration = field(b, 'duration') ?? '';
        const ms = parseDuration(duration);
        if (ms === null || ms <= 0 || ms > MAX_MS) throw new RequestError(400, 'duration must be like 30m, 2h or 1d, at most 365d');
        const now = src.now();
        const comment = (field(b, 'comment') ?? '').slice(0, 500);
        const s = await src.silences().add({ run, detector, endsAt: new Date(now + ms).toISOString(), comment }, now);
        src.silencesChanged();
        sendJson(res, 201, { silence: s });
      },
    },
    {
      method: 'DELETE',
      path: /^\/api\/v1\/silences\/([\w-]+)$/,
      handle: async (_req, res, [id]) => {
        if (!(await src.silences().remove(id!))) throw new RequestError(404, `no silence ${id}`);
        src.silencesChanged();
        sendJson(res, 200, { removed: id });
      },
    },
  ];
}
