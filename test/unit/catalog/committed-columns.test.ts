/**
 * The field names of an open bucket across a commit: the columns a commit creates become the bucket's
 * (shared with the collection's buckets of the same columns), and a field only another writer's batch
 * stages stays counted as uncommitted.
 */
import { describe, expect, it } from 'vitest';

import type { BucketCatalog, InsertItem, WriteBatch } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

function item(timeMs: number, fields: Record<string, unknown>): InsertItem {
  return {
    measurement: { time: new Date(timeMs), m: 'a', ...fields },
    timeMs,
    metadata: makeBucketMetadata('a'),
  };
}

async function stage(catalog: BucketCatalog, opId: number, it: InsertItem): Promise<WriteBatch> {
  const [result] = await catalog.insert(ns, kTestBucketing, [it], 'disallow', opId);
  if (result?.kind !== 'staged') throw new Error('not staged');
  return result.batch;
}

describe.each([true, false])('committed columns (compressed: %s)', (compressed) => {
  it("a field staged only by another writer's batch stays counted after the first batch commits", async () => {
    // Arrange: writer 1 prepares {time, v}; writer 2 then stages {time, v, c} into the same bucket.
    const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
    const first = await stage(catalog, catalog.newOpId(), item(T0, { v: 1 }));
    catalog.claimWriteBatchCommitRights(first);
    const prepared = await catalog.prepareCommit(first);
    expect(prepared.kind).toBe('insert');
    const second = await stage(catalog, catalog.newOpId(), item(T0 + 1000, { v: 2, c: 5 }));
    expect(second.bucket).toBe(first.bucket);
    const before = catalog.serverStatus().memoryUsage;
    // Act
    await catalog.finish(first);
    // Assert: time and v are committed, c is still staged: three names, as before the commit.
    expect(first.bucket.fieldNames).toEqual(new Set(['time', 'v']));
    expect(first.bucket.uncommittedFieldNames).toEqual(new Set(['c']));
    expect(catalog.serverStatus().memoryUsage).toBe(before);
  });

  it('new buckets staging the same names share one uncommitted set, which no later staging or commit changes', async () => {
    // Arrange: series a and b stage the same fields (in another order), c others.
    const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
    const stageOf = (meta: string, fields: Record<string, unknown>, at = T0) =>
      stage(catalog, catalog.newOpId(), {
        measurement: { time: new Date(at), m: meta, ...fields },
        timeMs: at,
        metadata: makeBucketMetadata(meta),
      });
    const a = await stageOf('a', { v: 1, w: 2 });
    const b = await stageOf('b', { w: 3, v: 4 });
    const c = await stageOf('c', { v: 5, x: 6 });
    const shared = a.bucket.uncommittedFieldNames;
    // Act: a stages a field more (another writer's batch), then b's first batch commits.
    await stageOf('a', { v: 1, w: 2, z: 3 }, T0 + 1000);
    catalog.claimWriteBatchCommitRights(b);
    await catalog.prepareCommit(b);
    await catalog.finish(b);
    // Assert
    expect(b.bucket.uncommittedFieldNames).toBeUndefined();
    expect(shared).toEqual(new Set(['time', 'v', 'w']));
    expect(a.bucket.uncommittedFieldNames).toEqual(new Set(['time', 'v', 'w', 'z']));
    expect(c.bucket.uncommittedFieldNames).toEqual(new Set(['time', 'v', 'x']));
    expect(c.bucket.uncommittedFieldNames).not.toBe(shared);
  });

  it('two new buckets staging the same names hold the same set', async () => {
    // Arrange
    const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
    // Act
    const a = await stage(catalog, catalog.newOpId(), {
      ...item(T0, { v: 1 }),
      metadata: makeBucketMetadata('a'),
    });
    const b = await stage(catalog, catalog.newOpId(), {
      measurement: { time: new Date(T0), m: 'b', v: 2 },
      timeMs: T0,
      metadata: makeBucketMetadata('b'),
    });
    // Assert
    expect(b.bucket).not.toBe(a.bucket);
    expect(b.bucket.uncommittedFieldNames).toBe(a.bucket.uncommittedFieldNames);
  });

  it("a new bucket's first commit shares the collection's names when its columns are the same", async () => {
    // Arrange: four series: two alike, one with another field, one with a field more.
    const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
    const commit = async (meta: string, fields: Record<string, unknown>) => {
      const it = { ...item(T0, fields), measurement: { time: new Date(T0), m: meta, ...fields } };
      const batch = await stage(catalog, catalog.newOpId(), { ...it, metadata: makeBucketMetadata(meta) });
      catalog.claimWriteBatchCommitRights(batch);
      await catalog.prepareCommit(batch);
      await catalog.finish(batch);
      return batch.bucket;
    };
    // Act
    const a = await commit('a', { v: 1, w: 2 });
    const b = await commit('b', { w: 3, v: 4 });
    const c = await commit('c', { v: 5, x: 7 });
    const d = await commit('d', { v: 5, x: 7, y: 8 });
    // Assert: same names (in any order) share one set; other names, as many or more, get their own.
    expect(a.fieldNames).toEqual(new Set(['time', 'v', 'w']));
    expect(b.fieldNames).toBe(a.fieldNames);
    expect(c.fieldNames).toEqual(new Set(['time', 'v', 'x']));
    expect(d.fieldNames).toEqual(new Set(['time', 'v', 'x', 'y']));
    expect(a.fieldNames).toEqual(new Set(['time', 'v', 'w']));
  });

  it("a later commit's new column shares the last set only when the bucket's names become exactly it", async () => {
    // Arrange: series a commits {v}, c {x}, then b {x, w} (the collection's last set: time, x, w).
    const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
    let t = T0;
    const commit = async (meta: string, fields: Record<string, unknown>) => {
      t += 1000;
      const it = {
        measurement: { time: new Date(t), m: meta, ...fields },
        timeMs: t,
        metadata: makeBucketMetadata(meta),
      };
      const batch = await stage(catalog, catalog.newOpId(), it);
      catalog.claimWriteBatchCommitRights(batch);
      await catalog.prepareCommit(batch);
      await catalog.finish(batch);
      return batch.bucket;
    };
    await commit('a', { v: 1 });
    await commit('c', { x: 1 });
    const b = await commit('b', { x: 1, w: 2 });
    // Act: c, then a, add w to their bucket.
    const c = await commit('c', { x: 2, w: 4 });
    const a = await commit('a', { v: 2, w: 3 });
    // Assert: a's names are as many as the last set's but not the same, c's are the same.
    expect(a.fieldNames).toEqual(new Set(['time', 'v', 'w']));
    expect(b.fieldNames).toEqual(new Set(['time', 'x', 'w']));
    expect(c.fieldNames).toEqual(new Set(['time', 'x', 'w']));
    expect(c.fieldNames).toBe(b.fieldNames);
  });
});
