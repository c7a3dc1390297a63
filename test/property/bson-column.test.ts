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
import { describe, expect, it } from 'vitest';

import { BSONColumn, BSONColumnBuilder } from '../../src/bucket-format/bson-column/bson-column.js';
import { TimeseriesError } from '../../src/errors.js';

/** BSON bytes of each entry, to compare sequences exactly. */
function bsonOf(values: ReadonlyArray<unknown>): string[] {
  return values.map((v) => (v === undefined ? '<missing>' : Buffer.from(serialize({ v })).toString('hex')));
}

const maxDateMs = 8.64e15;
const bytes = (max: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ maxLength: max });

/** Every scalar BSON type the encoder may see. */
const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.double(),
  fc.integer({ min: -1e9, max: 1e9 }).map((x) => x / 100),
  fc.integer({ min: -1000, max: 1000 }).map((x) => new Double(x)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.integer({ min: -maxDateMs, max: maxDateMs }).map((ms) => new Date(ms)),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
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

const key = fc.constantFrom('a', 'b', 'c', 'd', '__proto__', 'x.y', '');
const nested: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('object'), tie('array')),
  object: fc.dictionary(key, tie('value'), { maxKeys: 4 }),
  array: fc.array(tie('value'), { maxLength: 4 }),
})).value;

/** Sequences shaped like time series: runs, progressions, repeats and missing entries. */
const series: fc.Arbitrary<unknown[]> = fc.oneof(
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

describe('BSONColumn round trip', () => {
  it('decode(encode(values)) serializes to the same BSON, entry by entry', () => {
    fc.assert(
      fc.property(series, (values) => {
        // Arrange / Act
        const encoded = BSONColumn.encode(values);
        const decoded = BSONColumn.decode(encoded);
        // Assert
        expect(bsonOf(decoded)).toEqual(bsonOf(values));
      }),
      { numRuns: 1500 },
    );
  });

  it('re-encoding decoded values gives identical bytes', () => {
    fc.assert(
      fc.property(series, (values) => {
        const encoded = BSONColumn.encode(values);
        expect(Buffer.from(BSONColumn.encode(BSONColumn.decode(encoded))).equals(Buffer.from(encoded))).toBe(
          true,
        );
      }),
      { numRuns: 500 },
    );
  });
});

/** The column a new builder writes for `values`. */
function encodeWithNewBuilder(values: ReadonlyArray<unknown>): string {
  const builder = new BSONColumnBuilder();
  for (const v of values) builder.append(v);
  return Buffer.from(builder.finalize()).toString('hex');
}

describe('BSONColumnBuilder reuse', () => {
  it('a builder reused after finalize writes what a new builder writes', () => {
    fc.assert(
      fc.property(fc.array(series, { minLength: 2, maxLength: 4 }), (columns) => {
        // Arrange
        const reused = new BSONColumnBuilder();
        for (const values of columns) {
          // Act
          for (const v of values) reused.append(v);
          const bytes = Buffer.from(reused.finalize()).toString('hex');
          // Assert
          expect(bytes).toBe(encodeWithNewBuilder(values));
          expect(Buffer.from(BSONColumn.encode(values)).toString('hex')).toBe(bytes);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('BSONColumn.encode after an encode that threw writes what a new builder writes', () => {
    fc.assert(
      fc.property(series, series, fc.nat(), (failing, values, at) => {
        // Arrange: a value with no BSON representation somewhere in the first column.
        const withFunction = [...failing];
        withFunction.splice(at % (failing.length + 1), 0, () => 0);
        // Act / Assert
        expect(() => BSONColumn.encode(withFunction)).toThrow(TimeseriesError);
        expect(Buffer.from(BSONColumn.encode(values)).toString('hex')).toBe(encodeWithNewBuilder(values));
      }),
      { numRuns: 300 },
    );
  });
});

/** Decoding either succeeds or throws the column error; nothing else. */
function decodeOrClearError(input: Uint8Array): void {
  try {
    BSONColumn.decode(input, { maxCount: 100_000 });
  } catch (e) {
    expect(TimeseriesError.isTimeseriesError(e)).toBe(true);
    expect((e as TimeseriesError).codeName).toBe('BadValue');
  }
}

describe('BSONColumn round trip, focused', () => {
  it('doubles with changing scales, runs and missing entries round-trip', () => {
    const v = fc.oneof(
      fc.integer({ min: -1e6, max: 1e6 }).map((x) => x / 10),
      fc.integer({ min: -1e6, max: 1e6 }).map((x) => x / 100),
      fc.integer({ min: -1e6, max: 1e6 }).map((x) => x / 1e4),
      fc.integer({ min: -1e6, max: 1e6 }).map((x) => x / 1e8),
      fc.double(),
      fc.constant(undefined),
      fc.constant(0.5),
    );
    fc.assert(
      fc.property(
        fc.array(v, { maxLength: 600 }),
        fc.array(fc.nat({ max: 3 }), { maxLength: 600 }),
        (xs, reps) => {
          const vals: unknown[] = [];
          xs.forEach((x, i) => {
            for (let k = 0; k <= (reps[i] ?? 0) * 40; k++) vals.push(x);
          });
          const enc = BSONColumn.encode(vals);
          expect(bsonOf(BSONColumn.decode(enc))).toEqual(bsonOf(vals));
        },
      ),
      { numRuns: 400 },
    );
  });
  it('objects with changing schemas, empty sub-objects and arrays round-trip', () => {
    const leaf = fc.oneof(
      fc.integer({ min: 0, max: 100 }),
      fc.integer({ min: 0, max: 1000 }).map((x) => x / 10),
      fc.constant(undefined),
      fc.string({ maxLength: 3 }),
      fc.constant({}),
      fc.constant([]),
    );
    const obj = fc.dictionary(
      fc.constantFrom('a', 'b', 'c'),
      fc.oneof(
        leaf,
        fc.dictionary(fc.constantFrom('x', 'y'), leaf, { maxKeys: 2 }),
        fc.array(leaf, { maxLength: 3 }),
      ),
      { maxKeys: 3 },
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(obj, fc.constant(undefined), fc.array(leaf, { maxLength: 3 })), { maxLength: 80 }),
        (vals) => {
          const enc = BSONColumn.encode(vals);
          expect(bsonOf(BSONColumn.decode(enc))).toEqual(bsonOf(vals));
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe('BSONColumn malformed input (fuzz)', () => {
  it('random bytes decode or fail with the column error', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), decodeOrClearError), { numRuns: 5000 });
  });

  it('random bytes after a valid literal decode or fail with the column error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (tail) => {
        decodeOrClearError(Uint8Array.from([0x10, 0, 1, 0, 0, 0, ...tail, 0]));
      }),
      { numRuns: 3000 },
    );
  });

  it('mutated valid columns decode or fail with the column error', () => {
    fc.assert(
      fc.property(
        series,
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.option(fc.nat(), { nil: undefined }),
        (values, flips, cut) => {
          const bytes = BSONColumn.encode(values);
          for (const [at, b] of flips) bytes[at % bytes.length] = b;
          decodeOrClearError(cut === undefined ? bytes : bytes.subarray(0, cut % (bytes.length + 1)));
        },
      ),
      { numRuns: 2000 },
    );
  });
});
