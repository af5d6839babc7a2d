/** All runs barwatch knows, by run folder. */
import { RunState, type RunJSON } from './run.js';
import type { StatsOptions } from './series.js';
import type { PieceSink } from '../util/pieces.js';

export class RunRegistry {
  private readonly runs = new Map<string, RunState>();

  constructor(readonly opts: StatsOptions) {}

  get(id: string): RunState | undefined {
    return this.runs.get(id);
  }

  /** The run, created when first seen; `created` says which. */
  ensure(id: string): { run: RunState; created: boolean } {
    let run = this.runs.get(id);
    if (run !== undefined) return { run, created: false };
    run = new RunState(id, this.opts);
    this.runs.set(id, run);
    return { run, created: true };
  }

  /** Forgets a run (its files became runs of their own). */
  remove(id: string): void {
    this.runs.delete(id);
  }

  all(): RunState[] {
    return [...this.runs.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  get size(): number {
    return this.runs.size;
  }

  toJSON(): RunJSON[] {
    return this.all().map((r) => r.toJSON());
  }

  /** Appends to `out` pieces of JSON.stringify(this.toJSON()) (see RunState.toJSONPieces). */
  toJSONPieces(out: PieceSink): void {
    out.push('[');
    this.all().forEach((r, i) => {
      if (i > 0) out.push(',');
      r.toJSONPieces(out);
    });
    out.push(']');
  }

  static from(runs: RunJSON[], opts: StatsOptions): RunRegistry {
    const reg = new RunRegistry(opts);
    for (const j of runs) reg.runs.set(j.id, RunState.from(j, opts));
    return reg;
  }
}
