/**
 * Where a file belongs (SPEC 3.1): its run folder, and the role and round its path names.
 * `outputs/selector_round3/train.log`, `selector-round-3/`, `round3/selector/`, and BAR-RAG's
 * `debug_logs/selector_reward_debug_*.log` all say what they are. The run is the folder above
 * every container folder (outputs, configs, logs, debug_logs, rewards, tensorboard, role/round folders). Where
 * the folders do not name role and round, the file name may (`rewards/selector_round1_reward_history.jsonl`).
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { inputOf, type FileKind } from '../parsers/index.js';
import type { Role } from '../parsers/types.js';

export interface FilePlace {
  run: string;
  role: Role;
  round: number | null;
}

/**
 * Where a file's round stands in the order training writes a run: selector round k, then
 * generator round k, then selector round k+1. Null for files of no round (configs, a run-wide log).
 */
export function roundOrder(place: FilePlace): number | null {
  if (place.round === null) return null;
  return place.round * 2 + (place.role === 'generator' ? 1 : 0);
}

const ROLE_ROUND = /^(selector|generator)[_-]?round[_-]?(\d+)$/i;
const ROUND_ROLE = /^round[_-]?(\d+)[_-]?(selector|generator)$/i;
const ROUND = /^round[_-]?(\d+)$/i;
const ROLE = /^(selector|generator)$/i;
const CONTAINERS = new Set([
  'outputs',
  'output',
  'configs',
  'logs',
  'debug_logs',
  'filtered_data',
  'rewards',
  'tensorboard',
  'tensorboard_log',
  'tb',
  'tb_logs',
]);
/** Role and round in a file's own name: `selector_round1_reward_history`, `train_generator-round-2`, `round3_selector`. */
const NAME_ROLE_ROUND = /(?:^|[_.-])(selector|generator)[_-]?round[_-]?(\d+)(?=$|[_.-])/i;
const NAME_ROUND_ROLE = /(?:^|[_.-])round[_-]?(\d+)[_-]?(selector|generator)(?=$|[_.-])/i;

/** BAR-RAG's official scripts' console logs: `logs/selector_training_<ts>.log`, one per invocation. */
const ROLE_TRAINING = /^(selector|generator)_training_(.+)\.log$/i;

/**
 * The round of a console log of the official scripts: its place, by its time stamp, among the
 * logs of its role beside it (the k-th selector_training log is selector round k). A later
 * invocation's log sorts after the earlier ones, so a round keeps its number as logs are added.
 */
function invocationRound(file: string, role: string): number {
  const base = path.basename(file);
  let earlier = 0;
  let names: string[];
  try {
    names = readdirSync(path.dirname(file));
  } catch {
    return 1;
  }
  for (const n of names) {
    const m = ROLE_TRAINING.exec(n);
    if (m !== null && m[1]!.toLowerCase() === role && n < base) earlier++;
  }
  return earlier + 1;
}

function isContainer(name: string): boolean {
  return CONTAINERS.has(name.toLowerCase()) || ROLE_ROUND.test(name) || ROUND_ROLE.test(name) || ROUND.test(name) || ROLE.test(name);
}

function roleOf(s: string): Role {
  return s.toLowerCase() === 'selector' ? 'selector' : 'generator';
}

/**
 * Places a file. With `single` (a file named on the command line), a file whose folders say
 * nothing about a run is a run of its own, named by the file.
 */
export function placeFile(file: string, kind: FileKind, single = false): FilePlace {
  const abs = path.resolve(file);
  let role: Role = 'unknown';
  let round: number | null = null;
  let dir = path.dirname(abs);
  let climbed = false;
  for (;;) {
    const name = path.basename(dir);
    if (name === '' || !isContainer(name)) break;
    let m: RegExpExecArray | null;
    if ((m = ROLE_ROUND.exec(name)) !== null) {
      role = role === 'unknown' ? roleOf(m[1]!) : role;
      round ??= Number(m[2]);
    } else if ((m = ROUND_ROLE.exec(name)) !== null) {
      role = role === 'unknown' ? roleOf(m[2]!) : role;
      round ??= Number(m[1]);
    } else if ((m = ROUND.exec(name)) !== null) {
      round ??= Number(m[1]);
    } else if ((m = ROLE.exec(name)) !== null) {
      role = role === 'unknown' ? roleOf(m[1]!) : role;
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
    climbed = true;
  }
  // The guide's flat layout (debug_artifacts/{logs,rewards,configs}) names role and round in the file.
  if (round === null) {
    const base = path.basename(abs);
    let m: RegExpExecArray | null;
    if ((m = NAME_ROLE_ROUND.exec(base)) !== null) {
      role = role === 'unknown' ? roleOf(m[1]!) : role;
      round = Number(m[2]);
    } else if ((m = NAME_ROUND_ROLE.exec(base)) !== null) {
      role = role === 'unknown' ? roleOf(m[2]!) : role;
      round = Number(m[1]);
    } else if ((m = ROLE_TRAINING.exec(base)) !== null && (role === 'unknown' || role === roleOf(m[1]!))) {
      role = roleOf(m[1]!);
      round = invocationRound(abs, role);
    }
  }
  if (role === 'unknown') role = inputOf(kind).role ?? 'unknown';
  const run = single && !climbed ? abs : dir;
  return { run, role, round };
}
