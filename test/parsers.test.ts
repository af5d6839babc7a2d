import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BarragSelectorDebugParser } from '../src/parsers/barrag-selector-debug.js';
import { BarragGeneratorDebugParser } from '../src/parsers/barrag-generator-debug.js';
import { classifyFile } from '../src/parsers/index.js';
import { JsonNumberReader, parseJsonLenient } from '../src/parsers/json.js';
import { jsonNumberAt } from '../src/parsers/wandb-log.js';
import { canonicalKey, Flattener, flattenValues, ListedRecord, ShapedRecord } from '../src/parsers/keys.js';
import { RoundState } from '../src/runs/round.js';
import { rng } from '../src/sim/random.js';
import { parsePythonLiteral } from '../src/parsers/pydict.js';
import { readJsonRecord, RewardHistoryParser } from '../src/parsers/reward-history.js';
import { readRunSettings, RunConfigParser } from '../src/parsers/run-config.js';
import { TextLogParser } from '../src/parsers/train-log.js';
import { TrainerStateParser } from '../src/parsers/trainer-state.js';
import { isMalformed, type LineResult, type MetricRecord, type ParsedRecord } from '../src/parsers/types.js';
import { DEFAULTS } from './helpers/defaults.js';
import { viaJson } from './helpers/json.js';
import { RUN_SETTINGS } from './helpers/run.js';

const opts = DEFAULTS.parser;

function records(r: LineResult): ParsedRecord[] {
  assert.ok(!isMalformed(r), `expected records, got malformed: ${JSON.stringify(r)}`);
  return r;
}

function metric(r: LineResult): MetricRecord {
  const recs = records(r).filter((x): x is MetricRecord => x.kind === 'metrics');
  assert.equal(recs.length, 1, `expected one metric record in ${JSON.stringify(r)}`);
  return recs[0]!;
}

describe('canonical keys', () => {
  test('every alias of SPEC 3.2 folds onto its component', () => {
    const cases: Record<string, string> = {
      bdy: 'boundary',
      unc: 'boundary',
      unc_reward: 'boundary',
      boundary_reward: 'boundary',
      r_bdy: 'boundary',
      rel: 'relevance',
      rel_reward: 'relevance',
      relevance_reward: 'relevance',
      fmt: 'format',
      format_bonus: 'format',
      format_reward: 'format',
      cnt: 'count',
      count_penalty: 'count',
      'reward/boundary': 'boundary',
      'rewards/boundary_reward/mean': 'boundary',
      'rewards/boundary_reward/std': 'boundary_std',
      boundary_std: 'boundary_std',
      'reward/format_std': 'format_std',
      'rewards/format_reward_fn/mean': 'format',
      'rewards/count_penalty_fn/std': 'count_std',
      'reward_extra_info/format': 'format',
    };
    for (const [raw, want] of Object.entries(cases)) assert.equal(canonicalKey(raw), want, raw);
  });

  test('unknown keys are kept verbatim; a user key map wins', () => {
    assert.equal(canonicalKey('critic/score/mean'), 'critic/score/mean');
    // Names every object inherits are series names like any other (was `function Object() {...}`).
    for (const k of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) assert.equal(canonicalKey(k), k);
    assert.equal(canonicalKey('rewards/reward_fn/mean'), 'rewards/reward_fn/mean');
    assert.equal(canonicalKey('my_bnd', { my_bnd: 'boundary' }), 'boundary');
  });
});

describe('Flattener: the learned flat shape gives what flattenValues gives', () => {
  test('same shape, reordered keys, nested, strings, nulls, non-finite, aliases folding onto one name, key maps', () => {
    const skip = new Set(['step', 'time']);
    const records: Record<string, unknown>[] = [
      { step: 1, boundary: 0.5, format: 1, time: 'x' },
      { step: 2, boundary: 0.6, format: 0 },
      { step: 3, format: 1, boundary: 0.7 },
      { step: 4, boundary: '0.8', format: 1 },
      { step: 5, boundary: null, format: 1 },
      { step: 6, boundary: NaN, format: -Infinity },
      { step: 7, rewards: { bdy: 0.4, fmt: 1 } },
      { step: 8, boundary: 0.1, bdy: 0.2, format: 1 },
      { step: 9, boundary: 0.3, format: 1, extra: 2 },
      { step: 10, boundary: 0.5, format: 1, time: 'y' },
      { step: 11, boundary: 0.5, format: 1, time: 'y', list: [1] },
    ];
    for (const keyMap of [undefined, { format: 'fmt_custom' }]) {
      const f = new Flattener(keyMap, skip);
      for (const r of records) {
        // Twice each: the second read of a flat record goes through the learned shape.
        assert.deepEqual(f.record(0, r).values, flattenValues(r, keyMap, skip), JSON.stringify(r));
        assert.deepEqual(f.record(0, r).values, flattenValues(r, keyMap, skip), JSON.stringify(r));
      }
    }
  });
});

