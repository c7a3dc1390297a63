/**
 * Reopening scenarios of docs/mongodb-behaviour.md §9.4 (jstests/core/timeseries/write/timeseries_reopened_bucket_insert.js),
 * with exact bucket counts and statistics.
 */
import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../../src/index.js';
import type { BucketFilter, StorageFindOptions, StoredBucket } from '../../../src/index.js';
import { kReopeningCandidates } from '../../../src/storage/storage.js';
import type { ReopeningQuery } from '../../../src/storage/storage.js';
import { compressBucket } from '../../../src/bucket-format/bucket-compression.js';
import { compressedForReopening, uncompressedForReopening } from '../../../src/catalog/reopening.js';
import type { ReopeningSource } from '../../../src/catalog/reopening.js';
import { BsonQuery } from '../../../src/util/bson-query.js';

const at = (s: string) => new Date(s);

async function setup() {
  const engine = new BucketEngine({
    // The 5.x–7.x format: these tests pin the version-1 columns of reopened buckets.
    parameters: {
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
      timeseriesAlwaysUseCompressedBuckets: false,
    },
  });
  const coll = await engine.createCollection('reopen', {
    timeseries: { timeField: 'time', metaField: 'mm' },
  });
  const counts = async () => {
    const s = (await coll.stats()).timeseries;
    return { buckets: s.bucketCount, reopened: s.numBucketsReopened };
  };
  /** A bucket written directly to storage, as the jstest does with `insert` on system.buckets. */
  const insertBucket = async (meta: unknown, time: Date, extra: Record<string, unknown> = {}) => {
    const doc: Record<string, unknown> = {
      _id: new ObjectId(),
      control: { version: 1, min: { time }, max: { time }, ...extra },
      meta,
      data: { time: { '0': time } },
    };
    await engine.storage.insertOne(coll.bucketsNamespace, doc);
    return doc._id as ObjectId;
  };
  return { engine, coll, counts, insertBucket };
}

