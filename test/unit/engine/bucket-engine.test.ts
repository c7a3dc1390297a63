import { calculateObjectSize, Decimal128, Double, Int32, Long, ObjectId, serialize } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, BulkWriteError, MemoryStorage, TimeseriesError } from '../../../src/index.js';
import type {
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  ServerParameters,
  StoredBucket,
} from '../../../src/index.js';
import type { NamespaceOptions } from '../../../src/storage/storage.js';
import { decompressBucket } from '../../../src/bucket-format/bucket-compression.js';
import { Deferred } from '../../../src/util/deferred.js';
import { FaultyStorage } from '../../support/faulty-storage.js';

const iso = (s: string) => new Date(s);

async function setup(parameters: ServerParameters = {}, timeseries: Record<string, unknown> = {}) {
  const storage = new FaultyStorage();
  const engine = new BucketEngine({
    storage,
    // The 5.x–7.x format unless a test asks for the 8.0 one: these tests pin version-1 documents.
    parameters: {
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
      timeseriesAlwaysUseCompressedBuckets: false,
      ...parameters,
    },
  });
  const coll = await engine.createCollection('weather', {
    timeseries: { timeField: 'ts', metaField: 'sensor', ...timeseries },
  });
  return { engine, coll, storage };
}

describe('bucket documents', () => {
  it('first commit inserts a version-1 bucket with the exact MongoDB shape', async () => {
    const { coll } = await setup();
    await coll.insertOne({ ts: iso('2024-10-04T10:14:33.500Z'), sensor: { b: 2, a: 1 }, temp: 21.5 });
    const [bucket] = await coll.buckets.find().toArray();
    expect(bucket).toBeDefined();
    const oid = bucket!._id as ObjectId;
    expect(oid.toHexString().slice(0, 8)).toBe('66ffbfe8');
    expect(bucket).toStrictEqual({
      _id: oid,
      control: {
        version: 1,
        min: { ts: iso('2024-10-04T10:14:00Z'), temp: 21.5 },
        max: { ts: iso('2024-10-04T10:14:33.500Z'), temp: 21.5 },
      },
      meta: { a: 1, b: 2 },
      data: { ts: { '0': iso('2024-10-04T10:14:33.500Z') }, temp: { '0': 21.5 } },
    });
    expect(Object.keys(bucket!)).toEqual(['_id', 'control', 'meta', 'data']);
    expect(Object.keys(bucket!.control as object)).toEqual(['version', 'min', 'max']);
  });

  it('later commits append rows, add new columns at the end, and keep min/max exact', async () => {
    const { coll } = await setup();
    await coll.insertOne({ _id: 1, ts: iso('2024-10-04T10:14:10Z'), sensor: 's', x: 5 });
    await coll.insertOne({ _id: 2, ts: iso('2024-10-04T10:14:05Z'), sensor: 's', y: 'b' });
    await coll.insertOne({ _id: 3, ts: iso('2024-10-04T10:20:00Z'), sensor: 's', x: 1, y: 'a' });
    const buckets = await coll.buckets.find().toArray();
    expect(buckets).toHaveLength(1);
    expect(buckets[0]).toStrictEqual({
      _id: buckets[0]!._id,
      control: {
        version: 1,
        min: { _id: 1, ts: iso('2024-10-04T10:14:00Z'), x: 1, y: 'a' },
        max: { _id: 3, ts: iso('2024-10-04T10:20:00Z'), x: 5, y: 'b' },
      },
      meta: 's',
      data: {
        _id: { '0': 1, '1': 2, '2': 3 },
        ts: {
          '0': iso('2024-10-04T10:14:10Z'),
          '1': iso('2024-10-04T10:14:05Z'),
          '2': iso('2024-10-04T10:20:00Z'),
        },
        x: { '0': 5, '2': 1 },
        y: { '1': 'b', '2': 'a' },
      },
    });
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketInserts).toBe(1);
    expect(stats.numBucketUpdates).toBe(2);
    expect(stats.numCommits).toBe(3);
    expect(stats.numMeasurementsCommitted).toBe(3);
    expect(stats.avgNumMeasurementsPerCommit).toBe(1);
    expect(stats.numBucketsOpenedDueToMetadata).toBe(1);
  });

  it('-0 and 0 are different series (double and int32) even within one call', async () => {
    const { coll } = await setup();
    const ts = iso('2024-10-04T10:14:10Z');
    await coll.insertMany([
      { ts, sensor: 0, v: 1 },
      { ts, sensor: -0, v: 2 },
      { ts, sensor: 0, v: 3 },
    ]);
    const buckets = await coll.buckets.find().toArray();
    expect(buckets.map((b) => Object.keys((b.data as { v: object }).v).length).sort()).toEqual([1, 2]);
  });

  it('omits meta when the measurement has no metaField, and null meta is its own series', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { ts: iso('2024-10-04T10:14:10Z'), v: 1 },
      { ts: iso('2024-10-04T10:14:10Z'), sensor: null, v: 2 },
    ]);
    const buckets = await coll.buckets.find().toArray();
    expect(buckets).toHaveLength(2);
    const withoutMeta = buckets.find((b) => !('meta' in b));
    const withNull = buckets.find((b) => 'meta' in b);
    expect(withoutMeta?.data).toStrictEqual({ ts: { '0': iso('2024-10-04T10:14:10Z') }, v: { '0': 1 } });
    expect(withNull?.meta).toBeNull();
  });

  it('rounds the bucket start by granularity and by custom rounding', async () => {
    for (const [timeseries, start] of [
      [{ granularity: 'seconds' }, '2024-10-04T10:14:00.000Z'],
      [{ granularity: 'minutes' }, '2024-10-04T10:00:00.000Z'],
      [{ granularity: 'hours' }, '2024-10-04T00:00:00.000Z'],
      [{ bucketMaxSpanSeconds: 900, bucketRoundingSeconds: 900 }, '2024-10-04T10:00:00.000Z'],
    ] as const) {
      const { coll } = await setup({}, timeseries);
      await coll.insertOne({ ts: iso('2024-10-04T10:14:33Z'), sensor: 1 });
      const [bucket] = await coll.buckets.find().toArray();
      const control = bucket!.control as { min: { ts: Date } };
      expect(control.min.ts.toISOString()).toBe(start);
      expect((bucket!._id as ObjectId).getTimestamp().toISOString()).toBe(start);
    }
  });

  it('keeps BSON number types in min/max (timeseries_min_max.js)', async () => {
    const { coll } = await setup();
    const t = iso('2024-01-01T00:00:00Z');
    await coll.insertOne({ ts: t, sensor: 1, x: new Double(1.5) });
    await coll.insertOne({ ts: t, sensor: 1, x: Long.fromNumber(2) });
    let [bucket] = await coll.buckets.find().toArray();
    let control = bucket!.control as { min: { x: unknown }; max: { x: unknown } };
    expect(control.min.x).toStrictEqual(new Double(1.5));
    expect(control.max.x).toStrictEqual(Long.fromNumber(2));
    await coll.insertOne({ ts: t, sensor: 1, x: new Int32(1) });
    await coll.insertOne({ ts: t, sensor: 1, x: Decimal128.fromString('2.5') });
    await coll.insertOne({ ts: t, sensor: 1, x: 0.5 });
    [bucket] = await coll.buckets.find().toArray();
    control = bucket!.control as { min: { x: unknown }; max: { x: unknown } };
    expect(control.min.x).toBe(0.5);
    expect(control.max.x).toStrictEqual(Decimal128.fromString('2.5'));
  });
});

