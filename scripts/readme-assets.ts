/** Regenerates the README's examples: a rendered summary chart and a Slack payload. `node dist/test/helpers/readme-assets.js` */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { analyzePaths } from '../src/pipeline/analyze.js';
import { loadConfig } from '../src/config/load.js';
import { silentLogger } from '../src/util/log.js';
import { slackPayload } from '../src/notifiers/slack/index.js';
import { buildSummary } from '../src/summary/build.js';
import { REPO } from '../test/helpers/fs.js';
import { writeScenario } from '../test/helpers/scenarios.js';

const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-readme-'));
try {
  const now = Date.parse('2026-11-30T23:00:00Z');
  writeScenario(path.join(dir, 'bar-rag-nq'), 'oscillating', 3, now);
  const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => now);
  const s = buildSummary(res.runs, [], now);
  for (const c of s.charts) writeFileSync(path.join(REPO, 'docs', `summary-${c.filename}`), c.png);
  const f = res.findings[0]!;
  const payload = slackPayload({
    id: 'example',
    dedupeKey: 'example',
    channel: 'slack',
    group: f.run.replace(dir, '/data/runs'),
    reason: 'first notification of the group',
    createdAt: new Date(now).toISOString(),
    alerts: [
      {
        key: 'k',
        fingerprint: 'k',
        status: 'firing',
        detector: f.detector,
        severity: f.severity,
        run: f.run.replace(dir, '/data/runs'),
        round: f.round,
        step: f.step,
        message: f.message,
        evidence: f.evidence,
        recommendation: f.recommendation,
        sparkline: 'boundary, selector round 2: ▄▇█▆▂▁▃▆█▇▄▁▁▄▇█▅▂▁▃▆█▆▃▁▂▅█▇▄▂▁▃▆',
        startsAt: new Date(now).toISOString(),
        endsAt: null,
      },
    ],
  });
  writeFileSync(path.join(REPO, 'docs', 'slack-payload-example.json'), JSON.stringify(payload, null, 2) + '\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
