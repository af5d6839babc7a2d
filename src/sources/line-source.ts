/** A file read by lines as it grows (FileTailer): JSONL, text logs, BAR-RAG's debug logs. */
import type { LineParser, ParsedRecord } from '../parsers/types.js';
import { isMalformed } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import { FileSource, type FileCheckpoint, type Sink, type SourceContext } from './source.js';
import type { FileKind } from '../parsers/index.js';
import { FileTailer, type ReadOutcome, type TailNotices } from './tailer.js';

export class LineSource extends FileSource<LineParser> {
  private readonly tailer: FileTailer;

  constructor(file: string, kind: FileKind, place: FilePlace, ctx: SourceContext, saved: FileCheckpoint | null) {
    super(file, kind, place, ctx, saved);
    this.tailer = new FileTailer(file, ctx.tail, saved?.tail ?? null, this.notices());
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

  poll(sink: Sink, now: number, maxBytes?: number): Promise<ReadOutcome> {
    return this.tailer.read((lines, endOffset) => this.apply(lines, endOffset, sink, now), maxBytes);
  }

  private apply(lines: string[], endOffset: number, sink: Sink, now: number): void {
    const out: ParsedRecord[] = [];
    for (const line of lines) {
      this.counters.lines++;
      const r = this.parser.line(line);
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
