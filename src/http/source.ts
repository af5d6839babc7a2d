/** What the web page reads from the daemon: its runs, findings, alerts and silences, as they are now. */
import type { Alerting } from '../alerting/service.js';
import type { SilenceStore } from '../alerting/silences.js';
import type { Finding } from '../detectors/types.js';
import type { RunState } from '../runs/run.js';

export interface WebSource {
  now(): number;
  runs(): readonly RunState[];
  run(id: string): RunState | undefined;
  findings(): readonly Finding[];
  alerting(): Alerting;
  silences(): SilenceStore;
  /** A silence was added or removed through the page. */
  silencesChanged(): void;
  /** Where the last nightly summary is kept as one HTML file (it may not exist yet). */
  summaryFile(): string;
}
