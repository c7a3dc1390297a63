/**
 * An insert's outcome is exactly what happened: a call reports success for what was stored and failure
 * for what was not, whatever fails after the commit (compression), inside the storage (indexing) or while
 * staging one measurement; an ordered call stops at its first failure.
 */
import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, BulkWriteError, MemoryStorage } from '../../../src/index.js';
import { FaultyStorage } from '../../support/faulty-storage.js';

const base = Date.UTC(2024, 0, 1);
const at = (minute: number) => new Date(base + minute * 60_000);

async function setup(parameters: Record<string, number | boolean> = {}, commitWrites = true) {
  const storage = new FaultyStorage(1, { commitWrites });
  const engine = new BucketEngine({
    storage,
    ttlMonitor: 'disabled',
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40, ...parameters },
  });
  const coll = await engine.createCollection('o', {
    timeseries: { timeField: 't', metaField: 'm', granularity: 'minutes' },
  });
  return { engine, coll, storage };
}

async function rejection(promise: Promise<unknown>): Promise<BulkWriteError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!BulkWriteError.isBulkWriteError(error))
    throw new Error(`expected a BulkWriteError, got ${String(error)}`);
  return error;
}

function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('work after the commit never rejects a stored call', () => {
  it('a failed storage read while compressing a closed bucket leaves it version 1, counted, and the call succeeds', async () => {
    // Arrange: the third measurement closes the first bucket (count 2); the read for its compression fails.
    // The 5.x–7.x format: compression on close.
    const { coll, storage } = await setup({
      timeseriesBucketMaxCount: 2,
      timeseriesAlwaysUseCompressedBuckets: false,
    });
    await coll.insertMany([
      { t: at(0), m: 'a', v: 0 },
      { t: at(1), m: 'a', v: 1 },
    ]);
    storage.readFaults.push(new Error('read failed'));
    // Act
    const result = await coll.insertMany([{ t: at(2), m: 'a', v: 2 }]);
    // Assert
    expect(result).toMatchObject({ acknowledged: true, insertedCount: 1 });
    const versions = (await coll.buckets.find().toArray()).map(
      (b) => (b.control as { version: number }).version,
    );
    expect(versions).toEqual([1, 1]);
    const stats = (await coll.stats()).timeseries;
    expect([
      stats.numCompressedBuckets,
      stats.numUncompressedBuckets,
      stats.numFailedDecompressBuckets,
    ]).toEqual([0, 1, 1]);
    expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([
      0, 1, 2,
    ]);
  });
});

describe('MemoryStorage writes are all or nothing', () => {
  it('an insertOne whose meta cannot be indexed stores nothing', async () => {
    // Arrange
    const storage = new MemoryStorage();
    await storage.createNamespace('db.b', { timeseries: {} });
    const _id = new ObjectId();
    // Act
    const error: unknown = await storage
      .insertOne('db.b', { _id, meta: nested(50_000) })
      .catch((e: unknown) => e);
    // Assert
    expect(error).toBeInstanceOf(RangeError);
    expect(await storage.countDocuments('db.b')).toBe(0);
    await storage.insertOne('db.b', { _id, meta: 1 });
    expect(await storage.countDocuments('db.b', { meta: 1 })).toBe(1);
  });

  it('a replaceOne whose new meta cannot be indexed keeps the old document', async () => {
    // Arrange
    const storage = new MemoryStorage();
    const _id = new ObjectId();
    await storage.insertOne('db.b', { _id, meta: 1 });
    // Act
    const error: unknown = await storage
      .replaceOne('db.b', { _id }, { _id, meta: nested(50_000) })
      .catch((e: unknown) => e);
    // Assert
    expect(error).toBeInstanceOf(RangeError);
    const docs: unknown[] = [];
    for await (const doc of storage.find('db.b', { meta: 1 })) docs.push(doc);
    expect(docs).toEqual([{ _id, meta: 1 }]);
  });
});

describe('staging failures belong to their measurement', () => {
  it('an unordered call with a circular value rejects that measurement with BadValue and stores the others', async () => {
    // Arrange
    const { coll } = await setup();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    // Act
    const error = await rejection(
      coll.insertMany(
        [
          { t: at(0), m: 'a', v: 0 },
          { t: at(1), m: 'a', v: circular },
          { t: at(2), m: 'b', v: 2 },
        ],
        { ordered: false },
      ),
    );
    // Assert
    expect(error.insertedCount).toBe(2);
    expect(error.writeErrors.map((e) => [e.index, e.codeName])).toEqual([[1, 'BadValue']]);
    expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([0, 2]);
  });
});

