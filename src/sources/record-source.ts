/** A file of framed binary records read as it grows (RecordTailer): TensorBoard event files. */
import type { FileKind } from '../parsers/index.js';
import type { RecordParser } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import { RecordTailer } from './record-tailer.js';
import { FileSource, type FileCheckpoint, type Sink, type SourceContext } from './source.js';
import type { ReadOutcome } from './tailer.js';

export class RecordSource extends FileSource<RecordParser> {
  private readonly tailer: RecordTailer;
  /** The parser's count of undecodable records at the last read (new ones count as malformed). */
  private undecodable = 0;

  constructor(file: string, kind: FileKind, place: FilePlace, ctx: SourceContext, saved: FileCheckpoint | null) {
    super(file, kind, place, ctx, saved);
    const framing = this.input.framing;
    if (framing === undefined) throw new Error(`format ${this.input.id} reads records but declares no framing`);
    this.tailer = new RecordTailer(
      file,
      saved?.records ?? null,
      framing,
      {
        corrupt: ({ offset }) =>
          this.problem({
            file,
            kind: 'corrupt',
            message: `a record length at byte ${offset} does not match its CRC: the file is corrupt from there; what was read before it is kept, and the file is read again only once it is rewritten`,
            offset,
          }),
        rewritten: ({ from }) => {
          this.counters.truncations++;
          this.problem({
            file,
            kind: 'truncated',
            message: `file was rewritten (was read to byte ${from}); reading it again from the start`,
            offset: from,
          });
        },
      },
      kind,
    );
  }

  poll(sink: Sink, now: number): Promise<ReadOutcome> {
    return this.tailer.read((records, badData, ahead) => this.apply(records, badData, ahead, sink, now));
  }

  private apply(data: Uint8Array[], badData: number, ahead: unknown, sink: Sink, now: number): void {
    const parser = this.parser;
    this.counters.lines += data.length + badData;
    for (let i = 0; i < badData; i++) this.malformed('a record whose data does not match its CRC', this.tailer.checkpoint().offset);
    const limit = this.stepLimit;
    const all = parser.records(data, ahead);
    const out = limit === null ? all : all.filter((r) => r.kind !== 'metrics' || r.step === null || r.step < limit);
    const undecodable = parser.counts().undecodable;
    for (; this.undecodable < undecodable; this.undecodable++)
      this.malformed(`a record that does not decode as ${parser.format()}`, this.tailer.checkpoint().offset);
    this.readAt(now);
    this.give(out, sink);
  }

  protected position(): Pick<FileCheckpoint, 'tail' | 'records' | 'doc'> {
    return { tail: null, records: this.tailer.checkpoint(), doc: null };
  }
}
