/**
 * Every format barwatch reads, in one list: which files are which format, and the parser for each.
 */
import path from 'node:path';
import { BarragGeneratorDebugParser } from './barrag-generator-debug.js';
import { BarragSelectorDebugParser } from './barrag-selector-debug.js';
import { RewardHistoryParser } from './reward-history.js';
import { RunConfigParser } from './run-config.js';
import { TextLogParser } from './train-log.js';
import { TensorBoardParser } from './tfevents.js';
import { TrainerStateParser } from './trainer-state.js';
import type { Parser, ParserOptions } from './types.js';

/** How a file is read: by lines (tailed) or as a whole document (re-read when it changes). */
export type FileKind = 'jsonl' | 'text' | 'trainer-state' | 'selector-debug' | 'generator-debug' | 'run-config' | 'tfevents';

const TEXT_EXT = new Set(['.log', '.txt', '.out', '.err']);

/**
 * The kind of a file from its name, or null when barwatch does not read it. `head` (the first
 * bytes) settles files whose name says nothing, when the caller named them explicitly.
 */
export function classifyFile(file: string, head?: string): FileKind | null {
  const base = path.basename(file).toLowerCase();
  const dir = path.basename(path.dirname(file)).toLowerCase();
  if (base.startsWith('events.out.tfevents.')) return 'tfevents';
  if (base.includes('trainer_state') && base.endsWith('.json')) return 'trainer-state';
  if (/^selector_reward_debug.*\.log$/.test(base)) return 'selector-debug';
  if (/^reward_debug.*\.log$/.test(base)) return 'generator-debug';
  if ((base.endsWith('.yaml') || base.endsWith('.yml')) && dir === 'configs') return 'run-config';
  if (base.endsWith('.jsonl')) return 'jsonl';
  if (TEXT_EXT.has(path.extname(base))) return 'text';
  if (head !== undefined) return sniff(head);
  return null;
}

function sniff(head: string): FileKind {
  const trimmed = head.trimStart();
  if (trimmed.startsWith('{') && head.includes('"log_history"')) return 'trainer-state';
  if (trimmed.startsWith('{"') || trimmed.startsWith('{ "')) return 'jsonl';
  if (head.includes('REWARD COMPUTATION') || head.includes('FINAL REWARD')) return 'selector-debug';
  return 'text';
}

export function createParser(kind: FileKind, opts: ParserOptions): Parser {
  switch (kind) {
    case 'jsonl':
      return new RewardHistoryParser(opts);
    case 'text':
      return new TextLogParser(opts);
    case 'trainer-state':
      return new TrainerStateParser(opts);
    case 'selector-debug':
      return new BarragSelectorDebugParser(opts);
    case 'generator-debug':
      return new BarragGeneratorDebugParser(opts);
    case 'run-config':
      return new RunConfigParser();
    case 'tfevents':
      return new TensorBoardParser(opts);
  }
}
