import { describe, expect, it } from 'vitest';

import { makeBucketKey, stripeNumber } from '../../../src/catalog/bucket-identifiers.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kBucketOverheadBytes } from '../../../src/catalog/memory-usage.js';
import { BucketEngine } from '../../../src/index.js';

/** `count` meta values whose series all land on the same stripe of collection `ns`. */
function sameStripeMetas(ns: string, count: number): string[] {
  const byStripe = new Map<number, string[]>();
  for (let i = 0; ; i++) {
    const meta = `s${i}`;
    const stripe = stripeNumber(makeBucketKey(ns, makeBucketMetadata(meta).key));
    const list = byStripe.get(stripe) ?? [];
    list.push(meta);
    byStripe.set(stripe, list);
    if (list.length === count) return list;
  }
}

describe('idle bucket expiry under memory pressure (docs/mongodb-behaviour.md §5.7)', () => {
  it('archives least recently idle buckets of the stripe, then drops archived records', async () => {
    // One bucket's estimated memory, measured on a separate engine (same collection, same key length,
    // same bucket format).
    const probe = new BucketEngine({
      parameters: {
        timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
        timeseriesAlwaysUseCompressedBuckets: false,
      },
    });
    const probeColl = await probe.createCollection('mem', { timeseries: { timeField: 't', metaField: 'm' } });
    await probeColl.insertOne({ t: new Date(0), m: 's0' });
    const perBucket = probe.serverStatus().bucketCatalog.memoryUsage;
    expect(perBucket).toBeGreaterThan(kBucketOverheadBytes);
    // Threshold between two and three buckets' worth: allocating more on the stripe expires the oldest.
    const threshold = Math.floor(2.5 * perBucket);
    // The 5.x–7.x format: this test counts the compression of the buckets expiry closes.
    const engine = new BucketEngine({
      parameters: {
        timeseriesIdleBucketExpiryMemoryUsageThreshold: threshold,
        timeseriesAlwaysUseCompressedBuckets: false,
      },
    });
    const coll = await engine.createCollection('mem', { timeseries: { timeField: 't', metaField: 'm' } });
    const metas = sameStripeMetas(coll.namespace, 30);
    const t = new Date('2024-01-01T00:00:00Z');
    await coll.insertOne({ t, m: metas[0] });
    await coll.insertOne({ t, m: metas[1] });
    let status = engine.serverStatus().bucketCatalog;
    expect(status.numIdleBuckets).toBe(2);
    expect(status.numBucketsArchivedDueToMemoryThreshold).toBe(0);

    await coll.insertOne({ t, m: metas[2] });
    await coll.insertOne({ t, m: metas[3] });
    status = engine.serverStatus().bucketCatalog;
    expect(status.numBucketsArchivedDueToMemoryThreshold).toBe(1);
    // The first series' bucket was the least recently idle: it is no longer open.
    const stripe =
      engine.catalog.state.stripes[
        stripeNumber(makeBucketKey(coll.namespace, makeBucketMetadata(metas[0]).key))
      ]!;
    const openMetas = [...stripe.openBucketsById.values()].map((b) => b.normalizedMeta);
    expect(openMetas).not.toContain(metas[0]);
    expect(openMetas).toContain(metas[3]);

    // Keep allocating: once idle buckets are gone, archived records are dropped too.
    for (const m of metas.slice(4)) await coll.insertOne({ t, m });
    status = engine.serverStatus().bucketCatalog;
    expect(status.memoryUsage).toBeLessThanOrEqual(threshold + 2 * perBucket);
    expect(status.numBucketsClosedDueToMemoryThreshold).toBeGreaterThan(0);
    expect(status.numBuckets).toBe(status.numOpenBuckets + status.numArchivedBuckets);
    // Nothing acknowledged is lost: every measurement is in storage.
    expect(await coll.buckets.countDocuments()).toBe(30);
    // Buckets closed under memory pressure go through compression like any closed bucket (7.x): a
    // one-measurement bucket is not smaller compressed, so each is counted as left uncompressed.
    const compression = (await coll.stats()).timeseries;
    expect([compression.numCompressedBuckets, compression.numUncompressedBuckets]).toEqual([
      0,
      status.numBucketsClosedDueToMemoryThreshold,
    ]);
  });

  it('compresses the buckets it closes, as any closed bucket', async () => {
    // Arrange: a threshold of a few buckets, 40 series of 20 measurements each on one stripe.
    // The 5.x–7.x format: closed buckets are compressed on close (in the 8.0 format they already are).
    const engine = new BucketEngine({
      ttlMonitor: 'disabled',
      parameters: {
        timeseriesIdleBucketExpiryMemoryUsageThreshold: 3000,
        timeseriesAlwaysUseCompressedBuckets: false,
      },
    });
    const coll = await engine.createCollection('mem', { timeseries: { timeField: 't', metaField: 'm' } });
    // Act
    for (const m of sameStripeMetas(coll.namespace, 40)) {
      await coll.insertMany(
        Array.from({ length: 20 }, (_, i) => ({ t: new Date(Date.UTC(2024, 0, 1, 0, 0, i)), m, v: i * 1.5 })),
      );
    }
    // Assert
    const status = engine.serverStatus().bucketCatalog;
    expect(status.numBucketsClosedDueToMemoryThreshold).toBeGreaterThan(0);
    expect(await coll.buckets.countDocuments({ 'control.version': 2 })).toBe(
      status.numBucketsClosedDueToMemoryThreshold,
    );
    expect((await coll.find({}).toArray()).length).toBe(800);
  });

  it('closes an idle bucket already full by count instead of archiving it (newest, docs/mongodb-behaviour.md §5.5)', async () => {
    const engine = new BucketEngine({
      parameters: { timeseriesBucketMaxCount: 2, timeseriesIdleBucketExpiryMemoryUsageThreshold: 1000 },
    });
    const coll = await engine.createCollection('full', { timeseries: { timeField: 't', metaField: 'm' } });
    const [full, other] = sameStripeMetas(coll.namespace, 2);
    const t = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));
    // Two measurements fill the bucket by count; it stays open and idle until the next one arrives.
    await coll.insertMany([
      { t: t(0), m: full },
      { t: t(1), m: full },
    ]);
    // An allocation on the stripe, over the threshold, expires it.
    await coll.insertOne({ t: t(0), m: other });
    const status = engine.serverStatus().bucketCatalog;
    expect(status.numBucketsArchivedDueToMemoryThreshold).toBe(1);
    expect(status.numBucketsClosedDueToCount).toBe(1);
    expect(status.numArchivedBuckets).toBe(0);
    // A late measurement of its window is not fetched back into a bucket that cannot take it.
    await coll.insertOne({ t: t(0), m: full });
    const after = engine.serverStatus().bucketCatalog;
    expect(after.numBucketsFetched).toBe(0);
    expect(after.numBucketsReopened).toBe(0);
  });

  it('counts large measurements in memory usage, so buckets of long strings reach the threshold (timeseries_collStats.js)', async () => {
    // The jstest: 1 MiB strings reach a 10 MiB threshold within 70 buckets; here a quarter of each.
    const threshold = 2.5 * 1024 * 1024;
    const engine = new BucketEngine({
      parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: threshold },
    });
    const small = await engine.createCollection('small', { timeseries: { timeField: 't', metaField: 'm' } });
    await small.insertOne({ t: new Date(0), m: 0, a: 'a' });
    const perSmallBucket = engine.serverStatus().bucketCatalog.memoryUsage;
    const coll = await engine.createCollection('mem', { timeseries: { timeField: 't', metaField: 'm' } });
    const long = 'a'.repeat(256 * 1024);
    for (let i = 0; i < 70; i++) await coll.insertOne({ t: new Date(0), m: i, a: long });
    const status = engine.serverStatus().bucketCatalog;
    expect(perSmallBucket).toBeLessThan(4096);
    // Each bucket counts its measurement's size: past the threshold, idle buckets of the stripe go.
    expect(status.numBucketsArchivedDueToMemoryThreshold).toBeGreaterThan(0);
    expect(await coll.countDocuments()).toBe(70);
  });

  it('never expires anything below the threshold', async () => {
    const engine = new BucketEngine({
      parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
    });
    const coll = await engine.createCollection('mem', { timeseries: { timeField: 't', metaField: 'm' } });
    for (let i = 0; i < 50; i++) await coll.insertOne({ t: new Date(0), m: i });
    const status = engine.serverStatus().bucketCatalog;
    expect(status.numIdleBuckets).toBe(50);
    expect(status.numBucketsArchivedDueToMemoryThreshold + status.numBucketsClosedDueToMemoryThreshold).toBe(
      0,
    );
  });
});
