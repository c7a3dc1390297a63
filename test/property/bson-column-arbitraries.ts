/**
 * fast-check arbitraries for BSONColumn tests: every BSON type, nested objects and arrays, and sequences
 * shaped like time series (runs, progressions, repeats, missing entries).
 */
import {
  BSONRegExp,
  BSONSymbol,
  Binary,
  Code,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  serialize,
} from 'bson';
import fc from 'fast-check';

/** BSON bytes of each entry, to compare sequences exactly. */
export function bsonOf(values: ReadonlyArray<unknown>): string[] {
  return values.map((v) => (v === undefined ? '<missing>' : Buffer.from(serialize({ v })).toString('hex')));
}

const maxDateMs = 8.64e15;
const bytes = (max: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ maxLength: max });

/** Every scalar BSON type the encoder may see. */
export const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.double(),
  fc.integer({ min: -1e9, max: 1e9 }).map((x) => x / 100),
  fc.integer({ min: -1000, max: 1000 }).map((x) => new Double(x)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.integer({ min: -maxDateMs, max: maxDateMs }).map((ms) => new Date(ms)),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  // Strings a decoder may mishandle: a leading byte order mark, NUL inside, multi-byte characters, and
  // lengths around 16 bytes (the largest a string encoded as a 128-bit delta may have).
  fc.constantFrom(
    '\uFEFF',
    '\uFEFFabc',
    'a\0b',
    'é',
    '€uro',
    'x'.repeat(15) + 'é',
    'y'.repeat(16),
    'z'.repeat(17),
  ),
  fc.boolean(),
  fc.constant(null),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b)),
  fc.tuple(bytes(20), fc.constantFrom(0, 2, 4, 5, 128)).map(([b, s]) => new Binary(b, s)),
  fc
    .tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.nat({ max: 2 ** 32 - 1 }))
    .map(([t, i]) => new Timestamp({ t, i })),
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => new Decimal128(b)),
  fc.integer({ min: -5, max: 5 }).map((x) => Decimal128.fromString(String(x))),
  fc.constantFrom(new MinKey(), new MaxKey()),
  fc.constantFrom(
    new BSONRegExp('a+', 'i'),
    new BSONSymbol('sym'),
    new Code('x()'),
    new Code('y()', { a: 1 }),
  ),
  fc.integer().map((x) => new Int32(x)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((x) => Long.fromBigInt(x)),
);

export const key = fc.constantFrom('a', 'b', 'c', 'd', '__proto__', 'x.y', '', '\uFEFFk');
export const nested: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('object'), tie('array')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  array: fc.array(tie('value'), { maxLength: 4 }),
})).value;

/** Sequences shaped like time series: runs, progressions, repeats and missing entries. */
export const series: fc.Arbitrary<unknown[]> = fc.oneof(
  fc.array(fc.option(scalar, { nil: undefined }), { maxLength: 60 }),
  fc
    .tuple(fc.integer({ min: -1e6, max: 1e6 }), fc.integer({ min: -50, max: 50 }), fc.nat({ max: 400 }))
    .map(([start, step, n]) => Array.from({ length: n }, (_, i) => start + step * i)),
  fc
    .tuple(
      fc.integer({ min: 0, max: 2e12 }),
      fc.constantFrom(1000, 10000, 1),
      fc.nat({ max: 400 }),
      fc.nat({ max: 20 }),
    )
    .map(([start, step, n, jitter]) =>
      Array.from({ length: n }, (_, i) => new Date(start + step * i + (i % 7 === 0 ? jitter : 0))),
    ),
  fc
    .tuple(
      fc.array(fc.integer({ min: -100000, max: 100000 }), { maxLength: 300 }),
      fc.constantFrom(1, 10, 100, 1000),
    )
    .map(([xs, d]) => xs.map((x) => x / d)),
  fc
    .tuple(scalar, fc.nat({ max: 2000 }), fc.nat({ max: 5 }))
    .map(([v, n, gap]) =>
      Array.from({ length: n }, (_, i) => (gap > 0 && i % (gap * 37 + 1) === 0 ? undefined : v)),
    ),
  fc.array(fc.option(nested, { nil: undefined, freq: 4 }), { maxLength: 30 }),
  fc
    .tuple(fc.array(fc.tuple(key, scalar), { minLength: 1, maxLength: 4 }), fc.nat({ max: 80 }))
    .map(([fields, n]) =>
      Array.from({ length: n }, (_, i) => {
        const obj = {};
        fields.forEach(([k, v], j) => {
          if ((i + j) % 5 !== 4)
            Object.defineProperty(obj, k, {
              value: typeof v === 'number' ? v + i : v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
        });
        return i % 11 === 10 ? undefined : obj;
      }),
    ),
);
