/**
 * Which accuracy the generator detectors read: the accuracy on the evidence the selector picks
 * (selector rounds' `accuracy`, the quantity BAR-RAG drives toward c), else the generator rounds'
 * own accuracy, else an evaluation accuracy.
 */
import type { Role } from '../parsers/types.js';
import type { RunState } from '../runs/run.js';
import { roundsOf } from './queries.js';

export interface AccuracySource {
  role: Role;
  name: string;
}

const CANDIDATES: AccuracySource[] = [
  { role: 'selector', name: 'accuracy' },
  { role: 'generator', name: 'accuracy' },
  { role: 'unknown', name: 'accuracy' },
  { role: 'generator', name: 'eval/accuracy' },
  { role: 'selector', name: 'eval/accuracy' },
  { role: 'unknown', name: 'eval/accuracy' },
];

export function accuracySources(run: RunState): AccuracySource[] {
  return CANDIDATES.filter((c) => roundsOf(run, c.role).some((r) => r.series.has(c.name)));
}
