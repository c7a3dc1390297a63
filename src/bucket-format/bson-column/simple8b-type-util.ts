/**
 * Mapping of BSON values to the integers stored in Simple-8b (BSONCOLUMN.md §2.6, §3): zigzag, scaled
 * doubles, ObjectId byte reordering, short strings and binData as 128-bit integers.
 *
 * 64-bit streams carry int64 deltas that wrap, and 128-bit streams carry int128 deltas, so these helpers
 * work on `bigint`: doubles' raw bits, Date and Timestamp values and their deltas do not fit in a JS number.
 *
 * @packageDocumentation
 */

import { wrapInt64, wrapUint64 } from '../../util/int64.js';

/** 2^53: the scaled double range limit (`-2^53 <= y <= 2^53`). */
const kMaxScaled = 9007199254740992;

/** Multipliers for scale indices 0..4; index 5 stores the raw bits. */
export const kScaleMultipliers: ReadonlyArray<number> = [1, 10, 100, 10000, 100000000];

/** Scale index 5: the double's memory read as an int64. */
export const kMemoryAsInteger = 5;

// One shared 8-byte scratch for double <-> bits conversion: no allocation per value.
const f64 = new Float64Array(1);
const i64 = new BigInt64Array(f64.buffer);

/**
 * Zigzag-encode a signed 64-bit delta.
 *
 * @param d - signed delta, already wrapped to int64.
 * @returns the unsigned zigzag value.
 */
export function zigzag64(d: bigint): bigint {
  return wrapUint64((d << 1n) ^ (d >> 63n));
}

/**
 * Zigzag-encode a signed 128-bit delta.
 *
 * @param d - signed delta, already wrapped to int128.
 * @returns the unsigned zigzag value.
 */
export function zigzag128(d: bigint): bigint {
  return BigInt.asUintN(128, (d << 1n) ^ (d >> 127n));
}

/**
 * Zigzag-decode (the same formula for 64 and 128 bits).
 *
 * @param u - unsigned zigzag value.
 * @returns the signed delta.
 */
export function unzigzag(u: bigint): bigint {
  return (u >> 1n) ^ -(u & 1n);
}

/**
 * The raw IEEE-754 bits of a double as a signed int64.
 *
 * @param x - a double.
 * @returns its bits.
 */
export function doubleToBits(x: number): bigint {
  f64[0] = x;
  return i64[0] ?? 0n;
}

/**
 * The double whose IEEE-754 bits are `bits`.
 *
 * @param bits - int64 bits (any bigint; the low 64 bits are used).
 * @returns the double.
 */
export function bitsToDouble(bits: bigint): number {
  i64[0] = wrapInt64(bits);
  return f64[0] ?? 0;
}

/**
 * `encodeDouble(x, i)` of §3.2: the integer stored for `x` at scale index `i`, or `undefined` when `x` is
 * not exactly representable at that scale.
 *
 * @param x - the double.
 * @param scaleIndex - 0..5.
 * @returns the encoded int64, or `undefined`.
 */
export function encodeDouble(x: number, scaleIndex: number): bigint | undefined {
  if (scaleIndex === kMemoryAsInteger) return doubleToBits(x);
  const m = kScaleMultipliers[scaleIndex] ?? 1;
  const y = x * m;
  // The comparison also rejects NaN.
  if (!(y >= -kMaxScaled && y <= kMaxScaled)) return undefined;
  // llround: half away from zero; `+ 0` turns -0 into the integer 0 the server would hold.
  const r = (y < 0 ? -Math.round(-y) : Math.round(y)) + 0;
  if (!Object.is(r / m, x)) return undefined;
  return BigInt(r);
}

/**
 * Inverse of {@link encodeDouble}.
 *
 * @param encoded - the stored int64.
 * @param scaleIndex - 0..5.
 * @returns the double.
 */
export function decodeDouble(encoded: bigint, scaleIndex: number): number {
  if (scaleIndex === kMemoryAsInteger) return bitsToDouble(encoded);
  // Number() rounds to nearest like the server's int64 -> double conversion.
  return Number(wrapInt64(encoded)) / (kScaleMultipliers[scaleIndex] ?? 1);
}

/** Result slot of {@link scaleAndEncodeDouble}; reused, read it before the next call. */
export interface ScaledDouble {
  /** The encoded value. */
  encoded: bigint;
  /** The scale index used. */
  scaleIndex: number;
}

/**
 * Encode `x` at the smallest scale index `>= minScaleIndex` that is exact (index 5 always is).
 *
 * @param x - the double.
 * @param minScaleIndex - smallest index to try.
 * @param out - receives the encoding and the index.
 */
