/**
 * The shape of the read path's sections of the state file (ReadState), checked part by part when
 * a daemon or `summary` loads it: a part that does not fit (a run, a file's checkpoint, a finding)
 * is set aside with the reason, and the rest is used. A run set aside is rebuilt from its logs: the
 * checkpoints of its files go with it, so they are read again from the start (nothing is counted
 * twice, nothing is lost). Values are checked as far as a restore relies on them (types, offsets
 * and counts that are whole and not negative); what a restore passes through untouched is not.
 */
import { z } from 'zod';
import { FORMAT_IDS, type ParsedRecord } from '../parsers/types.js';
import { INPUT_IDS, type FileKind } from '../parsers/index.js';
import { CURVE_FIELDS, packedCount } from '../stats/rolling.js';

const EARLIER_NAMES = {
  tfevents: 'tensorboard',
  'selector-debug': 'barrag-selector-debug',
  'generator-debug': 'barrag-generator-debug',
} as const;
import type { SetAside, StateEnvelope } from '../state/file.js';
import type { ReadState } from './pipeline.js';

const count = z.number().int().nonnegative();
const offset = z.number().int().nonnegative();
const num = z.number();
const numOrNull = z.number().nullable();
const intOrNull = z.number().int().nullable();
const role = z.enum(['selector', 'generator', 'unknown']);
const place = z.looseObject({ run: z.string().min(1), role, round: intOrNull });

/** A record held back for its round's other files (FileSource.held): metrics are checked as a run applies them. */
const heldRecord = z.union([
  z.looseObject({
    kind: z.literal('metrics'),
    step: numOrNull,
    values: z.record(z.string(), z.union([num, z.looseObject({ $number: z.string() })])),
  }),
  z.looseObject({ kind: z.enum(['filter-question', 'filter-summary', 'rollouts', 'settings', 'finished', 'fatal', 'plan']) }),
]) as unknown as z.ZodType<ParsedRecord>;

export const fileCheckpoint = z.looseObject({
  // States saved before the inputs had one vocabulary name three of them otherwise.
  kind: z
    .enum([...INPUT_IDS, ...(Object.keys(EARLIER_NAMES) as (keyof typeof EARLIER_NAMES)[])] as [string, ...string[]])
    .transform((k): FileKind => (k in EARLIER_NAMES ? EARLIER_NAMES[k as keyof typeof EARLIER_NAMES] : (k as FileKind))),
  place,
  tail: z.looseObject({ dev: num, ino: num, offset, fp: z.string().nullable(), fpLen: count }).nullable(),
  records: z.looseObject({ offset, dev: num, ino: num, corruptAt: offset.nullable() }).nullable().optional(),
  doc: z.looseObject({ dev: num, ino: num, size: count, mtimeMs: num }).nullable(),
  parser: z.unknown(),
  counters: z.looseObject({ lines: count, records: count, malformed: count, longLines: count, truncations: count, rotations: count }),
  held: z.array(z.looseObject({ format: z.enum(FORMAT_IDS), records: z.array(heldRecord), heldAt: num.optional() })).optional(),
  nulls: z.record(z.string(), z.looseObject({ count, first: numOrNull, last: numOrNull })).optional(),
});

/** Numbers packed by packDoubles, `per` at a time (a history's steps and values, a curve's buckets). */
const packed = (per: number, what: string) =>
  z.string().refine(
    (t) => {
      const n = packedCount(t);
      return n !== null && n % per === 0;
    },
    { message: `not ${what} packed as base64` },
  );