describe('bucket reopening (timeseries_reopened_bucket_insert.js)', () => {
  it('a measurement fitting the open bucket does not reopen anything', async () => {
    const { coll, counts } = await setup();
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Bucket1' });
    expect(await counts()).toEqual({ buckets: 1, reopened: 0 });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Bucket1' });
    expect(await counts()).toEqual({ buckets: 1, reopened: 0 });
  });

  it('reopens a bucket found on disk by query (with or without control.closed: false)', async () => {
    const { coll, counts, insertBucket } = await setup();
    const id = await insertBucket('ReopenedBucket1', at('2024-10-04T10:14:00Z'), { closed: false });
    await insertBucket('ReopenedBucket2', at('2024-10-04T10:14:00Z'));
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'ReopenedBucket1' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'ReopenedBucket1' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
    const [bucket] = await coll.buckets.find({ _id: id }).toArray();
    expect(Object.keys((bucket!.data as { time: object }).time)).toEqual(['0', '1', '2']);
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'ReopenedBucket2' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 2 });
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsQueried).toBe(2);
    expect(stats.numBucketInserts).toBe(0);
    expect(stats.numBucketUpdates).toBe(3);
  });

  it('of two buckets whose window holds the time, reopens the one that starts first, in any stored order', async () => {
    // Arrange: the later-starting bucket is stored first.
    const { coll, insertBucket } = await setup();
    const later = await insertBucket('a', at('2024-10-04T10:14:00Z'));
    const earlier = await insertBucket('a', at('2024-10-04T10:13:00Z'));
    // Act
    await coll.insertOne({ time: at('2024-10-04T10:20:00Z'), mm: 'a' });
    // Assert: as the server's query ($limit: 1 over the {meta, control.min, control.max} index) finds it.
    const counts = await coll.buckets
      .find({}, { projection: { 'data.time': 1 } })
      .toArray()
      .then(
        (docs) =>
          new Map(docs.map((d) => [String(d._id), Object.keys((d.data as { time: object }).time).length])),
      );
    expect(counts.get(String(earlier))).toBe(2);
    expect(counts.get(String(later))).toBe(1);
  });

  it('matches meta after normalisation: {b:1,a:1} reopens {a:1,b:1}; {b:2,a:2} does not', async () => {
    const { coll, counts, insertBucket } = await setup();
    await insertBucket({ a: 1, b: 1 }, at('2024-10-04T10:14:00Z'));
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: { b: 1, a: 1 } });
    expect(await counts()).toEqual({ buckets: 1, reopened: 1 });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: { b: 2, a: 2 } });
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
  });

  it('reopens the original bucket after a time-forward rollover', async () => {
    const { coll, counts } = await setup();
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Meta1' });
    expect(await counts()).toEqual({ buckets: 1, reopened: 0 });
    await coll.insertOne({ time: at('2024-12-04T10:14:00Z'), mm: 'Meta1' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 0 });
    await coll.insertOne({ time: at('2024-10-04T10:15:00Z'), mm: 'Meta1' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
  });

  it('five inserts, a day later a new bucket, then back: reopen', async () => {
    const { coll, counts } = await setup();
    for (let i = 0; i < 5; i++) await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Meta2' });
    await coll.insertOne({ time: at('2024-10-05T10:14:00Z'), mm: 'Meta2' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 0 });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Meta2' });
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
  });

  it('never reopens a closed bucket, a bucket outside the window, or another series', async () => {
    const { coll, counts, insertBucket } = await setup();
    await insertBucket('Closed', at('2024-10-04T10:14:00Z'), { closed: true });
    await insertBucket('Old', at('2000-10-04T10:14:00Z'));
    await insertBucket('Other', at('2024-10-04T10:14:00Z'));
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Closed' });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Old' });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z'), mm: 'Different' });
    expect(await counts()).toEqual({ buckets: 6, reopened: 0 });
    expect((await coll.stats()).timeseries.numBucketQueriesFailed).toBe(3);
  });

  it('archive-based: a time-backward bucket is fetched by _id when the series goes forward again', async () => {
    const { coll, counts } = await setup();
    await coll.insertOne({ time: at('2024-10-04T10:00:00Z'), mm: 'A' });
    await coll.insertOne({ time: at('2024-10-04T09:00:00Z'), mm: 'A' });
    let stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsArchivedDueToTimeBackward).toBe(1);
    await coll.insertOne({ time: at('2024-10-04T10:05:00Z'), mm: 'A' });
    stats = (await coll.stats()).timeseries;
    expect(await counts()).toEqual({ buckets: 2, reopened: 1 });
    expect(stats.numBucketsFetched).toBe(1);
    expect(stats.numBucketsClosedDueToTimeForward).toBe(1);
    const [first] = await coll.buckets.find({ 'control.min.time': at('2024-10-04T10:00:00Z') }).toArray();
    expect(Object.keys((first!.data as { time: object }).time)).toEqual(['0', '1']);
  });

  it('counts a failed fetch when the archived bucket is gone from storage', async () => {
    const { engine, coll } = await setup();
    await coll.insertOne({ time: at('2024-10-04T10:00:00Z'), mm: 'A' });
    await coll.insertOne({ time: at('2024-10-04T09:00:00Z'), mm: 'A' });
    await engine.storage.deleteMany(coll.bucketsNamespace, {
      'control.min.time': at('2024-10-04T10:00:00Z'),
    });
    await coll.insertOne({ time: at('2024-10-04T10:05:00Z'), mm: 'A' });
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketFetchesFailed).toBe(1);
    expect(stats.numBucketsReopened).toBe(0);
    expect(stats.bucketCount).toBe(2);
  });

  it('a storage error while reading a candidate sends the measurement to a new bucket; the call succeeds', async () => {
    // A storage whose next bucket query fails (a network error while looking for a bucket to reopen).
    class FlakyReads extends MemoryStorage {
      failNextFind = false;
      override find(
        ns: string,
        filter: BucketFilter,
        options?: StorageFindOptions,
      ): AsyncIterable<StoredBucket> {
        if (this.failNextFind) {
          this.failNextFind = false;
          throw new Error('connection reset');
        }
        return super.find(ns, filter, options);
      }
    }
    const storage = new FlakyReads();
    const engine = new BucketEngine({ storage });
    const coll = await engine.createCollection('flaky', {
      timeseries: { timeField: 'time', metaField: 'mm' },
    });
    await coll.insertOne({ time: at('2024-10-04T10:00:00Z'), mm: 'A', v: 0 });
    storage.failNextFind = true;
    // Series A is staged first; series B's reopening query fails.
    const result = await coll.insertMany(
      [
        { time: at('2024-10-04T10:01:00Z'), mm: 'A', v: 1 },
        { time: at('2024-10-04T10:01:00Z'), mm: 'B', v: 1 },
      ],
      { ordered: false },
    );
    expect(result.insertedCount).toBe(2);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketReopeningsFailed).toBe(1);
    expect(stats.bucketCount).toBe(2);
    // Every acknowledged measurement exactly once; nothing left staged for a later call to commit.
    await coll.insertOne({ time: at('2024-10-04T10:02:00Z'), mm: 'A', v: 2 });
    const found = await coll.find({}, { projection: { _id: 0, mm: 1, v: 1 } }).toArray();
    expect(found.map((d) => `${String(d.mm)}${String(d.v)}`).sort()).toEqual(['A0', 'A1', 'A2', 'B1']);
  });

  it("reads a call's reopening queries at once from a storage that can, and reopens from the answers", async () => {
    // A storage that reads as a remote one would (no answer without I/O), and can answer many reopening
    // queries with one read; `failProbe` makes that read fail.
    class Remote extends MemoryStorage {
      /** The reopening queries (other reads, of rollup definitions, are not counted). */
      readonly finds: BucketFilter[] = [];
      probes = 0;
      failProbe = false;
      override find(
        ns: string,
        filter: BucketFilter,
        options?: StorageFindOptions,
      ): AsyncIterable<StoredBucket> {
        if (Object.hasOwn(filter, '$and')) this.finds.push(filter);
        return super.find(ns, filter, options);
      }
      async [kReopeningCandidates](
        ns: string,
        queries: ReadonlyArray<ReopeningQuery>,
      ): Promise<StoredBucket[][]> {
        this.probes++;
        if (this.failProbe) throw new Error('connection reset');
        const answers: StoredBucket[][] = [];
        for (const { filter } of queries) {
          const found: StoredBucket[] = [];
          for await (const doc of super.find(ns, filter)) found.push(doc);
          answers.push(found);
        }
        return answers;
      }
    }
    const storage = new Remote();
    const engine = new BucketEngine({ storage });
    const coll = await engine.createCollection('remote', {
      timeseries: { timeField: 'time', metaField: 'mm' },
    });
    const t = (m: number) => at(`2024-10-04T10:0${m}:00Z`);
    // One new series: its query costs what the read would, so it is queried.
    await coll.insertOne({ time: t(0), mm: 'A', v: 0 });
    expect([storage.probes, storage.finds.length]).toEqual([0, 1]);
    // Three new series: one read, no query.
    await coll.insertMany(
      ['B', 'C', 'D'].map((mm) => ({ time: t(0), mm, v: 0 })),
      { ordered: false },
    );
    expect([storage.probes, storage.finds.length]).toEqual([1, 1]);
    expect((await coll.stats()).timeseries.numBucketQueriesFailed).toBe(4);
    // Another engine on the same storage: B's and C's buckets are reopened from the one read's answers;
    // E's answer is empty.
    const other = await new BucketEngine({ storage }).createCollection('remote', {
      timeseries: { timeField: 'time', metaField: 'mm' },
    });
    await other.insertMany(
      ['B', 'C', 'E'].map((mm) => ({ time: t(1), mm, v: 1 })),
      { ordered: false },
    );
    expect([storage.probes, storage.finds.length]).toEqual([2, 1]);
    const stats = (await other.stats()).timeseries;
    expect([stats.numBucketsReopened, stats.numBucketQueriesFailed]).toEqual([2, 1]);
    // After a failed read the queries are made one by one, and nothing fails.
    storage.failProbe = true;
    const third = await new BucketEngine({ storage }).createCollection('remote', {
      timeseries: { timeField: 'time', metaField: 'mm' },
    });
    const result = await third.insertMany(
      ['D', 'F'].map((mm) => ({ time: t(2), mm, v: 2 })),
      {
        ordered: false,
      },
    );
    expect(result.insertedCount).toBe(2);
    expect([storage.probes, storage.finds.length]).toEqual([3, 3]);
    expect((await third.stats()).timeseries.numBucketsReopened).toBe(1);
  });

  it('queries again the series whose answers were read in an era a direct write has ended since', async () => {
    // A storage answering reopening queries together; the write runs while the engine waits for the read.
    let duringRead: (() => Promise<unknown>) | undefined;
    class Remote extends MemoryStorage {
      /** Reopening queries made one by one. */
      finds = 0;
      override find(
        ns: string,
        filter: BucketFilter,
        options?: StorageFindOptions,
      ): AsyncIterable<StoredBucket> {
        if (Object.hasOwn(filter, '$and')) this.finds++;
        return super.find(ns, filter, options);
      }
      async [kReopeningCandidates](
        ns: string,
        queries: ReadonlyArray<ReopeningQuery>,
      ): Promise<StoredBucket[][]> {
        const answers: StoredBucket[][] = [];
        for (const { filter } of queries) {
          const found: StoredBucket[] = [];
          for await (const doc of super.find(ns, filter)) found.push(doc);
          answers.push(found);
        }
        await duringRead?.();
        return answers;
      }
    }
    const storage = new Remote();
    const options = { timeseries: { timeField: 'time', metaField: 'mm' } } as const;
    const first = await new BucketEngine({ storage }).createCollection('remote', options);
    await first.insertMany(
      ['A', 'B'].map((mm) => ({ time: at('2024-10-04T10:00:00Z'), mm, v: 0 })),
      { ordered: false },
    );
    const other = await new BucketEngine({ storage }).createCollection('remote', options);
    // A's bucket is rewritten through the engine that read it ahead (its measurement moves to series C,
    // which had no bucket when read): a direct write on that bucket.
    duringRead = () => other.updateMany({ mm: 'A' }, { $set: { mm: 'C' } });
    await other.insertMany(
      ['A', 'B', 'C'].map((mm) => ({ time: at('2024-10-04T10:01:00Z'), mm, v: 1 })),
      { ordered: false },
    );
    duringRead = undefined;
    // The answers were read in the era before the write: none is used, not even C's empty one; the
    // queries are made again, one by one: B's and C's find their buckets, A's none (its bucket is C's).
    const stats = (await other.stats()).timeseries;
    expect([stats.numBucketsReopened, stats.numBucketQueriesFailed]).toEqual([2, 1]);
    expect(storage.finds).toBe(3);
    const found = await other.find({}, { projection: { _id: 0, mm: 1, v: 1 } }).toArray();
    expect(found.map((d) => `${String(d.mm)}${String(d.v)}`).sort()).toEqual(['A1', 'B0', 'B1', 'C0', 'C1']);
  });

  it('a rollover inside one call counts and reopens as across calls (not "opened due to metadata")', async () => {
    const statsAfter = async (calls: ReadonlyArray<ReadonlyArray<Record<string, unknown>>>) => {
      const engine = new BucketEngine({ parameters: { timeseriesBucketMaxCount: 2 } });
      const coll = await engine.createCollection('r', { timeseries: { timeField: 'time', metaField: 'mm' } });
      for (const docs of calls) await coll.insertMany(docs, { ordered: false });
      const s = (await coll.stats()).timeseries;
      return {
        buckets: s.bucketCount,
        openedDueToMetadata: s.numBucketsOpenedDueToMetadata,
        queried: s.numBucketsQueried,
        queriesFailed: s.numBucketQueriesFailed,
        duplicatesReopened: s.numDuplicateBucketsReopened,
      };
    };
    // Time forward (two hours apart), then count (a third measurement in a bucket of two).
    for (const docs of [
      [
        { time: at('2024-10-04T10:00:00Z'), mm: 'A' },
        { time: at('2024-10-04T12:00:00Z'), mm: 'A' },
      ],
      [
        { time: at('2024-10-04T10:00:00Z'), mm: 'A' },
        { time: at('2024-10-04T10:00:01Z'), mm: 'A' },
        { time: at('2024-10-04T10:00:02Z'), mm: 'A' },
      ],
    ]) {
      const oneCall = await statsAfter([docs]);
      expect(oneCall).toEqual(await statsAfter(docs.map((d) => [d])));
      expect(oneCall).toMatchObject({ buckets: 2, openedDueToMetadata: 1, queriesFailed: 1, queried: 0 });
    }
  });

  it.each([
    ['MemoryStorage', () => new MemoryStorage()],
    [
      'a storage that reads through find (no index probe)',
      () =>
        new (class extends MemoryStorage {
          override find(ns: string, filter: BucketFilter, options?: StorageFindOptions) {
            return super.find(ns, filter, options);
          }
        })(),
    ],
  ])('a meta whose field names look like operators is compared whole (%s)', async (_name, makeStorage) => {
    // Arrange: a bucket without meta, and one whose meta is the document {$exists: false}.
    const engine = new BucketEngine({ storage: makeStorage() });
    const coll = await engine.createCollection('ops', {
      timeseries: { timeField: 'time', metaField: 'mm' },
    });
    const time = at('2024-10-04T10:14:00Z');
    const bucket = (meta: Record<string, unknown>) => ({
      _id: new ObjectId(),
      control: { version: 1, min: { time }, max: { time } },
      ...meta,
      data: { time: { '0': time } },
    });
    const withoutMeta = bucket({});
    await engine.storage.insertOne(coll.bucketsNamespace, withoutMeta);
    // Act: a series whose meta is {$gt: 0} (no bucket), then {$exists: false} (its own bucket).
    await coll.insertOne({ time, mm: { $gt: 0 } });
    const after1 = (await coll.stats()).timeseries;
    const own = bucket({ meta: { $exists: false } });
    await engine.storage.insertOne(coll.bucketsNamespace, own);
    await coll.insertOne({ time, mm: { $exists: false } });
    const after2 = (await coll.stats()).timeseries;
    // Assert: the first query matched nothing (not the bucket without meta); the second, its own bucket.
    expect(after1).toMatchObject({
      numBucketsQueried: 0,
      numBucketQueriesFailed: 1,
      numBucketReopeningsFailed: 0,
    });
    expect(after2).toMatchObject({
      numBucketsQueried: 1,
      numBucketsReopened: 1,
      numBucketReopeningsFailed: 0,
    });
    const [reopened] = await coll.buckets.find({ _id: own._id }).toArray();
    expect(reopened!.control).toMatchObject({ count: 2 });
    const [untouched] = await coll.buckets.find({ _id: withoutMeta._id }).toArray();
    expect(Object.keys((untouched!.data as { time: object }).time)).toEqual(['0']);
  });

  it('without a metaField there is no {meta, time} index: the query is skipped and counted as failed', async () => {
    const engine = new BucketEngine();
    const coll = await engine.createCollection('nometa', { timeseries: { timeField: 'time' } });
    await coll.insertOne({ time: at('2024-10-04T10:14:00Z') });
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketQueriesFailed).toBe(1);
    expect(stats.numBucketsQueried).toBe(0);
  });
});

