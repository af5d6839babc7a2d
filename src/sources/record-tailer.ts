/**
 * Tailing a file of TFRecord frames (TensorBoard event files) from a saved offset. A frame cut at
 * the end of a file still being written waits for its rest, exactly like a partial line. A bad
 * length CRC is corruption: reported once, what was read is kept, and the file is not read again
 * until it is rewritten (a new inode, or shorter than what was read). A bad data CRC skips that
 * record, counted. The file is identified by device and inode; a file that shrank was rewritten.
 */
import { constants, promises as fsp } from 'node:fs';
import { MAX_RECORD_BYTES } from '../parsers/tfrecord.js';
import type { Framing } from '../parsers/types.js';
import type { ReadOutcome } from './tailer.js';

export interface RecordCheckpoint {
  /** End of the last complete frame read. */
  offset: number;
  dev: number;
  ino: number;
  /** Where a bad length CRC was found: reading stops there until the file is rewritten. */
  corruptAt: number | null;
}

export interface RecordNotices {
  corrupt?(info: { offset: number }): void;
  rewritten?(info: { from: number }): void;
}

/** Bytes read per poll before yielding to other files. */
const BUDGET = 16 << 20;

export class RecordTailer {
  private state: RecordCheckpoint;

  constructor(
    readonly file: string,
    saved: RecordCheckpoint | null,
    private readonly framing: Framing,
    private readonly notices: RecordNotices = {},
  ) {
    this.state = saved ?? { offset: 0, dev: -1, ino: -1, corruptAt: null };
  }

  checkpoint(): RecordCheckpoint {
    return { ...this.state };
  }

  /** Reads new complete frames; `deliver` gets their data and the count of frames whose data CRC failed. */
  async read(deliver: (records: Uint8Array[], badData: number) => void): Promise<ReadOutcome> {
    let fh: fsp.FileHandle;
    try {
      // Non-blocking: a FIFO put in the file's place must not hang the reader.
      fh = await fsp.open(this.file, constants.O_RDONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
      throw err;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw Object.assign(new Error(`${this.file} is not a regular file`), { code: 'ENOTFILE' });
      const s = this.state;
      const known = s.dev !== -1;
      if (known && (st.dev !== s.dev || st.ino !== s.ino || st.size < s.offset)) {
        this.notices.rewritten?.({ from: s.offset });
        this.state = { offset: 0, dev: st.dev, ino: st.ino, corruptAt: null };
      } else if (!known) {
        this.state = { ...s, dev: st.dev, ino: st.ino };
      }
      const cur = this.state;
      if (cur.corruptAt !== null || st.size <= cur.offset) return 'idle';
      const left = st.size - cur.offset;
      let want = Math.min(left, BUDGET);
      let buf: Buffer;
      let got: number;
      let f;
      for (;;) {
        buf = Buffer.alloc(want);
        got = (await fh.read(buf, 0, want, cur.offset)).bytesRead;
        f = this.framing.split(buf.subarray(0, got), cur.offset);
        // One record larger than the budget: read more, up to the record limit.
        if (f.consumed > 0 || f.corruptAt !== null || got < want || want >= left || want > MAX_RECORD_BYTES) break;
        want = Math.min(want * 2, left);
      }
      if (f.records.length > 0 || f.badData > 0) deliver(f.records, f.badData);
      cur.offset += f.consumed;
      if (f.corruptAt !== null) {
        cur.corruptAt = cur.offset;
        this.notices.corrupt?.({ offset: cur.offset });
        return 'idle';
      }
      return f.consumed > 0 && st.size - cur.offset >= this.framing.minBytes && got === want && want >= BUDGET ? 'more' : 'idle';
    } finally {
      await fh.close();
    }
  }
}

/** The complete records in the first 64 KiB of a file (none when it cannot be read). */
export async function firstRecords(file: string, framing: Framing): Promise<Uint8Array[]> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch {
    return [];
  }
  try {
    const buf = Buffer.alloc(64 << 10);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return framing.split(buf.subarray(0, bytesRead), 0).records;
  } catch {
    return [];
  } finally {
    await fh.close();
  }
}
