/**
 * Every input barwatch reads, in one list: a format is its parser file, which exports its
 * InputFormat, and one line here. Earlier entries win when a name fits several.
 */
import path from 'node:path';
import { barragFilteredIdsInput, barragFilteredInput } from './barrag-filter.js';
import { barragGeneratorDebugInput } from './barrag-generator-debug.js';
import { barragSelectorDebugInput } from './barrag-selector-debug.js';
import { jsonlInput } from './reward-history.js';
import { logHistoryInput } from './log-history.js';
import { metricsCsvInput } from './metrics-csv.js';
import { runConfigInput } from './run-config.js';
import { textInput } from './train-log.js';
import { tensorboardInput } from './tfevents.js';
import { trainerStateInput } from './trainer-state.js';
import { wandbInput } from './wandb-log.js';
import type { InputFormat, Parser, ParserOptions } from './types.js';

export const INPUTS = [
  tensorboardInput,
  wandbInput,
  trainerStateInput,
  logHistoryInput,
  metricsCsvInput,
  barragSelectorDebugInput,
  barragGeneratorDebugInput,
  barragFilteredInput,
  barragFilteredIdsInput,
  runConfigInput,
  jsonlInput,
  textInput,
] as const;

const BY_ID = new Map<string, InputFormat>(INPUTS.map((f) => [f.id, f]));

/** How a file is recognised and read: the id of one of INPUTS. */
export type FileKind = (typeof INPUTS)[number]['id'];
export const INPUT_IDS: FileKind[] = INPUTS.map((f) => f.id);

export function inputOf(kind: FileKind): InputFormat {
  return BY_ID.get(kind)!;
}

/**
 * The kind of a file from its name, or null when barwatch does not read it. `head` (the first
 * bytes) settles files whose name says nothing, when the caller named them explicitly.
 */
export function classifyFile(file: string, head?: string): FileKind | null {
  const base = path.basename(file).toLowerCase();
  const folder = path.basename(path.dirname(file)).toLowerCase();
  for (const f of INPUTS) if (f.named(base, folder)) return f.id;
  if (head !== undefined) for (const f of INPUTS) if (f.sniffed?.(head) === true) return f.id;
  return null;
}

export function createParser(kind: FileKind, opts: ParserOptions): Parser {
  return inputOf(kind).create(opts);
}