describe('rewriting a reopened bucket is guarded on the document as read', () => {
  const id = new ObjectId('66ffbcdceab11d7636e0049e');
  const at = (s: number) => new Date(Date.UTC(2024, 9, 4, 10, 0, s));
  const v1 = (times: number[], extra: Record<string, unknown> = {}): StoredBucket => ({
    _id: id,
    control: {
      version: 1,
      min: { ts: at(Math.min(...times)) },
      max: { ts: at(Math.max(...times)) },
      ...extra,
    },
    meta: 's2',
    data: { ts: Object.fromEntries(times.map((t, i) => [String(i), at(t)])) },
  });
  /** A source whose one stored document is `current`, replaced when the filter matches it. */
  const sourceOver = (current: StoredBucket) => {
    const state = { current, replaced: false };
    const source: ReopeningSource = {
      fetchBucket: () => Promise.resolve(state.current),
      queryBuckets: () => (async function* () {})(),
      replaceBucket: (filter, doc) => {
        if (!new BsonQuery(filter).test(state.current)) return Promise.resolve(false);
        state.current = doc;
        state.replaced = true;
        return Promise.resolve(true);
      },
    };
    return { source, state };
  };

  it('a version-1 bucket a delete rewrote since it was read (fewer measurements, closed) is not compressed over', async () => {
    const read = v1([1, 2]);
    const { source, state } = sourceOver(v1([2], { closed: true }));
    expect(await compressedForReopening(source, read, 'ts', true)).toBeUndefined();
    expect(state.replaced).toBe(false);
    // As read, it is.
    const same = sourceOver(v1([1, 2]));
    expect(await compressedForReopening(same.source, read, 'ts', true)).toBeDefined();
    expect(same.state.replaced).toBe(true);
  });

  it('a compressed bucket whose meta was updated since it was read is not decompressed over', async () => {
    const compressed = compressBucket(v1([1, 2]), 'ts', { whenNotSmaller: 'compress' });
    if (compressed.kind !== 'compressed') throw new Error('not compressed');
    const { source, state } = sourceOver({ ...compressed.doc, meta: 's3' });
    expect(await uncompressedForReopening(source, compressed.doc)).toBeUndefined();
    expect(state.replaced).toBe(false);
  });
});
