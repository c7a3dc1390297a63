import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BSONColumn, BSONColumnBuilder } from '../../src/bucket-format/bson-column/bson-column.js';
import { TimeseriesError } from '../../src/errors.js';
import { bsonOf, series } from './bson-column-arbitraries.js';

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
