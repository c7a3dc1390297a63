import { afterEach, describe, expect, it, vi } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../../src/index.js';
import { expiredBucketsFilter } from '../../../src/engine/ttl-monitor.js';

const iso = (s: string) => new Date(s);

async function setup(now: Date, expireAfterSeconds: number | 'none' = 5) {
  const clock = { now: now.getTime() };
  // The 5.x–7.x format: these tests pin version-1 documents.
  const engine = new BucketEngine({
    clock: () => clock.now,
    parameters: { timeseriesAlwaysUseCompressedBuckets: false },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('t', {
    timeseries: { timeField: 'time', metaField: 'm' },
    ...(expireAfterSeconds === 'none' ? {} : { expireAfterSeconds }),
  });
  return { engine, coll, clock };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('runTTLMonitor', () => {
  it('deletes a bucket once now − expireAfterSeconds − bucketMaxSpanSeconds passed its start (timeseries_ttl.js vector)', async () => {
    // Arrange: now = 12:00:30; expireAfterSeconds 5, span 3600: the cutoff is 11:00:25.
    const now = iso('2024-10-04T12:00:30Z');
    const { engine, coll } = await setup(now);
    const minus = (s: number) => new Date(now.getTime() - s * 1000);
    await coll.insertMany(
      [minus(3600 + 300), minus(3600), minus(5 + 300), minus(5), minus(300), now].map((time) => ({
        time,
        m: 'a',
      })),
    );
    const before = await coll.buckets.find({}, { projection: { 'control.min.time': 1 } }).toArray();
    expect(before.map((b) => (b.control as { min: { time: Date } }).min.time)).toStrictEqual([
      iso('2024-10-04T10:55:00Z'),
      iso('2024-10-04T11:55:00Z'),
    ]);
    // Act
    const result = await engine.runTTLMonitor();
    // Assert
    expect(result).toStrictEqual({ deletedBuckets: 1 });
    expect((await coll.buckets.find().toArray()).map((b) => b._id)).toStrictEqual([before[1]!._id]);
    expect(await coll.countDocuments()).toBe(4);
  });

  it('judges buckets outside the 32-bit _id range by their real start (extended range)', async () => {
    const now = iso('2024-10-04T12:00:00Z');
    const { engine, coll } = await setup(now);
    const times = [
      iso('1969-12-31T23:59:59Z'),
      iso('2038-01-19T03:15:00Z'),
      iso('2106-02-07T06:29:00Z'),
      new Date(now.getTime() - 300_000),
    ];
    await coll.insertMany(times.map((time, i) => ({ time, m: i })));
    expect(await engine.runTTLMonitor()).toStrictEqual({ deletedBuckets: 1 });
    expect(
      (await coll.find({}, { projection: { _id: 0, m: 1 }, sort: { m: 1 } }).toArray()).map((d) => d.m),
    ).toStrictEqual([1, 2, 3]);
  });

  it('ignores collections without expireAfterSeconds until collMod sets one, and stops after "off"', async () => {
    const now = iso('2024-10-04T12:00:00Z');
    const { engine, coll } = await setup(now, 'none');
    await coll.insertOne({ time: iso('2024-10-01T00:00:00Z'), m: 'a' });
    expect(await engine.runTTLMonitor()).toStrictEqual({ deletedBuckets: 0 });
    await coll.collMod({ expireAfterSeconds: 60 });
    await coll.collMod({ expireAfterSeconds: 'off' });
    expect(await engine.runTTLMonitor()).toStrictEqual({ deletedBuckets: 0 });
    await coll.collMod({ expireAfterSeconds: 60 });
    expect(await engine.runTTLMonitor()).toStrictEqual({ deletedBuckets: 1 });
  });

  it('clears the expired open bucket in the catalog: a late measurement opens a new bucket', async () => {
    const now = iso('2024-10-04T12:00:00Z');
    const { engine, coll } = await setup(now);
    await coll.insertOne({ time: iso('2024-10-01T00:00:00Z'), m: 'a', i: 1 });
    await engine.runTTLMonitor();
    await coll.insertOne({ time: iso('2024-10-01T00:00:01Z'), m: 'a', i: 2 });
    expect(await coll.find({}, { projection: { _id: 0, i: 1 } }).toArray()).toStrictEqual([{ i: 2 }]);
    const [bucket] = await coll.buckets.find().toArray();
    expect(bucket!.data).toStrictEqual({ time: { '0': iso('2024-10-01T00:00:01Z') }, i: { '0': 2 } });
  });

  it("filters on control.min.<time> up to the cutoff's second, that second included (the server's _id bound)", () => {
    const target = {
      ns: 'd.t',
      bucketsNs: 'd.system.buckets.t',
      timeField: 'ts',
      expireAfterSeconds: 10,
      bucketMaxSpanSeconds: 60,
    };
    // Cutoff 00:00:50: a bucket starting at 00:00:50 expires.
    expect(expiredBucketsFilter(target, Date.UTC(2024, 0, 1, 0, 2))).toStrictEqual({
      'control.min.ts': { $lt: iso('2024-01-01T00:00:51Z') },
    });
    // Cutoff 00:00:50.999: the same second.
    expect(expiredBucketsFilter(target, Date.UTC(2024, 0, 1, 0, 2, 0, 999))).toStrictEqual({
      'control.min.ts': { $lt: iso('2024-01-01T00:00:51Z') },
    });
  });

  it('deletes a bucket starting exactly at the cutoff', async () => {
    // Arrange: expireAfterSeconds 0, a one-hour bucket from 11:00; at 12:00 the cutoff is 11:00.
    let now = Date.UTC(2024, 0, 1, 11, 30);
    const engine = new BucketEngine({ clock: () => now, ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('t', {
      timeseries: { timeField: 'ts', bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600 },
      expireAfterSeconds: 0,
    });
    await coll.insertOne({ ts: new Date(Date.UTC(2024, 0, 1, 11, 10)) });
    // Act
    now = Date.UTC(2024, 0, 1, 12, 0);
    const result = await engine.runTTLMonitor();
    // Assert
    expect(result.deletedBuckets).toBe(1);
    expect(await coll.countDocuments()).toBe(0);
  });
});

describe('background TTL monitor', () => {
  it('runs a pass every ttlMonitorSleepSecs and stops with close()', async () => {
    // Arrange
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const now = Date.UTC(2024, 9, 4, 12);
    const engine = new BucketEngine({ clock: () => now, ttlMonitorSleepSecs: 30 });
    const coll = await engine.createCollection('t', {
      timeseries: { timeField: 'time' },
      expireAfterSeconds: 1,
    });
    await coll.insertOne({ time: iso('2024-10-01T00:00:00Z') });
    // Act + Assert
    await vi.advanceTimersByTimeAsync(29_000);
    expect(await coll.buckets.countDocuments()).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await coll.buckets.countDocuments()).toBe(0);
    expect(vi.getTimerCount()).toBe(1);
    await engine.close();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('is off with ttlMonitor: "disabled" and validates ttlMonitorSleepSecs', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    expect(vi.getTimerCount()).toBe(0);
    await engine.close();
    const error = (() => {
      try {
        return new BucketEngine({ ttlMonitorSleepSecs: 0 });
      } catch (e) {
        return e;
      }
    })();
    expect(TimeseriesError.isTimeseriesError(error) && [error.codeName, error.field]).toEqual([
      'BadValue',
      'ttlMonitorSleepSecs',
    ]);
  });
});
