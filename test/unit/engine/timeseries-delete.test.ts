import { Binary } from 'bson';
import type { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine } from '../../../src/index.js';
import type { ServerParameters } from '../../../src/index.js';
import { decompressBucket } from '../../../src/bucket-format/bucket-compression.js';
import { measurementsOf, repackBucket } from '../../../src/engine/timeseries-delete.js';
import { Deferred } from '../../../src/util/deferred.js';
import { FaultyStorage } from '../../support/faulty-storage.js';

const iso = (s: string) => new Date(s);
const at = (seconds: number) => new Date(Date.UTC(2021, 6, 12, 16, 0, seconds));

async function setup(parameters: ServerParameters = {}, metaField: 'tag' | 'none' = 'tag') {
  const storage = new FaultyStorage();
  // The 5.x–7.x format unless a test asks for the 8.0 one: these tests pin version-1 documents.
  const engine = new BucketEngine({
    storage,
    parameters: { timeseriesAlwaysUseCompressedBuckets: false, ...parameters },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('t', {
    timeseries: metaField === 'none' ? { timeField: 'time' } : { timeField: 'time', metaField },
  });
  return { engine, coll, storage };
}

describe('deleteMany with a metaField-only filter', () => {
  it('deletes whole buckets and counts their measurements', async () => {
    // Arrange
    const { coll } = await setup();
    await coll.insertMany([
      { time: at(0), tag: { a: 'A' }, m: 1 },
      { time: at(1), tag: { a: 'A' }, m: 2 },
      { time: at(2), tag: { b: 'B' }, m: 3 },
      { time: at(3), tag: { d: 'D' }, m: 4 },
    ]);
    const [, keep] = await coll.buckets.find().toArray();
    // Act
    const result = await coll.deleteMany({ $or: [{ 'tag.a': 'A' }, { tag: { d: 'D' } }] });
    // Assert
    expect(result).toStrictEqual({ acknowledged: true, deletedCount: 3 });
    expect(await coll.buckets.find().toArray()).toStrictEqual([keep]);
  });

  it('an empty filter deletes everything, also without a metaField', async () => {
    const { coll } = await setup({}, 'none');
    await coll.insertMany([{ time: at(0), meta: 'A' }, { time: at(1) }]);
    expect(await coll.deleteMany({})).toStrictEqual({ acknowledged: true, deletedCount: 2 });
    expect(await coll.buckets.countDocuments()).toBe(0);
  });
});

describe('deleteMany with other filters', () => {
  it('repacks a version-1 bucket under the same _id, recomputing min/max and keeping the rounded minimum', async () => {
    // Arrange
    const { coll } = await setup();
    await coll.insertMany([
      { _id: 1, time: at(10), tag: 'A', x: 5, y: 'b' },
      { _id: 2, time: at(20), tag: 'A', x: 1 },
      { _id: 3, time: at(30), tag: 'A', x: 9, z: true },
    ]);
    const [before] = await coll.buckets.find().toArray();
    // Act
    const result = await coll.deleteMany({ x: { $lt: 2 } });
    const result2 = await coll.deleteMany({ z: true });
    // Assert
    expect([result, result2]).toStrictEqual([
      { acknowledged: true, deletedCount: 1 },
      { acknowledged: true, deletedCount: 1 },
    ]);
    expect(await coll.buckets.find().toArray()).toStrictEqual([
      {
        _id: before!._id,
        control: {
          version: 1,
          min: { _id: 1, time: iso('2021-07-12T16:00:00Z'), x: 5, y: 'b' },
          max: { _id: 1, time: at(10), x: 5, y: 'b' },
          closed: true,
        },
        meta: 'A',
        data: { _id: { '0': 1 }, time: { '0': at(10) }, x: { '0': 5 }, y: { '0': 'b' } },
      },
    ]);
  });

  it('deletes the bucket when no measurement is left', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { time: at(0), tag: 'A', x: 1 },
      { time: at(1), tag: 'A', x: 2 },
      { time: at(2), tag: 'B', x: 3 },
    ]);
    expect(await coll.deleteMany({ x: { $lte: 2 } })).toStrictEqual({ acknowledged: true, deletedCount: 2 });
    expect(await coll.buckets.find({}, { projection: { meta: 1 } }).toArray()).toStrictEqual([
      { _id: expect.anything() as ObjectId, meta: 'B' },
    ]);
  });

  it('rewrites a compressed bucket compressed, with its count', async () => {
    // Arrange: a count limit of 12 closes (and compresses) the first bucket.
    const { coll } = await setup({ timeseriesBucketMaxCount: 12 });
    await coll.insertMany(Array.from({ length: 13 }, (_, i) => ({ time: at(i), tag: 'A', x: i })));
    const [closed] = await coll.buckets.find({ 'control.version': 2 }).toArray();
    expect(closed).toBeDefined();
    // Act
    expect(await coll.deleteMany({ x: { $in: [0, 11, 12] } })).toStrictEqual({
      acknowledged: true,
      deletedCount: 3,
    });
    // Assert
    const [rewritten] = await coll.buckets.find({ _id: closed!._id }).toArray();
    expect(rewritten!.control).toStrictEqual({
      version: 2,
      min: { time: iso('2021-07-12T16:00:00Z'), x: 1 },
      max: { time: at(10), x: 10 },
      count: 10,
      closed: true,
    });
    expect((rewritten!.data as { time: unknown }).time).toBeInstanceOf(Binary);
    expect(decompressBucket(rewritten!)).toStrictEqual({
      _id: closed!._id,
      control: {
        version: 1,
        min: { time: iso('2021-07-12T16:00:00Z'), x: 1 },
        max: { time: at(10), x: 10 },
        closed: true,
      },
      meta: 'A',
      data: {
        time: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), at(i + 1)])),
        x: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i), i + 1])),
      },
    });
    expect(await coll.countDocuments()).toBe(10);
  });

  it('marks the repacked bucket closed: later inserts go to a new bucket', async () => {
    // Another engine may hold the bucket open: appending to rewritten columns with the state it knew
    // would corrupt them (the count alone can match again), so a rewritten bucket takes no appends.
    const { coll } = await setup();
    await coll.insertMany([0, 1, 2].map((i) => ({ time: at(i), tag: 'A', i })));
    await coll.deleteMany({ i: 1 });
    await coll.insertOne({ time: at(3), tag: 'A', i: 3 });
    const buckets = await coll.buckets
      .find({}, { projection: { 'control.closed': 1, 'data.i': 1 } })
      .toArray();
    const first = (b: (typeof buckets)[number]) => (b.data as { i: Record<string, number> }).i['0'] ?? 0;
    expect(
      buckets.sort((x, y) => first(x) - first(y)).map(({ control, data }) => ({ control, data })),
    ).toStrictEqual([
      { control: { closed: true }, data: { i: { '0': 0, '1': 2 } } },
      { control: {}, data: { i: { '0': 3 } } },
    ]);
  });

  it('waits for a prepared batch in flight and then deletes its acknowledged measurements too', async () => {
    // Arrange: the second commit to the bucket is held in storage.
    const { coll, storage } = await setup();
    await coll.insertOne({ time: at(0), tag: 'A', x: 1 });
    const gate = new Deferred<void>();
    storage.faults.push({ kind: 'block', gate: gate.promise });
    const insert = coll.insertMany([
      { time: at(1), tag: 'A', x: 2 },
      { time: at(2), tag: 'A', x: 3 },
    ]);
    await new Promise((r) => setImmediate(r));
    // Act
    // The bucket matches as stored (x = 1), so the delete announces a direct write on it and waits.
    const deletion = coll.deleteMany({ x: { $gte: 1 } });
    await new Promise((r) => setImmediate(r));
    gate.resolve();
    // Assert
    expect(await insert).toStrictEqual({ acknowledged: true, insertedCount: 2, insertedIds: {} });
    expect(await deletion).toStrictEqual({ acknowledged: true, deletedCount: 3 });
    expect(await coll.buckets.countDocuments()).toBe(0);
  });
});