const history = z.union([
  z.looseObject({ size: count.min(1), packed: packed(2, 'steps and values') }),
  // States saved before the packed numbers.
  z.looseObject({ size: count.min(1), steps: z.array(num), values: z.array(num) }),
]);
const series = z.looseObject({
  summary: z.looseObject({ n: count, mean: numOrNull, m2: numOrNull, min: numOrNull, max: numOrNull }),
  window: z.union([
    z.looseObject({ size: count.min(1), packed: packed(1, 'values') }),
    z.looseObject({ size: count.min(1), values: z.array(numOrNull) }),
  ]),
  ewma: z.looseObject({ alpha: num.gt(0).lte(1), n: count, mean: numOrNull, variance: numOrNull }),
  history,
  curve: z.union([
    z.looseObject({ size: count.min(1), per: count.min(1), store: packed(CURVE_FIELDS, 'buckets') }),
    // States saved before the packed numbers: the buckets' numbers column by column.
    z
      .looseObject({
        size: count.min(1),
        per: count.min(1),
        firstStep: z.array(num),
        lastStep: z.array(num),
        n: z.array(count),
        mean: z.array(numOrNull),
        m2: z.array(numOrNull),
        min: z.array(numOrNull),
        max: z.array(numOrNull),
      })
      .refine((c) => [c.lastStep, c.n, c.mean, c.m2, c.min, c.max].every((a) => a.length === c.firstStep.length), {
        message: "a curve's columns differ in length",
      }),
    // States saved before the columns: an object a bucket.
    z.looseObject({
      size: count.min(1),
      per: count.min(1),
      buckets: z.array(
        z.looseObject({
          firstStep: num,
          lastStep: num,
          n: count,
          mean: numOrNull,
          m2: numOrNull.optional(),
          min: num.optional(),
          max: num.optional(),
        }),
      ),
    }),
  ]),
  nonfinite: z.looseObject({ count, firstStep: numOrNull, lastStep: numOrNull, lastValue: z.string().nullable() }),
  lastStep: numOrNull,
  lastValue: numOrNull,
});
const round = z.looseObject({
  role,
  round: intOrNull,
  steps: count,
  records: count,
  firstStep: numOrNull,
  lastStep: numOrNull,
  firstSeen: numOrNull,
  lastSeen: numOrNull,
  lastTime: numOrNull,
  droppedSeries: count,
  duplicates: count,
  owners: z.record(z.string(), z.string()),
  files: z.record(z.string(), z.looseObject({ format: z.enum(FORMAT_IDS), first: num })).optional(),
  handovers: count.optional(),
  counted: count.optional(),
  arrivals: history,
  stepTimes: history.optional(),
  reach: z.looseObject({ time: num, block: z.looseObject({ steps: num, ms: num }) }).optional(),
  series: z.record(z.string(), series),
});
export const runSchema = z.looseObject({
  id: z.string().min(1),
  rounds: z.array(round),
  filter: z.looseObject({
    pre: z.array(num),
    post: z.array(num),
    prePoints: z.array(num).optional(),
    preOff: z.array(num).optional(),
    preN: count,
    postN: count,
    boundaryPre: count,
    boundaryPost: count,
    keptUnknown: count,
    before: numOrNull,
    after: numOrNull,
  }),
  settings: z.record(z.string(), z.unknown()),
  rollouts: z.looseObject({ k: num, role, round: intOrNull }).nullable(),
  formats: z.record(z.string(), count),
  finished: z.boolean().optional(),
  crashes: z
    .array(z.looseObject({ file: z.string(), message: z.string(), role, round: intOrNull, step: numOrNull, seen: num, time: numOrNull }))
    .optional(),
  plans: z
    .record(
      z.string(),
      z.looseObject({
        stated: z.looseObject({ total: num, done: numOrNull }).nullable(),
        bars: z.record(z.string(), z.looseObject({ n: num, done: num })),
      }),
    )
    .optional(),
  debug: z
    .looseObject({
      byTime: z.record(
        z.string(),
        z.looseObject({
          format: z.string(),
          source: z.string(),
          offset: numOrNull,
          lastRow: numOrNull,
          pending: z.array(
            z.tuple([num, z.looseObject({ n: count, fields: z.record(z.string(), z.unknown()), boundaryHits: count, accN: count })]),
          ),
          samples: count,
          steps: count,
          rounds: z.array(num),
          late: count,
          merged: count,
        }),
      ),
      grouped: z.record(z.string(), z.unknown()),
    })
    .optional(),
});

export const findingSchema = z.looseObject({
  detector: z.string().min(1),
  severity: z.enum(['info', 'warning', 'critical']),
  run: z.string().min(1),
  round: intOrNull,
  step: numOrNull,
  message: z.string(),
  evidence: z.record(z.string(), z.unknown()),
  recommendation: z.string().nullable(),
});

/** The first problem zod found, as `path: message`. */
export function why(error: z.ZodError): string {
  const i = error.issues[0];
  if (i === undefined) return 'does not fit';
  return `${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`;
}

/** The entries of a record whose values fit, the others set aside under `part[key]`. */
export function fitRecord<T>(v: unknown, schema: z.ZodType<T>, part: string, aside: SetAside[]): Record<string, T> {
  const out: Record<string, T> = {};
  if (v === undefined) return out;
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    aside.push({ part, why: 'not an object', value: v });
    return out;
  }
  for (const [k, x] of Object.entries(v)) {
    const r = schema.safeParse(x);
    if (r.success) out[k] = r.data;
    else aside.push({ part: `${part}[${JSON.stringify(k)}]`, why: why(r.error), value: x });
  }
  return out;
}

