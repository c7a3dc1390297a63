import { Double, Int32, Long } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { applyBinaryDiff } from '../../src/bucket-format/bson-column/binary-diff.js';
import { BSONColumn, BSONColumnBuilder } from '../../src/bucket-format/bson-column/bson-column.js';
import type { DiffSink } from '../../src/bucket-format/bson-column/bsoncolumn-builder.js';
import { bsonOf, series } from './bson-column-arbitraries.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** A sequence and, per entry, whether to call intermediate() after appending it. */
const splitSeries = series.chain((values) =>
  fc.tuple(
    fc.constant(values),
    fc.array(fc.boolean(), { minLength: values.length, maxLength: values.length }),
  ),
);

/**
 * Append `values` to `builder`, calling intermediate() where `calls` says and once at the end, applying every
 * diff to `column`. Checks `size` against the applied binary at every call.
 */
function appendIncrementally(
  builder: BSONColumnBuilder,
  column: Uint8Array,
  values: ReadonlyArray<unknown>,
  calls: ReadonlyArray<boolean>,
): Uint8Array {
  let current = column;
  for (const [i, v] of values.entries()) {
    if (v === undefined) builder.skip();
    else builder.append(v);
    if (calls[i] === true) {
      const size = builder.size;
      const diff = builder.intermediate();
      expect(diff.offset).toBeLessThanOrEqual(current.length);
      current = applyBinaryDiff(current, diff);
      expect(current.length).toBe(size);
      expect(builder.size).toBe(size);
    }
  }
  return applyBinaryDiff(current, builder.intermediate());
}

describe('BSONColumnBuilder.intermediateInto', () => {
  it('appends to a shared sink the same tail, at the same offset, as intermediate() returns', () => {
    fc.assert(
      fc.property(splitSeries, ([values, calls]) => {
        const plain = new BSONColumnBuilder();
        const sunk = new BSONColumnBuilder();
        // Starts small, so that diffs make it grow (views of the previous array must stay as they were).
        const sink: DiffSink = { buf: new Uint8Array(4), length: 0 };
        const earlier: Array<{ view: Uint8Array; bytes: string }> = [];
        for (const [i, v] of values.entries()) {
          if (v === undefined) {
            plain.skip();
            sunk.skip();
          } else {
            plain.append(v);
            sunk.append(v);
          }
          if (calls[i] !== true && i !== values.length - 1) continue;
          const diff = plain.intermediate();
          const start = sink.length;
          expect(sunk.intermediateInto(sink)).toBe(diff.offset);
          const view = sink.buf.subarray(start, sink.length);
          expect(hex(view)).toBe(hex(diff.bytes));
          earlier.push({ view, bytes: hex(view) });
        }
        for (const { view, bytes } of earlier) expect(hex(view)).toBe(bytes);
      }),
      { numRuns: 400 },
    );
  }, 120_000);
});

