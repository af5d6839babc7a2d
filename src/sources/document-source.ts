/** A file rewritten whole by its writer, read again whole when it changes: trainer_state.json, YAML configs. */
import { constants, promises as fsp } from 'node:fs';
import type { FileKind } from '../parsers/index.js';
import type { DocumentParser } from '../parsers/types.js';
import { isMalformed } from '../parsers/types.js';
import type { FilePlace } from './place.js';
import { FileSource, type DocSignature, type FileCheckpoint, type Sink, type SourceContext } from './source.js';
import type { ReadOutcome } from './tailer.js';

export const MAX_DOCUMENT_BYTES = 64 << 20;

export class DocumentSource extends FileSource<DocumentParser> {
  private doc: DocSignature | null;

  constructor(file: string, kind: FileKind, place: FilePlace, ctx: SourceContext, saved: FileCheckpoint | null) {
    super(file, kind, place, ctx, saved);
    this.doc = saved?.doc ?? null;
  }

  async poll(sink: Sink, now: number): Promise<ReadOutcome> {
    // Opened without blocking and checked on the handle: a FIFO named like a config would hang a
    // plain read (and shutdown with it), a link to /dev/zero would read without end. Only
    // regular files are read, as the line tailers do.
    let fh;
    try {
      fh = await fsp.open(this.file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
      throw err;
    }
    let text: string;
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error(`not a regular file: ${this.file}`), { code: 'ENOTFILE' });
      const sig: DocSignature = { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
      const d = this.doc;
      if (d !== null && d.dev === sig.dev && d.ino === sig.ino && d.size === sig.size && d.mtimeMs === sig.mtimeMs) return 'idle';
      if (st.size > MAX_DOCUMENT_BYTES) {
        this.doc = sig;
        this.problem({
          file: this.file,
          kind: 'too-large',
          message: `file is ${st.size} bytes, over the ${MAX_DOCUMENT_BYTES}-byte limit for whole-file formats; not read`,
        });
        return 'idle';
      }
      // At most the limit, even if the file grows while it is read.
      const buf = Buffer.alloc(Math.min(st.size, MAX_DOCUMENT_BYTES));
      let got = 0;
      for (let n = -1; n !== 0 && got < buf.length; got += n) n = (await fh.read(buf, got, buf.length - got, got)).bytesRead;
      text = buf.subarray(0, got).toString('utf8');
      this.doc = sig;
    } finally {
      await fh.close();
    }
    this.counters.lines++;
    this.readAt(now);
    const r = this.parser.document(text);
    if (isMalformed(r)) {
      // A document caught mid-write reads as malformed; the next change re-reads it.
      this.malformed(r.error, 0);
      return 'idle';
    }
    this.give(r, sink);
    const unread = this.parser.unreadPart?.() ?? null;
    if (unread !== null && unread !== this.partial) this.problem({ file: this.file, kind: 'partial', message: unread });
    this.partial = unread;
    return 'idle';
  }

  protected position(): Pick<FileCheckpoint, 'tail' | 'records' | 'doc'> {
    return { tail: null, records: null, doc: this.doc };
  }
}
