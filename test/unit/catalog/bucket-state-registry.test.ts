import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { ErrorCodes, InternalInvariantError, TimeseriesError } from '../../../src/index.js';
import type { InsertItem, WriteBatch, BucketCatalog } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';
import {
  isSafeToReopen,
  makeBucketStateRegistry,
  registerDirectWriteFinish,
  registerDirectWriteStart,
} from '../../../src/catalog/bucket-state-registry.js';

const ns = 'db.t';
const options = kTestBucketing;

function newCatalog(): BucketCatalog {
  return newTestCatalog();
}

function item(meta: unknown, timeMs: number): InsertItem {
  return { measurement: { time: new Date(timeMs), m: meta }, timeMs, metadata: makeBucketMetadata(meta) };
}

async function stage(catalog: BucketCatalog, meta: unknown, timeMs: number): Promise<WriteBatch> {
  const [result] = await catalog.insert(ns, options, [item(meta, timeMs)], 'disallow', catalog.newOpId());
  if (result?.kind !== 'staged') throw new Error('not staged');
  return result.batch;
}

async function commit(catalog: BucketCatalog, batch: WriteBatch): Promise<void> {
  catalog.claimWriteBatchCommitRights(batch);
  await catalog.prepareCommit(batch);
  await catalog.finish(batch);
}

const T0 = Date.UTC(2024, 9, 4, 10);

describe('registry state', () => {
  it('counts pending direct writes per bucket; the era moves on the first start and the last finish', () => {
    // Arrange
    const registry = makeBucketStateRegistry();
    const id = new ObjectId();
    // Act + Assert
    registerDirectWriteStart(registry, id);
    expect([registry.currentEra, registry.directWrites.get(id.toHexString())]).toEqual([1, 1]);
    registerDirectWriteStart(registry, id);
    expect([registry.currentEra, registry.directWrites.get(id.toHexString())]).toEqual([1, 2]);
    expect(isSafeToReopen(registry, id, 1)).toBe(false);
    registerDirectWriteFinish(registry, id);
    expect([registry.currentEra, registry.directWrites.get(id.toHexString())]).toEqual([1, 1]);
    registerDirectWriteFinish(registry, id);
    expect([registry.currentEra, registry.directWrites.has(id.toHexString())]).toEqual([2, false]);
    expect(isSafeToReopen(registry, id, 2)).toBe(true);
    expect(isSafeToReopen(registry, id, 1)).toBe(false);
    expect(isSafeToReopen(registry, new ObjectId(), 2)).toBe(true);
  });

  it('a finish without a start is a broken invariant', () => {
    expect(() => {
      registerDirectWriteFinish(makeBucketStateRegistry(), new ObjectId());
    }).toThrow(InternalInvariantError);
  });
});

describe('BucketCatalog.directWriteStart', () => {
  it('fails unprepared batches with TimeseriesBucketCleared and forgets the open bucket', async () => {
    // Arrange
    const catalog = newCatalog();
    const first = await stage(catalog, 'a', T0);
    await commit(catalog, first);
    const pending = await stage(catalog, 'a', T0 + 1000);
    expect(pending.bucket).toBe(first.bucket);
    // Act
    await catalog.directWriteStart(ns, { _id: first.bucket.id.oid, meta: 'a' });
    // Assert
    const error = await pending.result.promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(TimeseriesError.isTimeseriesError(error) && error.code).toBe(ErrorCodes.TimeseriesBucketCleared);
    expect(catalog.serverStatus().numOpenBuckets).toBe(0);
    expect(catalog.serverStatus().numBuckets).toBe(0);
    expect(catalog.isSafeToReopen(first.bucket.id.oid, catalog.currentEra())).toBe(false);
    // A new measurement of the series opens another bucket.
    const next = await stage(catalog, 'a', T0 + 2000);
    expect(next.bucket).not.toBe(first.bucket);
    catalog.directWriteFinish(first.bucket.id.oid);
    expect(catalog.isSafeToReopen(first.bucket.id.oid, catalog.currentEra())).toBe(true);
  });

  it('waits for a prepared batch to finish before returning', async () => {
    // Arrange: a batch prepared (its storage write in flight).
    const catalog = newCatalog();
    const batch = await stage(catalog, 'a', T0);
    catalog.claimWriteBatchCommitRights(batch);
    expect((await catalog.prepareCommit(batch)).kind).toBe('insert');
    // Act
    let started = false;
    const start = catalog.directWriteStart(ns, { _id: batch.bucket.id.oid, meta: 'a' }).then(() => {
      started = true;
    });
    await new Promise((r) => setImmediate(r));
    // Assert
    expect(started).toBe(false);
    await catalog.finish(batch);
    await start;
    expect(await batch.result.promise).toStrictEqual({ kind: 'insert', bucketId: batch.bucket.id.hex });
    expect(catalog.serverStatus().numOpenBuckets).toBe(0);
    catalog.directWriteFinish(batch.bucket.id.oid);
  });

  it('drops the archived record of the bucket', async () => {
    // Arrange: a time-backward measurement archives the series' bucket.
    const catalog = newCatalog();
    const first = await stage(catalog, 'a', T0);
    await commit(catalog, first);
    await commit(catalog, await stage(catalog, 'a', T0 - 2 * 3600_000));
    expect(catalog.serverStatus().numArchivedBuckets).toBe(1);
    const memory = catalog.serverStatus().memoryUsage;
    // Act
    await catalog.directWriteStart(ns, { _id: first.bucket.id.oid, meta: 'a' });
    catalog.directWriteFinish(first.bucket.id.oid);
    // Assert
    expect(catalog.serverStatus().numArchivedBuckets).toBe(0);
    expect(catalog.serverStatus().memoryUsage).toBeLessThan(memory);
  });

  it('finds the bucket in another stripe when the given meta is stale', async () => {
    const catalog = newCatalog();
    const batch = await stage(catalog, 'a', T0);
    await commit(catalog, batch);
    await catalog.directWriteStart(ns, { _id: batch.bucket.id.oid, meta: 'not-a' });
    catalog.directWriteFinish(batch.bucket.id.oid);
    expect(catalog.serverStatus().numOpenBuckets).toBe(0);
  });
});
