/**
 * The MongoDB 8.0+ write path (`timeseriesAlwaysUseCompressedBuckets: true`, the default): exact version-2
 * and version-3 documents, appends, reopening from the stored binaries, version-1 buckets compressed on
 * reopen, and frozen buckets.
 */
import { Binary, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import { BucketEngine, MemoryStorage } from '../../../src/index.js';
import type { ServerParameters, Storage } from '../../../src/index.js';

const at = (s: string) => new Date(s);
const column = (values: ReadonlyArray<unknown>) =>
  new Binary(BSONColumn.encode(values), Binary.SUBTYPE_COLUMN);

async function setup(storage: Storage = new MemoryStorage(), parameters: ServerParameters = {}) {
  const engine = new BucketEngine({
    storage,
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40, ...parameters },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('weather', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  const stats = async () => (await coll.stats()).timeseries;
  return { engine, coll, storage, stats };
}

describe('compressed buckets (MongoDB 8.0+)', () => {
  it('the first commit inserts a version-2 bucket: control.count, the time column first, no meta in data', async () => {
    // Arrange
    const { coll } = await setup();
    // Act
    await coll.insertMany([
      { temp: 21.5, ts: at('2024-10-04T10:14:33.500Z'), sensor: { b: 2, a: 1 } },
      { ts: at('2024-10-04T10:14:35Z'), sensor: { a: 1, b: 2 }, temp: 22, wind: 'N' },
    ]);
    // Assert
    const [bucket] = await coll.buckets.find().toArray();
    expect(bucket).toStrictEqual({
      _id: bucket!._id,
      control: {
        version: 2,
        min: { ts: at('2024-10-04T10:14:00Z'), temp: 21.5, wind: 'N' },
        max: { ts: at('2024-10-04T10:14:35Z'), temp: 22, wind: 'N' },
        count: 2,
      },
      meta: { a: 1, b: 2 },
      data: {
        ts: column([at('2024-10-04T10:14:33.500Z'), at('2024-10-04T10:14:35Z')]),
        temp: column([21.5, 22]),
        wind: column([undefined, 'N']),
      },
    });
    expect(Object.keys(bucket!)).toEqual(['_id', 'control', 'meta', 'data']);
    expect(Object.keys(bucket!.control as object)).toEqual(['version', 'min', 'max', 'count']);
    expect((bucket!._id as ObjectId).getTimestamp()).toEqual(at('2024-10-04T10:14:00Z'));
  });

  it('later commits append to the columns: the bytes of encoding every measurement at once', async () => {
    const { coll, stats } = await setup();
    const times = ['10:00:01', '10:00:02', '10:00:03', '10:00:04'].map((t) => at(`2024-01-01T${t}Z`));
    await coll.insertOne({ ts: times[0], sensor: 's', v: 1 });
    await coll.insertMany([
      { ts: times[1], sensor: 's', v: 2 },
      { ts: times[2], sensor: 's', v: 3, extra: true },
    ]);
    await coll.insertOne({ ts: times[3], sensor: 's', v: 4 });
    const [bucket] = await coll.buckets.find().toArray();
    expect(bucket!.control).toStrictEqual({
      version: 2,
      min: { ts: at('2024-01-01T10:00:00Z'), v: 1, extra: true },
      max: { ts: times[3], v: 4, extra: true },
      count: 4,
    });
    // A column created by a later commit is added after the existing ones.
    expect(bucket!.data).toStrictEqual({
      ts: column(times),
      v: column([1, 2, 3, 4]),
      extra: column([undefined, undefined, true, undefined]),
    });
    const s = await stats();
    expect([s.numBucketInserts, s.numBucketUpdates, s.numCompressedBucketsConvertedToUnsorted]).toEqual([
      1, 2, 0,
    ]);
  });

  it('integer-like field names, a nested field and reads between commits: the columns of encoding everything at once', async () => {
    // Arrange: JS lists the fields '7' and '2' first in any object, so the stored document's columns are
    // in another order than the bucket's (time first, then order of appearance).
    const { coll } = await setup();
    const times = ['10:00:01', '10:00:02', '10:00:03', '10:00:04'].map((t) => at(`2024-01-01T${t}Z`));
    const read = async () => (await coll.buckets.find().toArray())[0];
    // Act: commits that create columns, a nested value (control.min/max no longer flat), reads between.
    await coll.insertOne({ ts: times[0], sensor: 's', b: 1, '7': 'x' });
    const first = await read();
    await coll.insertOne({ ts: times[1], sensor: 's', b: 2, '7': 'y', '2': true });
    await coll.insertOne({ ts: times[2], sensor: 's', b: 3, o: { p: 1 } });
    const third = await read();
    await coll.insertOne({ ts: times[3], sensor: 's', b: 0, '7': 'a' });
    // Assert: what was read earlier did not change; the last state is exact.
    expect(first!.data).toStrictEqual({ ts: column(times.slice(0, 1)), b: column([1]), '7': column(['x']) });
    expect((third!.control as { max: unknown }).max).toStrictEqual({
      ts: times[2],
      b: 3,
      '7': 'y',
      '2': true,
      o: { p: 1 },
    });
    const bucket = await read();
    expect(bucket!.control).toStrictEqual({
      version: 2,
      min: { ts: at('2024-01-01T10:00:00Z'), b: 0, '7': 'a', '2': true, o: { p: 1 } },
      max: { ts: times[3], b: 3, '7': 'y', '2': true, o: { p: 1 } },
      count: 4,
    });
    expect(bucket!.data).toStrictEqual({
      ts: column(times),
      b: column([1, 2, 3, 0]),
      '7': column(['x', 'y', undefined, 'a']),
      '2': column([undefined, true, undefined, undefined]),
      o: column([undefined, undefined, { p: 1 }, undefined]),
    });
  });

  it('a commit earlier than the last stored time makes the bucket version 3; an equal time does not', async () => {
    const { coll, stats } = await setup();
    await coll.insertOne({ ts: at('2024-01-01T10:00:05Z'), sensor: 'a', v: 1 });
    await coll.insertOne({ ts: at('2024-01-01T10:00:05Z'), sensor: 'a', v: 2 });
    let [bucket] = await coll.buckets.find().toArray();
    expect((bucket!.control as { version: number }).version).toBe(2);
    await coll.insertOne({ ts: at('2024-01-01T10:00:01Z'), sensor: 'a', v: 3 });
    [bucket] = await coll.buckets.find().toArray();
    expect(bucket).toStrictEqual({
      _id: bucket!._id,
      control: {
        version: 3,
        min: { ts: at('2024-01-01T10:00:00Z'), v: 1 },
        max: { ts: at('2024-01-01T10:00:05Z'), v: 3 },
        count: 3,
      },
      meta: 'a',
      data: {
        ts: column([at('2024-01-01T10:00:05Z'), at('2024-01-01T10:00:05Z'), at('2024-01-01T10:00:01Z')]),
        v: column([1, 2, 3]),
      },
    });
    expect((await stats()).numCompressedBucketsConvertedToUnsorted).toBe(1);
    // Within one call the measurements are sorted first: no version 3 from one out-of-order call.
    await coll.insertMany([
      { ts: at('2024-01-01T11:00:09Z'), sensor: 'b', v: 1 },
      { ts: at('2024-01-01T11:00:02Z'), sensor: 'b', v: 2 },
    ]);
    const [b] = await coll.buckets.find({ meta: 'b' }).toArray();
    expect((b!.control as { version: number }).version).toBe(2);
    expect(
      await coll.find({}, { sort: { ts: 1 }, projection: { _id: 0, v: 1, sensor: 1 } }).toArray(),
    ).toEqual([
      { sensor: 'a', v: 3 },
      { sensor: 'a', v: 1 },
      { sensor: 'a', v: 2 },
      { sensor: 'b', v: 2 },
      { sensor: 'b', v: 1 },
    ]);
  });

  it('closing a bucket writes nothing', async () => {
    const storage = new MemoryStorage();
    const { coll, stats } = await setup(storage, { timeseriesBucketMaxCount: 2 });
    let writes = 0;
    const replaceOne = storage.replaceOne.bind(storage);
    storage.replaceOne = (...args) => {
      writes++;
      return replaceOne(...args);
    };
    for (let i = 0; i < 5; i++)
      await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), sensor: 's', i });
    expect(writes).toBe(0);
    const versions = (await coll.buckets.find().toArray()).map(
      (b) => (b.control as { version: number }).version,
    );
    expect(versions).toEqual([2, 2, 2]);
    expect((await stats()).numBucketsClosedDueToCount).toBe(2);
  });

  it('reopens a compressed bucket from its stored binaries and appends to it', async () => {
    // Arrange: one engine writes a bucket; a second engine (a restarted process) shares the storage.
    const storage = new MemoryStorage();
    const first = await setup(storage);
    await first.coll.insertMany([
      { ts: at('2024-01-01T10:00:01Z'), sensor: 's', v: 1.5 },
      { ts: at('2024-01-01T10:00:02Z'), sensor: 's', v: 2.5 },
    ]);
    const second = await setup(storage);
    // Act
    await second.coll.insertOne({ ts: at('2024-01-01T10:00:03Z'), sensor: 's', v: 3.5, w: 1 });
    // Assert: the same bucket, byte for byte what one encoder would have written.
    const buckets = await second.coll.buckets.find().toArray();
    expect(buckets).toHaveLength(1);
    expect(buckets[0]!.data).toStrictEqual({
      ts: column(['01', '02', '03'].map((s) => at(`2024-01-01T10:00:${s}Z`))),
      v: column([1.5, 2.5, 3.5]),
      w: column([undefined, undefined, 1]),
    });
    expect((buckets[0]!.control as { count: number }).count).toBe(3);
    expect((await second.stats()).numBucketsReopened).toBe(1);
  });

  it('a reopened version-1 bucket is compressed first (sorted by time), then appended to', async () => {
    const storage = new MemoryStorage();
    const old = await setup(storage, { timeseriesAlwaysUseCompressedBuckets: false });
    await old.coll.insertOne({ ts: at('2024-01-01T10:00:02Z'), sensor: 's', v: 2 });
    await old.coll.insertOne({ ts: at('2024-01-01T10:00:01Z'), sensor: 's', v: 1 });
    const [v1] = await old.coll.buckets.find().toArray();
    expect((v1!.control as { version: number }).version).toBe(1);
    const next = await setup(storage);
    await next.coll.insertOne({ ts: at('2024-01-01T10:00:03Z'), sensor: 's', v: 3 });
    const [bucket] = await next.coll.buckets.find().toArray();
    expect(bucket!._id).toEqual(v1!._id);
    expect(bucket!.control).toStrictEqual({
      version: 2,
      min: { ts: at('2024-01-01T10:00:00Z'), v: 1 },
      max: { ts: at('2024-01-01T10:00:03Z'), v: 3 },
      count: 3,
    });
    expect(bucket!.data).toStrictEqual({
      ts: column(['01', '02', '03'].map((s) => at(`2024-01-01T10:00:${s}Z`))),
      v: column([1, 2, 3]),
    });
  });

  it('a version-1 bucket that cannot be compressed is frozen: left as is, the measurement goes to a new bucket', async () => {
    // Arrange: a version-1 bucket whose second time is not a date (written by some other tool).
    const storage = new MemoryStorage();
    const { coll, stats } = await setup(storage);
    const id = new ObjectId();
    const broken = () => ({
      _id: id,
      control: {
        version: 1,
        min: { ts: at('2024-01-01T10:00:00Z') },
        max: { ts: at('2024-01-01T10:00:01Z') },
      },
      meta: 's',
      data: { ts: { 0: at('2024-01-01T10:00:01Z'), 1: 'not a date' } },
    });
    await storage.insertOne(coll.bucketsNamespace, broken());
    // Act
    await coll.insertOne({ ts: at('2024-01-01T10:00:05Z'), sensor: 's', v: 1 });
    // Assert
    const s = await stats();
    expect([s.numBucketsFrozen, s.numBucketsReopened, s.numBucketInserts]).toEqual([1, 0, 1]);
    const [kept] = await coll.buckets.find({ _id: id }).toArray();
    expect(kept).toStrictEqual(broken());
    expect(await coll.buckets.countDocuments()).toBe(2);
  });

  it('a delete that repacks a bucket writes it compressed, even when that is not smaller', async () => {
    const { coll } = await setup();
    await coll.insertMany(
      [1, 2, 3].map((v) => ({ ts: new Date(Date.UTC(2024, 0, 1, 0, 0, v)), sensor: 's', v })),
    );
    await coll.deleteMany({ v: 2 });
    const [bucket] = await coll.buckets.find().toArray();
    expect(bucket!.control).toStrictEqual({
      version: 2,
      min: { ts: at('2024-01-01T00:00:00Z'), v: 1 },
      max: { ts: at('2024-01-01T00:00:03Z'), v: 3 },
      count: 2,
      closed: true,
    });
    expect(bucket!.data).toStrictEqual({
      ts: column([at('2024-01-01T00:00:01Z'), at('2024-01-01T00:00:03Z')]),
      v: column([1, 3]),
    });
  });

  it('hides the 5.x–7.x compression statistics, as 8.0 does in this mode', async () => {
    const { engine, coll, stats } = await setup();
    expect(await stats()).not.toHaveProperty('numBytesCompressed');
    await coll.insertOne({ ts: at('2024-01-01T10:00:00Z'), sensor: 's' });
    const s = await stats();
    const global = engine.serverStatus().bucketCatalog;
    for (const name of [
      'numBytesUncompressed',
      'numBytesCompressed',
      'numSubObjCompressionRestart',
      'numCompressedBuckets',
      'numUncompressedBuckets',
      'numFailedDecompressBuckets',
    ]) {
      expect(s).not.toHaveProperty(name);
      expect(global).not.toHaveProperty(name);
    }
    expect(s).toHaveProperty('numBucketsFrozen', 0);
    expect(s).toHaveProperty('numCompressedBucketsConvertedToUnsorted', 0);
  });
});