describe('JSON with Python non-finite numbers', () => {
  test('NaN, Infinity and -Infinity read as numbers, not inside strings', () => {
    const v = parseJsonLenient('{"a": NaN, "b": Infinity, "c": -Infinity, "s": "NaN Infinity", "d": [NaN]}') as Record<string, unknown>;
    assert.ok(Number.isNaN(v['a']));
    assert.equal(v['b'], Infinity);
    assert.equal(v['c'], -Infinity);
    assert.equal(v['s'], 'NaN Infinity');
    assert.ok(Number.isNaN((v['d'] as number[])[0]));
  });

  test('broken JSON still throws', () => {
    assert.throws(() => parseJsonLenient('{"a": NaN'), SyntaxError);
  });
});

describe('numbers of 16 and 17 digits read in place', () => {
  /**
   * Python writes most floats with 16 or 17 significant digits; both readers compute them in
   * place (exactDecimal) and must give what Number() gives, bit for bit: the shortest spelling of
   * random doubles of every size, 16 and 17 digits of them, decimals of 16-17 random digits, and
   * the hard ones, decimals next to halfway between two doubles and exactly halfway (a tie).
   */
  test('both readers give Number() of the text, halfway cases included', () => {
    const rand = rng(17);
    const bits = new Float64Array(1);
    const words = new Uint32Array(bits.buffer);
    const reader = new JsonNumberReader();
    const texts: string[] = [];
    for (let k = 0; k < 40_000; k++) {
      words[0] = Math.floor(rand() * 2 ** 32);
      words[1] = ((1023 - 60 + Math.floor(rand() * 120)) * 2 ** 20 + Math.floor(rand() * 2 ** 20)) >>> 0;
      const x = bits[0]!;
      const next = x * (1 + 2 ** -52);
      let d = String(1 + Math.floor(rand() * 9));
      const n = 15 + Math.floor(rand() * 3);
      while (d.length < n) d += String(Math.floor(rand() * 10));
      const dot = 1 + Math.floor(rand() * (n - 1));
      texts.push(
        String(x),
        String(-x),
        x.toPrecision(17),
        x.toPrecision(16),
        ((x + next) / 2).toPrecision(17),
        `${d.slice(0, dot)}.${d.slice(dot)}`,
        `0.00${d}`,
        `${d.slice(0, 1)}.${d.slice(1)}e-${Math.floor(rand() * 30)}`,
      );
    }
    // 2^53 + 1 is halfway between two doubles: as a decimal of 17 digits over a power of ten, a tie.
    for (let k = 0; k < 2_000; k++) {
      const tie = String((2n ** 53n + 1n + 2n * BigInt(Math.floor(rand() * 1e6))) * 10n);
      for (const places of [1, 2, 5, 16]) texts.push(`${tie.slice(0, -places)}.${tie.slice(-places)}`);
    }
    for (const t of texts) {
      const want = Number(t);
      assert.ok(Object.is(jsonNumberAt(Buffer.from(t, 'latin1'), 0, t.length), want), `W&B reader: ${t}`);
      assert.ok(Object.is(reader.read(t, 0), want), `text reader: ${t}`);
      assert.equal(reader.end, t.length, t);
    }
  });
});

describe('Python literals', () => {
  test('dicts with quoted numbers, nan, wrapped scalars, None and nesting', () => {
    const v = parsePythonLiteral(
      "{'loss': 0.03, 'reward': '0.875', 'x': nan, 'y': np.float64(0.1), 'z': tensor(0.5, device='cuda:0'), 'n': None, 'ok': True, 'l': [1, 2], 't': (1,)}",
    ) as Record<string, unknown>;
    assert.equal(v['loss'], 0.03);
    assert.equal(v['reward'], '0.875');
    assert.ok(Number.isNaN(v['x']));
    assert.equal(v['y'], 0.1);
    assert.equal(v['z'], 0.5);
    assert.equal(v['n'], null);
    assert.equal(v['ok'], true);
    assert.deepEqual(v['l'], [1, 2]);
  });

  test('a truncated dict is not a literal', () => {
    assert.equal(parsePythonLiteral("{'loss': 0.03, 'rew"), undefined);
  });
});

/** One of `xs`, drawn by `rand`. */
function pickWith<T>(rand: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rand() * xs.length)]!;
}

/**
 * A random double as programs write it (shortest, fixed, exponent in either case, 17 digits,
 * integer, float32) within 10^(±decades/2), or a text from one of the test's own groups of
 * spellings (each group as likely as one way of writing the double).
 */
