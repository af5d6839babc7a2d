/**
 * Every scenario over 20 seeds gives exactly its expected detector ids (the healthy run none),
 * and the recommendations computed from a run's own data do what they say.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import * as yaml from 'js-yaml';
import { suggestThresholds } from '../src/detectors/filter-thresholds.js';
import { boundaryOscillation, judgeSpan, WindowMemo, type SpanVerdict } from '../src/detectors/boundary-oscillation.js';
import { History } from '../src/stats/rolling.js';
import { DETECTORS } from '../src/detectors/index.js';
import { DETECTOR_IDS } from '../src/detectors/index.js';
import { FilterStats } from '../src/runs/filter.js';
import { DetectorEngine } from '../src/detectors/engine.js';
import { type ConfigError, parseConfig } from '../src/config/load.js';
import type { NotifiedAlert } from '../src/alerting/types.js';
import { formatTransition } from '../src/notifiers/console.js';
import { messageOf } from '../src/notifiers/render.js';
import type { Detector } from '../src/detectors/types.js';
import { RunState } from '../src/runs/run.js';
import { detrend, mannKendall, median, moments, spectralPeak, theilSen, type SpectralPeak } from '../src/stats/inference.js';
import { confusion, placeMatchesStory, runScenario } from './helpers/confusion.js';
import { NOISE_MODELS, noiseFalsePositives } from './helpers/noise.js';
import { asExpectedScenario, EXPECTED, SCENARIO_NAMES, scenarioWrites } from './helpers/scenarios.js';
import { runSim } from './helpers/sim-confusion.js';
import { DEFAULTS } from './helpers/defaults.js';
import { REPO } from './helpers/fs.js';

/**
 * The quantities a message states, as written (`0.35`, `22%`, `12`): not the places it names
 * (`round 2`, `step 77`), nor parts of times and durations (`2026-12-01T00:56`, `5h 0m`).
 */
function statedNumbers(message: string): string[] {
  return [...message.matchAll(/(?<![\w.:-])(?<!\b(?:rounds?|step) )-?\d+(?:\.\d+)?%?(?![\w:-])/g)].map((m) => m[0]);
}

/** Whether an evidence value, shown at the precision the message uses, is `stated`. */
function backedBy(stated: string, evidence: Record<string, unknown>): boolean {
  const percent = stated.endsWith('%');
  const text = percent ? stated.slice(0, -1) : stated;
  const decimals = text.includes('.') ? text.length - text.indexOf('.') - 1 : 0;
  const values: number[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === 'number') values.push(v);
    else if (Array.isArray(v)) {
      values.push(v.length);
      v.forEach(collect);
    } else if (v !== null && typeof v === 'object') Object.values(v).forEach(collect);
  };
  collect(evidence);
  return values.some((v) => (percent ? v * 100 : v).toFixed(decimals) === Number(text).toFixed(decimals));
}

const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);

describe('scenarios: exactly the expected findings over 20 seeds', () => {
  for (const name of SCENARIO_NAMES) {
    test(`${name} -> ${EXPECTED[name].join(', ') || 'nothing'}`, async () => {
      const { outcomes } = await confusion(SEEDS, [name]);
      const wrong = outcomes.filter((o) => !asExpectedScenario(o));
      assert.deepEqual(
        wrong.map((o) => `seed ${o.seed}: ${o.ids.join(', ') || '(none)'}`),
        [],
        wrong.flatMap((o) => o.findings.map((f) => `seed ${o.seed} ${f.detector}: ${f.message}`)).join('\n'),
      );
      // One story: a finding's round is the latest round its message speaks of.
      const astray = outcomes.flatMap((o) =>
        o.findings.filter((f) => !placeMatchesStory(f)).map((f) => `seed ${o.seed} ${f.detector} round ${f.round}: ${f.message}`),
      );
      assert.deepEqual(astray, []);
    });
  }
});

