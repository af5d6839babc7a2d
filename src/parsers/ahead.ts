/**
 * The framings that decode ahead on the decode thread (AheadFraming), by format. The decode thread
 * loads this module and what it imports, not every parser (parsers/index.ts): a third of the code
 * to load at its start (issue 32). A format given an AheadFraming (its framing's, or InputFormat.linesAhead) is listed here too (a test checks).
 */
import type { FileKind } from './index.js';
import type { AheadFraming } from './types.js';
import { JSON_LINES_AHEAD } from './json-lines-ahead.js';
import { WANDB_FRAMING } from './wandb-log.js';

export const AHEAD_FRAMINGS: Partial<Record<FileKind, AheadFraming>> = { wandb: WANDB_FRAMING.ahead!, jsonl: JSON_LINES_AHEAD };