describe('rollover', () => {
  it('closes by count: a bucket holds exactly timeseriesBucketMaxCount measurements', async () => {
    const { coll } = await setup({ timeseriesBucketMaxCount: 3 });
    for (let i = 0; i < 7; i++)
      await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 'a', i });
    const counts = (await coll.buckets.find().toArray()).map(
      (b) => Object.keys((b.data as { ts: object }).ts).length,
    );
    expect(counts).toEqual([3, 3, 1]);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsClosedDueToCount).toBe(2);
    expect(stats.numBucketInserts).toBe(3);
    expect(stats.numBucketUpdates).toBe(4);
    expect(stats.numBucketsOpenedDueToMetadata).toBe(1);
  });

  it('soft-closes on time forward (t >= start + span)', async () => {
    const { coll } = await setup();
    await coll.insertOne({ ts: iso('2021-01-01T20:10:14.134Z'), sensor: 1 });
    await coll.insertOne({ ts: iso('2021-01-01T20:10:05Z'), sensor: 1 });
    await coll.insertOne({ ts: iso('2021-01-01T21:09:59.999Z'), sensor: 1 });
    expect(await coll.buckets.countDocuments()).toBe(1);
    await coll.insertOne({ ts: iso('2021-01-01T21:10:00.000Z'), sensor: 1 });
    expect(await coll.buckets.countDocuments()).toBe(2);
    expect((await coll.stats()).timeseries.numBucketsClosedDueToTimeForward).toBe(1);
  });

  it('archives on time backward (timeseries_time_backward.js vector)', async () => {
    const { coll } = await setup();
    for (let minute = 10; minute >= 1; minute--) {
      await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 0, minute)), sensor: 1 });
    }
    const stats = (await coll.stats()).timeseries;
    expect(stats.bucketCount).toBe(10);
    expect(stats.numBucketInserts).toBe(10);
    expect(stats.numBucketUpdates).toBe(0);
    expect(stats.numBucketsArchivedDueToTimeBackward).toBe(9);
    expect(stats.numBucketsOpenedDueToMetadata).toBe(1);
    expect(stats.numCommits).toBe(10);
    expect(stats.numMeasurementsCommitted).toBe(10);
    expect(stats.numCompressedBucketsConvertedToUnsorted).toBe(0);
    expect(stats.numBucketQueriesFailed).toBe(10);
    expect(stats.numActiveBuckets).toBe(10);
  });

  it('sorts each call by time per series before staging (one bucket for [10:30, 10:10])', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { ts: iso('2024-01-01T10:30:00Z'), sensor: 1, v: 'late' },
      { ts: iso('2024-01-01T10:10:00Z'), sensor: 1, v: 'early' },
    ]);
    const buckets = await coll.buckets.find().toArray();
    expect(buckets).toHaveLength(1);
    expect(buckets[0]!.data).toStrictEqual({
      ts: { '0': iso('2024-01-01T10:10:00Z'), '1': iso('2024-01-01T10:30:00Z') },
      v: { '0': 'early', '1': 'late' },
    });
  });

  it('closes on schema change (timeseries_closed_due_to_schema_changes.js vector)', async () => {
    const { coll } = await setup();
    const values = [new ObjectId(), [1], new Date(0), 'MongoDB', Decimal128.fromString('1'), { a: 20 }, 42];
    const seen: number[] = [];
    for (const x of values) {
      await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 1, x });
      seen.push((await coll.stats()).timeseries.numBucketsClosedDueToSchemaChange);
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('numbers of any width are schema-compatible', async () => {
    const { coll } = await setup();
    for (const x of [1, 1.5, Long.fromNumber(3), new Int32(2), Decimal128.fromString('9')]) {
      await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 1, x });
    }
    expect(await coll.buckets.countDocuments()).toBe(1);
  });

  it('closes by size once the bucket has timeseriesBucketMinCount measurements', async () => {
    const { coll } = await setup({ timeseriesBucketMaxSize: 2000, timeseriesBucketMinCount: 2 });
    const big = 'x'.repeat(300);
    for (let i = 0; i < 12; i++)
      await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, big });
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsClosedDueToSize).toBeGreaterThan(0);
    expect(stats.bucketCount).toBe(stats.numBucketsClosedDueToSize + 1);
  });

  it('keeps a bucket open for large measurements while it has fewer than timeseriesBucketMinCount', async () => {
    const { coll } = await setup({ timeseriesBucketMaxSize: 1000, timeseriesBucketMinCount: 3 });
    const big = 'y'.repeat(2000);
    for (let i = 0; i < 4; i++)
      await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, big });
    const stats = (await coll.stats()).timeseries;
    // Measurements 2 and 3 stay (fewer than 3 in the bucket), the 4th rolls over for size.
    expect(stats.numBucketsKeptOpenDueToLargeMeasurements).toBe(1);
    expect(stats.numBucketsClosedDueToSize).toBe(1);
    const counts = (await coll.buckets.find().toArray()).map(
      (b) => Object.keys((b.data as { ts: object }).ts).length,
    );
    expect(counts).toEqual([3, 1]);
  });
});