function spellNumber(rand: () => number, decades: number, odd: readonly (readonly string[])[]): string {
  const x = (rand() - 0.5) * 10 ** Math.floor(rand() * decades - decades / 2);
  return pickWith(rand, [
    String(x),
    x.toFixed(Math.floor(rand() * 12)),
    x.toExponential(Math.floor(rand() * 18)),
    x.toExponential(3).replace('e', 'E'),
    x.toPrecision(17),
    String(Math.round(x)),
    String(Math.fround(x)),
    ...odd.map((group) => pickWith(rand, group)),
  ]);
}

describe('reward_history.jsonl', () => {
  test('the canonical selector line', () => {
    const p = new RewardHistoryParser(opts);
    const r = metric(
      p.line(
        '{"step": 37, "boundary": 0.41, "relevance": 0.31, "format": 1.0, "count": -0.5, "total": 0.52, "accuracy": 0.47, "boundary_share": 0.28, "rollouts": 10, "time": "2026-11-29T10:00:00Z"}',
      ),
    );
    assert.equal(r.step, 37);
    assert.deepEqual(r.values, {
      boundary: 0.41,
      relevance: 0.31,
      format: 1,
      count: -0.5,
      total: 0.52,
      accuracy: 0.47,
      boundary_share: 0.28,
      rollouts: 10,
    });
    assert.equal(r.time, Date.parse('2026-11-29T10:00:00Z'));
    assert.equal(p.format(), 'reward-history');
  });

  test('aliases, nesting under rewards, per-step std, numbers as strings', () => {
    const p = new RewardHistoryParser(opts);
    const r = metric(
      p.line('{"step": "3", "rewards": {"unc_reward": 0.5, "rel": "0.2", "format_bonus": 1, "count_penalty": 0, "boundary_std": 0.1}}'),
    );
    assert.equal(r.step, 3);
    assert.deepEqual(r.values, { boundary: 0.5, relevance: 0.2, format: 1, count: 0, boundary_std: 0.1 });
  });

  test('verl file logger: the record under data', () => {
    const p = new RewardHistoryParser(opts);
    const r = metric(
      p.line('{"step": 12, "data": {"critic/score/mean": 0.61, "reward/boundary": 0.4, "rewards/format_reward/mean": 1.0}}'),
    );
    assert.equal(r.step, 12);
    assert.deepEqual(r.values, { 'critic/score/mean': 0.61, boundary: 0.4, format: 1 });
    assert.equal(p.format(), 'verl-jsonl');
  });

  test('generator lines', () => {
    const r = metric(new RewardHistoryParser(opts).line('{"step": 12, "reward": 0.53, "accuracy": 0.43}'));
    assert.deepEqual(r.values, { reward: 0.53, accuracy: 0.43 });
  });

  test('bare NaN and Infinity are values', () => {
    const r = metric(new RewardHistoryParser(opts).line('{"step": 5, "boundary": NaN, "total": -Infinity}'));
    assert.ok(Number.isNaN(r.values['boundary']));
    assert.equal(r.values['total'], -Infinity);
  });

  test('a line of the learned shape is read from its characters, with what JSON.parse gives: number spellings, spaces, strings, escapes, malformed lines', () => {
    const rand = rng(7);
    const pick = <T>(xs: readonly T[]): T => pickWith(rand, xs);
    const numbers = (): string =>
      spellNumber(rand, 50, [
        [
          '0',
          '-0',
          '1e22',
          '1e23',
          '123456789012345',
          '1234567890123456',
          '9007199254740993',
          '0.000123',
          '1e-7',
          '5e-324',
          '1e400',
          '-1e-400',
        ],
        ['NaN', 'Infinity', '-Infinity'],
        // Not JSON: JSON.parse refuses each, so must the reader.
        ['01', '1.', '.5', '+1', '1e', '1e+', '-', '--1', '0x10', '1.e5', '00', '-NaN', 'nan', 'true', 'null', '"0.5"', '[1]', '{}'],
      ]);
    const keys = ['step', 'boundary', 'relevance', 'format', 'total', 'accuracy', 'rollouts'];
    const lines: string[] = [];
    for (let i = 0; i < 30_000; i++) {
      const values = keys.map((k) => (k === 'step' ? String(i) : numbers()));
      const sp = pick(['', ' ', '  ', '\t']);
      const body = keys.map((k, j) => `"${k}"${pick(['', ' '])}:${sp}${values[j]}`).join(`,${sp}`);
      let line = `${pick(['', ' '])}{${sp}${body}${sp}}${pick(['', ' ', '\r'])}`;
      const r = rand();
      if (r < 0.03) line = line.replace('"total"', '"total_reward"');
      else if (r < 0.05) line = line.replace('}', ', "time": "2026-11-29T10:00:00Z"}');
      else if (r < 0.06) line = line.replace('}', ', "time": 1764410400.5}');
      else if (r < 0.07) line = line.replace('"format"', '"form\\u0061t"');
      else if (r < 0.08) line = line.replace('"step": ', '"step": "').replace(/"step": "(\d+)/, '"step": "$1"');
      else if (r < 0.09) line = line.replace('"rollouts"', '"rewards": {"unc": 1}, "rollouts"');
      else if (r < 0.1) line = line.slice(0, Math.floor(rand() * line.length));
      else if (r < 0.11) line = line.replace('"boundary"', '"accuracy"');
      lines.push(line);
    }
    const p = new RewardHistoryParser(opts);
    const slow = new Flattener(opts.keyMap, new Set(['step', 'time', 'timestamp', 'data', 'global_step', '_step']));
    let listed = 0;
    for (const line of lines) {
      const got = p.line(line);
      const want = readJsonRecord(line, opts.keyMap, slow);
      if (want === null) {
        assert.deepEqual(got, [], line);
        continue;
      }
      if ('error' in want) {
        assert.deepEqual(got, want, line);
        continue;
      }
      const rec = metric(got);
      if (rec instanceof ListedRecord) listed++;
      assert.equal(rec.step, want.record.step, line);
      assert.equal(rec.time, want.record.time, line);
      assert.deepEqual(Object.keys(rec.values), Object.keys(want.record.values), line);
      for (const [k, v] of Object.entries(want.record.values))
        assert.ok(Object.is(rec.values[k], v), `${line}: ${k} ${rec.values[k]} vs ${v}`);
      assert.deepEqual((rec as MetricRecord).nulls, want.record.nulls, line);
    }
    // Most lines have the shape of the line before: the reader, not JSON.parse, read them.
    assert.ok(listed > lines.length / 4, `${listed} of ${lines.length} lines read from their characters`);
    assert.equal(p.format(), 'reward-history');
  });

  test('malformed lines say why; blank lines are nothing', () => {
    const p = new RewardHistoryParser(opts);
    assert.deepEqual(p.line('{"step": 1, "boundary": 0.'), { error: 'not valid JSON' });
    assert.deepEqual(p.line('[1, 2]'), { error: 'not a JSON object' });
    assert.deepEqual(p.line('{"boundary": 0.4}'), { error: 'no numeric "step"' });
    assert.deepEqual(p.line('   '), []);
  });
});

describe('train.log', () => {
  test('key=value pairs on a step line', () => {
    const r = metric(new TextLogParser(opts).line('step=120 boundary_reward=0.61 accuracy=0.47 loss: 1.5e-3'));
    assert.equal(r.step, 120);
    assert.deepEqual(r.values, { boundary: 0.61, accuracy: 0.47, loss: 0.0015 });
  });

  test('verl console with ANSI colours, a Ray prefix, np.float64 and full precision', () => {
    const p = new TextLogParser(opts);
    const r = metric(
      p.line(
        '\x1b[36m(TaskRunner pid=2419)\x1b[0m step:120 - critic/score/mean:0.610 - val-core/nq/acc/mean@1:np.float64(0.47) - actor/lr:1e-06 - reward_extra_info/format:0.7916666666666666',
      ),
    );
    assert.equal(r.step, 120);
    assert.deepEqual(r.values, { 'critic/score/mean': 0.61, 'val-core/nq/acc/mean@1': 0.47, 'actor/lr': 1e-6, format: 0.7916666666666666 });
    assert.equal(p.format(), 'verl-console');
  });

  test('verl step lines of one shape are read through it, and any other line the long way, with the same values', () => {
    const lines = [
      'step:1 - critic/score/mean:0.5 - reward/format_reward/mean:0.9 - actor/lr:1e-06',
      'step:2 - critic/score/mean:0.6 - reward/format_reward/mean:0.8 - actor/lr:1e-06',
      'step:3 - critic/score/mean:nan - reward/format_reward/mean:0.8 - actor/lr:1e-06',
      'step:4 - critic/score/mean:np.float64(0.7) - reward/format_reward/mean:-inf - actor/lr:+2',
      'step:5 - critic/score/mean:0.7 - reward/format_reward/mean:0.8',
      'step:6 - critic/score/mean:0.7 - reward/format_reward/mean:0.8 - extra:3 - ',
      'step:7 - critic/score/mean:0.75 - reward/format_reward/mean:0.85 - extra:4',
      'step:8 - critic/score/mean: 0.8 - reward/format_reward/mean:x - extra:5',
      'step:9 - critic/score/mean:0.9 - reward/format_reward/mean:0.95 - extra:5 - gone',
      'step:10 - critic/score/mean:0.9 - critic/score/mean:0.1',
      'step:11 - critic/score/mean:0.9 - critic/score/mean:0.2',
    ];
    const expected = [
      { 'critic/score/mean': 0.5, format: 0.9, 'actor/lr': 1e-6 },
      { 'critic/score/mean': 0.6, format: 0.8, 'actor/lr': 1e-6 },
      { 'critic/score/mean': NaN, format: 0.8, 'actor/lr': 1e-6 },
      { 'critic/score/mean': 0.7, format: -Infinity, 'actor/lr': 2 },
      { 'critic/score/mean': 0.7, format: 0.8 },
      { 'critic/score/mean': 0.7, format: 0.8, extra: 3 },
      { 'critic/score/mean': 0.75, format: 0.85, extra: 4 },
      { 'critic/score/mean': 0.8, extra: 5 },
      { 'critic/score/mean': 0.9, format: 0.95, extra: 5 },
      { 'critic/score/mean': 0.1 },
      { 'critic/score/mean': 0.2 },
    ];
    const p = new TextLogParser(opts);
    const listed: number[] = [];
    lines.forEach((line, i) => {
      const r = metric(p.line(line));
      assert.equal(r.step, i + 1);
      assert.deepEqual({ ...r.values }, expected[i], line);
      if (r instanceof ListedRecord) listed.push(i + 1);
    });
    // Step 2 repeats step 1's shape; step 7 repeats step 6's (its trailing separator is no part).
    assert.deepEqual(listed, [2, 7]);
    // The statistics read a listed record as they read its values.
    const a = new RoundState('selector', 1, DEFAULTS.stats);
    const b = new RoundState('selector', 1, DEFAULTS.stats);
    for (const line of lines) {
      const r = metric(new TextLogParser(opts).line(line));
      const q = metric(p.line(line));
      a.apply({ kind: 'metrics', step: r.step, values: r.values }, r.step!, 0, 'f', 'train-log');
      b.apply(q, q.step!, 0, 'f', 'train-log');
    }
    assert.deepEqual(viaJson(b.toJSON()), viaJson(a.toJSON()));
  });

  test('a verl value in any spelling is read in place as Number() reads its text, or left to the long way', () => {
    const rand = rng(3);
    // Number() reads each of these, some in a spelling JSON has not.
    const spelling = (): string =>
      spellNumber(rand, 40, [
        ['.5', '1.', '+1', '-0', '1E5', '1e-05', '00', '0x10', '12345678901234567890', '-Infinity', '1.0e+400', '-.25'],
      ]);
    const keys = ['critic/score/mean', 'actor/entropy', 'actor/lr', 'response_length/mean', 'timing_s/step'];
    const warm = new TextLogParser(opts);
    let listed = 0;
    for (let i = 1; i <= 5000; i++) {
      const line = `step:${i} - ${keys.map((k) => `${k}:${spelling()}`).join(' - ')}`;
      const got = metric(warm.line(line));
      const want = metric(new TextLogParser(opts).line(line));
      if (got instanceof ListedRecord) listed++;
      assert.deepEqual(Object.keys(got.values), Object.keys(want.values), line);
      for (const [k, v] of Object.entries(want.values)) assert.ok(Object.is(got.values[k], v), `${line}: ${k} ${got.values[k]} vs ${v}`);
    }
    assert.ok(listed > 2500, `${listed} of 5000 lines read through the shape`);
  });

  test('a [time] prefix is stripped and kept as the record time', () => {
    const r = metric(new TextLogParser(opts).line('[2026-11-30 10:00:00] step=3 total=0.5'));
    assert.equal(r.time, Date.parse('2026-11-30T10:00:00Z'));
  });

  test('eval lines become eval/ series', () => {
    const r = metric(new TextLogParser(opts).line('[eval] step=500 accuracy=0.462'));
    assert.deepEqual(r.values, { 'eval/accuracy': 0.462 });
    assert.equal(r.step, 500);
  });

  test('filter lines: per question, with acc_list, and the summary', () => {
    const p = new TextLogParser(opts);
    assert.deepEqual(records(p.line('[filter] id=q123 acc=0.45 kept=true')), [
      { kind: 'filter-question', id: 'q123', acc: 0.45, kept: true },
    ]);
    const [q] = records(p.line('[filter] id=q9 acc_list=[0.2, 0.4, 0.6] kept=false'));
    assert.equal(q?.kind, 'filter-question');
    assert.ok(q?.kind === 'filter-question' && Math.abs(q.acc - 0.4) < 1e-12 && q.kept === false);
    assert.deepEqual(records(p.line('[filter] before=12000 after=7300')), [{ kind: 'filter-summary', before: 12000, after: 7300 }]);
    assert.ok(isMalformed(p.line('[filter] id=q1 kept=true')));
  });

  test('every spelling of the rollout count', () => {
    const lines = [
      'rollouts=10',
      'K_ROLLOUTS=10',
      'K Rollouts: 10',
      'n_rollouts: 10',
      'actor_rollout_ref.rollout.n=10',
      '[x] GENERATOR ROLLOUTS (K=10):',
    ];
    for (const l of lines) {
      const got = records(new TextLogParser(opts).line(l)).filter((r) => r.kind === 'rollouts');
      assert.deepEqual(got, [{ kind: 'rollouts', k: 10 }], l);
    }
    assert.deepEqual(records(new TextLogParser(opts).line('rollout/total_num_samples:96')), []);
  });

  test('a trainer saying it finished', () => {
    for (const l of [
      'Training finished.',
      '[2026-11-30 10:00:00] training completed in 3h',
      'INFO Finished training',
      'Final validation metrics: {...}',
    ]) {
      assert.deepEqual(new TextLogParser(opts).line(l), [{ kind: 'finished' }], l);
    }
  });

  test('lines that match nothing, and wandb summaries, give nothing', () => {
    const p = new TextLogParser(opts);
    assert.deepEqual(p.line('Loading model weights: 100%'), []);
    assert.deepEqual(p.line('wandb: step=300 reward=0.5'), []);
    assert.deepEqual(p.line(''), []);
  });

  test('TRL console dicts after tqdm output split by \\r, numbered in order', () => {
    const p = new TextLogParser(opts);
    const a = metric(
      p.line(
        "  5%|▌ | 1/20 [00:03<01:00]\r{'loss': '0.0412', 'reward': 0.875, 'rewards/format_reward_fn/mean': 1.0, 'frac_reward_zero_std': 0.875, 'epoch': 0.0}",
      ),
    );
    const b = metric(p.line("{'loss': 0.1, 'reward': 0.5, 'epoch': 0.1}"));
    assert.equal(a.step, 1);
    assert.equal(b.step, 2);
    assert.deepEqual(a.values, { loss: 0.0412, reward: 0.875, format: 1, frac_reward_zero_std: 0.875 });
    assert.equal(p.format(), 'trl-console');
    assert.deepEqual(p.line("{'train_runtime': 877.9, 'train_loss': 0.09, 'epoch': 0.05}"), [{ kind: 'finished' }]);
    const e = metric(p.line("{'eval_loss': 0.2, 'eval_reward': 0.7, 'epoch': 0.1}"));
    assert.deepEqual(e, { kind: 'metrics', step: 2, values: { 'eval/loss': 0.2, 'eval/reward': 0.7 } });
    assert.ok(isMalformed(p.line("{'loss': 0.1, 'rew")));
  });

  test('OpenRLHF Global step lines', () => {
    const p = new TextLogParser(opts);
    const r = metric(p.line("Global step 12: {'policy_loss': 0.1, 'reward': 0.5, 'rewards/boundary': 0.4}"));
    assert.equal(r.step, 12);
    assert.deepEqual(r.values, { policy_loss: 0.1, reward: 0.5, boundary: 0.4 });
    assert.equal(p.format(), 'openrlhf');
  });
});

describe('trainer_state.json', () => {
  const doc = (entries: object[]): string => JSON.stringify({ global_step: 3, log_history: entries });

  test('training entries, eval keys apart, the summary skipped, only new entries on re-read', () => {
    const p = new TrainerStateParser(opts);
    const first = records(
      p.document(
        doc([
          { step: 1, reward: 0.1, 'rewards/boundary_fn/mean': 0.3, epoch: 0.1 },
          { step: 2, reward: 0.2, eval_reward: 0.25 },
        ]),
      ),
    );
    assert.deepEqual(first, [
      { kind: 'metrics', step: 1, values: { reward: 0.1, boundary: 0.3 } },
      { kind: 'metrics', step: 2, values: { reward: 0.2, 'eval/reward': 0.25 } },
    ]);
    const second = records(
      p.document(
        doc([
          { step: 1, reward: 0.1 },
          { step: 2, reward: 0.2 },
          { step: 3, reward: 0.3 },
          { step: 3, train_runtime: 10, train_loss: 0.1 },
        ]),
      ),
    );
    assert.deepEqual(second, [{ kind: 'metrics', step: 3, values: { reward: 0.3 } }, { kind: 'finished' }]);
  });

  test('half-written file is malformed, not fatal', () => {
    assert.ok(isMalformed(new TrainerStateParser(opts).document('{"log_history": [{"step": 1')));
  });
});

describe('BAR-RAG debug logs', () => {
  const block = (t: string, acc: number, unc: number, fin: number): string[] => [
    '='.repeat(100),
    `[2026-11-30 03:02:${t}] REWARD COMPUTATION`,
    `[2026-11-30 03:02:${t}] GENERATOR ROLLOUTS (K=10):`,
    `[2026-11-30 03:02:${t}]   num_correct=${acc * 10}/10 accuracy=${acc.toFixed(3)}`,
    `[2026-11-30 03:02:${t}]   unc_reward=${unc} (center=0.5, max=1.0)`,
    `[2026-11-30 03:02:${t}]   rel_reward=0.2000 (max=1.0)`,
    `[2026-11-30 03:02:${t}]   format_bonus=0.5000`,
    `[2026-11-30 03:02:${t}]   count_penalty=0.0000`,
    `[2026-11-30 03:02:${t}]   total = 1.0*${unc} + 0.2*0.2000 + 0.5000 - 0.0000`,
    `[2026-11-30 03:02:${t}] >>> FINAL REWARD: ${fin} <<<`,
    '='.repeat(100),
    '',
  ];

  test('selector blocks become per-step means, spreads and boundary share (time gaps split steps)', () => {
    const p = new BarragSelectorDebugParser({ ...opts, debugStepGapMs: 5000 });
    const lines = [...block('00', 0.5, 1.0, 1.54), ...block('01', 0.2, 0.4, 0.94), ...block('30', 0.9, 0.2, 0.74)];
    const out = lines.flatMap((l) => records(p.line(l)));
    const kinds = out.map((r) => r.kind);
    assert.deepEqual(kinds, ['rollouts', 'settings', 'settings', 'metrics']);
    const step1 = out[3] as MetricRecord;
    assert.equal(step1.step, 1);
    assert.equal(step1.values['samples'], 2);
    assert.ok(Math.abs(step1.values['boundary']! - 0.7) < 1e-9);
    assert.ok(Math.abs(step1.values['boundary_std']! - Math.sqrt(0.18)) < 1e-9);
    assert.equal(step1.values['boundary_share'], 0.5);
    assert.equal(step1.values['rollouts'], 10);
    assert.deepEqual(out[1], { kind: 'settings', settings: { targetAccuracy: 0.5 } });
    assert.deepEqual(out[2], { kind: 'settings', settings: { weights: { boundary: 1, relevance: 0.2 } } });
    const last = p.flush() as MetricRecord[];
    assert.equal(last.length, 1);
    assert.equal(last[0]!.step, 2);
    assert.equal(last[0]!.values['boundary'], 0.2);
  });

  test('a fixed number of samples per step; state survives a snapshot', () => {
    const p = new BarragSelectorDebugParser({ ...opts, debugSamplesPerStep: 2 });
    const lines = [...block('00', 0.5, 1.0, 1.5), ...block('00', 0.5, 1.0, 1.5), ...block('00', 0.1, 0.2, 0.7)];
    const half = lines.slice(0, 14);
    half.forEach((l) => p.line(l));
    const q = new BarragSelectorDebugParser({ ...opts, debugSamplesPerStep: 2 });
    q.restore(viaJson(p.snapshot()));
    const out = lines
      .slice(14)
      .flatMap((l) => records(q.line(l)))
      .filter((r): r is MetricRecord => r.kind === 'metrics');
    assert.equal(out.length, 1);
    assert.equal(out[0]!.values['samples'], 2);
    assert.equal(out[0]!.values['boundary'], 1);
  });

  test('generator blocks', () => {
    const p = new BarragGeneratorDebugParser(opts);
    p.line('[2026-01-05 12:00:07] fmt=1.0 reward=0.800000 max_f1=0.750000 max_em=1.000000');
    p.line('[2026-01-05 12:00:08] fmt=1.0 reward=0.400000 max_f1=0.250000 max_em=0.000000');
    const [r] = p.flush() as MetricRecord[];
    const { reward_std, f1_std, accuracy_std, format_std, ...means } = r!.values;
    assert.deepEqual(means, { samples: 2, format: 1, reward: 0.6000000000000001, f1: 0.5, accuracy: 0.5 });
    assert.equal(format_std, 0);
    for (const sd of [reward_std, f1_std, accuracy_std]) assert.ok(sd !== undefined && sd > 0);
  });
});

describe('run configs', () => {
  test('canonical names', () => {
    const s = readRunSettings(
      'easy_threshold: 0.8\nunsolvable_threshold: 0.2\nvar_min: 0.02\nrollouts: 10\nweights: {boundary: 1.0, relevance: 0.2, format: 0.5, count: 1.0}\ntarget_accuracy: 0.5\n',
    );
    assert.deepEqual(s, RUN_SETTINGS);
  });

  test("BAR-RAG's names, nested", () => {
    const s = readRunSettings(
      'reward:\n  lambda_unc: 1.0\n  lambda_rel: 0.2\n  format_bonus: 0.5\n  wrong_count_penalty: 0.5\n  max_count_penalty: 1.0\n  target_center: 0.6\nfilter:\n  mean_min: 0.25\n  mean_max: 0.85\n  K_ROLLOUTS: 8\n',
    );
    assert.deepEqual(s, {
      weights: { boundary: 1, relevance: 0.2, format: 0.5, count: 0.5 },
      countMax: 1,
      targetAccuracy: 0.6,
      unsolvableThreshold: 0.25,
      easyThreshold: 0.85,
      rollouts: 8,
    });
  });

  test('broken YAML is malformed', () => {
    assert.ok(isMalformed(new RunConfigParser().document('a: [1, 2')));
  });
});

describe('file classification', () => {
  test('by name, then by content', () => {
    assert.equal(classifyFile('/r/outputs/selector_round1/reward_history.jsonl'), 'jsonl');
    assert.equal(classifyFile('/r/outputs/selector_round1/train.log'), 'text');
    assert.equal(classifyFile('/r/checkpoint-100/trainer_state.json'), 'trainer-state');
    assert.equal(classifyFile('/r/debug_logs/selector_reward_debug_123.log'), 'barrag-selector-debug');
    assert.equal(classifyFile('/r/debug_logs/reward_debug_123.log'), 'barrag-generator-debug');
    assert.equal(classifyFile('/r/configs/reward_config.yaml'), 'run-config');
    assert.equal(classifyFile('/r/other.yaml'), null);
    assert.equal(classifyFile('/r/model.safetensors'), null);
    assert.equal(classifyFile('/r/metrics', '{"step": 1}'), 'jsonl');
    assert.equal(classifyFile('/r/state', '{\n "log_history": []}'), 'trainer-state');
  });
});

describe('reward_history.jsonl read through the learned shape', () => {
  test('the statistics equal those of the same records given as values objects (reorders, aliases on one line, nesting, strings, NaN)', () => {
    const lines = [
      '{"step": 1, "boundary": 0.5, "format": 1, "time": "2026-11-29T10:00:00Z"}',
      '{"step": 2, "boundary": 0.6, "format": 0, "time": "2026-11-29T10:00:01Z"}',
      '{"step": 3, "boundary": 0.61, "format": 0.5, "time": "2026-11-29T10:00:02Z"}',
      '{"step": 4, "format": 1, "boundary": 0.7}',
      '{"step": 5, "format": 0, "boundary": 0.72}',
      '{"step": 6, "boundary": 0.1, "bdy": 0.2, "format": 1}',
      '{"step": 7, "boundary": 0.3, "bdy": 0.4, "format": 1}',
      '{"step": 8, "boundary": "0.8", "format": 1}',
      '{"step": 9, "rewards": {"bdy": 0.4, "fmt": 1}}',
      '{"step": 10, "boundary": NaN, "format": 1}',
      '{"step": 11, "boundary": 0.5, "format": 1, "accuracy": 0.4}',
      '{"step": 12, "boundary": 0.55, "format": 1, "accuracy": 0.45}',
      '{"step": 13, "data": {"reward/boundary": 0.4, "acc": 0.3}}',
      '{"step": 14, "data": {"reward/boundary": 0.45, "acc": 0.35}}',
    ];
    const parser = new RewardHistoryParser(opts);
    const shaped = new RoundState('selector', 1, DEFAULTS.stats);
    const plain = new RoundState('selector', 1, DEFAULTS.stats);
    let throughShape = 0;
    for (const line of lines) {
      const r = metric(parser.line(line));
      if (r instanceof ShapedRecord || r instanceof ListedRecord) throughShape++;
      shaped.apply(r, r.step!, 0, 'f', 'train-log');
      plain.apply(
        { kind: 'metrics', step: r.step, values: { ...r.values }, ...(r.time !== undefined ? { time: r.time } : {}) },
        r.step!,
        0,
        'f',
        'train-log',
      );
    }
    assert.ok(throughShape >= 5, `${throughShape} records read through the shape`);
    assert.deepEqual(shaped.toJSON(), plain.toJSON());
    // One boundary value per line (two keys folding onto it keep the last, once), NaN counted apart.
    assert.equal(shaped.series.get('boundary')!.summary.n, 13);
    assert.equal(shaped.series.get('boundary')!.nonfinite.count, 1);
  });
});
