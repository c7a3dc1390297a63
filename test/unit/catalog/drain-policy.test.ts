/**
 * When a catalog's deferred maps ask their storage to take the tails: after runs of 64 measurements while
 * the catalog holds few buckets, of 16 once it holds many; the stored bytes are the same either way.
 */
import { describe, expect, it } from 'vitest';

import { MemoryStorage } from '../../../src/index.js';
import type { BucketCatalog, InsertItem, StoredBucket } from '../../../src/index.js';
import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import {
  drainThresholdFor,
  kDeferredDrainThreshold,
  kFewBuckets,
  kFewBucketsDrainThreshold,
} from '../../../src/bucket-format/measurement-map.js';
import type { MeasurementMap } from '../../../src/bucket-format/measurement-map.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

function item(series: string, timeMs: number, v: number): InsertItem {
  return {
    measurement: { time: new Date(timeMs), m: series, v },
    timeMs,
    metadata: makeBucketMetadata(series),
  };
}

/** Stage, prepare, write and finish one measurement of `series` alone. */
async function commitOne(
  catalog: BucketCatalog,
  storage: MemoryStorage,
  series: string,
  timeMs: number,
  v: number,
): Promise<void> {
  const [result] = await catalog.insert(
    ns,
    kTestBucketing,
    [item(series, timeMs, v)],
    'disallow',
    catalog.newOpId(),
  );
  if (result?.kind !== 'staged') throw new Error('not staged');
  catalog.claimWriteBatchCommitRights(result.batch);
  const prepared = await catalog.prepareCommit(result.batch);
  if (prepared.kind === 'insert') await storage.insertOne(ns, prepared.document as StoredBucket);
  else if (prepared.kind === 'update') await storage.applyCommit(ns, prepared.commit);
  else throw new Error('aborted');
  await catalog.finish(result.batch);
}

/** The map of the open bucket of `series`. */
function mapOf(catalog: BucketCatalog, series: string): MeasurementMap {
  for (const stripe of catalog.state.stripes) {
    for (const bucket of stripe.openBucketsById.values()) {
      if (bucket.normalizedMeta === series && bucket.measurementMap !== undefined)
        return bucket.measurementMap;
    }
  }
  throw new Error(`no open bucket for ${series}`);
}

/** The `v` column of the bucket of `series`, as stored. */
async function storedValues(storage: MemoryStorage, series: string): Promise<unknown[]> {
  for await (const doc of storage.find(ns, { meta: series })) {
    const column = (doc as { data: { v: { buffer: Uint8Array; position: number } } }).data.v;
    return BSONColumn.decode(column.buffer.subarray(0, column.position));
  }
  throw new Error(`no bucket for ${series}`);
}

function newCatalog(): BucketCatalog {
  return newTestCatalog({
    parameters: { timeseriesAlwaysUseCompressedBuckets: true },
    deferredColumns: true,
  });
}

describe('the drain threshold of deferred maps', () => {
  it('is 64 up to 256 buckets and 16 beyond', () => {
    expect([kFewBuckets, kFewBucketsDrainThreshold, kDeferredDrainThreshold]).toEqual([256, 64, 16]);
    expect(drainThresholdFor(0)).toBe(64);
    expect(drainThresholdFor(256)).toBe(64);
    expect(drainThresholdFor(257)).toBe(16);
  });

  it('keeps 63 measurements of a catalog with one bucket and drains at the 64th', async () => {
    // Arrange
    const catalog = newCatalog();
    const storage = new MemoryStorage();
    for (let i = 0; i < 63; i++) await commitOne(catalog, storage, 'a', T0 + i * 1000, i);
    expect(mapOf(catalog, 'a').keptCount).toBe(63);
    // Act
    await commitOne(catalog, storage, 'a', T0 + 63_000, 63);
    // Assert: taken by the storage, and stored as committed.
    expect(mapOf(catalog, 'a').keptCount).toBe(0);
    expect(await storedValues(storage, 'a')).toEqual(Array.from({ length: 64 }, (_, i) => i));
  });

  it('drains at 16 once the catalog holds more than 256 buckets', async () => {
    // Arrange: 257 series with one measurement each; then 15 measurements kept in the first one's bucket.
    const catalog = newCatalog();
    const storage = new MemoryStorage();
    for (let s = 0; s < 257; s++) await commitOne(catalog, storage, `s${s}`, T0, s);
    expect(catalog.state.drain.threshold).toBe(16);
    for (let i = 1; i < 15; i++) await commitOne(catalog, storage, 's0', T0 + i * 1000, i);
    expect(mapOf(catalog, 's0').keptCount).toBe(15);
    // Act
    await commitOne(catalog, storage, 's0', T0 + 15_000, 15);
    // Assert
    expect(mapOf(catalog, 's0').keptCount).toBe(0);
    expect(await storedValues(storage, 's0')).toEqual(Array.from({ length: 16 }, (_, i) => i));
  });
});
