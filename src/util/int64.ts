/**
 * 64-bit wrapping of bigints without `BigInt.asIntN(64, ...)` / `BigInt.asUintN(64, ...)`.
 *
 * @packageDocumentation
 */

// One 8-byte scratch shared by both functions: no allocation per call.
const wrapSigned = new BigInt64Array(1);
const wrapUnsigned = new BigUint64Array(wrapSigned.buffer);

/**
 * `BigInt.asIntN(64, x)`, computed by a store to a `BigInt64Array` (which wraps modulo 2^64).
 *
 * Node 20's optimizing compiler (V8 11.3) can crash the process ("RepresentationChangerError: Phi of
 * kRepTagged (SignedBigInt64) cannot be changed to kRepWord64") when `BigInt.asIntN(64, ...)` or
 * `BigInt.asUintN(64, ...)` values flow through loop phis; the typed-array store is not lowered that way.
 *
 * @param x - any bigint.
 * @returns `x` wrapped to a signed 64-bit value.
 */
export function wrapInt64(x: bigint): bigint {
  wrapSigned[0] = x;
  return wrapSigned[0];
}

/**
 * `BigInt.asUintN(64, x)` by a typed-array store; see {@link wrapInt64} for why.
 *
 * @param x - any bigint.
 * @returns `x` wrapped to an unsigned 64-bit value.
 */
export function wrapUint64(x: bigint): bigint {
  wrapUnsigned[0] = x;
  return wrapUnsigned[0];
}

/**
 * A 64-bit integer as two unsigned 32-bit halves (each in [0, 2^32)), read as two's complement where a
 * signed value is meant.
 *
 * The BSONColumn codec keeps int64 deltas in this form rather than as `bigint`: every operation is a few
 * 32-bit instructions that V8 keeps unboxed, where each `bigint` operation allocates a heap object (the
 * codec ran 3-5x slower on bigints). The helpers below write their result into a caller-owned `out`
 * object so hot loops allocate nothing.
 */
export interface Int64Halves {
  /** Bits 0..31, unsigned. */
  lo: number;
  /** Bits 32..63, unsigned. */
  hi: number;
}

/** 2^32. */
export const kTwo32 = 4294967296;

/**
 * `out = a + b` modulo 2^64.
 *
 * @param aLo - low half of `a`.
 * @param aHi - high half of `a`.
 * @param bLo - low half of `b`.
 * @param bHi - high half of `b`.
 * @param out - receives the sum.
 */
export function add64(aLo: number, aHi: number, bLo: number, bHi: number, out: Int64Halves): void {
  const lo = (aLo + bLo) >>> 0;
  // The low halves are unsigned and below 2^32, so their sum wrapped exactly when it is below either one.
  out.hi = (aHi + bHi + (lo < aLo ? 1 : 0)) >>> 0;
  out.lo = lo;
}

/**
 * `out = a - b` modulo 2^64.
 *
 * @param aLo - low half of `a`.
 * @param aHi - high half of `a`.
 * @param bLo - low half of `b`.
 * @param bHi - high half of `b`.
 * @param out - receives the difference.
 */
export function sub64(aLo: number, aHi: number, bLo: number, bHi: number, out: Int64Halves): void {
  out.hi = (aHi - bHi - (aLo < bLo ? 1 : 0)) >>> 0;
  out.lo = (aLo - bLo) >>> 0;
}

/**
 * The signed int64 `(lo, hi)` as the nearest double (ties to even), as `Number(bigint)` rounds: `hi * 2^32`
 * is exact and one addition rounds once.
 *
 * @param lo - low half.
 * @param hi - high half.
 * @returns the value as a number.
 */
export function int64ToNumber(lo: number, hi: number): number {
  return (hi | 0) * kTwo32 + lo;
}

/**
 * The halves of an integer-valued number in int64 range (wrapping modulo 2^64 outside it is not needed by
 * any caller). Both steps are exact: `>>> 0` reduces modulo 2^32, and dividing by 2^32 only moves the
 * exponent.
 *
 * @param x - an integer-valued number, `|x| < 2^63`.
 * @param out - receives the halves.
 */
export function numberToInt64(x: number, out: Int64Halves): void {
  out.lo = x >>> 0;
  out.hi = Math.floor(x / kTwo32) >>> 0;
}

/**
 * The int64 `(lo, hi)` as a bigint.
 *
 * @param lo - low half.
 * @param hi - high half.
 * @returns the signed value.
 */
export function int64ToBigInt(lo: number, hi: number): bigint {
  return (BigInt(hi | 0) << 32n) | BigInt(lo);
}