/** The items of an array that fit, the others set aside under `part[i]`. */
export function fitArray<T>(v: unknown, schema: z.ZodType<T>, part: string, aside: SetAside[]): T[] {
  if (v === undefined) return [];
  if (!Array.isArray(v)) {
    aside.push({ part, why: 'not an array', value: v });
    return [];
  }
  const out: T[] = [];
  v.forEach((x, i) => {
    const r = schema.safeParse(x);
    if (r.success) out.push(r.data);
    else aside.push({ part: `${part}[${i}]`, why: why(r.error), value: x });
  });
  return out;
}

const engine = z.looseObject({
  findings: z.unknown(),
  evaluated: z.unknown(),
  pending: z.unknown(),
  failing: z.unknown(),
});

/**
 * The read path's sections of a loaded state, each part that fits kept. A run that does not fit
 * takes its files' checkpoints with it (they are read again to rebuild it), and a checkpoint that
 * does not fit takes its run (read again from the start, not counted twice).
 */
export function fitReadState(v: Record<string, unknown>, aside: SetAside[]): ReadState | null {
  // Without both sections it is not a state of the read path at all.
  if (v.files === null || typeof v.files !== 'object' || Array.isArray(v.files) || !Array.isArray(v.runs)) return null;
  const envelope = v as unknown as StateEnvelope;
  const before = aside.length;
  const files = fitRecord(v.files, fileCheckpoint, 'files', aside);
  const badFiles = aside.slice(before);
  const runsFrom = aside.length;
  let runs = fitArray(v.runs, runSchema, 'runs', aside);
  const badRuns = aside.slice(runsFrom);
  // A checkpoint set aside: its run (named in it, or the folder holding the file) is read again.
  const runOf = (a: SetAside): string | null => {
    const r = (a.value as { place?: { run?: unknown } } | null)?.place?.run;
    return typeof r === 'string' ? r : null;
  };
  const lostFiles = badFiles.map((a) => ({ file: JSON.parse(a.part.slice('files['.length, -1)) as string, run: runOf(a) }));
  runs = runs.filter((r) => {
    const lost = lostFiles.find((f) => f.run === r.id || (f.run === null && f.file.startsWith(`${r.id}/`)));
    if (lost === undefined) return true;
    aside.push({
      part: `runs[id=${JSON.stringify(r.id)}]`,
      why: `the checkpoint of ${lost.file} was set aside: the run is read again`,
      value: r,
    });
    return false;
  });
  // The files of a run set aside are read again from the start to rebuild it; when a run set
  // aside has no id, every file whose run was not kept is.
  const kept = new Set(runs.map((r) => r.id));
  const anonymous = badRuns.some((a) => typeof (a.value as { id?: unknown } | null)?.id !== 'string');
  const gone = new Set(
    aside.slice(runsFrom).flatMap((a) => {
      const id = (a.value as { id?: unknown } | null)?.id;
      return typeof id === 'string' ? [id] : [];
    }),
  );
  for (const [f, c] of Object.entries(files)) if (!kept.has(c.place.run) && (anonymous || gone.has(c.place.run))) delete files[f];
  const out: ReadState = {
    version: envelope.version,
    savedAt: typeof envelope.savedAt === 'string' ? envelope.savedAt : new Date(0).toISOString(),
    files: files,
    runs: runs as unknown as ReadState['runs'],
  };
  const retired = fitRecord(v.retired, fileCheckpoint.shape.counters, 'retired', aside);
  if (Object.keys(retired).length > 0) out.retired = retired;
  if (v.engine !== undefined) {
    const e = engine.safeParse(v.engine);
    if (!e.success) aside.push({ part: 'engine', why: why(e.error), value: v.engine });
    else {
      const ev = fitRecord(e.data.evaluated, z.number(), 'engine.evaluated', aside);
      out.engine = {
        findings: fitArray(e.data.findings, findingSchema, 'engine.findings', aside) as unknown as NonNullable<
          ReadState['engine']
        >['findings'],
        evaluated: ev,
        pending: fitArray(e.data.pending, findingSchema, 'engine.pending', aside) as unknown as NonNullable<
          ReadState['engine']
        >['findings'],
        failing: fitArray(e.data.failing, z.string(), 'engine.failing', aside),
      };
    }
  }
  return out;
}