describe('compression on close', () => {
  const rows = Array.from({ length: 250 }, (_, i) => ({
    ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)),
    sensor: i % 2,
    temp: 20 + Math.round(Math.sin(i) * 1000) / 100,
  }));

  async function ingest(parameters: ServerParameters) {
    const { coll } = await setup({ timeseriesBucketMaxCount: 50, ...parameters });
    await coll.insertMany(rows, { ordered: false });
    const buckets = await coll.buckets.find().toArray();
    return { buckets, stats: (await coll.stats()).timeseries };
  }

  it('rewrites each closed bucket as version 2 and counts its sizes, with or without validation', async () => {
    const validated = await ingest({});
    const unvalidated = await ingest({ timeseriesValidateCompressedBuckets: false });
    for (const { buckets, stats } of [validated, unvalidated]) {
      const compressed = buckets.filter((b) => (b.control as { version: number }).version === 2);
      // 125 measurements per series, 50 per bucket: two full buckets per series are closed.
      expect(compressed).toHaveLength(4);
      expect(stats.numCompressedBuckets).toBe(4);
      expect(stats.numBytesCompressed).toBe(compressed.reduce((n, b) => n + calculateObjectSize(b), 0));
      expect(stats.numBytesUncompressed).toBe(
        compressed.reduce((n, b) => n + calculateObjectSize(decompressBucket(b)), 0),
      );
      const stored = buckets.flatMap((b): number[] =>
        Object.values((decompressBucket(b).data as { temp: Record<string, number> }).temp),
      );
      expect(stored.sort()).toEqual(rows.map((r) => r.temp).sort());
    }
    // The check changes nothing in what is written: the same bytes, bucket ids aside.
    const bytes = (buckets: ReadonlyArray<Record<string, unknown>>) =>
      buckets.map((b) => Buffer.from(serialize({ ...b, _id: null })).toString('hex'));
    expect(bytes(unvalidated.buckets)).toEqual(bytes(validated.buckets));
  });
});