describe('BSONColumnBuilder.intermediate', () => {
  it('diffs applied in order give the bytes of encoding at once, and decode to the values', () => {
    fc.assert(
      fc.property(splitSeries, ([values, calls]) => {
        // Arrange
        const expected = BSONColumn.encode(values);
        // Act
        const column = appendIncrementally(new BSONColumnBuilder(), new Uint8Array(0), values, calls);
        // Assert
        expect(hex(column)).toBe(hex(expected));
        expect(bsonOf(BSONColumn.decode(column))).toEqual(bsonOf(values));
      }),
      { numRuns: 600 },
    );
  }, 120_000);

  it('an intermediate() after every append over long runs equals encoding at once (regular-mode tails)', () => {
    // Runs of one repeated delta, long enough for RLE blocks and remainders of every size, with small
    // repeated values (whose remainder blocks are cached) and large ones (never cached), doubles that
    // change scale, int64 as Long (the builder's number path) mixed with bigint (the element path),
    // missing entries and 16-block controls: intermediate() packs these tails straight from the encoder's
    // pending values.
    const segment = fc.tuple(
      fc.constantFrom('int', 'bigStep', 'double', 'date', 'long', 'longOrBigint', 'missing'),
      fc.integer({ min: -3, max: 3 }),
      fc.nat({ max: 300 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 5 }), (segments) => {
        // Arrange
        const values: unknown[] = [];
        let x = 1000;
        for (const [kind, step, n] of segments) {
          for (let i = 0; i < n; i++) {
            x += step;
            if (kind === 'int') values.push(x);
            else if (kind === 'bigStep') values.push(x * 2 ** 22);
            else if (kind === 'double') values.push(x / (i % 50 === 49 ? 1000 : 10));
            else if (kind === 'date') values.push(new Date(1_451_606_400_000 + x * 10_000));
            else if (kind === 'long') values.push(Long.fromNumber(x * 2 ** 33));
            else if (kind === 'longOrBigint')
              values.push(i % 3 === 0 ? BigInt(x) * 2n ** 40n : Long.fromBigInt(BigInt(x) * 2n ** 40n));
            else values.push(undefined);
          }
        }
        const builder = new BSONColumnBuilder();
        let column: Uint8Array = new Uint8Array(0);
        // Act
        for (const v of values) {
          if (v === undefined) builder.skip();
          else builder.append(v);
          column = applyBinaryDiff(column, builder.intermediate());
        }
        column = applyBinaryDiff(column, builder.intermediate());
        // Assert
        expect(hex(column)).toBe(hex(BSONColumn.encode(values)));
      }),
      { numRuns: 150 },
    );
  }, 120_000);

  it('builders used in turn give each the bytes of its own sequence encoded at once', () => {
    // Builders share scratch space (the flushed tail, the element writer, the diff slabs) and the one-shot
    // encoder shares its builder: interleaving appends, intermediate() calls and one-shot encodes of
    // other sequences must not carry state from one column to another.
    const plan = fc.array(splitSeries, { minLength: 2, maxLength: 5 }).chain((columns) =>
      fc.tuple(
        fc.constant(columns),
        // Per step: which column takes its next entry, and whether a one-shot encode runs in between.
        fc.array(fc.tuple(fc.nat({ max: columns.length - 1 }), fc.boolean()), {
          maxLength: columns.reduce((n, [values]) => n + values.length, 0) * 2,
        }),
      ),
    );
    fc.assert(
      fc.property(plan, ([columns, steps]) => {
        // Arrange
        const builders = columns.map(() => new BSONColumnBuilder());
        const binaries: Uint8Array[] = columns.map(() => new Uint8Array(0));
        const next = columns.map(() => 0);
        const take = (c: number): void => {
          const [values, calls] = columns[c] ?? [[], []];
          const i = next[c] ?? 0;
          const builder = builders[c];
          if (builder === undefined || i >= values.length) return;
          const v = values[i];
          if (v === undefined) builder.skip();
          else builder.append(v);
          if (calls[i] === true)
            binaries[c] = applyBinaryDiff(binaries[c] ?? new Uint8Array(0), builder.intermediate());
          next[c] = i + 1;
        };
        // Act
        for (const [c, encodeOther] of steps) {
          take(c);
          if (encodeOther) BSONColumn.encode(columns[(c + 1) % columns.length]?.[0] ?? []);
        }
        for (const [c] of columns.entries()) while ((next[c] ?? 0) < (columns[c]?.[0].length ?? 0)) take(c);
        // Assert
        for (const [c, [values]] of columns.entries()) {
          const builder = builders[c] as BSONColumnBuilder;
          const column = applyBinaryDiff(binaries[c] ?? new Uint8Array(0), builder.intermediate());
          expect(hex(column)).toBe(hex(BSONColumn.encode(values)));
        }
      }),
      { numRuns: 200 },
    );
  }, 120_000);

  it('a second call with nothing appended changes nothing', () => {
    fc.assert(
      fc.property(series, (values) => {
        const builder = new BSONColumnBuilder();
        for (const v of values) builder.append(v);
        const column = applyBinaryDiff(new Uint8Array(0), builder.intermediate());
        const again = builder.intermediate();
        expect(hex(applyBinaryDiff(column, again))).toBe(hex(column));
      }),
      { numRuns: 300 },
    );
  }, 60_000);
});

