/**
 * TFRecord framing, as TensorBoard event files use it: each record is a uint64 little-endian
 * length, the masked CRC32C of those 8 bytes, the data, and the masked CRC32C of the data. Mask:
 * ((crc >>> 15) | (crc << 17)) + 0xa282ead8. Pure: the caller brings the bytes (sources/ tails).
 */
import type { Framing, Frames } from './types.js';

/**
 * CRC32C (Castagnoli, reflected polynomial 0x82f63b78), eight bytes a step ("slicing by 8":
 * eight 256-entry tables, T[k][b] the CRC of byte b followed by k zero bytes). A scalar event is
 * ~100 bytes, and a table lookup a byte made the CRC most of the cost of reading event files.
 */
const T = ((): Uint32Array => {
  const t = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  for (let k = 1; k < 8; k++) {
    for (let i = 0; i < 256; i++) {
      const prev = t[(k - 1) * 256 + i]!;
      t[k * 256 + i] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  }
  return t;
})();

export function crc32c(buf: Uint8Array, start = 0, end = buf.length): number {
  let c = 0xffffffff;
  let i = start;
  for (; i + 8 <= end; i += 8) {
    const a = c ^ (buf[i]! | (buf[i + 1]! << 8) | (buf[i + 2]! << 16) | (buf[i + 3]! << 24));
    c =
      T[0x700 + (a & 0xff)]! ^
      T[0x600 + ((a >>> 8) & 0xff)]! ^
      T[0x500 + ((a >>> 16) & 0xff)]! ^
      T[0x400 + (a >>> 24)]! ^
      T[0x300 + buf[i + 4]!]! ^
      T[0x200 + buf[i + 5]!]! ^
      T[0x100 + buf[i + 6]!]! ^
      T[buf[i + 7]!]!;
  }
  for (; i < end; i++) c = T[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function maskedCrc(buf: Uint8Array, start = 0, end = buf.length): number {
  const c = crc32c(buf, start, end);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** A record longer than this is taken for corruption (a TensorBoard scalar event is ~100 bytes). */
export const MAX_RECORD_BYTES = 64 << 20;

/** TFRecord frames: uint64 length, masked CRC32C of it, the data, masked CRC32C of the data. */
export const TFRECORD: Framing = { split: (buf) => frames(buf), minBytes: 12 };

/** Splits `buf` into TFRecord frames. */
export function frames(buf: Buffer): Frames {
  const records: Uint8Array[] = [];
  let at = 0;
  let badData = 0;
  while (buf.length - at >= 12) {
    if (buf.readUInt32LE(at + 8) !== maskedCrc(buf, at, at + 8)) return { records, consumed: at, badData, corruptAt: at };
    // Two 32-bit halves: a BigInt per record cost more than its CRC.
    const len = buf.readUInt32LE(at) + buf.readUInt32LE(at + 4) * 0x1_0000_0000;
    if (len > MAX_RECORD_BYTES) return { records, consumed: at, badData, corruptAt: at };
    if (buf.length - at < 12 + len + 4) break;
    const start = at + 12;
    const end = start + len;
    if (buf.readUInt32LE(end) === maskedCrc(buf, start, end)) records.push(buf.subarray(start, end));
    else badData++;
    at = end + 4;
  }
  return { records, consumed: at, badData, corruptAt: null };
}

/** One record framed, for writers (tests and benchmarks). */
export function frame(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc(out, 0, 8), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc(data), 12 + data.length);
  return out;
}