describe('serverStatus.bucketCatalog (timeseries_serverStatus.js)', () => {
  it('is all zeros before the first insert, then counts open, idle and archived buckets', async () => {
    const { engine, coll } = await setup();
    const before = engine.serverStatus().bucketCatalog;
    expect(Object.entries(before).filter(([, v]) => v !== 0)).toEqual([]);
    expect(Object.keys(before).slice(0, 6)).toEqual([
      'numBuckets',
      'numOpenBuckets',
      'numIdleBuckets',
      'numArchivedBuckets',
      'memoryUsage',
      'numBucketInserts',
    ]);
    await coll.insertOne({ ts: iso('2025-03-19T05:17:00Z'), sensor: { a: 1 } });
    let s = engine.serverStatus().bucketCatalog;
    expect([s.numBuckets, s.numOpenBuckets, s.numIdleBuckets, s.numArchivedBuckets]).toEqual([1, 1, 1, 0]);
    await coll.insertOne({ ts: iso('2021-01-02T01:00:00Z'), sensor: { a: 1 } });
    s = engine.serverStatus().bucketCatalog;
    expect([s.numBuckets, s.numOpenBuckets, s.numIdleBuckets, s.numArchivedBuckets]).toEqual([2, 1, 1, 1]);
    await coll.insertOne({ ts: iso('2021-01-01T01:00:00Z'), sensor: { a: 1 } });
    s = engine.serverStatus().bucketCatalog;
    expect([s.numBuckets, s.numOpenBuckets, s.numIdleBuckets, s.numArchivedBuckets]).toEqual([3, 1, 1, 2]);
    expect(s.memoryUsage).toBeGreaterThan(0);
    expect(s.numCommits).toBe(3);
  });
});

