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
