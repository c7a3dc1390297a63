/**
 * `abort` as the server's: a no-op for a batch already finished.
 */
import { describe, expect, it } from 'vitest';

import type { BucketCatalog, InsertItem, WriteBatch } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

const item = (t: number): InsertItem => ({
  measurement: { time: new Date(t), m: 'a', v: 1 },
  timeMs: t,
  metadata: makeBucketMetadata('a'),
});

async function stage(catalog: BucketCatalog, at: number): Promise<WriteBatch> {
  const [result] = await catalog.insert(ns, kTestBucketing, [item(at)], 'disallow', catalog.newOpId());
  if (result?.kind !== 'staged') throw new Error('not staged');
  return result.batch;
}

describe('BucketCatalog.abort', () => {
  it("leaves a finished batch as it is: another writer's batch and the bucket stay", async () => {
    // Arrange: writer 1 commits; writer 2 stages into the same bucket.
    const catalog = newTestCatalog();
    const first = await stage(catalog, T0);
    catalog.claimWriteBatchCommitRights(first);
    await catalog.prepareCommit(first);
    await catalog.finish(first);
    const second = await stage(catalog, T0 + 1000);
    expect(second.bucket).toBe(first.bucket);
    // Act: writer 1's cleanup aborts its finished batch.
    await catalog.abort(first, new Error('late cleanup'));
    // Assert
    expect(await first.result.promise).toMatchObject({ kind: 'insert' });
    expect(second.state).toBe('staging');
    expect(first.bucket.state).toBe('normal');
    expect(catalog.serverStatus()).toMatchObject({ numBuckets: 1, numOpenBuckets: 1 });
  });
});
