/**
 * Mapping of BSON values to the integers stored in Simple-8b (docs/bsoncolumn.md §2.6, §3): zigzag, scaled
 * doubles, ObjectId byte reordering, short strings and binData as 128-bit integers.
 *
 * 64-bit streams carry int64 deltas that wrap. They are handled as two unsigned 32-bit halves
 * ({@link Int64Halves}) rather than `bigint`: each bigint operation allocates, and the bigint encoder ran at
 * 1-3 M values/s. 128-bit streams (strings, binData, decimal128) are rarer and stay on `bigint`.
 *
 * @packageDocumentation
 */

import type { Int64Halves } from '../../util/int64.js';
import { int64ToNumber, kTwo32 } from '../../util/int64.js';

/** 2^53: the scaled double range limit (`-2^53 <= y <= 2^53`). */
const kMaxScaled = 9007199254740992;

/** Multipliers for scale indices 0..4; index 5 stores the raw bits. */
export const kScaleMultipliers: ReadonlyArray<number> = [1, 10, 100, 10000, 100000000];

/** Scale index 5: the double's memory read as an int64. */
export const kMemoryAsInteger = 5;

// One shared 8-byte scratch for double <-> bits conversion: no allocation per value. Little-endian hosts
// only (as every platform Node supports): word 0 is the low half.
const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);

// Multiplying by 2^-32 is exact, and spares the division by 2^32 (a module constant is not folded).
const kTwoPowMinus32 = 1 / kTwo32;

/**
 * Bits 32..63 of the int64 holding an integer-valued number: `floor(x / 2^32)` as uint32.
 *
 * @param x - an integer-valued number, `|x| <= 2^53`; NaN gives 0.
 * @returns the high half.
 */
export function highHalf(x: number): number {
  return Math.floor(x * kTwoPowMinus32) >>> 0;
}

/**
 * Zigzag-encode the 64-bit delta `a - b`: `(d << 1) ^ (d >> 63)` on halves. One step rather than a
 * subtraction then a zigzag: encoders call it per value, and writing the (often negative, so >= 2^31 as
 * unsigned halves) delta to a scratch object in between made V8 hold the object's fields as doubles.
 *
 * @param aLo - low half of `a`.
 * @param aHi - high half of `a`.
 * @param bLo - low half of `b`.
 * @param bHi - high half of `b`.
 * @param out - receives the unsigned zigzag value of `a - b` modulo 2^64.
 */
export function zigzagDelta64(aLo: number, aHi: number, bLo: number, bHi: number, out: Int64Halves): void {
  const lo = (aLo - bLo) | 0;
  const hi = (aHi - bHi - (aLo < bLo ? 1 : 0)) | 0;
  const sign = hi >> 31;
  out.hi = (((hi << 1) | (lo >>> 31)) ^ sign) >>> 0;
  out.lo = ((lo << 1) ^ sign) >>> 0;
}

/**
 * Zigzag-decode a 64-bit value: `(u >> 1) ^ -(u & 1)` on halves.
 *
 * @param lo - low half of the zigzag value.
 * @param hi - high half of the zigzag value.
 * @param out - receives the signed delta.
 */
export function unzigzag64(lo: number, hi: number, out: Int64Halves): void {
  const sign = -(lo & 1);
  out.lo = (((lo >>> 1) | (hi << 31)) ^ sign) >>> 0;
  out.hi = ((hi >>> 1) ^ sign) >>> 0;
}

/**
 * Zigzag-encode a signed delta held exactly in a number (`|d| < 2^52`, e.g. an int32 or bool delta), to
 * halves without going through 64-bit arithmetic.
 *
 * @param d - the delta.
 * @param out - receives the unsigned zigzag value.
 */
