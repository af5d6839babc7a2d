/**
 * `barwatch compare`: a fixed run against the broken one says improved (exit 0), the other way
 * round not improved (exit 1) naming what got worse; two rounds of one run; JSON; usage errors.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { barwatch } from './helpers/cli.js';
import { tempDir } from './helpers/fs.js';

describe('barwatch compare', () => {
  // Set up here, not in a before hook: tempDir's clean-up would run when the hook ends.
  const dir = tempDir();
  // Folder names as users make them: spaces and a '#'.
  const broken = path.join(dir, 'run #1 broken');
  const fixed = path.join(dir, 'run #2 fixed');
  assert.equal(barwatch(['simulate', broken, '--scenario', 'aggressive-filter', '--seed', '3']).status, 0);
  assert.equal(barwatch(['simulate', fixed, '--scenario', 'healthy', '--seed', '3']).status, 0);

  test('the fixed run against the broken one: improved, exit 0', () => {
    const r = barwatch(['compare', broken, fixed]);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /before: .*run #1 broken, selector round 3 \(its last complete selector round/);
    assert.match(r.stdout, /boundary reward mean +[\d.]+ -> [\d.]+ +better \(Welch t=/);
    assert.match(r.stdout, /post-filter boundary share \(healthy 25-35%\) .* better \(distance to the band [0-9.]+ -> 0.000\)/);
    assert.match(r.stdout, /^verdict: improved$/m);
  });

  test('the other way round: not improved, exit 1, naming what got worse', () => {
    const r = barwatch(['compare', fixed, broken]);
    assert.equal(r.status, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^verdict: not improved: .*boundary reward mean.*post-filter boundary share/m);
    assert.match(r.stdout, /findings \(warning or critical\) .* WORSE +\(new: .*boundary-share-low/);
  });

  test('JSON: both sides, every criterion with its test, the verdict', () => {
    const r = barwatch(['compare', broken, fixed, '--format', 'json']);
    assert.equal(r.status, 0);
    const doc = JSON.parse(r.stdout) as {
      version: number;
      before: { run: string; round: number; boundary_mean: number; boundary_share: number };
      after: { run: string; boundary_mean: number };
      criteria: { name: string; outcome: string; test: string }[];
      verdict: string;
      worse: string[];
    };
    assert.equal(doc.version, 1);
    assert.equal(doc.before.run, broken);
    assert.ok(doc.after.boundary_mean > doc.before.boundary_mean);
    assert.ok(doc.before.boundary_share < 0.25);
    assert.deepEqual(doc.worse, []);
    assert.equal(doc.verdict, 'improved');
    assert.ok(doc.criteria.every((c) => ['better', 'held', 'worse', 'unknown'].includes(c.outcome) && c.test.length > 0));
  });

  test("the band and the signal floor are the detectors' configured ones", () => {
    const cfg = path.join(dir, 'c.yaml');
    writeFileSync(cfg, 'detectors:\n  boundary-share-low: {band_low: 0.3, band_high: 0.4}\n  format-dominance: {min_share: 0.5}\n');
    const r = barwatch(['compare', broken, fixed, '--config', cfg]);
    assert.match(r.stdout, /post-filter boundary share \(healthy 30-40%\)/);
    assert.match(r.stdout, /boundary's share of the signal \(at least 50%\)/);
  });

  test('two rounds of one run; usage and input errors exit 2', () => {
    const r = barwatch(['compare', fixed, fixed, '--before-round', '1', '--after-round', '3']);
    assert.ok(r.status === 0 || r.status === 1, r.stderr);
    assert.match(r.stdout, /before: .*selector round 1 \(as asked/);
    assert.match(r.stdout, /after: .*selector round 3 \(as asked/);
    const missing = barwatch(['compare', fixed, fixed, '--after-round', '9']);
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /has no selector round 9 \(it has 1, 2, 3\)/);
    const gone = barwatch(['compare', path.join(fixed, 'nope'), fixed]);
    assert.equal(gone.status, 2);
    const many = barwatch(['compare', path.dirname(fixed), fixed]);
    assert.equal(many.status, 2);
    assert.match(many.stderr, /holds 2 runs; name one run folder/);
  });
});
