/**
 * Addition and multiplication of BSON numbers with MongoDB's type rules (the server's `SafeNum`, used by
 * the `$inc` and `$mul` update operators): the result has the wider type of the two operands, in the order
 * int32 < int64 < double < decimal128; an int32 result that overflows becomes an int64, an int64 result
 * that overflows is no result (the operator fails).
 *
 * Values are as tsbuckets represents them (bson-value.ts): an int32 is a JS number (or an `Int32`), an
 * int64 a `Long` (or a `bigint`), a double a JS number or a `Double` (an integral result is a `Double`, so
 * that it stays a double when written), a decimal a `Decimal128` — recognised by `_bsontype`, from any copy
 * of js-bson. A double meets a decimal as the server converts it: rounded to 15 significant digits.
 *
 * @packageDocumentation
 */
import { Decimal128, Double, Long } from 'bson';

import { bsonNumberValue, isInt32Number } from './bson-value.js';

/** The numeric BSON types, widest last. */
export type NumericKind = 'int32' | 'int64' | 'double' | 'decimal';

const kWidth: Readonly<Record<NumericKind, number>> = { int32: 0, int64: 1, double: 2, decimal: 3 };

/**
 * The numeric BSON type of a value.
 *
 * @param v - any value.
 * @returns its type, or `undefined` when it is not a number.
 */
export function numericKind(v: unknown): NumericKind | undefined {
  if (typeof v === 'number') return isInt32Number(v) ? 'int32' : 'double';
  if (typeof v === 'bigint') return 'int64';
  if (typeof v !== 'object' || v === null) return undefined;
  switch ((v as { _bsontype?: unknown })._bsontype) {
    case 'Int32':
      return 'int32';
    case 'Long':
      return 'int64';
    case 'Double':
      return 'double';
    case 'Decimal128':
      return 'decimal';
    default:
      return undefined;
  }
}

/** The operations. */
export type ArithmeticOperation = 'add' | 'multiply';

/**
 * `a + b` or `a × b` with MongoDB's type rules (see the module comment).
 *
 * @param operation - `'add'` or `'multiply'`.
 * @param a - a BSON number.
 * @param b - a BSON number.
 * @returns the result, or `undefined` when an int64 result overflows.
 * @throws TypeError when an operand is not a number (callers check with {@link numericKind}).
 */
export function bsonArithmetic(operation: ArithmeticOperation, a: unknown, b: unknown): unknown {
  const ka = numericKind(a);
  const kb = numericKind(b);
  if (ka === undefined || kb === undefined) throw new TypeError('bsonArithmetic: operands must be numbers');
  const kind = kWidth[ka] >= kWidth[kb] ? ka : kb;
  switch (kind) {
    case 'int32':
    case 'int64': {
      const x = bigIntOf(a);
      const y = bigIntOf(b);
      const r = operation === 'add' ? x + y : x * y;
      if (kind === 'int32' && r >= -0x80000000n && r <= 0x7fffffffn) return Number(r);
      return r >= -(2n ** 63n) && r < 2n ** 63n ? Long.fromBigInt(r) : undefined;
    }
    case 'double': {
      const x = bsonNumberValue(a) as number;
      const y = bsonNumberValue(b) as number;
      const r = operation === 'add' ? x + y : x * y;
      return Number.isInteger(r) || Object.is(r, -0) ? new Double(r) : r;
    }
    case 'decimal':
      return decimalArithmetic(operation, decimalOf(a), decimalOf(b));
  }
}

/** An int32 or int64 as a bigint. */
function bigIntOf(v: unknown): bigint {
  if (typeof v === 'number') return BigInt(v);
  if (typeof v === 'bigint') return v;
  return BigInt((v as { toString(): string }).toString());
}