describe('boundary-oscillation on long healthy noise', () => {
  test('no round of white or AR(1) 0.4 noise (sd 0.07, flat or ramping) fires; a swing of sd 0.1 in the same noise does', () => {
    for (const m of NOISE_MODELS.filter((x) => x.sd === 0.07 && x.phi <= 0.4)) {
      const r = noiseFalsePositives(m, 200, 300);
      assert.ok(r.evaluations >= 2000);
      assert.equal(r.firingRounds, 0, m.name);
    }
    // The same judge on the same noise with a swing of period 12 added fires on every round.
    const swing = { ...NOISE_MODELS[3]!, name: 'swing', mean: (x: number) => 0.6 + 0.14 * Math.sin((2 * Math.PI * x * 299) / 12) };
    assert.equal(noiseFalsePositives(swing, 50, 300).firingRounds, 50);
  });
});

describe('boundary-oscillation judges a span the same way whatever it computes first', () => {
  test('judgeSpan, which stops at the first window without a strong peak, agrees with working out every window', () => {
    const p = boundaryOscillation.defaults;
    // The judge before it learnt to stop early, kept as the reference.
    const eager = (values: number[]): SpanVerdict | null => {
      const hop = Math.floor(p.window / 2);
      const last = values.slice(-(p.window + (p.windows - 1) * hop));
      const wins = Array.from({ length: p.windows }, (_, i) => last.slice(i * hop, i * hop + p.window));
      const peaks = wins.map((w) => spectralPeak(w, p.min_period, p.max_period));
      const strong = (k: SpectralPeak | null): k is SpectralPeak => k !== null && k.share > p.min_share && k.amplitude >= p.min_amplitude;
      const agree = peaks.every(strong) && Math.max(...peaks.map((k) => k.period)) / Math.min(...peaks.map((k) => k.period)) <= 1.6;
      const whole = agree ? spectralPeak(last, p.min_period, p.max_period) : null;
      const cyclic =
        whole !== null &&
        whole.share > p.min_span_share &&
        whole.contrast >= p.min_contrast &&
        Math.abs(Math.log(whole.period / median(peaks.map((k) => k!.period)))) <= Math.log(1.6);
      const sds = wins.map((w) => Math.sqrt(moments(detrend(w)).variance));
      const mk = mannKendall(last);
      const rise = mk.pUp < 0.05 ? theilSen(last) * (last.length - 1) : 0;
      const noisy = sds.every((x) => x >= p.high_sd) && sds[sds.length - 1]! >= 0.9 * sds[0]! && !(mk.pUp < 0.05 && rise >= 0.02);
      return cyclic || noisy ? { cyclic, peaks, sds, mk, rise } : null;
    };
    let seed = 11;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const verdicts = { cyclic: 0, noisy: 0, none: 0 };
    for (let t = 0; t < 600; t++) {
      const swing = [0, 0.05, 0.15][t % 3]!;
      const spread = [0.03, 0.2][Math.floor(t / 3) % 2]!;
      const period = 5 + (t % 20);
      const trend = (t % 5) * 0.002;
      const values = Array.from(
        { length: 160 },
        (_, i) => 0.5 + trend * i + swing * Math.sin((2 * Math.PI * i) / period) + spread * (rand() - 0.5) * 3.4,
      );
      const got = judgeSpan(values, p);
      assert.deepEqual(got, eager(values));
      verdicts[got === null ? 'none' : got.cyclic ? 'cyclic' : 'noisy']++;
    }
    assert.ok(verdicts.cyclic > 50 && verdicts.noisy > 50 && verdicts.none > 50, JSON.stringify(verdicts));
  });

  test("windows remembered from a history's earlier judgements give the verdict of judging afresh, through rewinds and new settings", () => {
    const defaults = boundaryOscillation.defaults;
    const narrow = { ...defaults, window: 48, min_period: 3, max_period: 20 };
    // The same window, periods that leave out the swing's (about 14 steps): its peaks differ.
    const periods = { ...defaults, min_period: 16, max_period: 40 };
    let seed = 5;
    const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const h = new History(256);
    let step = 0;
    const tally = { judged: 0, cyclic: 0, noisy: 0, reused: 0, rewinds: 0 };
    for (let t = 0; t < 3000; t++) {
      // Swinging, then noisy, then calm stretches; now and then a rewind (a resumed run takes back its last steps).
      const phase = Math.floor(t / 400) % 3;
      const v = 0.5 + (phase === 0 ? 0.15 * Math.sin(step * 0.45) : 0) + (phase === 1 ? 0.25 : 0.03) * (rand() - 0.5) * 3.4;
      if (rand() < 0.004 && h.length > 20) {
        step = h.dropFrom(step - 1 - Math.floor(rand() * 10)).steps[0]!;
        tally.rewinds++;
      }
      h.push(step++, v);
      // Judged at the detector's cadence, and off it (a catch-up after a backlog lands anywhere).
      if (t % 16 !== 0 && rand() > 0.1) continue;
      // Settings changed every 100 points, in swings too, where a window judged before is reused.
      const p = [defaults, narrow, defaults, periods][Math.floor(t / 100) % 4]!;
      const values = h.points().values;
      const memo = WindowMemo.of(h, p);
      const before = memo.hits;
      const got = judgeSpan(values, p, memo, h.pushed);
      tally.reused += memo.hits - before;
      assert.deepEqual(got, judgeSpan(values, p), `point ${t}`);
      tally.judged++;
      if (got !== null) tally[got.cyclic ? 'cyclic' : 'noisy']++;
    }
    assert.ok(tally.cyclic > 20 && tally.noisy > 20 && tally.reused > 100 && tally.rewinds > 3, JSON.stringify(tally));
  });
});

