import type { Binary } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage, TimeseriesError } from '../../../src/index.js';

const iso = (s: string) => new Date(s);

describe('collMod', () => {
  it('open buckets keep their start; buckets opened later use the new rounding (bucket_timestamp_rounding.js)', async () => {
    // Arrange
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('t', { timeseries: { timeField: 'time', metaField: 'm' } });
    await coll.insertOne({ time: iso('2024-10-04T10:14:33Z'), m: 'a' });
    // Act
    await coll.collMod({ granularity: 'hours' });
    await coll.insertOne({ time: iso('2024-10-04T10:20:00Z'), m: 'a' });
    await coll.insertOne({ time: iso('2024-10-04T10:20:00Z'), m: 'b' });
    // Assert
    const starts = (
      await coll.buckets.find({}, { projection: { meta: 1, 'control.min.time': 1 } }).toArray()
    ).map((b) => [b.meta, (b.control as { min: { time: Date } }).min.time]);
    expect(starts).toStrictEqual([
      ['a', iso('2024-10-04T10:14:00Z')],
      ['b', iso('2024-10-04T00:00:00Z')],
    ]);
    expect(coll.options.storedOptions).toStrictEqual({
      timeseries: { timeField: 'time', metaField: 'm', granularity: 'hours', bucketMaxSpanSeconds: 2592000 },
    });
  });

  it('refuses a granularity decrease with MongoDB message and leaves the options unchanged', async () => {
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('t', {
      timeseries: { timeField: 'time', granularity: 'minutes' },
    });
    const error = await coll.collMod({ granularity: 'seconds' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(TimeseriesError.isTimeseriesError(error) && [error.codeName, error.message]).toEqual([
      'InvalidOptions',
      "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.",
    ]);
    expect(coll.options.granularity).toBe('minutes');
  });

  it('sets, changes and removes expireAfterSeconds', async () => {
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('t', { timeseries: { timeField: 'time' } });
    await coll.collMod({ expireAfterSeconds: 10 });
    expect(coll.options.expireAfterSeconds).toBe(10);
    await coll.collMod({ expireAfterSeconds: 20, bucketMaxSpanSeconds: 7200, bucketRoundingSeconds: 7200 });
    expect([
      coll.options.expireAfterSeconds,
      coll.options.bucketMaxSpanSeconds,
      coll.options.granularity,
    ]).toEqual([20, 7200, undefined]);
    await coll.collMod({ expireAfterSeconds: 'off' });
    expect(coll.options.expireAfterSeconds).toBeUndefined();
  });
});

describe('options kept by the storage (an engine started again over it)', () => {
  const ts = { timeField: 't', metaField: 'm', bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600 };
  const at = (hhmm: string) => iso(`2024-01-01T${hhmm}:00Z`);

  it('refuses other options (NamespaceExists), takes the same ones, and follows collMod', async () => {
    // Arrange
    const storage = new MemoryStorage();
    const first = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const coll = await first.createCollection('w', { timeseries: ts, expireAfterSeconds: 60 });
    await coll.collMod({ expireAfterSeconds: 120 });
    const second = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const codeOf = (run: Promise<unknown>) =>
      run.then(
        () => 'created',
        (e: unknown) => (TimeseriesError.isTimeseriesError(e) ? e.codeName : e),
      );
    // Act / Assert
    expect(
      await codeOf(second.createCollection('w', { timeseries: { timeField: 't', metaField: 'm' } })),
    ).toBe('NamespaceExists');
    expect(await codeOf(second.createCollection('w', { timeseries: ts, expireAfterSeconds: 60 }))).toBe(
      'NamespaceExists',
    );
    expect(await codeOf(second.createCollection('w', { timeseries: ts, expireAfterSeconds: 120 }))).toBe(
      'created',
    );
    // Dropped: the name is free again.
    await second.collection('w')?.drop();
    expect(await codeOf(second.createCollection('w', { timeseries: { timeField: 't' } }))).toBe('created');
  });

  it('remembers that collMod changed the bucketing: time queries still find buckets opened before', async () => {
    // Arrange: an 11:00 bucket of one hour, widened to two hours, holding a 12:30 measurement.
    const storage = new MemoryStorage();
    const first = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const coll = await first.createCollection('w', { timeseries: ts });
    await coll.insertOne({ t: at('11:10'), m: 'a', v: 1 });
    await coll.collMod({ bucketMaxSpanSeconds: 7200, bucketRoundingSeconds: 7200 });
    await coll.insertOne({ t: at('12:30'), m: 'a', v: 2 });
    await first.close();
    // Act: another engine over the same storage, with the collection's current options.
    const second = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const again = await second.createCollection('w', {
      timeseries: { ...ts, bucketMaxSpanSeconds: 7200, bucketRoundingSeconds: 7200 },
    });
    // Assert: not read as fixed two-hour buckets (which would start at 12:00 at the latest).
    expect(again.options.bucketingParametersHaveChanged).toBe(true);
    const found = await again.find({ t: { $gte: at('12:20') } }, { projection: { _id: 0, v: 1 } }).toArray();
    expect(found).toEqual([{ v: 2 }]);
  });

  it('an engine started again does not create the {meta, time} index a user dropped', async () => {
    // Arrange
    const storage = new MemoryStorage();
    const first = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const coll = await first.createCollection('w', { timeseries: ts });
    expect((await coll.listIndexes()).map((i) => i.name)).toEqual(['m_1_t_1']);
    await coll.dropIndex('m_1_t_1');
    await first.close();
    // Act
    const again = await new BucketEngine({ storage, ttlMonitor: 'disabled' }).createCollection('w', {
      timeseries: ts,
    });
    // Assert: creating an existing collection is a no-op.
    expect(await again.listIndexes()).toEqual([]);
  });

  it('never assumes fixed buckets over a storage that keeps no options', async () => {
    const storage = new MemoryStorage();
    Object.defineProperty(storage, 'namespaceOptions', { value: undefined });
    const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('w', { timeseries: ts });
    expect(coll.options.bucketingParametersHaveChanged).toBe(true);
    const fresh = await new BucketEngine({ ttlMonitor: 'disabled' }).createCollection('w', {
      timeseries: ts,
    });
    expect(fresh.options.bucketingParametersHaveChanged).toBe(false);
  });
});

describe('values are copied at the boundary', () => {
  async function setup() {
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('c', { timeseries: { timeField: 'time', metaField: 'm' } });
    return coll;
  }

  it("changing the caller's objects after an insert does not change what was acknowledged", async () => {
    const coll = await setup();
    const time = iso('2024-01-01T00:00:00Z');
    const reading = { temp: 20, tags: ['a'] };
    const meta = { site: 'north', since: iso('2020-01-01T00:00:00Z') };
    await coll.insertOne({ time, m: meta, reading });
    // An ingester reusing its objects for the next measurement.
    time.setTime(Date.UTC(2030, 0, 1));
    reading.temp = 99;
    reading.tags.push('b');
    meta.since.setTime(0);
    const [doc] = await coll.find({ time: iso('2024-01-01T00:00:00Z') }).toArray();
    expect(doc).toEqual({
      time: iso('2024-01-01T00:00:00Z'),
      m: { since: iso('2020-01-01T00:00:00Z'), site: 'north' },
      reading: { temp: 20, tags: ['a'] },
    });
    const [bucket] = await coll.buckets.find().toArray();
    expect((bucket!.control as { max: { time: Date } }).max.time).toEqual(iso('2024-01-01T00:00:00Z'));
  });

  it('changing a result, or a bucket read through buckets.find, does not change storage', async () => {
    const coll = await setup();
    await coll.insertOne({ time: iso('2024-01-01T00:00:00Z'), m: { site: 'north' }, reading: { temp: 20 } });
    const [first] = await coll.find({}).toArray();
    (first!.time as Date).setUTCHours(12);
    (first!.m as { site: string }).site = 'south';
    (first!.reading as { temp: number }).temp = -1;
    const [raw] = await coll.buckets.find().toArray();
    // A compressed column (the default format) is a Binary: overwrite its bytes.
    const column = (raw!.data as { reading: Binary }).reading;
    expect(column._bsontype).toBe('Binary');
    column.buffer.fill(0);
    (raw!.meta as { site: string }).site = 'east';
    const [again] = await coll.find({}).toArray();
    expect(again).toEqual({ time: iso('2024-01-01T00:00:00Z'), m: { site: 'north' }, reading: { temp: 20 } });
    expect(await coll.countDocuments({ 'm.site': 'north' })).toBe(1);
  });
});

describe('no JavaScript runs', () => {
  it('$where and $function are refused by every call that takes a filter, a pipeline or a projection', async () => {
    // Arrange
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
    await coll.insertMany([
      { t: iso('2024-01-01T00:00:00Z'), m: 'a', v: 1 },
      { t: iso('2024-01-01T00:01:00Z'), m: 'b', v: 2 },
    ]);
    await coll.createRollup('r', { every: 'hour', groupBy: 'm', fields: { v: ['sum'] } });
    let ran = 0;
    const script = () => ++ran > 0;
    const where = { $where: script };
    const fn = { $function: { body: script, args: [], lang: 'js' } };
    const calls: ReadonlyArray<readonly [string, () => Promise<unknown>]> = [
      ['find', () => coll.find(where).toArray()],
      ['find $or', () => coll.find({ $or: [{ m: 'a' }, where] }).toArray()],
      ['find projection', () => coll.find({}, { projection: { x: fn } }).toArray()],
      ['countDocuments', () => coll.countDocuments(where)],
      ['aggregate $match', () => coll.aggregate([{ $match: where }]).toArray()],
      ['aggregate later $match', () => coll.aggregate([{ $limit: 5 }, { $match: where }]).toArray()],
      ['aggregate $facet', () => coll.aggregate([{ $facet: { a: [{ $match: where }] } }]).toArray()],
      ['aggregate $function', () => coll.aggregate([{ $project: { x: fn } }]).toArray()],
      [
        'aggregate later $match $expr',
        () => coll.aggregate([{ $limit: 5 }, { $match: { $expr: fn } }]).toArray(),
      ],
      [
        'aggregate $setWindowFields',
        () =>
          coll
            .aggregate([{ $setWindowFields: { sortBy: { t: 1 }, output: { x: { $sum: fn, window: {} } } } }])
            .toArray(),
      ],
      [
        'aggregate $facet $project',
        () => coll.aggregate([{ $facet: { a: [{ $project: { y: { z: fn } } }] } }]).toArray(),
      ],
      ['buckets.find', () => coll.buckets.find(where).toArray()],
      ['buckets.find projection', () => coll.buckets.find({}, { projection: { x: fn } as never }).toArray()],
      ['buckets.countDocuments', () => coll.buckets.countDocuments(where)],
      ['updateMany', () => coll.updateMany(where, { $set: { m: 'z' } })],
      ['deleteMany', () => coll.deleteMany(where)],
      ['deleteMany $and', () => coll.deleteMany({ $and: [{ v: 1 }, where] })],
      ['rollup find', () => coll.rollup('r').find(where)],
      ['rollup aggregate', () => coll.rollup('r').aggregate([{ $match: where }])],
      ['rollup aggregate $function', () => coll.rollup('r').aggregate([{ $project: { x: fn } }])],
    ];
    // Act
    const outcomes: string[] = [];
    for (const [name, call] of calls) {
      // find() and aggregate() refuse synchronously, the other calls by rejecting.
      const error: unknown = await Promise.resolve()
        .then(call)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      outcomes.push(
        `${name}: ${TimeseriesError.isTimeseriesError(error) ? `${error.codeName} ${error.message}` : String(error)}`,
      );
    }
    // Assert
    const read = 'BadValue $where is not allowed in this context';
    const write =
      'InvalidOptions Cannot use $where when performing an update or delete on a time-series collection';
    expect(outcomes).toEqual([
      `find: ${read}`,
      `find $or: ${read}`,
      'find projection: BadValue $function is not allowed in this context',
      `countDocuments: ${read}`,
      `aggregate $match: ${read}`,
      `aggregate later $match: ${read}`,
      `aggregate $facet: ${read}`,
      'aggregate $function: BadValue $function is not allowed in this context',
      'aggregate later $match $expr: BadValue $function is not allowed in this context',
      'aggregate $setWindowFields: BadValue $function is not allowed in this context',
      'aggregate $facet $project: BadValue $function is not allowed in this context',
      `buckets.find: ${read}`,
      'buckets.find projection: BadValue $function is not allowed in this context',
      `buckets.countDocuments: ${read}`,
      `updateMany: ${write}`,
      `deleteMany: ${write}`,
      `deleteMany $and: ${write}`,
      `rollup find: ${read}`,
      `rollup aggregate: ${read}`,
      'rollup aggregate $function: BadValue $function is not allowed in this context',
    ]);
    expect(ran).toBe(0);
    expect(await coll.countDocuments()).toBe(2);
    await engine.close();
  });
});