/** A decimal as sign, coefficient and exponent, or one of the special values. */
type Decimal =
  | {
      readonly kind: 'finite';
      readonly negative: boolean;
      readonly coefficient: bigint;
      readonly exponent: number;
    }
  | { readonly kind: 'nan' }
  | { readonly kind: 'infinity'; readonly negative: boolean };

const kDecimalText = /^(-?)(\d+)(?:\.(\d+))?(?:E([+-]?\d+))?$/u;

/** Any BSON number as a decimal: a double rounded to 15 significant digits, integers exactly. */
function decimalOf(v: unknown): Decimal {
  const kind = numericKind(v);
  if (kind === 'int32' || kind === 'int64') {
    const n = bigIntOf(v);
    return { kind: 'finite', negative: n < 0n, coefficient: n < 0n ? -n : n, exponent: 0 };
  }
  if (kind === 'double') {
    const x = bsonNumberValue(v) as number;
    if (Number.isNaN(x)) return { kind: 'nan' };
    if (!Number.isFinite(x)) return { kind: 'infinity', negative: x < 0 };
    return parseDecimal(x.toExponential(14).replace('e', 'E'), Object.is(x, -0));
  }
  return parseDecimal((v as { toString(): string }).toString(), false);
}

/** A decimal's text (`Decimal128.toString`, or a double's 15-digit exponential form). */
function parseDecimal(text: string, negativeZero: boolean): Decimal {
  if (text === 'NaN') return { kind: 'nan' };
  if (text === 'Infinity' || text === '-Infinity')
    return { kind: 'infinity', negative: text.startsWith('-') };
  const m = kDecimalText.exec(text);
  if (m === null) return { kind: 'nan' };
  const fraction = m[3] ?? '';
  return {
    kind: 'finite',
    negative: m[1] === '-' || negativeZero,
    coefficient: BigInt(`${m[2] ?? '0'}${fraction}`),
    exponent: Number(m[4] ?? '0') - fraction.length,
  };
}

/** IEEE 754 decimal arithmetic, exact, then rounded to decimal128 by js-bson. */
function decimalArithmetic(operation: ArithmeticOperation, x: Decimal, y: Decimal): Decimal128 {
  if (x.kind === 'nan' || y.kind === 'nan') return Decimal128.fromString('NaN');
  if (operation === 'multiply') {
    const negative = x.negative !== y.negative;
    if (x.kind === 'infinity' || y.kind === 'infinity') {
      const other = x.kind === 'infinity' ? y : x;
      if (other.kind === 'finite' && other.coefficient === 0n) return Decimal128.fromString('NaN');
      return Decimal128.fromString(negative ? '-Infinity' : 'Infinity');
    }
    return decimalFrom(negative, x.coefficient * y.coefficient, x.exponent + y.exponent);
  }
  if (x.kind === 'infinity' || y.kind === 'infinity') {
    if (x.kind === 'infinity' && y.kind === 'infinity' && x.negative !== y.negative) {
      return Decimal128.fromString('NaN');
    }
    const negative = x.kind === 'infinity' ? x.negative : y.negative;
    return Decimal128.fromString(negative ? '-Infinity' : 'Infinity');
  }
  const exponent = Math.min(x.exponent, y.exponent);
  const sx = (x.negative ? -x.coefficient : x.coefficient) * 10n ** BigInt(x.exponent - exponent);
  const sy = (y.negative ? -y.coefficient : y.coefficient) * 10n ** BigInt(y.exponent - exponent);
  const sum = sx + sy;
  // An exact zero is negative only when both operands are.
  const negative = sum < 0n || (sum === 0n && x.negative && y.negative);
  return decimalFrom(negative, sum < 0n ? -sum : sum, exponent);
}

/** The decimal128 nearest `±coefficient × 10^exponent` (ties to even). */
function decimalFrom(negative: boolean, coefficient: bigint, exponent: number): Decimal128 {
  return Decimal128.fromStringWithRounding(`${negative ? '-' : ''}${coefficient}E${exponent}`);
}
