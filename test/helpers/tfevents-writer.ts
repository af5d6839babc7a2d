/**
 * A TensorBoard event writer for the tests: Event protobufs encoded by hand (the fields
 * tensorboardX writes for add_scalar, simple_value or a rank-0 tensor) in TFRecord frames.
 */
import { frame } from '../../src/parsers/tfrecord.js';

/** A protobuf varint; a negative int64 (a step of -1) as protobuf writes it: ten bytes of two's complement. */
function varint(n: number): number[] {
  const out: number[] = [];
  let v = n < 0 ? BigInt.asUintN(64, BigInt(n)) : BigInt(n);
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

function key(field: number, wire: number): number[] {
  return varint(field * 8 + wire);
}

function bytesField(field: number, data: number[] | Uint8Array): number[] {
  return [...key(field, 2), ...varint(data.length), ...data];
}

function f64(v: number): number[] {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [...b];
}

function f32(v: number): number[] {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return [...b];
}

export type Encoding = 'simple' | 'float-tensor' | 'double-tensor' | 'image';

function value(tag: string, v: number, enc: Encoding): number[] {
  const tagBytes = bytesField(1, Buffer.from(tag, 'utf8'));
  const scalars = bytesField(9, bytesField(1, bytesField(1, Buffer.from('scalars'))));
  switch (enc) {
    case 'simple':
      return [...tagBytes, ...key(2, 5), ...f32(v)];
    case 'float-tensor':
      return [...tagBytes, ...scalars, ...bytesField(8, [...key(1, 0), ...varint(1), ...bytesField(2, []), ...bytesField(5, f32(v))])];
    case 'double-tensor':
      return [...tagBytes, ...scalars, ...bytesField(8, [...key(1, 0), ...varint(2), ...bytesField(2, []), ...bytesField(6, f64(v))])];
    case 'image':
      return [...tagBytes, ...bytesField(4, [...key(1, 0), ...varint(2), ...key(2, 0), ...varint(2)])];
  }
}

/** One Event with one summary value, framed. */
export function scalarEvent(step: number, wallTime: number, tag: string, v: number, enc: Encoding = 'simple'): Buffer {
  const event = [...key(1, 1), ...f64(wallTime), ...key(2, 0), ...varint(step), ...bytesField(5, bytesField(1, value(tag, v, enc)))];
  return frame(Uint8Array.from(event));
}

/** The event every writer starts a file with. */
export function versionEvent(wallTime: number): Buffer {
  return frame(Uint8Array.from([...key(1, 1), ...f64(wallTime), ...bytesField(3, Buffer.from('brain.Event:2'))]));
}
