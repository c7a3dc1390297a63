/**
 * The columns of an open compressed bucket: the server's own diff fixture (timeseries_write_util_test.cpp,
 * `MakeTimeseriesCompressedDiffUpdateOp`), and the law that the diffs rebuild the one-shot encoding.
 */
import { Decimal128, Long, ObjectId } from 'bson';
import type { Binary } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { compressBucket } from '../../../src/bucket-format/bucket-compression.js';
import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import { applyBinaryDiff } from '../../../src/bucket-format/bson-column/binary-diff.js';
import { columnDiffsOf } from '../../../src/bucket-format/column-tails.js';
import { kDeferredDrainThreshold, MeasurementMap } from '../../../src/bucket-format/measurement-map.js';
import { kDateKind, kNumberKind } from '../../../src/util/bson-validation.js';

const at = (s: string) => new Date(s);
const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const bytesOf = (b: Binary) => b.buffer.subarray(0, b.position);

describe('MeasurementMap', () => {
  it("resumes a stored bucket and yields the server's diff for two appended measurements", () => {
    // Arrange: the fixture's pre-image, compressed as the server compresses it.
    const preImage = {
      _id: 'x',
      control: {
        version: 1,
        min: { time: at('2022-06-06T15:34:31Z'), a: 1, b: 1 },
        max: { time: at('2022-06-06T15:34:33Z'), a: 3, b: 3 },
      },
      data: {
        time: { 0: at('2022-06-06T15:34:31Z'), 1: at('2022-06-06T15:34:32Z'), 2: at('2022-06-06T15:34:33Z') },
        a: { 0: 1, 1: 2, 2: 3 },
        b: { 0: 1, 1: 2, 2: 3 },
      },
    };
    const compressed = compressBucket(preImage, 'time');
    if (compressed.kind !== 'compressed') throw new Error('fixture did not compress');
    const data = compressed.doc.data as Record<string, Binary>;
    const map = MeasurementMap.fromBinaries('time', data, 3, at('2022-06-06T15:34:33Z').getTime());

    // Act: the batch, sorted by time, appended.
    map.insertOne({ time: at('2022-06-06T15:34:30Z'), a: 0, b: 0 }, undefined);
    map.insertOne({ time: at('2022-06-06T15:34:34Z'), a: 4, b: 4 }, undefined);
    const { diffs, delta } = map.intermediate();

    // Assert: exactly the server's `sdata.b` section, and the columns decode to the five measurements.
    expect(diffs.map((d) => [d.field, d.offset, base64(d.bytes), d.created])).toEqual([
      ['time', 10, 'gAt9AAD8fGBtAA==', false],
      ['a', 6, 'gCsAEAAUABAAAA==', false],
      ['b', 6, 'gCsAEAAUABAAAA==', false],
    ]);
    const columns = Object.fromEntries(
      diffs.map((d) => [d.field, applyBinaryDiff(bytesOf(data[d.field]!), d)]),
    );
    expect(BSONColumn.decode(columns.time!)).toEqual(
      ['31', '32', '33', '30', '34'].map((s) => at(`2022-06-06T15:34:${s}Z`)),
    );
    expect(BSONColumn.decode(columns.a!)).toEqual([1, 2, 3, 0, 4]);
    expect(BSONColumn.decode(columns.b!)).toEqual([1, 2, 3, 0, 4]);
    const before = Object.values(data).reduce((n, b) => n + b.position, 0);
    const after = Object.values(columns).reduce((n, c) => n + c.length, 0);
    expect(delta).toBe(after - before);
    expect(map.count).toBe(5);
    expect(map.timeOfLastMeasurement()).toBe(at('2022-06-06T15:34:34Z').getTime());
  });

  it('puts the time column first, fills a late field with skips, and skips fields a measurement lacks', () => {
    const map = new MeasurementMap('t');
    map.insertOne({ x: 1, t: at('2024-01-01T00:00:00Z'), m: 'meta' }, 'm');
    map.insertOne({ t: at('2024-01-01T00:00:01Z'), y: 'late' }, 'm');
    const { diffs } = map.intermediate();
    expect(diffs.map((d) => [d.field, d.offset, d.created])).toEqual([
      ['t', 0, true],
      ['x', 0, true],
      ['y', 0, true],
    ]);
    const decoded = Object.fromEntries(diffs.map((d) => [d.field, BSONColumn.decode(d.bytes)]));
    expect(decoded).toEqual({
      t: [at('2024-01-01T00:00:00Z'), at('2024-01-01T00:00:01Z')],
      x: [1, undefined],
      y: [undefined, 'late'],
    });
  });

  it('diffs applied commit after commit give the bytes of encoding every value at once', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record(
            { v: fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.string()), w: fc.boolean() },
            { requiredKeys: [] },
          ),
          { minLength: 1, maxLength: 60 },
        ),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        (rows, splits) => {
          // Arrange
          const measurements = rows.map((r, i) => ({ t: new Date(i * 1000), ...r }));
          const map = new MeasurementMap('t');
          const stored = new Map<string, Uint8Array>();
          // Act: commits of the given sizes, each diff applied to the stored column.
          let i = 0;
          for (let s = 0; i < measurements.length; s++) {
            const end = Math.min(measurements.length, i + (splits[s % splits.length] ?? 1));
            for (; i < end; i++) map.insertOne(measurements[i]!, undefined);
            for (const d of map.intermediate().diffs) {
              stored.set(d.field, applyBinaryDiff(stored.get(d.field) ?? new Uint8Array(0), d));
            }
          }
          // Assert
          for (const [field, bytes] of stored) {
            const values = measurements.map((m) => (m as Record<string, unknown>)[field]);
            expect(base64(bytes)).toBe(base64(BSONColumn.encode(values)));
          }
          expect(map.compressedSize).toBe([...stored.values()].reduce((n, b) => n + b.length, 0));
        },
      ),
    );
  });

  it('packed tails hold the same diffs as intermediate(), new columns last', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.dictionary(
            fc.constantFrom('a', 'b', '1', 'c', '__proto__'),
            fc.oneof(fc.integer(), fc.double({ noNaN: true }), fc.string(), fc.boolean()),
            { maxKeys: 4 },
          ),
          { minLength: 1, maxLength: 40 },
        ),
        fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 1, maxLength: 10 }),
        (rows, splits) => {
          // Arrange: two maps fed the same measurements, committed at the same points.
          const measurements = rows.map((r, i) => ({ t: new Date(i * 1000), ...r }));
          const diffed = new MeasurementMap('t');
          const packed = new MeasurementMap('t');
          let i = 0;
          for (let s = 0; i < measurements.length; s++) {
            const end = Math.min(measurements.length, i + (splits[s % splits.length] ?? 1));
            for (; i < end; i++) {
              diffed.insertOne(measurements[i]!, undefined);
              packed.insertOne(measurements[i]!, undefined);
            }
            // Act
            const { diffs } = diffed.intermediate();
            const tails = packed.intermediateTails();
            // Assert
            const unpacked = columnDiffsOf(tails);
            expect(unpacked.map((d) => [d.field, d.offset, base64(d.bytes), d.created])).toEqual(
              diffs.map((d) => [d.field, d.offset, base64(d.bytes), d.created]),
            );
            expect(tails.fields.slice(tails.firstCreated, tails.count)).toEqual(
              diffs.filter((d) => d.created).map((d) => d.field),
            );
            expect(packed.compressedSize).toBe(diffed.compressedSize);
          }
        },
      ),
    );
  });

  it('deferred: tails taken at any points rebuild the one-shot encoding, and the size bound covers the exact size', () => {
    const number = fc.oneof(
      fc.integer(),
      fc.double(),
      // Decimals of varying scale: the encoder rescales its pending values.
      fc
        .tuple(fc.integer({ min: -100_000, max: 100_000 }), fc.constantFrom(1, 10, 100, 1000, 1e4, 1e8))
        .map(([n, d]) => n / d),
      fc.date({ noInvalidDate: true }),
    );
    const scalar = fc.oneof(
      number,
      fc.string({ maxLength: 24 }),
      fc.boolean(),
      fc.constant(null),
      fc.date({ noInvalidDate: true }),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((v) => Long.fromBigInt(v)),
      fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b)),
      fc.constantFrom(Decimal128.fromString('1.5'), Decimal128.fromString('-7E+12')),
    );
    // A few names often, up to 24 in all: buckets past 16 columns look names up in a map, not a scan.
    const name = fc.oneof(
      { arbitrary: fc.constantFrom('a', 'b', '1', 'c', '__proto__'), weight: 3 },
      { arbitrary: fc.integer({ min: 0, max: 19 }).map((i) => `f${i}`), weight: 1 },
    );
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            // Numbers and dates only (kept packed), or any values (kept as they are).
            fc.dictionary(name, number, { maxKeys: 4 }),
            fc.dictionary(name, fc.oneof(scalar, fc.record({ x: scalar })), { maxKeys: 4 }),
          ),
          { minLength: 1, maxLength: 120, size: 'max' },
        ),
        // Appends of up to 40 measurements, each leaving up to 60 of them kept: runs long enough to grow
        // the packed entries in the middle of a measurement.
        fc.array(fc.tuple(fc.integer({ min: 1, max: 40 }), fc.nat(60)), { minLength: 1, maxLength: 12 }),
        fc.nat(150),
        (rows, steps, sealAt) => {
          // Arrange: the values of each row (ticks of one second), a deferred map and an eager one.
          const measurements = rows.map((r, i) => ({ t: new Date(i * 1000), ...r }));
          const deferred = new MeasurementMap('t', 'deferred');
          const eager = new MeasurementMap('t');
          const stored = new Map<string, Uint8Array>();
          const take = (count: number) => {
            deferred.takeTails(count, (tails) => {
              for (const d of columnDiffsOf(tails)) {
                stored.set(d.field, applyBinaryDiff(stored.get(d.field) ?? new Uint8Array(0), d));
              }
            });
          };
          let taken = 0;
          let i = 0;
          // Act: appends of the given sizes; after each, the storage takes up to a point (maybe none).
          for (let s = 0; i < measurements.length && i < sealAt; s++) {
            const [size, back] = steps[s % steps.length]!;
            const end = Math.min(measurements.length, i + size);
            for (; i < end; i++) {
              deferred.insertOne(measurements[i]!, undefined);
              eager.insertOne(measurements[i]!, undefined);
            }
            const count = Math.max(taken, i - back);
            const bound = deferred.sizeBound(count);
            // A preview while nothing is encoded: the columns of the first `count`, the map unchanged.
            const preview = deferred.previewColumns(count);
            if (stored.size > 0 || count === 0) expect(preview).toBeUndefined();
            else {
              expect(preview).toBeDefined();
              const fields = preview!.names.slice(0, preview!.ends.length);
              const present = new Set(measurements.slice(0, count).flatMap((m) => Object.keys(m)));
              expect(new Set(fields)).toEqual(present);
              fields.forEach((field, c) => {
                const values = measurements
                  .slice(0, count)
                  .map((m) => (Object.hasOwn(m, field) ? (m as Record<string, unknown>)[field] : undefined));
                const bytes = preview!.bytes.subarray(c === 0 ? 0 : preview!.ends[c - 1], preview!.ends[c]);
                expect(base64(bytes)).toBe(base64(BSONColumn.encode(values)));
              });
              expect(deferred.sizeBound(count)).toBe(bound);
              expect(deferred.encodedColumns).toBe(0);
            }
            take(count);
            taken = count;
            // Assert: encoded up to `count`, the size is exact and within the bound given before.
            const exact = [...stored.values()].reduce((n, b) => n + b.length, 0);
            expect(deferred.sizeBound(count)).toBe(exact);
            expect(exact).toBeLessThanOrEqual(bound);
          }
          // Closing keeps what the storage has not taken up to the committed count, and nothing after.
          deferred.seal(i);
          take(i);
          expect(() => {
            deferred.insertOne({ t: new Date(0) }, undefined);
          }).toThrow(/closed measurement map/);
          for (const [field, bytes] of stored) {
            const values = measurements
              .slice(0, i)
              .map((m) => (Object.hasOwn(m, field) ? (m as Record<string, unknown>)[field] : undefined));
            expect(base64(bytes)).toBe(base64(BSONColumn.encode(values)));
          }
          eager.intermediate();
          expect([...stored.values()].reduce((n, b) => n + b.length, 0)).toBe(eager.compressedSize);
        },
      ),
    );
  });

  it('deferred: runs of alike measurements, and runs where one differs, give the bytes of encoding at once', () => {
    // Measurements as an ingester builds them (the time, then the same fields in the same order), now and
    // then one that is not: a field missing, two swapped, one more, a value that is not a number.
    const kind = fc.constantFrom(
      'alike',
      'alike',
      'alike',
      'alike',
      'missing',
      'swapped',
      'extra',
      'string',
      'date',
      'object',
    );
    const number = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }),
      fc.integer({ min: -100_000, max: 100_000 }).map((n) => n / 100),
      fc.double({ noNaN: true }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.tuple(kind, fc.array(number, { minLength: 6, maxLength: 6 })), {
          minLength: 1,
          maxLength: 90,
        }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 8 }),
        (width, specs, runs) => {
          // Arrange
          const names = ['a', 'b', 'c', 'd', 'e'].slice(0, width);
          const measurements = specs.map(([k, values], i) => {
            const fields = [...names];
            if (k === 'missing') fields.splice(i % width, 1);
            if (k === 'swapped' && width > 1) fields.reverse();
            if (k === 'extra') fields.push('z');
            const m: Record<string, unknown> = { t: new Date(i * 1000) };
            fields.forEach((f, j) => (m[f] = values[j]));
            if (k === 'string') m[fields[0]!] = `s${i}`;
            if (k === 'date') m[fields[0]!] = new Date(i);
            if (k === 'object') m[fields[fields.length - 1]!] = { x: i, y: [i] };
            return m;
          });
          const map = new MeasurementMap('t', 'deferred');
          const stored = new Map<string, Uint8Array>();
          // Act: append runs of the given lengths, the storage taking everything after each.
          let i = 0;
          for (let r = 0; i < measurements.length; r++) {
            const end = Math.min(measurements.length, i + runs[r % runs.length]!);
            for (; i < end; i++) map.insertOne(measurements[i]!, undefined);
            // Before the first run is encoded, a preview of its columns (which encodes nothing for good).
            const preview = r === 0 ? map.previewColumns(i) : undefined;
            preview?.ends.forEach((columnEnd, c) => {
              const field = preview.names[c]!;
              const values = measurements
                .slice(0, i)
                .map((m) => (Object.hasOwn(m, field) ? m[field] : undefined));
              const bytes = preview.bytes.subarray(c === 0 ? 0 : preview.ends[c - 1], columnEnd);
              expect(base64(bytes)).toBe(base64(BSONColumn.encode(values)));
            });
            map.takeTails(i, (tails) => {
              for (const d of columnDiffsOf(tails)) {
                stored.set(d.field, applyBinaryDiff(stored.get(d.field) ?? new Uint8Array(0), d));
              }
            });
          }
          // Assert
          expect([...stored.keys()].sort()).toEqual(
            [...new Set(measurements.flatMap((m) => Object.keys(m)))].sort(),
          );
          for (const [field, bytes] of stored) {
            const values = measurements.map((m) => (Object.hasOwn(m, field) ? m[field] : undefined));
            expect(base64(bytes)).toBe(base64(BSONColumn.encode(values)));
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('deferred: parks its builders after each run and continues with the same bytes; a string column keeps them', () => {
    // Arrange: two deferred maps, one of numbers only and one with a string column, and the values.
    const rows = Array.from({ length: 40 }, (_, i) => ({
      t: new Date(i * 1000),
      a: i / 4,
      b: 100 - i * 0.37,
    }));
    const numbers = new MeasurementMap('t', 'deferred');
    const withString = new MeasurementMap('t', 'deferred');
    const stored = new Map<string, Uint8Array>();
    const take = (count: number) => {
      numbers.takeTails(count, (tails) => {
        for (const d of columnDiffsOf(tails)) {
          stored.set(d.field, applyBinaryDiff(stored.get(d.field) ?? new Uint8Array(0), d));
        }
      });
    };
    // Act and assert: after each run the numbers' builders are parked (no builder objects held), the
    // string map's are not.
    for (const [i, row] of rows.entries()) {
      numbers.insertOne(row, undefined);
      withString.insertOne({ ...row, s: `v${i}` }, undefined);
      if ((i + 1) % 16 === 0) {
        take(i + 1);
        withString.takeTails(i + 1, () => undefined);
        expect(numbers.parkedColumns).toBe(3);
        expect(numbers.encodedColumns).toBe(3);
        expect(numbers.parkedArrayLength).toBeGreaterThan(0);
        expect(withString.parkedColumns).toBe(0);
        expect(withString.encodedColumns).toBe(4);
      }
    }
    take(rows.length);
    for (const field of ['t', 'a', 'b'] as const) {
      expect(base64(stored.get(field)!)).toBe(base64(BSONColumn.encode(rows.map((r) => r[field]))));
    }
    // Sealing lets go of the parked state.
    numbers.seal(rows.length);
    expect(numbers.parkedColumns).toBe(0);
    expect(numbers.parkedArrayLength).toBe(0);
  });

  it("deferred: a map opened from a row shares the row's names until a row adds a column, then copies them", () => {
    // Arrange: rows of a layout {t, m (the meta, not in the row), a}, then of {t, a, b}, as calls hold them.
    const first = Object.freeze(['t', 'a']);
    const second = Object.freeze(['t', 'a', 'b']);
    const map = new MeasurementMap('t', 'deferred');
    const rows = new Float64Array([0, 1.5, 1000, 2.5, 2000, 3.5, 7]);
    // Act
    map.insertRow(['t', 'm', 'a'], [kDateKind, 0, kNumberKind], 1, first, rows, 0, 0);
    const created = map.takeNewColumns();
    map.insertRow(['t', 'm', 'a'], [kDateKind, 0, kNumberKind], 1, first, rows, 2, 1000);
    map.insertRow(['t', 'a', 'b'], [kDateKind, kNumberKind, kNumberKind], -1, second, rows, 4, 2000);
    const stored = new Map<string, Uint8Array>();
    map.takeTails(3, (tails) => {
      for (const d of columnDiffsOf(tails)) {
        stored.set(d.field, applyBinaryDiff(stored.get(d.field) ?? new Uint8Array(0), d));
      }
    });
    // Assert: the first row's names were the map's columns (its new columns, as they are), the lists
    // given are unchanged, and the columns hold what encoding the measurements gives.
    expect(created).toBe(first);
    expect(map.takeNewColumns()).toEqual(['b']);
    expect([first, second]).toEqual([
      ['t', 'a'],
      ['t', 'a', 'b'],
    ]);
    expect([...stored.keys()]).toEqual(['t', 'a', 'b']);
    const t = [new Date(0), new Date(1000), new Date(2000)];
    expect(base64(stored.get('t')!)).toBe(base64(BSONColumn.encode(t)));
    expect(base64(stored.get('a')!)).toBe(base64(BSONColumn.encode([1.5, 2.5, 3.5])));
    expect(base64(stored.get('b')!)).toBe(base64(BSONColumn.encode([undefined, undefined, 7])));
  });

  it('deferred: keeps the room of a commit of up to two runs for its later runs, not more', () => {
    // Arrange: maps taken after fewer than a run, a run, two runs and one measurement more.
    const run = kDeferredDrainThreshold;
    const roomAfter = (count: number): number => {
      const map = new MeasurementMap('t', 'deferred');
      for (let i = 0; i < count; i++) map.insertOne({ t: new Date(i * 1000), v: i + 0.5 }, undefined);
      // Act
      map.takeTails(count, () => undefined);
      return map.runRoom;
    };
    // Assert: the room reused for later runs is bounded by two runs; fewer than a run keep none.
    expect(roomAfter(run - 1)).toBe(0);
    expect(roomAfter(run)).toBe(run);
    expect(roomAfter(2 * run)).toBe(2 * run);
    expect(roomAfter(2 * run + 1)).toBe(0);
  });

  it('deferred: a parked record that outgrows its array gets room for later parks', () => {
    // Arrange: a bucket of two-decimal random walks (what fills open Simple-8b blocks run after run).
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const walk = [50, 50, 50, 50];
    const map = new MeasurementMap('t', 'deferred');
    const lengths: number[] = [];
    // Act: park every 16 measurements, reading the array's length after each park.
    for (let i = 0; i < 160; i++) {
      const row: Record<string, unknown> = { t: new Date(i * 10_000) };
      walk.forEach((v, k) => {
        walk[k] = v + (next() - 0.5) * 2;
        row[`f${k}`] = Math.round(walk[k] * 100) / 100;
      });
      map.insertOne(row, undefined);
      if ((i + 1) % 16 === 0) {
        map.takeTails(i + 1, () => undefined);
        lengths.push(map.parkedArrayLength);
      }
    }
    // Assert: the first park sizes the array to measure; a growth gives it a quarter more room, so of ten
    // parks at most three make a new array (made to measure each time, the array changes with the record).
    const changes = lengths.filter((n, i) => i > 0 && n !== lengths[i - 1]).length;
    expect(lengths[0]).toBeGreaterThan(0);
    expect(changes).toBeLessThanOrEqual(2);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(2 * Math.min(...lengths));
  });
});