describe('an ordered call stops at its first failed measurement', () => {
  it.each([true, false])(
    'a storage failure stops the call: nothing after it is written, the error names its index (buckets written together: %s)',
    async (together) => {
      // Arrange: two series in input order; the second series' bucket write fails.
      const { coll, storage } = await setup({}, together);
      const docs = [
        { t: at(0), m: 'a', v: 0 },
        { t: at(1), m: 'a', v: 1 },
        { t: at(0), m: 'b', v: 2 },
        { t: at(1), m: 'b', v: 3 },
        { t: at(0), m: 'c', v: 4 },
      ];
      storage.faults.push(
        { kind: 'block', gate: Promise.resolve() },
        { kind: 'fail', error: new Error('disk full') },
      );
      // Act
      const error = await rejection(coll.insertMany(docs, { ordered: true }));
      // Assert
      expect(error.insertedCount).toBe(2);
      expect(error.writeErrors.map((e) => [e.index, e.errmsg])).toEqual([[2, 'disk full']]);
      expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([
        0, 1,
      ]);
    },
  );

  it.each([true, false])(
    'a storage failure before a measurement validation refused reports only the failure (buckets written together: %s)',
    async (together) => {
      // Arrange: the first measurement's write fails; the second has no time field.
      const { coll, storage } = await setup({}, together);
      storage.faults.push({ kind: 'fail', error: new Error('disk full') });
      // Act
      const error = await rejection(
        coll.insertMany(
          [
            { t: at(0), m: 'a', v: 0 },
            { m: 'a', v: 1 },
          ],
          { ordered: true },
        ),
      );
      // Assert: the call stopped at index 0; index 1 was never reached.
      expect(error.writeErrors.map((e) => [e.index, e.errmsg])).toEqual([[0, 'disk full']]);
      expect(error.insertedCount).toBe(0);
    },
  );

  it.each([true, false])(
    'the same call unordered stores every other measurement and reports the failed series (buckets written together: %s)',
    async (together) => {
      // Arrange: buckets are written in bucket-id order, which is the series' order here: 'b' is second.
      const { coll, storage } = await setup({}, together);
      storage.faults.push(
        { kind: 'block', gate: Promise.resolve() },
        { kind: 'fail', error: new Error('disk full') },
      );
      // Act
      const error = await rejection(
        coll.insertMany(
          [
            { t: at(0), m: 'a', v: 0 },
            { t: at(0), m: 'b', v: 1 },
            { t: at(0), m: 'c', v: 2 },
          ],
          { ordered: false },
        ),
      );
      // Assert
      expect(error.insertedCount).toBe(2);
      expect(error.writeErrors.map((e) => e.index)).toEqual([1]);
      expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([
        0, 2,
      ]);
    },
  );
});

describe('an ordered call whose bucket is cleared under it', () => {
  // Found by the catalog model test: an unordered call's failed write clears the bucket an ordered call
  // staged its first measurement into; the ordered call's second measurement (next window) went to a new
  // bucket and was written while the first was staged again, and the first then failed: the second was
  // stored but never acknowledged.
  const modes = [
    { name: 'one bucket write at a time', writeConcurrency: 1, commitWrites: false, atomic: true },
    { name: 'three bucket writes at a time', writeConcurrency: 3, commitWrites: false, atomic: true },
    { name: 'one atomic commitWrites', writeConcurrency: 1, commitWrites: true, atomic: true },
    { name: 'one non-atomic commitWrites (rounds)', writeConcurrency: 1, commitWrites: true, atomic: false },
  ];
  /**
   * An unordered call of one measurement (its write fails, clearing its bucket) racing an ordered call of
   * `ordered` (the second write succeeds, the third fails); both stage before either commits.
   */
  async function race(
    mode: (typeof modes)[number],
    compressed: boolean,
    ordered: ReadonlyArray<{ t: Date; m: string; id: number }>,
  ) {
    const storage = new FaultyStorage(mode.writeConcurrency, {
      commitWrites: mode.commitWrites,
      atomicOrderedCommits: mode.atomic,
    });
    const engine = new BucketEngine({
      storage,
      ttlMonitor: 'disabled',
      parameters: {
        timeseriesAlwaysUseCompressedBuckets: compressed,
        timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
      },
    });
    const coll = await engine.createCollection('o', {
      timeseries: { timeField: 't', metaField: 'm', bucketMaxSpanSeconds: 60, bucketRoundingSeconds: 60 },
    });
    storage.faults.push(
      { kind: 'fail', error: new Error('first write') },
      { kind: 'block', gate: Promise.resolve() },
      { kind: 'fail', error: new Error('third write') },
    );
    const [first, second] = await Promise.all([
      rejection(coll.insertMany([{ t: at(0), m: 'a', id: 0 }], { ordered: false })),
      rejection(coll.insertMany(ordered, { ordered: true })),
    ]);
    const stored = (await coll.find({}).toArray()).map((d) => d.id);
    await engine.close();
    return { first, second, stored };
  }

  describe.each(modes)('$name', (mode) => {
    it.each([true, false])(
      'writes nothing after the cleared measurement until it is written, and nothing at all if it fails (compressed format: %s)',
      async (compressed) => {
        // Act: the ordered call's second measurement is a minute later (another bucket).
        const { first, second, stored } = await race(mode, compressed, [
          { t: at(0), m: 'a', id: 1 },
          { t: at(1), m: 'a', id: 2 },
        ]);
        // Assert: the ordered call's first measurement, staged again, takes the second write; its second
        // measurement is written only then, and takes the failing third write. Exactly the acknowledged
        // measurement is stored (before the fix: the second measurement took the second write while the
        // first waited, the first then failed, and the call reported index 0 with the second stored).
        expect(first.writeErrors.map((e) => e.index)).toEqual([0]);
        expect(second.writeErrors.map((e) => e.index)).toEqual([1]);
        expect(second.insertedCount).toBe(1);
        expect(stored).toEqual([1]);
      },
    );

    it.each([true, false])(
      'writes none of a series batch that also holds measurements after the cleared one (compressed format: %s)',
      async (compressed) => {
        // Act: the ordered call's measurements alternate between two windows, so one of its batches holds
        // its first and third measurements and the other its second.
        const { first, second, stored } = await race(mode, compressed, [
          { t: at(1), m: 'a', id: 1 },
          { t: at(0), m: 'a', id: 2 },
          { t: at(1), m: 'a', id: 3 },
        ]);
        // Assert: the ordered call stops at its second measurement; its third is not stored although it
        // shares a bucket with the first (before the fix, with the call's batches written together, that
        // bucket was written while the second measurement waited, and the third was stored).
        expect(first.writeErrors.map((e) => e.index)).toEqual([0]);
        expect(second.writeErrors.map((e) => e.index)).toEqual([1]);
        expect(second.insertedCount).toBe(1);
        expect(stored).toEqual([1]);
      },
    );
  });
});