describe('deleteOne', () => {
  it('deletes one matching measurement, repacking its bucket, with either kind of filter', async () => {
    // Arrange: one bucket of three measurements of series A, one of series B.
    const { coll } = await setup({ timeseriesAlwaysUseCompressedBuckets: true });
    await coll.insertMany([
      { time: at(0), tag: 'A', m: 1 },
      { time: at(1), tag: 'A', m: 2 },
      { time: at(2), tag: 'A', m: 2 },
      { time: at(3), tag: 'B', m: 2 },
    ]);
    const ms = async () =>
      (await coll.find({}, { sort: { time: 1 } }).toArray()).map((d) => `${String(d.tag)}${String(d.m)}`);
    // Act / Assert: a filter on data fields, then one on the metaField only (which deleteMany would
    // answer by deleting the whole bucket).
    expect(await coll.deleteOne({ m: 2 })).toStrictEqual({ acknowledged: true, deletedCount: 1 });
    expect(await ms()).toEqual(['A1', 'A2', 'B2']);
    expect(await coll.deleteOne({ tag: 'A' })).toStrictEqual({ acknowledged: true, deletedCount: 1 });
    expect(await ms()).toEqual(['A2', 'B2']);
    // A bucket holding only the one measurement is deleted.
    expect(await coll.deleteOne({ tag: 'B' })).toStrictEqual({ acknowledged: true, deletedCount: 1 });
    expect(await coll.deleteOne({ m: 9 })).toStrictEqual({ acknowledged: true, deletedCount: 0 });
    expect(await ms()).toEqual(['A2']);
    expect(await coll.buckets.countDocuments()).toBe(1);
  });
});

describe('measurementsOf and repackBucket', () => {
  it('round-trips a bucket: measurements in data order with the meta, repacked to the same document', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { _id: 1, time: at(5), tag: { k: 1 }, a: { b: 1 } },
      { _id: 2, time: at(6), tag: { k: 1 } },
    ]);
    const [bucket] = await coll.buckets.find().toArray();
    const rows = measurementsOf(bucket!, 'time', 'tag');
    expect(rows).toStrictEqual([
      { _id: 1, time: at(5), a: { b: 1 }, tag: { k: 1 } },
      { _id: 2, time: at(6), tag: { k: 1 } },
    ]);
    expect(repackBucket(bucket!, rows, 'time', 'tag')).toStrictEqual(bucket);
  });

  it('compresses a version-1 bucket in the 8.0 format (timeseries_write_compresses_uncompressed_bucket.js)', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { time: at(5), tag: 0, a: 0 },
      { time: at(6), tag: 0, a: 1 },
    ]);
    const [bucket] = await coll.buckets.find().toArray();
    expect((bucket!.control as { version: number }).version).toBe(1);
    const kept = measurementsOf(bucket!, 'time', 'tag').slice(1);
    const repacked = repackBucket(bucket!, kept, 'time', 'tag', 'alwaysCompressed');
    expect(repacked.control).toMatchObject({ version: 2, count: 1 });
    expect(measurementsOf(repacked, 'time', 'tag')).toStrictEqual(kept);
    expect(
      (repackBucket(bucket!, kept, 'time', 'tag', 'compressOnClose').control as { version: number }).version,
    ).toBe(1);
  });
});
