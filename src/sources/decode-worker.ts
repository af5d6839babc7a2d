/**
 * The decode thread (decode-ahead.ts starts it): each part handed to it is read from the file the
 * reading thread holds open, split and decoded by its format's AheadFraming, and handed back with
 * its bytes, in the order the parts came.
 */
import { readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { AHEAD_FRAMINGS } from '../parsers/ahead.js';
import type { AheadReply, AheadRequest } from './decode-ahead.js';

const port = parentPort;
/** The id of the latest part the reading thread waits for (decode-ahead.ts: DecodeThread.hurry). */
const waitedFor = (workerData as { hurry?: Int32Array } | null)?.hurry ?? new Int32Array(1);
/** The id of the latest part handed back (DecodeThread.handedBack). */
const handedBack = (workerData as { done?: Int32Array } | null)?.done ?? new Int32Array(1);
if (port !== null) {
  port.on('message', (m: AheadRequest) => {
    const buf = Buffer.allocUnsafeSlow(m.want);
    let got: number;
    try {
      got = readSync(m.fd, buf, 0, m.want, m.at);
    } catch {
      const failed: AheadReply = {
        id: m.id,
        buf: null,
        got: 0,
        consumed: 0,
        badData: 0,
        corruptAt: null,
        spans: new Int32Array(0),
        extras: [],
        decoded: null,
      };
      port.postMessage(failed);
      Atomics.store(handedBack, 0, m.id);
      return;
    }
    const { frames, decoded, transfer } = AHEAD_FRAMINGS[m.kind]!.decode(
      buf.subarray(0, got),
      m.at,
      m.share,
      () => Atomics.load(waitedFor, 0) >= m.id,
    );
    // Records are views into the part, but one of several chunks is a copy: its bytes go along.
    const spans = new Int32Array(frames.records.length * 2);
    const extras: Uint8Array[] = [];
    frames.records.forEach((r, i) => {
      const own = r.buffer === buf.buffer;
      spans[2 * i] = own ? r.byteOffset : -1;
      spans[2 * i + 1] = own ? r.byteLength : extras.push(r) - 1;
    });
    const reply: AheadReply = {
      id: m.id,
      buf: buf.buffer,
      got,
      consumed: frames.consumed,
      badData: frames.badData,
      corruptAt: frames.corruptAt,
      spans,
      extras,
      decoded,
    };
    port.postMessage(reply, [buf.buffer, spans.buffer, ...transfer]);
    Atomics.store(handedBack, 0, m.id);
  });
}
