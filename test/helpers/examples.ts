/**
 * The examples the README shows, built from a scenario run: the Slack payload of its first
 * finding and the summary charts. scripts/readme-assets.ts writes them to docs/; the tests
 * compare docs/ with what the code sends today.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { slackPayload } from '../../src/notifiers/slack/index.js';
import { analyzePaths } from '../../src/pipeline/analyze.js';
import { findingSparkline } from '../../src/report/text.js';
import { buildSummary, type Summary } from '../../src/summary/build.js';
import { silentLogger } from '../../src/util/log.js';
import { writeScenario } from './scenarios.js';

/** Where the example run is shown to live (the temporary folder it is written to is replaced by this). */
const SHOWN_AS = '/data/runs';

export interface Examples {
  slack: ReturnType<typeof slackPayload>;
  summary: Summary;
}

export async function readmeExamples(): Promise<Examples> {
  const dir = mkdtempSync(path.join(tmpdir(), 'barwatch-readme-'));
  try {
    const now = Date.parse('2026-11-30T23:00:00Z');
    writeScenario(path.join(dir, 'bar-rag-nq'), 'oscillating', 3, now);
    const res = await analyzePaths([dir], loadConfig(null), silentLogger(), () => now);
    const summary = buildSummary(res.runs, [], now);
    const f = res.findings[0]!;
    const run = res.runs.find((r) => r.id === f.run)!;
    const shown = f.run.replace(dir, SHOWN_AS);
    const slack = slackPayload({
      id: 'example',
      dedupeKey: 'example',
      channel: 'slack',
      group: shown,
      reason: 'first notification of the group',
      createdAt: new Date(now).toISOString(),
      alerts: [
        {
          key: 'k',
          fingerprint: 'k',
          status: 'firing',
          detector: f.detector,
          severity: f.severity,
          run: shown,
          round: f.round,
          step: f.step,
          message: f.message,
          evidence: f.evidence,
          recommendation: f.recommendation,
          sparkline: findingSparkline(run, f),
          startsAt: new Date(now).toISOString(),
          endsAt: null,
        },
      ],
    });
    return { slack, summary };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
