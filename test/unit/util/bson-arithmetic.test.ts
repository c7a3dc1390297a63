import { Decimal128, Double, Int32, Long } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { bsonArithmetic, numericKind } from '../../../src/util/bson-arithmetic.js';

/** A result as `Type(text)` or a plain number's text. */
function typed(v: unknown): string {
  if (typeof v !== 'object' || v === null) return String(v);
  return `${(v as { _bsontype: string })._bsontype}(${(v as { toString(): string }).toString()})`;
}

describe('bsonArithmetic', () => {
  it('gives the wider type of the two operands (int32 < int64 < double < decimal)', () => {
    const cases: Array<[unknown, unknown, string, string]> = [
      [1, 2, '3', '2'],
      [new Int32(3), 4, '7', '12'],
      [Long.fromNumber(5), 1, 'Long(6)', 'Long(5)'],
      [new Double(2), 1, 'Double(3)', 'Double(2)'],
      [2.5, Long.fromNumber(2), '4.5', 'Double(5)'],
      [Decimal128.fromString('1.10'), 1, 'Decimal128(2.10)', 'Decimal128(1.10)'],
      [Decimal128.fromString('2.5'), Long.fromNumber(4), 'Decimal128(6.5)', 'Decimal128(10.0)'],
      // A double meets a decimal rounded to 15 significant digits.
      [Decimal128.fromString('1'), 0.1, 'Decimal128(1.100000000000000)', 'Decimal128(0.100000000000000)'],
    ];
    for (const [a, b, sum, product] of cases) {
      expect([typed(bsonArithmetic('add', a, b)), typed(bsonArithmetic('multiply', a, b))]).toEqual([
        sum,
        product,
      ]);
    }
  });

  it('overflows int32 into int64, and int64 into no result', () => {
    expect(typed(bsonArithmetic('add', 2147483647, 1))).toBe('Long(2147483648)');
    expect(typed(bsonArithmetic('multiply', 65536, -65536))).toBe('Long(-4294967296)');
    expect(bsonArithmetic('add', Long.MAX_VALUE, 1)).toBeUndefined();
    expect(bsonArithmetic('multiply', Long.MIN_VALUE, -1)).toBeUndefined();
    expect(typed(bsonArithmetic('add', Long.MIN_VALUE, 0))).toBe('Long(-9223372036854775808)');
  });

  it('follows IEEE 754 for the special decimals', () => {
    const d = (s: string) => Decimal128.fromString(s);
    expect(typed(bsonArithmetic('add', d('Infinity'), d('-Infinity')))).toBe('Decimal128(NaN)');
    expect(typed(bsonArithmetic('multiply', d('Infinity'), 0))).toBe('Decimal128(NaN)');
    expect(typed(bsonArithmetic('multiply', d('-Infinity'), -2))).toBe('Decimal128(Infinity)');
    expect(typed(bsonArithmetic('add', d('NaN'), 1))).toBe('Decimal128(NaN)');
    expect(typed(bsonArithmetic('add', d('-0'), d('-0')))).toBe('Decimal128(-0)');
    expect(typed(bsonArithmetic('add', d('-1'), 1))).toBe('Decimal128(0)');
    // 35 digits exactly: rounded to 34, ties to even.
    expect(typed(bsonArithmetic('add', d('9999999999999999999999999999999999'), d('0.5')))).toBe(
      'Decimal128(1.000000000000000000000000000000000E+34)',
    );
  });

  it('adds and multiplies integers exactly, as int32 while the result fits', () => {
    const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    const integer = fc.oneof(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      int64.map((x) => Long.fromBigInt(x)),
    );
    fc.assert(
      fc.property(integer, integer, fc.constantFrom('add' as const, 'multiply' as const), (a, b, op) => {
        const x = BigInt(String(a));
        const y = BigInt(String(b));
        const exact = op === 'add' ? x + y : x * y;
        const result = bsonArithmetic(op, a, b);
        const bothInt32 = typeof a === 'number' && typeof b === 'number';
        if (exact < -(2n ** 63n) || exact >= 2n ** 63n) expect(result).toBeUndefined();
        else if (bothInt32 && exact >= -(2n ** 31n) && exact < 2n ** 31n) expect(result).toBe(Number(exact));
        else expect(typed(result)).toBe(`Long(${exact})`);
      }),
      { numRuns: 500 },
    );
  });
});

describe('numericKind', () => {
  it('names the BSON type js-bson writes', () => {
    expect([1, -0, 1.5, 2 ** 31, 5n].map(numericKind)).toEqual([
      'int32',
      'double',
      'double',
      'double',
      'int64',
    ]);
    expect(
      [new Int32(1), Long.fromNumber(1), new Double(1), Decimal128.fromString('1')].map(numericKind),
    ).toEqual(['int32', 'int64', 'double', 'decimal']);
    expect(['1', null, new Date(0), {}].map(numericKind)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