describe('insertMany semantics', () => {
  const bad = { ts: 'yesterday', sensor: 1 };
  const good = (i: number) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, i });

  it('ordered: inserts up to the first invalid measurement and reports it', async () => {
    const { coll } = await setup();
    const error = await coll.insertMany([good(0), good(1), bad, good(3)]).catch((e: unknown) => e);
    expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
    // A TimeseriesError too (README, Use), with the first write error's code.
    expect(error).toBeInstanceOf(TimeseriesError);
    expect([(error as TimeseriesError).code, (error as TimeseriesError).codeName]).toEqual([2, 'BadValue']);
    const e = error as BulkWriteError;
    expect(e.insertedCount).toBe(2);
    expect(e.writeErrors).toEqual([
      {
        index: 2,
        code: 2,
        codeName: 'BadValue',
        errmsg: "'ts' must be present and contain a valid BSON UTC datetime value",
      },
    ]);
    expect(await coll.buckets.countDocuments()).toBe(1);
    expect((await coll.stats()).timeseries.numMeasurementsCommitted).toBe(2);
  });

  it('unordered: inserts every valid measurement and reports each invalid one', async () => {
    const { coll } = await setup();
    const error = (await coll
      .insertMany([bad, good(0), { sensor: 1 }, good(1), { ts: new Date(Number.NaN) }], { ordered: false })
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(2);
    expect(error.writeErrors.map((w) => w.index)).toEqual([0, 2, 4]);
    expect((await coll.stats()).timeseries.numMeasurementsCommitted).toBe(2);
  });

  it('ordered: stops at a measurement BSON cannot store, before staging anything after it', async () => {
    const { coll } = await setup();
    const error = (await coll
      .insertMany([good(0), { ...good(1), bad: Symbol('x') }, good(2)])
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(1);
    expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[1, 'BadValue']]);
    await coll.insertOne(good(3));
    // Nothing of the failed call but its first measurement was stored, even after later inserts.
    const [bucket] = await coll.buckets.find().toArray();
    expect((bucket!.data as { i: Record<string, number> }).i).toEqual({ '0': 0, '1': 3 });
  });

  it('ordered: stops at a measurement over 16 MiB with BSONObjectTooLarge', async () => {
    const { coll } = await setup();
    const huge = { ...good(0), blob: 'x'.repeat(16 * 1024 * 1024) };
    const error = (await coll.insertMany([huge, good(1)]).catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(0);
    expect(error.writeErrors.map((w) => [w.index, w.code])).toEqual([[0, 10334]]);
    expect(await coll.buckets.countDocuments()).toBe(0);
  });

  it('ordered: stops at a measurement its bucket cannot hold, even with later series staged already', async () => {
    const { engine, coll } = await setup();
    const t = (s: number) => iso(`2024-01-01T00:00:${String(s).padStart(2, '0')}Z`);
    // A 6 MiB string is a valid document but counts three times in its bucket (min, max, data).
    const error = (await coll
      .insertMany([
        { ts: t(0), sensor: 'a', v: 0 },
        { ts: t(1), sensor: 'b', blob: 'x'.repeat(6 * 1024 * 1024) },
        { ts: t(2), sensor: 'c', v: 2 },
        { ts: t(3), sensor: 'a', v: 3 },
      ])
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[1, 'BSONObjectTooLarge']]);
    expect(error.insertedCount).toBe(1);
    const stored = await coll.find({}, { projection: { _id: 0, sensor: 1, v: 1 } }).toArray();
    expect(stored).toEqual([{ sensor: 'a', v: 0 }]);
    // The abandoned batches left nothing behind: the next insert of series a reopens or starts cleanly.
    await coll.insertOne({ ts: t(4), sensor: 'a', v: 4 });
    expect((await coll.find({ sensor: 'a' }).toArray()).map((d) => d.v)).toEqual([0, 4]);
    expect(engine.serverStatus().bucketCatalog.numOpenBuckets).toBe(1);
  });

  it('unordered: a measurement over 16 MiB fails alone, refused before it reaches a bucket', async () => {
    const { coll } = await setup();
    const huge = { ...good(1), blob: 'x'.repeat(16 * 1024 * 1024) };
    const error = (await coll
      .insertMany([good(0), huge], { ordered: false })
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(1);
    expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[1, 'BSONObjectTooLarge']]);
    // A user document over the limit never reaches the catalog (the server refuses it with the command).
    expect((await coll.stats()).timeseries.numBucketDocumentsTooLargeInsert).toBe(0);
  });

  it('unordered: a measurement its bucket cannot hold fails alone and counts numBucketDocumentsTooLargeInsert', async () => {
    const { coll } = await setup();
    // A valid 6 MiB document that counts three times in its bucket (min, max, data).
    const large = { ...good(1), blob: 'x'.repeat(6 * 1024 * 1024) };
    const error = (await coll
      .insertMany([good(0), large], { ordered: false })
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(1);
    expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[1, 'BSONObjectTooLarge']]);
    expect((await coll.stats()).timeseries.numBucketDocumentsTooLargeInsert).toBe(1);
  });

  it('unordered: a measurement BSON cannot store fails alone', async () => {
    const { coll } = await setup();
    const error = (await coll
      .insertMany([good(0), { ...good(1), bad: () => 1 }, good(2)], { ordered: false })
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(2);
    expect(error.writeErrors.map((w) => w.index)).toEqual([1]);
  });

  it('returns the inserted count, and no ids for measurements without _id (none is invented)', async () => {
    const { coll } = await setup();
    expect(await coll.insertMany([good(0), good(1)], { ordered: false })).toStrictEqual({
      acknowledged: true,
      insertedCount: 2,
      insertedIds: {},
    });
    expect(await coll.insertOne(good(2))).toStrictEqual({
      acknowledged: true,
      insertedId: undefined,
      insertedCount: 1,
    });
    const stored = await coll.find({}).toArray();
    expect(stored.some((m) => Object.hasOwn(m, '_id'))).toBe(false);
  });

  it('returns the _id of each inserted measurement that has one, by index, as the driver does', async () => {
    const { coll } = await setup();
    const a = new ObjectId();
    const b = new ObjectId();
    // Index 1 has no _id; index 3 is refused (not a date) and so has no entry either.
    const docs = [{ ...good(0), _id: a }, good(1), { ...good(2), _id: b }, { ...good(3), _id: 4, ts: 'x' }];
    const error = (await coll
      .insertMany(docs, { ordered: false })
      .catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(3);
    const result = await coll.insertMany(docs.slice(0, 3), { ordered: false });
    expect(result).toStrictEqual({ acknowledged: true, insertedCount: 3, insertedIds: { 0: a, 2: b } });
    expect(result.insertedIds[0]).toBe(a);
    const one = await coll.insertOne({ ...good(4), _id: 'm-4' });
    expect(one).toStrictEqual({ acknowledged: true, insertedId: 'm-4', insertedCount: 1 });
  });

  it('stores hostile field names as plain fields', async () => {
    const { coll } = await setup();
    const doc = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": 2, "$x": 3, "a.b": 4}') as Record<
      string,
      unknown
    >;
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 1, ...doc });
    await coll.insertOne({ ts: iso('2024-01-01T00:00:01Z'), sensor: 1, ...doc });
    const [bucket] = await coll.buckets.find().toArray();
    const data = bucket!.data as Record<string, unknown>;
    expect(Object.keys(data)).toEqual(['ts', '__proto__', 'constructor', '$x', 'a.b']);
    expect(Object.getOwnPropertyDescriptor(data, '__proto__')?.value).toEqual({
      '0': { polluted: 1 },
      '1': { polluted: 1 },
    });
    expect(data['a.b']).toEqual({ '0': 4, '1': 4 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('drop', () => {
  it('forgets the collection, its buckets and its open buckets', async () => {
    const { engine, coll } = await setup();
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 1 });
    expect(await coll.drop()).toBe(true);
    expect(engine.collection('weather')).toBeUndefined();
    expect(await engine.storage.countDocuments(coll.bucketsNamespace)).toBe(0);
    expect(engine.serverStatus().bucketCatalog.numOpenBuckets).toBe(0);
    // The name can be used again, with other options.
    const again = await engine.createCollection('weather', { timeseries: { timeField: 't' } });
    await again.insertOne({ t: iso('2024-01-01T00:00:00Z') });
    expect(await again.buckets.countDocuments()).toBe(1);
  });
});

describe('drop while a commit is in flight', () => {
  it('lets the committing writer and the writer waiting on it settle', async () => {
    // A storage whose bucket inserts wait at a gate: writer A's commit is in flight while the drop runs.
    const gate = new Deferred<void>();
    const reached = new Deferred<void>();
    class GatedStorage extends MemoryStorage {
      override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
        reached.resolve();
        await gate.promise;
        return super.insertOne(ns, doc);
      }

      override async commitWrites(
        ns: string,
        writes: ReadonlyArray<BucketWrite>,
        options: CommitWritesOptions,
      ): Promise<BucketWriteOutcome[]> {
        reached.resolve();
        await gate.promise;
        return super.commitWrites(ns, writes, options);
      }
    }
    const engine = new BucketEngine({ storage: new GatedStorage() });
    const coll = await engine.createCollection('w', { timeseries: { timeField: 't', metaField: 'm' } });
    const t = iso('2024-01-01T00:00:00Z');
    const a = coll.insertMany([{ t, m: 1, v: 1 }]);
    await reached.promise;
    // B stages into the same bucket and waits for A's prepared batch.
    const b = coll.insertMany([{ t, m: 1, v: 2 }]);
    for (let i = 0; i < 20; i++) await Promise.resolve();
    // The drop waits for both calls in flight, then removes what they wrote.
    const dropped = coll.drop();
    gate.resolve();
    const [ra, rb] = await Promise.allSettled([a, b]);
    expect(ra.status).toBe('fulfilled');
    expect(rb.status).toBe('fulfilled');
    expect(await dropped).toBe(true);
    expect(await engine.storage.countDocuments(coll.bucketsNamespace)).toBe(0);
    expect(engine.serverStatus().bucketCatalog.numOpenBuckets).toBe(0);
  });
});

describe('createCollection', () => {
  it('is not left half-made when the storage fails: a retry creates the namespace and index', async () => {
    class FailingOnce extends MemoryStorage {
      failures = 1;
      override createNamespace(ns: string, options: NamespaceOptions): Promise<void> {
        if (this.failures-- > 0) return Promise.reject(new Error('storage unavailable'));
        return super.createNamespace(ns, options);
      }
    }
    const engine = new BucketEngine({ storage: new FailingOnce() });
    const options = { timeseries: { timeField: 'ts', metaField: 'sensor' } };
    await expect(engine.createCollection('w', options)).rejects.toThrow('storage unavailable');
    expect(engine.collection('w')).toBeUndefined();
    const coll = await engine.createCollection('w', options);
    const indexes = await engine.storage.listIndexes(coll.bucketsNamespace);
    expect(indexes.map((i) => i.name)).toEqual(['sensor_1_ts_1']);
  });

  it('is a no-op with identical options and fails with NamespaceExists otherwise', async () => {
    const { engine, coll } = await setup();
    expect(
      await engine.createCollection('weather', { timeseries: { timeField: 'ts', metaField: 'sensor' } }),
    ).toBe(coll);
    const error = await engine
      .createCollection('weather', { timeseries: { timeField: 'time', metaField: 'sensor' } })
      .catch((e: unknown) => e);
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect((error as TimeseriesError).code).toBe(48);
    expect((error as TimeseriesError).codeName).toBe('NamespaceExists');
    expect(engine.collection('weather')).toBe(coll);
    expect(engine.collection('nope')).toBeUndefined();
  });
});

describe('group commit and failures', () => {
  it('concurrent unordered writers share a batch: one commits, the others wait', async () => {
    const { coll, storage } = await setup();
    const gate = new Deferred<void>();
    storage.faults.push({ kind: 'block', gate: gate.promise });
    const t = (i: number) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, i });
    // Writer 0 commits the bucket's first batch and is held in storage; writers 1..9 stage meanwhile.
    const first = coll.insertMany([t(0)], { ordered: false });
    await new Promise((r) => setImmediate(r));
    const rest = Array.from({ length: 9 }, (_, k) => coll.insertMany([t(k + 1)], { ordered: false }));
    await new Promise((r) => setImmediate(r));
    gate.resolve();
    await Promise.all([first, ...rest]);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numMeasurementsCommitted).toBe(10);
    expect(stats.numCommits).toBe(2);
    expect(stats.numWaits).toBe(8);
    // Writer 1 committed the shared batch holding the measurements of writers 2..9.
    expect(stats.numMeasurementsGroupCommitted).toBe(8);
    expect(stats.numBucketInserts).toBe(1);
    expect(stats.numBucketUpdates).toBe(1);
    const [bucket] = await coll.buckets.find().toArray();
    expect(Object.keys((bucket!.data as { i: object }).i)).toHaveLength(10);
  });

  it('ordered writers never share batches', async () => {
    const { coll } = await setup();
    const t = (i: number) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, i });
    await Promise.all(Array.from({ length: 5 }, (_, i) => coll.insertMany([t(i)], { ordered: true })));
    const stats = (await coll.stats()).timeseries;
    expect(stats.numCommits).toBe(5);
    expect(stats.numWaits).toBe(0);
  });

  it('a failed storage write rejects exactly its batch; the bucket is reread from storage before reuse', async () => {
    const { coll, storage } = await setup();
    const t = (i: number) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, i });
    await coll.insertOne(t(0));
    storage.faults.push({ kind: 'fail', error: new Error('disk on fire') });
    const error = (await coll.insertMany([t(1), t(2)]).catch((e: unknown) => e)) as BulkWriteError;
    expect(error.insertedCount).toBe(0);
    // An ordered call stops at its first failed measurement: the one after it is not reported.
    expect(error.writeErrors.map((w) => [w.index, w.errmsg])).toEqual([[0, 'disk on fire']]);
    await coll.insertOne(t(3));
    const buckets = await coll.buckets.find().toArray();
    // The catalog forgot the bucket; the next measurement reopened it from storage, where only the
    // acknowledged measurement is, and appended after it.
    expect(buckets.map((b) => (b.data as { i: Record<string, number> }).i)).toEqual([{ '0': 0, '1': 3 }]);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsReopened).toBe(1);
    expect(stats.numBucketsQueried).toBe(1);
  });

  it('a guarded update that matches nothing moves the batch to a new bucket', async () => {
    const { coll, storage } = await setup();
    const t = (i: number) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 1, i });
    await coll.insertOne(t(0));
    // Someone else removes the bucket behind the catalog's back.
    await storage.deleteMany(coll.bucketsNamespace, {});
    await coll.insertOne(t(1));
    const buckets = await coll.buckets.find().toArray();
    expect(buckets.map((b) => (b.data as { i: Record<string, number> }).i)).toEqual([{ '0': 1 }]);
  });
});

describe('BulkWriteError', () => {
  it("keeps a write error's code that tsbuckets does not raise itself (a server's)", () => {
    const error = new BulkWriteError(
      [{ index: 3, code: 112, codeName: 'WriteConflict', errmsg: 'conflict' }],
      3,
    );
    expect(error).toBeInstanceOf(TimeseriesError);
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect([error.code, error.codeName, error.name]).toEqual([112, 'WriteConflict', 'BulkWriteError']);
  });
});
