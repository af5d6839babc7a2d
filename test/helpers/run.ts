/** Writes small runs in the canonical layout of SPEC 3.1 for tests. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function selectorLine(step: number, v: { boundary: number; accuracy: number }): string {
  return (
    JSON.stringify({
      step,
      boundary: v.boundary,
      relevance: 0.3,
      format: 1,
      count: 0,
      total: v.boundary + 0.06 + 1,
      accuracy: v.accuracy,
      boundary_share: 0.3,
      rollouts: 10,
    }) + '\n'
  );
}

export function generatorLine(step: number, accuracy: number): string {
  return JSON.stringify({ step, reward: accuracy + 0.05, accuracy }) + '\n';
}

/** What writeRun's two config files say, as barwatch reads them (RunSettings). */
export const RUN_SETTINGS = {
  easyThreshold: 0.8,
  unsolvableThreshold: 0.2,
  varMin: 0.02,
  rollouts: 10,
  weights: { boundary: 1, relevance: 0.2, format: 0.5, count: 1 },
  targetAccuracy: 0.5,
};

/** A run folder with configs and `rounds` selector and generator rounds of `steps` steps each. */
export function writeRun(dir: string, rounds: number, steps: number): void {
  mkdirSync(path.join(dir, 'configs'), { recursive: true });
  writeFileSync(
    path.join(dir, 'configs', 'filter_config.yaml'),
    'easy_threshold: 0.8\nunsolvable_threshold: 0.2\nvar_min: 0.02\nrollouts: 10\n',
  );
  writeFileSync(
    path.join(dir, 'configs', 'reward_config.yaml'),
    'weights: {boundary: 1.0, relevance: 0.2, format: 0.5, count: 1.0}\ntarget_accuracy: 0.5\nrollouts: 10\n',
  );
  for (let r = 1; r <= rounds; r++) {
    const sel = path.join(dir, 'outputs', `selector_round${r}`);
    const gen = path.join(dir, 'outputs', `generator_round${r}`);
    mkdirSync(sel, { recursive: true });
    mkdirSync(gen, { recursive: true });
    let text = '';
    let log = r === 1 ? '[filter] before=6 after=4\n' : '';
    if (r === 1)
      for (const [i, acc] of [0.1, 0.45, 0.5, 0.7, 0.95, 0.55].entries())
        log += `[filter] id=q${i} acc=${acc} kept=${acc > 0.2 && acc < 0.8}\n`;
    for (let s = 1; s <= steps; s++) {
      text += selectorLine(s, { boundary: 0.3 + 0.1 * r + 0.001 * s, accuracy: 0.4 + 0.03 * r });
      log += `step=${s} boundary_reward=${(0.3 + 0.1 * r).toFixed(3)} rollouts=10\n`;
    }
    writeFileSync(path.join(sel, 'reward_history.jsonl'), text);
    writeFileSync(path.join(sel, 'train.log'), log);
    let g = '';
    for (let s = 1; s <= steps; s++) g += generatorLine(s, 0.4 + 0.03 * r);
    writeFileSync(path.join(gen, 'reward_history.jsonl'), g);
  }
}