export function scaleAndEncodeDouble(x: number, minScaleIndex: number, out: ScaledDouble): void {
  for (let i = minScaleIndex; i < kMemoryAsInteger; i++) {
    const e = encodeDouble(x, i);
    if (e !== undefined) {
      out.encoded = e;
      out.scaleIndex = i;
      return;
    }
  }
  out.encoded = doubleToBits(x);
  out.scaleIndex = kMemoryAsInteger;
}

/**
 * The int64 of an ObjectId's 7 varying bytes (§3.3): from the least significant byte up,
 * `oid[11], oid[3], oid[10], oid[2], oid[9], oid[1], oid[0]`.
 *
 * @param oid - 12 bytes.
 * @param at - offset of the ObjectId in `oid`.
 * @returns the encoded value (non-negative, < 2^56).
 */
export function encodeObjectId(oid: Uint8Array, at: number): bigint {
  const lo =
    ((oid[at + 11] ?? 0) |
      ((oid[at + 3] ?? 0) << 8) |
      ((oid[at + 10] ?? 0) << 16) |
      ((oid[at + 2] ?? 0) << 24)) >>>
    0;
  const hi = (oid[at + 9] ?? 0) | ((oid[at + 1] ?? 0) << 8) | ((oid[at + 0] ?? 0) << 16);
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * Write the ObjectId for `encoded`, taking the 5 process-unique bytes from `unique`.
 *
 * @param encoded - the int64 of {@link encodeObjectId} (only the low 56 bits are used).
 * @param unique - the bytes `oid[4..8]` of the previous ObjectId.
 * @param out - 12 bytes to fill.
 */
export function decodeObjectId(encoded: bigint, unique: Uint8Array, out: Uint8Array): void {
  const lo = Number(BigInt.asUintN(32, encoded));
  const hi = Number(BigInt.asUintN(32, encoded >> 32n));
  out[11] = lo & 0xff;
  out[3] = (lo >>> 8) & 0xff;
  out[10] = (lo >>> 16) & 0xff;
  out[2] = lo >>> 24;
  out[9] = hi & 0xff;
  out[1] = (hi >>> 8) & 0xff;
  out[0] = (hi >>> 16) & 0xff;
  out.set(unique.subarray(0, 5), 4);
}

/**
 * A 128-bit value from up to 16 little-endian bytes (missing high bytes are zero).
 *
 * @param bytes - source.
 * @param start - first (least significant) byte.
 * @param length - 0..16 bytes.
 * @returns the unsigned value.
 */
export function readUint128LE(bytes: Uint8Array, start: number, length: number): bigint {
  let lo = 0n;
  let hi = 0n;
  // Two 64-bit halves built with numbers, then one BigInt each: fewer BigInt operations per byte.
  for (let i = Math.min(length, 8) - 1; i >= 0; i--) lo = (lo << 8n) | BigInt(bytes[start + i] ?? 0);
  for (let i = length - 1; i >= 8; i--) hi = (hi << 8n) | BigInt(bytes[start + i] ?? 0);
  return (hi << 64n) | lo;
}

/**
 * Write the low `length` bytes of a 128-bit value little-endian.
 *
 * @param value - unsigned value.
 * @param out - destination.
 * @param start - offset of the least significant byte.
 * @param length - bytes to write (0..16).
 */
export function writeUint128LE(value: bigint, out: Uint8Array, start: number, length: number): void {
  let v = BigInt.asUintN(128, value);
  for (let i = 0; i < length; i++) {
    out[start + i] = Number(v & 0xffn);
    v >>= 8n;
  }
}

/**
 * §3.4: the 128-bit integer for a string's UTF-8 bytes (without length and NUL), or `undefined` when it is
 * longer than 16 bytes or starts with a NUL byte.
 *
 * @param bytes - buffer holding the string.
 * @param start - first byte of the string.
 * @param length - byte length without the trailing NUL.
 * @returns the encoded value, or `undefined`.
 */
export function encodeString(bytes: Uint8Array, start: number, length: number): bigint | undefined {
  if (length > 16 || (length > 0 && bytes[start] === 0)) return undefined;
  // Reversed bytes read little-endian = the bytes read big-endian.
  let v = 0n;
  for (let i = 0; i < length; i++) v = (v << 8n) | BigInt(bytes[start + i] ?? 0);
  return v;
}

/**
 * Inverse of {@link encodeString}: the string bytes for a 128-bit value.
 *
 * @param value - unsigned 128-bit value.
 * @param out - at least 16 bytes of scratch.
 * @returns the number of bytes written to the front of `out`.
 */
export function decodeString(value: bigint, out: Uint8Array): number {
  let v = BigInt.asUintN(128, value);
  let n = 0;
  // Collect bytes least significant first, then reverse in place.
  while (v !== 0n) {
    out[n++] = Number(v & 0xffn);
    v >>= 8n;
  }
  for (let i = 0, j = n - 1; i < j; i++, j--) {
    const t = out[i] ?? 0;
    out[i] = out[j] ?? 0;
    out[j] = t;
  }
  return n;
}