describe('BSONColumnBuilder.fromBinary', () => {
  it('a builder reset after any use encodes the next sequence as a new builder does', () => {
    fc.assert(
      fc.property(splitSeries, splitSeries, fc.nat(), ([first, firstCalls], [values, calls], cut) => {
        // Arrange: a builder left in any state: part of a sequence appended (intermediates taken or
        // not), or a stored column resumed and continued.
        const k = first.length === 0 ? 0 : cut % (first.length + 1);
        const used =
          cut % 2 === 0
            ? new BSONColumnBuilder()
            : BSONColumnBuilder.fromBinary(BSONColumn.encode(first.slice(0, k)));
        for (const [i, v] of first.slice(k).entries()) {
          if (v === undefined) used.skip();
          else used.append(v);
          if (firstCalls[i] === true) used.intermediate();
        }
        // Act
        used.reset();
        const column = appendIncrementally(used, new Uint8Array(0), values, calls);
        // Assert
        expect(hex(column)).toBe(hex(BSONColumn.encode(values)));
      }),
      { numRuns: 600 },
    );
  }, 120_000);

  it('resuming a stored column at any point and continuing gives the bytes of encoding at once', () => {
    fc.assert(
      fc.property(splitSeries, fc.nat(), ([values, calls], cut) => {
        // Arrange: the first `k` values stored as one column
        const k = values.length === 0 ? 0 : cut % (values.length + 1);
        const stored = BSONColumn.encode(values.slice(0, k));
        // Act
        const builder = BSONColumnBuilder.fromBinary(stored);
        expect(builder.size).toBe(stored.length);
        const column = appendIncrementally(builder, stored, values.slice(k), calls.slice(k));
        // Assert
        expect(hex(column)).toBe(hex(BSONColumn.encode(values)));
      }),
      { numRuns: 600 },
    );
  }, 120_000);

  it('reopening repeatedly, as a bucket that is reopened after every commit, gives the same bytes', () => {
    fc.assert(
      fc.property(series, fc.array(fc.nat({ max: 50 }), { maxLength: 6 }), (values, steps) => {
        let column = BSONColumn.encode([]);
        let at = 0;
        for (const step of [...steps, values.length]) {
          const builder = BSONColumnBuilder.fromBinary(column);
          const next = Math.min(values.length, at + step);
          for (const v of values.slice(at, next)) builder.append(v);
          column = applyBinaryDiff(column, builder.intermediate());
          at = next;
        }
        expect(hex(column)).toBe(hex(BSONColumn.encode(values)));
      }),
      { numRuns: 300 },
    );
  }, 120_000);
});

/** Doubles of any bits (NaNs with payloads, infinities, denormals) among runs of scaled decimals. */
const anyBitsDouble = fc
  .tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.nat({ max: 2 ** 32 - 1 }))
  .map(([lo, hi]) => new Float64Array(new Uint32Array([lo, hi]).buffer)[0] as number);
const parkedSeries = fc.oneof(
  series,
  fc.array(
    fc.option(
      fc.oneof(
        anyBitsDouble,
        fc.integer({ min: -1e6, max: 1e6 }).map((x) => x / 100),
      ),
    ),
    {
      maxLength: 300,
    },
  ),
);

/**
 * Numbers as sensors send them: random walks with a few decimals whose scale changes now and then,
 * values around the magnitudes where the encoder's int32 path for scaled doubles stops (2^30 scaled),
 * and doubles of any bits.
 */
const nearBounds = [2 ** 30, 2 ** 31].flatMap((b) => [b - 2, b - 1, b, -b - 1, -b, -b + 1]);
const numberSeries = fc
  .array(
    fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .tuple(fc.integer({ min: -400, max: 400 }), fc.constantFrom(1, 10, 100, 1e4, 1e8))
          .map(([step, d]) => ({ step, d })),
      },
      {
        // Two values of one scale, each near a bound of that path (scaled, 2^30 and 2^31 either side).
        weight: 2,
        arbitrary: fc
          .tuple(
            fc.constantFrom(...nearBounds),
            fc.constantFrom(...nearBounds),
            fc.constantFrom(10, 100, 1e4),
          )
          .map(([a, b, d]) => ({ values: [a / d, b / d] })),
      },
      { weight: 1, arbitrary: anyBitsDouble.map((value) => ({ values: [value] })) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(0, -0, 0.5, -0.5, 1.5e-9, -2.5e-5).map((value) => ({ values: [value] })),
      },
      {
        // A run of one step at one scale (blocks of equal deltas: RLE), of a value repeated (a zero step),
        // or of a step whose values are now and then integers (an int32 in a run of doubles).
        weight: 2,
        arbitrary: fc
          .tuple(
            fc.integer({ min: 1, max: 300 }),
            fc.constantFrom(0, 1, -1, 3, 7, 50, 100),
            fc.constantFrom(10, 100, 1e4),
          )
          .map(([length, step, d]) => ({ length, step, d })),
      },
    ),
    { maxLength: 400 },
  )
  .map((entries) => {
    // A step of the walk, shown at its scale, a run of steps, or values of their own.
    let walk = 5000;
    return entries.flatMap((e) => {
      if ('values' in e) return e.values;
      if ('length' in e) {
        return Array.from({ length: e.length }, () => {
          walk += e.step;
          return walk / e.d;
        });
      }
      walk += e.step;
      return [walk / e.d];
    });
  });