describe("frozen-generator weighs the generator's own logs", () => {
  test('critical where every curve repeats or a generator round is missing; a warning to check where only the selector repeats', async () => {
    const frozen = await confusion(SEEDS.slice(0, 8), ['frozen-generator']);
    for (const o of frozen.outcomes) {
      const f = o.findings.filter((x) => x.detector === 'frozen-generator');
      assert.ok(
        f.some((x) => x.severity === 'critical'),
        `seed ${o.seed}: ${f.map((x) => x.severity).join()}`,
      );
    }
    const old = await confusion(SEEDS.slice(0, 8), ['old-checkpoint']);
    for (const o of old.outcomes) {
      const f = o.findings.filter((x) => x.detector === 'frozen-generator');
      assert.ok(f.length > 0, `seed ${o.seed}: no finding`);
      for (const x of f) {
        assert.equal(x.severity, 'warning', `seed ${o.seed} round ${x.round}: ${x.message}`);
        assert.match(x.message, /the generator's own logs say it changed/);
        assert.match(x.recommendation ?? '', new RegExp(`selector round ${x.round} loads generator round ${x.round! - 1}'s checkpoint`));
      }
    }
  });
});

describe('findings carry evidence and a recommendation from the run', () => {
  test('aggressive filter: critical, pre/post shares, thresholds that reach the band', async () => {
    const o = await runScenario('aggressive-filter', 3);
    const f = o.findings.find((x) => x.detector === 'boundary-share-low')!;
    assert.equal(f.severity, 'critical');
    assert.match(f.message, /boundary questions \(\d+% before filtering\)/);
  });

  test('every number a finding states is in its evidence, and every warning says what to do', async () => {
    for (const name of SCENARIO_NAMES) {
      const o = await runScenario(name, 11);
      for (const f of o.findings) {
        const at = `${name} ${f.detector}: ${f.message}`;
        const unbacked = statedNumbers(f.message).filter((n) => !backedBy(n, f.evidence));
        assert.deepEqual(unbacked, [], `${at}\nevidence: ${JSON.stringify(f.evidence)}`);
        if (f.severity !== 'info') assert.ok((f.recommendation ?? '').length > 0, `${at}: no recommendation`);
      }
    }
  });

  test('suggested filter thresholds put the boundary share in the band', () => {
    const f = new FilterStats();
    // 1000 questions spread evenly over [0, 1): a 0.45/0.05 filter keeps few boundary ones.
    for (let i = 0; i < 1000; i++)
      f.addQuestion({ kind: 'filter-question', id: null, acc: i / 1000, kept: i / 1000 > 0.05 && i / 1000 < 0.45 });
    assert.ok(f.postShare! < 0.15);
    const s = suggestThresholds(f, [0.25, 0.35], { easy: 0.45, unsolvable: 0.05 })!;
    // Recount with the suggested thresholds from the questions themselves.
    let kept = 0;
    let boundary = 0;
    for (let i = 0; i < 1000; i++) {
      const a = i / 1000;
      if (a > s.unsolvable && a < s.easy) {
        kept++;
        if (a >= 0.4 && a <= 0.6) boundary++;
      }
    }
    assert.ok(boundary / kept >= 0.25 && boundary / kept <= 0.35, `${s.unsolvable}/${s.easy}: ${boundary / kept}`);
    assert.ok(Math.abs(s.share - boundary / kept) < 0.02);
    assert.equal(s.kept, kept);
  });

  test("format-dominance: each weight it recommends, recomputed here from the run's spreads, clears both rules with a margin and reaches what it states", async () => {
    for (const [run, seeds] of [
      ['scenario', [3, 4]],
      ['sim', [1, 2]],
    ] as const) {
      for (const seed of seeds) {
        const f =
          run === 'scenario'
            ? (await runScenario('format-heavy', seed)).findings.find((x) => x.detector === 'format-dominance')!
            : (await runSim('format-heavy', seed)).findings.find((x) => x.detector === 'format-dominance')!;
        const ev = f.evidence as { weights: Record<string, number>; sd: Record<string, number>; ratio_limit: number; min_share: number };
        // The boundary's share of the signal, |w_i| sd_i over the sum, written out here.
        const share = (w: Record<string, number>): number => {
          const part = (c: string): number => Math.abs(w[c] ?? 0) * (ev.sd[c] ?? 0);
          return part('boundary') / ['boundary', 'relevance', 'format', 'count'].reduce((a, c) => a + part(c), 0);
        };
        const options = [
          ...(f.recommendation ?? '').matchAll(
            /(lower the format|raise the boundary) weight from [\d.]+ to ([\d.]+) \(which gives the boundary (\d+)% of the reward signal, with the format weight ([\d.]+)x/g,
          ),
        ];
        assert.equal(options.length, 2, f.recommendation ?? '');
        for (const [, which, value, statedShare, statedRatio] of options) {
          const w = { ...ev.weights, [which!.includes('format') ? 'format' : 'boundary']: Number(value) };
          const s = share(w);
          const ratio = Math.abs(w['format']!) / Math.abs(w['boundary']!);
          assert.ok(s >= ev.min_share + 0.05, `${run} ${seed} ${which} ${value}: share ${s}`);
          assert.ok(ratio <= ev.ratio_limit - 0.5, `${run} ${seed} ${which} ${value}: ratio ${ratio}`);
          // The evidence rounds each sd to three decimals: the stated share is within a point.
          assert.ok(Math.abs(s * 100 - Number(statedShare)) <= 1, `${run} ${seed}: stated ${statedShare}%, recomputed ${s}`);
          assert.ok(Math.abs(ratio - Number(statedRatio)) <= 0.005 + 1e-9, `${run} ${seed}: stated ${statedRatio}x, recomputed ${ratio}`);
        }
      }
    }
  });

  test("filter thresholds boundary-share-low/high recommend, recounted here on the run's own questions, land in the middle of 25%-35%", async () => {
    for (const [name, id] of [
      ['aggressive-filter', 'boundary-share-low'],
      ['loose-filter', 'boundary-share-high'],
    ] as const) {
      for (const seed of [2, 3]) {
        const f = (await runScenario(name, seed)).findings.find((x) => x.detector === id)!;
        const text = f.recommendation ?? '';
        const easy = Number(/(?:set easy_threshold [\d.]+ -> |keep easy_threshold at )([\d.]+)/i.exec(text)?.[1]);
        const unsolvable = Number(/(?:set unsolvable_threshold [\d.]+ -> |keep unsolvable_threshold at )([\d.]+)/i.exec(text)?.[1]);
        const accs = scenarioWrites(name, seed)
          .flatMap((w) => [...w.text.matchAll(/^\[filter\] id=\S+ acc=([\d.]+)/gm)])
          .map((m) => Number(m[1]));
        assert.equal(accs.length, 2000);
        const kept = accs.filter((a) => a > unsolvable && a < easy);
        const share = kept.filter((a) => a >= 0.4 && a <= 0.6).length / kept.length;
        assert.ok(share >= 0.275 && share <= 0.325, `${name} ${seed}: ${unsolvable}/${easy} -> ${share}`);
        assert.match(text, new RegExp(`keeps ${kept.length} of 2000 questions with a boundary share of ${Math.round(share * 100)}%`));
      }
    }
  });

  test('the K low-rollouts recommends meets the standard error bound, and K-1 does not', async () => {
    const o = await runScenario('few-rollouts', 5);
    const f = o.findings.find((x) => x.detector === 'low-rollouts')!;
    // The standard error of an accuracy estimated from K rollouts at the target c, written out here.
    const se = (c: number, k: number): number => Math.sqrt((c * (1 - c)) / k);
    const c = f.evidence['target'] as number;
    const bound = f.evidence['max_se'] as number;
    assert.match(f.message, /K=2 .* 0, 0.5, 1 /);
    assert.match(f.message, new RegExp(`standard error at c=${c} is ${se(c, 2).toFixed(2)}`));
    const k = Number(/Raise the generator rollouts to K=(\d+)/.exec(f.recommendation ?? '')?.[1]);
    assert.ok(se(c, k) <= bound, `K=${k}: ${se(c, k)} > ${bound}`);
    assert.ok(se(c, k - 1) > bound, `K=${k - 1} would already do: ${se(c, k - 1)}`);
  });
});

describe('each detector declares itself once; the docs agree', () => {
  test('the example config lists every detector with its declared defaults', () => {
    const doc = yaml.load(readFileSync(path.join(REPO, 'config', 'barwatch.example.yaml'), 'utf8')) as {
      detectors: Record<string, unknown>;
    };
    assert.deepEqual(Object.keys(doc.detectors), [...DETECTOR_IDS]);
    for (const d of DETECTORS) assert.deepEqual(doc.detectors[d.id], d.defaults, `detectors.${d.id} in config/barwatch.example.yaml`);
  });

  test('a parameter declared a count takes whole numbers from 1; other numbers take fractions', () => {
    for (const d of DETECTORS)
      for (const k of d.counts ?? []) {
        const def = (d.defaults as Record<string, unknown>)[k];
        assert.ok(Number.isInteger(def) && (def as number) >= 1, `${d.id}.${k} is declared a count but its default is ${String(def)}`);
      }
    const at = (text: string): string[] => {
      try {
        parseConfig(text, '/etc/b.yaml');
        return [];
      } catch (err) {
        return (err as ConfigError).problems.map((p) => `${p.key}: ${p.message}`);
      }
    };
    assert.deepEqual(at('detectors:\n  generator-stall: {window: 2.5, horizon: 0}\n'), [
      'detectors.generator-stall.window: must be a whole number, not 2.5',
      'detectors.generator-stall.horizon: must be from 1 to 1000000',
    ]);
    assert.deepEqual(at('detectors:\n  generator-stall: {margin: 0.25}\n  grad-spike: {factor: 2.5}\n'), []);
  });

  test("the README's detector table lists every detector with its default severity", () => {
    const readme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
    const rows = [...readme.matchAll(/^\| `([a-z-]+)` \| .* \| ([a-z /]+) \|$/gm)].map((m) => [m[1]!, m[2]!.split(' / ')[0]!]);
    assert.deepEqual(
      rows,
      DETECTORS.map((d) => [d.id, d.defaults.severity]),
    );
  });
});

/** A detector for the engine's tests: run-scoped, a warning, judged at every record unless `every` says otherwise. */
function testDetector(d: Pick<Detector, 'id' | 'detect'> & Partial<Detector>): Detector {
  return { description: 'test', cleared: 'test', defaults: { enabled: true, severity: 'warning' }, every: () => 1, scope: 'run', ...d };
}

describe('engine', () => {
  test('a time-based detector is judged by the clock, and on a record only while its finding holds (the record resolves it)', () => {
    let calls = 0;
    let silent = false;
    const clock = testDetector({
      id: 'stale-run',
      timeBased: true,
      detect: () => {
        calls++;
        return silent ? [{ severity: 'warning', round: null, step: null, message: 'silent', evidence: {}, recommendation: null }] : [];
      },
    });
    const engine = new DetectorEngine({}, [clock]);
    const run = new RunState('/runs/r', DEFAULTS.stats);
    const ctx = { now: 0, live: true, final: false };
    const record = (step: number): void =>
      void run.apply(
        { kind: 'metrics', step, values: { boundary: 0.5 } },
        { role: 'selector', round: 1, format: 'reward-history', file: 'f' },
        0,
      );
    for (let s = 1; s <= 50; s++) {
      record(s);
      assert.deepEqual(engine.onRecord(run, ctx), []);
    }
    assert.equal(calls, 0);
    silent = true;
    assert.deepEqual(
      engine.evaluate(run, ctx, true).map((t) => t.kind),
      ['held'],
    );
    silent = false;
    record(51);
    assert.deepEqual(
      engine.onRecord(run, ctx).map((t) => t.kind),
      ['cleared'],
    );
    const after = calls;
    for (let s = 52; s <= 60; s++) {
      record(s);
      engine.onRecord(run, ctx);
    }
    assert.equal(calls, after);
  });

  test("a decisive evaluation while the trainer pauses leaves the step-driven schedule as it was: judged at analyze's records", () => {
    const judgedAt = (pauses: number[]): number[] => {
      const at: number[] = [];
      const counting = testDetector({
        id: 'generator-regression',
        every: () => 8,
        detect: (r) => {
          at.push(r.recordsRead());
          return [];
        },
      });
      const engine = new DetectorEngine({}, [counting]);
      const run = new RunState('/runs/r', DEFAULTS.stats);
      const ctx = { now: 0, live: true, final: false };
      for (let s = 1; s <= 40; s++) {
        engine.onRecord(run, ctx);
        run.apply(
          { kind: 'metrics', step: s, values: { boundary: 0.5 } },
          { role: 'selector', round: 1, format: 'reward-history', file: 'f' },
          0,
        );
        // A run quiet for settle_after is judged decisively (Daemon.sweep).
        if (pauses.includes(s)) engine.evaluate(run, ctx);
      }
      return at;
    };
    const scheduled = judgedAt([]);
    assert.deepEqual(scheduled, [1, 9, 17, 25, 33]);
    const paused = judgedAt([5, 13]);
    assert.deepEqual(
      paused.filter((n) => n !== 5 && n !== 13),
      scheduled,
    );
  });

  test('a run-wide finding that moves to another round: the old alert resolves saying it moved, the new one fires, on the console and in notifications alike', () => {
    let round = 1;
    const wide = testDetector({
      id: 'generator-regression',
      cleared: 'the accuracy no longer falls',
      detect: () => [{ severity: 'warning', round, step: 5, message: `falling in round ${round}`, evidence: {}, recommendation: null }],
    });
    const engine = new DetectorEngine({}, [wide]);
    const run = new RunState('/runs/r', DEFAULTS.stats);
    const ctx = { now: 0, live: true, final: false };
    assert.deepEqual(
      engine.evaluate(run, ctx).map((t) => t.kind),
      ['held'],
    );
    round = 2;
    const moved = engine.evaluate(run, ctx);
    assert.deepEqual(
      moved.map((t) => [t.kind, t.finding.round, t.movedTo]),
      [
        ['cleared', 1, 2],
        ['held', 2, undefined],
      ],
    );
    const block = formatTransition(moved[0]!);
    assert.match(
      block,
      /^RESOLVED \[warning\] generator-regression: \/runs\/r \(round 1, step 5\)\n {2}Moved on to round 2, where it fires now\. It had said: falling in round 1\n$/,
    );
    // A notification holding both alerts says the same; a resolved alert alone says what changed.
    const alert = (status: 'firing' | 'resolved', r: number) => ({
      ...moved[0]!.finding,
      status,
      round: r,
      message: `falling in round ${r}`,
      startsAt: '',
      endsAt: null,
    });
    const both = [alert('resolved', 1), alert('firing', 2)] as unknown as NotifiedAlert[];
    assert.match(messageOf(both[0]!, both), /^Moved on to round 2, where it fires now\. It had said: falling in round 1$/);
    assert.match(messageOf(both[0]!, [both[0]!]), /^The accuracy no longer falls\. It had said: falling in round 1$/);
  });
});