export function zigzagNumber(d: number, out: Int64Halves): void {
  const z = d < 0 ? -2 * d - 1 : 2 * d;
  out.lo = z >>> 0;
  out.hi = highHalf(z);
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
 * Zigzag-decode a bigint (the same formula for 64 and 128 bits).
 *
 * @param u - unsigned zigzag value.
 * @returns the signed delta.
 */
export function unzigzag(u: bigint): bigint {
  return (u >> 1n) ^ -(u & 1n);
}

/**
 * `encodeDouble(x, i)` of §3.2: the integer stored for `x` at scale index `i`, or `false` when `x` is not
 * exactly representable at that scale.
 *
 * @param x - the double.
 * @param scaleIndex - 0..5.
 * @param out - receives the encoded int64 when the result is `true`.
 * @returns whether `x` is exact at that scale.
 */
export function encodeDouble(x: number, scaleIndex: number, out: Int64Halves): boolean {
  if (scaleIndex === kMemoryAsInteger) {
    f64[0] = x;
    out.lo = u32[0] ?? 0;
    out.hi = u32[1] ?? 0;
    return true;
  }
  const m = kScaleMultipliers[scaleIndex] ?? 1;
  const y = x * m;
  // The comparison also rejects NaN.
  if (!(y >= -kMaxScaled && y <= kMaxScaled)) return false;
  // llround: half away from zero; `+ 0` turns -0 into the integer 0 the server would hold.
  const r = (y < 0 ? -Math.round(-y) : Math.round(y)) + 0;
  // `Object.is(r / m, x)`: r / m is never NaN nor -0, so only x = -0 is equal without being the same.
  // Spelled out because `Object.is` can end up as a builtin call, and this runs for every double.
  if (r / m !== x || (x === 0 && 1 / x < 0)) return false;
  // |r| <= 2^53, so both halves are exact (see numberToInt64).
  out.lo = r >>> 0;
  out.hi = highHalf(r);
  return true;
}

/**
 * Inverse of {@link encodeDouble}.
 *
 * @param lo - low half of the stored int64.
 * @param hi - high half of the stored int64.
 * @param scaleIndex - 0..5.
 * @returns the double.
 */
export function decodeDouble(lo: number, hi: number, scaleIndex: number): number {
  if (scaleIndex === kMemoryAsInteger) {
    u32[0] = lo;
    u32[1] = hi;
    return f64[0] ?? 0;
  }
  // Rounds to nearest like the server's int64 -> double conversion.
  return int64ToNumber(lo, hi) / (kScaleMultipliers[scaleIndex] ?? 1);
}

/**
 * Whether a double encoded as the int64 `(hi:lo)` at a scale with a multiplier (indices 0 to 4) may also be
 * encoded at a smaller scale: `false` says it is not, without trying them (a double's scale restarts ask
 * this after every block).
 *
 * A smaller scale encodes the value `v` only as an integer `k` with `k / m_i === v`; then `v * m` (the
 * current multiplier `m` is `m_i` times a power of ten) lies within `|k * m / m_i| * 2^-52` of the integer
 * `k * m / m_i`, which below 2^31 in magnitude rounds to it: the encoded value is that integer, a multiple
 * of ten. Larger values are not decided here.
 *
 * @param lo - low half of the encoded value (int32 or uint32 form).
 * @param hi - high half.
 * @returns `false` when no smaller scale encodes the value; `true` when one may.
 */
export function mayEncodeAtSmallerScale(lo: number, hi: number): boolean {
  const value = lo | 0;
  // Outside the int32 range (the high half is not the low half's sign), not decided.
  return (hi | 0) !== value >> 31 || value % 10 === 0;
}

/** Result slot of {@link scaleAndEncodeDouble}; reused, read it before the next call. */
export interface ScaledDouble extends Int64Halves {
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
  let i = minScaleIndex;
  while (i < kMemoryAsInteger && !encodeDouble(x, i, out)) i++;
  if (i === kMemoryAsInteger) encodeDouble(x, i, out);
  out.scaleIndex = i;
}

/**
 * The int64 of an ObjectId's 7 varying bytes (§3.3): from the least significant byte up,
 * `oid[11], oid[3], oid[10], oid[2], oid[9], oid[1], oid[0]`.
 *
 * @param oid - 12 bytes.
 * @param at - offset of the ObjectId in `oid`.
 * @param out - receives the encoded value (non-negative, < 2^56).
 */
export function encodeObjectId(oid: Uint8Array, at: number, out: Int64Halves): void {
  out.lo =
    ((oid[at + 11] ?? 0) |
      ((oid[at + 3] ?? 0) << 8) |
      ((oid[at + 10] ?? 0) << 16) |
      ((oid[at + 2] ?? 0) << 24)) >>>
    0;
  out.hi = (oid[at + 9] ?? 0) | ((oid[at + 1] ?? 0) << 8) | ((oid[at + 0] ?? 0) << 16);
}

/**
 * Write the ObjectId for an encoded value, taking the 5 process-unique bytes from `unique`.
 *
 * @param lo - low half of the value of {@link encodeObjectId}.
 * @param hi - high half (only its low 24 bits are used).
 * @param unique - the bytes `oid[4..8]` of the previous ObjectId.
 * @param out - 12 bytes to fill.
 */
export function decodeObjectId(lo: number, hi: number, unique: Uint8Array, out: Uint8Array): void {
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
  // 32-bit words built with numbers, then one BigInt per word: 4 BigInt steps instead of 16.
  let v = 0n;
  for (let w = (length + 3) >> 2; w > 0; w--) {
    const at = start + (w - 1) * 4;
    const n = Math.min(4, start + length - at);
    let word = 0;
    for (let i = n - 1; i >= 0; i--) word = word * 256 + (bytes[at + i] ?? 0);
    v = (v << 32n) | BigInt(word);
  }
  return v;
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
  // One BigInt step per 32-bit word, bytes split off with number arithmetic.
  for (let i = 0; i < length; i += 4) {
    let word = Number(v & 0xffffffffn);
    v >>= 32n;
    for (let j = i; j < i + 4 && j < length; j++) {
      out[start + j] = word & 0xff;
      word >>>= 8;
    }
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
  // Reversed bytes read little-endian = the bytes read big-endian. Up to 4 bytes at a time go through a
  // number, so a 16-byte string costs 4 BigInt steps instead of 16.
  let v = 0n;
  for (let i = 0; i < length; i += 4) {
    const n = Math.min(4, length - i);
    let word = 0;
    for (let j = 0; j < n; j++) word = word * 256 + (bytes[start + i + j] ?? 0);
    v = (v << BigInt(8 * n)) | BigInt(word);
  }
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
  // Collect bytes least significant first (a 32-bit word per BigInt step), then reverse in place. The
  // length is that of the value without its leading zero bytes.
  let significant = 0;
  while (v !== 0n) {
    let word = Number(v & 0xffffffffn);
    v >>= 32n;
    for (let j = 0; j < 4; j++) {
      out[n++] = word & 0xff;
      if ((word & 0xff) !== 0) significant = n;
      word >>>= 8;
    }
  }
  n = significant;
  for (let i = 0, j = n - 1; i < j; i++, j--) {
    const t = out[i] ?? 0;
    out[i] = out[j] ?? 0;
    out[j] = t;
  }
  return n;
}
