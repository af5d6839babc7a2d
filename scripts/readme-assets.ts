/** Regenerates the README's examples in docs/: the summary charts and a Slack payload. `node dist/scripts/readme-assets.js` */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { REPO } from '../test/helpers/fs.js';
import { readmeExamples } from '../test/helpers/examples.js';

const { slack, summary } = await readmeExamples();
for (const c of summary.charts) writeFileSync(path.join(REPO, 'docs', `summary-${c.filename}`), c.png);
writeFileSync(path.join(REPO, 'docs', 'slack-payload-example.json'), JSON.stringify(slack, null, 2) + '\n');
