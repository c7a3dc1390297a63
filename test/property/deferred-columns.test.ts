/**
 * The embedded storage takes compressed buckets' columns from the catalog's encoders when it needs them;
 * any other storage receives each commit's bytes. Both paths must store the same bucket documents and make
 * the same decisions (sizes included: a deferred bucket counts its columns by an upper bound and measures
 * them when the bound is over the limit), whatever the values, the calls and when the buckets are read.
 */
import { serialize } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../src/index.js';
import type { StoredBucket } from '../../src/index.js';
import { takesDeferredColumns } from '../../src/storage/storage.js';
import { eagerColumns } from '../support/eager-columns.js';

// Mostly values with a bounded encoding (the bound decides), some objects (measured every time).
const value = fc.oneof(
  { arbitrary: fc.integer({ min: -1000, max: 1000 }), weight: 4 },
  {
    arbitrary: fc
      .tuple(fc.integer({ min: -100_000, max: 100_000 }), fc.constantFrom(1, 10, 100, 1e4))
      .map(([n, d]) => n / d),
    weight: 4,
  },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 2 },
  { arbitrary: fc.boolean(), weight: 1 },
  { arbitrary: fc.record({ x: fc.integer(), y: fc.string({ maxLength: 6 }) }), weight: 1 },
);

// What a bucket keeps packed (and folds into typed min/max slots from there): numbers, with the ties and
// the NaN the slots treat apart, and dates.
const packable = fc.oneof(
  { arbitrary: fc.double({ noNaN: true, min: -1e6, max: 1e6 }), weight: 5 },
  // Few values: ties at the minimum and maximum, 0 against -0 among them (the first one stays).
  { arbitrary: fc.constantFrom(0, -0, 1, 2.5), weight: 4 },
  { arbitrary: fc.constant(Number.NaN), weight: 1 },
  {
    arbitrary: fc.date({ min: new Date(0), max: new Date(2 ** 40), noInvalidDate: true }),
    weight: 1,
  },
);

/** One insert call: measurements of a few series, ticks of one second from `start`. */
const call = fc.record({
  rows: fc.array(
    fc.record({
      series: fc.constantFrom('a', 'b', 'c'),
      // Numbers only (kept packed until encoded), or any values.
      fields: fc.oneof(
        fc.dictionary(fc.constantFrom('v', 'w', 's', 'n'), packable, { maxKeys: 4 }),
        fc.dictionary(fc.constantFrom('v', 'w', 's', 'n'), value, { maxKeys: 4 }),
      ),
      late: fc.boolean(),
    }),
    { minLength: 1, maxLength: 40, size: 'max' },
  ),
  ordered: fc.boolean(),
  readAfter: fc.boolean(),
});

/** The documents without their `_id`s (made from the clock and a random part), in one canonical order. */
function canonical(docs: ReadonlyArray<StoredBucket>): string[] {
  return docs.map(({ _id: _ignored, ...rest }) => Buffer.from(serialize(rest)).toString('base64')).sort();
}

describe('deferred columns', () => {
  it('MemoryStorage takes deferred columns; eagerColumns turns them off', () => {
    expect(takesDeferredColumns(new MemoryStorage())).toBe(true);
    expect(takesDeferredColumns(eagerColumns(new MemoryStorage()))).toBe(false);
  });

  it('store the documents and make the decisions that each commit’s bytes make', async () => {
    let sizeCloses = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(call, { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 300, max: 3000 }),
        async (calls, maxSize) => {
          // Arrange: the same engine over a deferred and an eager storage; small buckets by size.
          const run = async (storage: MemoryStorage) => {
            const engine = new BucketEngine({
              storage,
              parameters: { timeseriesBucketMaxSize: maxSize, timeseriesBucketMinCount: 2 },
            });
            const coll = await engine.createCollection('m', {
              timeseries: { timeField: 'ts', metaField: 'tag' },
            });
            let tick = 0;
            const reads: string[][] = [];
            // Act: each call, then (maybe) a read of every bucket in the middle of the ingest.
            for (const c of calls) {
              const docs = c.rows.map((r) => ({
                ts: new Date(Date.UTC(2024, 0, 1) + 1000 * (r.late ? tick - 30 : tick++)),
                tag: r.series,
                ...r.fields,
              }));
              await coll.insertMany(docs, { ordered: c.ordered });
              if (c.readAfter) reads.push(canonical(await coll.buckets.find().toArray()));
            }
            const final = canonical(await coll.buckets.find().toArray());
            const rows = await coll.find({}, { sort: { ts: 1 } }).toArray();
            const stats = (await coll.stats()).timeseries;
            await engine.close();
            return { reads, final, rows: rows.length, stats };
          };
          const deferred = await run(new MemoryStorage());
          const eager = await run(eagerColumns(new MemoryStorage()));
          // Assert
          expect(deferred.final).toEqual(eager.final);
          expect(deferred.reads).toEqual(eager.reads);
          expect(deferred.rows).toBe(calls.reduce((n, c) => n + c.rows.length, 0));
          expect(deferred.stats).toEqual(eager.stats);
          sizeCloses += deferred.stats.numBucketsClosedDueToSize;
        },
      ),
      { numRuns: 60 },
    );
    // The runs closed buckets by size (the bound and the measured sizes were both in play).
    expect(sizeCloses).toBeGreaterThan(0);
  });
});
