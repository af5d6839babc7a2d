/** A file read by lines as it grows (FileTailer): JSONL, text logs, BAR-RAG's debug logs. */
import type { LineParser, LineResult, ParsedRecord } from '../parsers/types.js';
import { isMalformed } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import { FileSource, type FileCheckpoint, type Sink, type SourceContext } from './source.js';
import type { FileKind } from '../parsers/index.js';
import { FileTailer, type ReadAhead, type ReadOutcome, type TailNotices } from './tailer.js';
import { promises as fsp } from 'node:fs';

/** Bytes of a line file's start looked at for binary content before its first read. */
const HEAD_BYTES = 4096;
/** The start of a W&B run file (`run-<id>.wandb`): the magic, then its version. */
const WANDB_MAGIC = ':W&B';

/**
 * Why a file named like a log is not one, from its first bytes, or null: a W&B run file, a NUL
 * byte in its first line, or a head mostly of control bytes. A log's first line is text; a
 * corrupt line further on is a malformed line, counted and skipped as any other. A run of NUL
 * bytes at the very start is not counted: a log cut by copytruncate while its writer went on at
 * the old offset begins with a hole of zeros.
 */
export function binaryReason(head: Buffer): string | null {
  if (head.subarray(0, WANDB_MAGIC.length).toString('latin1') === WANDB_MAGIC)
    return 'a W&B run file (binary) under the name of a text log: barwatch reads W&B run files by their own name, run-<id>.wandb';
  let i = 0;
  while (i < head.length && head[i] === 0) i++;
  const eol = head.indexOf(0x0a, i);
  const nul = head.indexOf(0, i);
  if (nul !== -1 && (eol === -1 || nul < eol)) return `a binary file (a NUL byte at byte ${nul}, in its first line), not a text log`;
  let control = 0;
  for (let j = i; j < head.length; j++) {
    const b = head[j]!;
    // NUL bytes after the first line are left to the lines: a sparse hole (a writer past a
    // truncation) or a corrupt line is a line over the limit or a malformed one, not a binary file.
    if (b !== 0x00 && b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d && b !== 0x1b) control++;
  }
  return head.length - i >= 64 && control * 4 > head.length - i
    ? `a binary file (${control} control bytes in its first ${head.length - i}), not a text log`
    : null;
}

export class LineSource extends FileSource<LineParser> {
  private readonly tailer: FileTailer;
  /** Whether its first bytes were looked at for binary content (a file resumed from a checkpoint was). */
  private looked: boolean;

  constructor(file: string, kind: FileKind, place: FilePlace, ctx: SourceContext, saved: FileCheckpoint | null) {
    super(file, kind, place, ctx, saved);
    // A backlog's lines are read on the decode thread where the format and its parser can take them.
    const ahead =
      this.input.linesAhead !== undefined && this.parser.fromValues !== undefined ? { kind, framing: this.input.linesAhead } : null;
    this.tailer = new FileTailer(file, ctx.tail, saved?.tail ?? null, this.notices(), ahead);
    this.looked = (saved?.tail?.offset ?? 0) > 0;
  }

  /** Looks at the first bytes once there are some: a binary file is refused, reported once, never read. */
  private async lookAtHead(): Promise<void> {
    const head = await fsp
      .open(this.file, 'r')
      .then(async (fh) => {
        try {
          const buf = Buffer.alloc(HEAD_BYTES);
          const { bytesRead } = await fh.read(buf, 0, HEAD_BYTES, 0);
          return buf.subarray(0, bytesRead);
        } finally {
          await fh.close();
        }
      })
      .catch(() => null);
    // Gone or unreadable: the tailer's read says so. Empty: looked at again at the next read.
    if (head === null || head.length === 0) return;
    this.looked = true;
    this.refused = binaryReason(head);
    if (this.refused !== null) this.problem({ file: this.file, kind: 'binary', message: `not read: ${this.refused}` });
  }

  private notices(): TailNotices {
    return {
      truncated: ({ from, rewritten }) => {
        this.counters.truncations++;
        const how = rewritten
          ? `truncated and rewritten past byte ${from} (its first line changed)`
          : `truncated (was read to byte ${from})`;
        this.problem({ file: this.file, kind: 'truncated', message: `file was ${how}; reading it again from the start`, offset: from });
      },
      rotated: ({ reason }) => {
        this.counters.rotations++;
        const why = reason === 'inode' ? 'a new file replaced it' : 'it was replaced while barwatch was stopped';
        this.problem({ file: this.file, kind: 'rotated', message: `file was rotated (${why}); reading the new file from the start` });
      },
      longLine: ({ offset, bytes }) => {
        this.counters.longLines++;
        this.problem({
          file: this.file,
          kind: 'long-line',
          message: `skipped a line of ${bytes} bytes at byte ${offset} (longer than the line limit)`,
          offset,
        });
      },
    };
  }

  override suspectPath(): void {
    this.tailer.suspectPath();
  }

  override unchangedOnDisk(): boolean {
    return this.refused === null && this.tailer.unchangedOnDisk();
  }

  poll(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome> {
    // Once the head was looked at, the tailer's promise itself: no frame of this function's waits on it.
    return this.looked ? this.readTail(sink, now, maxBytes) : this.pollFirst(sink, now, maxBytes);
  }

  /** A poll before the head was looked at (and again while the file is empty or gone). */
  private async pollFirst(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome> {
    await this.lookAtHead();
    return this.readTail(sink, now, maxBytes);
  }

  private readTail(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome> {
    if (this.refused !== null) return Promise.resolve('idle');
    return this.tailer.read((lines, endOffset, ahead) => this.apply(lines, endOffset, sink, now, ahead), maxBytes);
  }

  private apply(lines: string[], endOffset: number, sink: Sink, now: number, ahead?: ReadAhead): void {
    const out: ParsedRecord[] = [];
    for (let i = 0; i < lines.length; i++) {
      this.counters.lines++;
      const j = ahead === undefined ? -1 : ahead.index[i]!;
      let r: LineResult | null = null;
      if (j >= 0) {
        const read = ahead!.lines;
        r = this.parser.fromValues!(read.keys[read.ids[j]!]!, read.values, read.at[j]!);
      }
      r ??= this.parser.line(j >= 0 ? ahead!.text(i) : lines[i]!);
      if (isMalformed(r)) {
        this.malformed(r.error, endOffset);
        continue;
      }
      for (const rec of r) out.push(rec);
    }
    if (lines.length > 0) this.readAt(now);
    this.give(out, sink);
  }

  protected position(): Pick<FileCheckpoint, 'tail' | 'records' | 'doc'> {
    return { tail: this.tailer.checkpoint(), records: null, doc: null };
  }

  override async close(): Promise<void> {
    await this.tailer.close();
  }
}
