/** The W&B run-file writer lives with the simulator (src/sim/wandb-writer.ts), which writes the official layout with it. */
export * from '../../src/sim/wandb-writer.js';
