/**
 * The source for a file, by its format's read mode: lines as they are appended, a document
 * rewritten whole, or framed binary records (see source.ts for what every source does).
 */
import { inputOf, type FileKind } from '../parsers/index.js';
import { DocumentSource } from './document-source.js';
import { LineSource } from './line-source.js';
import type { FilePlace } from './place.js';
import { RecordSource } from './record-source.js';
import type { FileCheckpoint, FileSource, SourceContext } from './source.js';

export type { Batch, FileCheckpoint, FileCounters, FileProblem, FileSource, NullCount, Sink, SourceContext } from './source.js';
export { NULL_VALUES } from './source.js';

const BY_MODE = { lines: LineSource, document: DocumentSource, records: RecordSource } as const;

export function openSource(
  file: string,
  kind: FileKind,
  place: FilePlace,
  ctx: SourceContext,
  saved: FileCheckpoint | null = null,
): FileSource {
  return new BY_MODE[inputOf(kind).read](file, kind, place, ctx, saved);
}
