/**
 * A real writer process for the tailing tests (started with child_process.fork). It appends
 * numbered JSONL records to a file the way trainers do: in bursts, with lines split across
 * writes, then truncates the file like verl's "wb" reopen, then rotates it by rename and
 * recreates it. Before truncating (which destroys unread data by design) it waits for the reader.
 *
 * argv: <file> <seed> <records per phase>
 */
import { closeSync, openSync, renameSync, writeSync, fsyncSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const [file, seedArg, perPhaseArg] = process.argv.slice(2) as [string, string, string];
let seed = Number(seedArg) >>> 0;
const perPhase = Number(perPhaseArg);
function rand(): number {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

let seq = 0;
function line(): string {
  const s = seq++;
  return JSON.stringify({ step: s, seq: s, boundary: Math.round(rand() * 1e6) / 1e6, pad: 'x'.repeat(Math.floor(rand() * 200)) }) + '\n';
}

function waitFor(cmd: string): Promise<void> {
  return new Promise((resolve) => {
    const on = (m: { cmd?: string }): void => {
      if (m.cmd === cmd) {
        process.off('message', on);
        resolve();
      }
    };
    process.on('message', on);
  });
}

/** Appends n records in bursts of 1-40 lines, cutting some writes mid-line. */
async function appendPhase(fd: number, n: number): Promise<void> {
  let left = n;
  while (left > 0) {
    const burst = Math.min(left, 1 + Math.floor(rand() * 40));
    left -= burst;
    let text = '';
    for (let i = 0; i < burst; i++) text += line();
    // Write the burst in 1-3 pieces at random cut points: lines arrive in parts.
    const cuts = [0, ...[rand(), rand()].map((r) => Math.floor(r * text.length)).sort((a, b) => a - b), text.length];
    for (let i = 0; i + 1 < cuts.length; i++) {
      if (cuts[i + 1]! > cuts[i]!) writeSync(fd, text.slice(cuts[i], cuts[i + 1]));
      if (rand() < 0.3) await sleep(1);
    }
    if (rand() < 0.2) await sleep(2);
  }
}

async function main(): Promise<void> {
  let fd = openSync(file, 'a');
  await appendPhase(fd, perPhase);
  fsyncSync(fd);
  // verl reopens its log with "wb": the file starts over. Wait until the reader has it all.
  process.send!({ phase: 'before-truncate', written: seq });
  await waitFor('go');
  closeSync(fd);
  fd = openSync(file, 'w');
  await appendPhase(fd, perPhase);
  // Rotation by rename: the old file moves away (a last partial line included), a new one starts.
  writeSync(fd, line());
  process.send!({ phase: 'before-rotate', written: seq });
  await waitFor('go');
  closeSync(fd);
  renameSync(file, `${file}.1`);
  fd = openSync(file, 'a');
  await appendPhase(fd, perPhase);
  // The last line is written in two parts with a pause between them.
  const last = line();
  writeSync(fd, last.slice(0, 10));
  await sleep(30);
  writeSync(fd, last.slice(10));
  closeSync(fd);
  process.send!({ phase: 'done', written: seq });
}

void main();