describe('BSONColumnBuilder.append of numbers', () => {
  it('gives the bytes of appending their BSON elements (a js-bson Double or Int32 for each number)', () => {
    fc.assert(
      fc.property(numberSeries, (numbers) => {
        // Arrange: the same values as the objects the general element path encodes.
        const elements = numbers.map((x) =>
          (x | 0) === x && !Object.is(x, -0) ? new Int32(x) : new Double(x),
        );
        // Act
        const fromNumbers = BSONColumn.encode(numbers);
        const fromElements = BSONColumn.encode(elements);
        // Assert
        expect(hex(fromNumbers)).toBe(hex(fromElements));
        expect(bsonOf(BSONColumn.decode(fromNumbers))).toEqual(bsonOf(numbers));
      }),
      { numRuns: 500 },
    );
  });
});

describe('BSONColumnBuilder.appendNumbers and appendDatesMs', () => {
  it('give the bytes of appending each value, whatever the column held before (objects too)', () => {
    const run = fc.oneof(
      numberSeries.map((values) => ({ dates: false, values })),
      // Int32s: small steps, and jumps across the whole range (deltas beyond what zigzags in 32 bits).
      fc
        .array(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.integer()), { maxLength: 60 })
        .map((steps) => ({ dates: false, values: steps.map((x, i) => (i % 4 === 0 ? x : 1000 + x)) })),
      fc
        .array(fc.integer({ min: -8.64e15, max: 8.64e15 }), { maxLength: 60 })
        .map((values) => ({ dates: true, values })),
    );
    fc.assert(
      fc.property(series, run, (before, { dates, values }) => {
        // Arrange: two builders fed the same entries first.
        const one = new BSONColumnBuilder();
        const many = new BSONColumnBuilder();
        for (const v of before) {
          one.append(v);
          many.append(v);
        }
        // Act: the run one value at a time, and at once.
        for (const x of values) one.append(dates ? new Date(x) : x);
        if (dates) many.appendDatesMs(Float64Array.from(values), values.length);
        else many.appendNumbers(Float64Array.from([...values, 7.5]), values.length);
        // Assert
        expect(hex(many.finalize())).toBe(hex(one.finalize()));
      }),
      { numRuns: 400 },
    );
  });
});

describe('BSONColumnBuilder.parkInto', () => {
  it('a builder parked and unparked into a used one after any intermediate continues with the same diffs', () => {
    fc.assert(
      fc.property(
        parkedSeries.chain((values) =>
          fc.tuple(
            fc.constant(values),
            fc.array(fc.boolean(), { minLength: values.length, maxLength: values.length }),
            fc.nat({ max: 5 }),
          ),
        ),
        splitSeries,
        ([values, calls, offset], [used, usedCalls]) => {
          // Arrange: the same values into a builder that is never parked, and one that is parked after
          // every intermediate it can be, into a record at an offset, and unparked into a builder left in
          // any state (as the pool hands them out: not reset), then the other way round.
          const plain = new BSONColumnBuilder();
          let parked = new BSONColumnBuilder();
          let other = new BSONColumnBuilder();
          for (const [i, v] of used.entries()) {
            if (v === undefined) other.skip();
            else other.append(v);
            if (usedCalls[i] === true) other.intermediate();
          }
          const record: number[] = [];
          let parkings = 0;
          const simple = values.every((v) => v === undefined || typeof v === 'number' || v instanceof Date);
          for (const [i, v] of values.entries()) {
            for (const b of [plain, parked]) {
              if (v === undefined) b.skip();
              else b.append(v);
            }
            if (calls[i] !== true && i !== values.length - 1) continue;
            // Act
            const expected = plain.intermediate();
            const actual = parked.intermediate();
            // Assert
            expect(actual.offset).toBe(expected.offset);
            expect(hex(actual.bytes)).toBe(hex(expected.bytes));
            // Numbers and dates are always parkable (else buckets would silently keep their builders).
            if (simple) expect(parked.parkable).toBe(true);
            if (!parked.parkable) continue;
            const end = parked.parkInto(record, offset);
            parkings++;
            expect(other.unparkFrom(record, offset)).toBe(end);
            [parked, other] = [other, parked];
          }
          expect(hex(parked.intermediate().bytes)).toBe(hex(plain.intermediate().bytes));
          if (simple && values.length > 0) expect(parkings).toBeGreaterThan(0);
        },
      ),
      { numRuns: 600 },
    );
  }, 120_000);
});
