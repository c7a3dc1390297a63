/**
 * `abort` as the server's: a no-op for a batch already finished, also one finished while the abort waited
 * for its stripe; and a batch finished after a clear removed its bucket leaves the memory estimate alone.
 */
import { describe, expect, it } from 'vitest';

import type { BucketCatalog, InsertItem, ReopeningSource, WriteBatch } from '../../../src/index.js';
import { keyFor } from '../../../src/catalog/bucket-catalog-internal.js';
import { stripeNumber } from '../../../src/catalog/bucket-identifiers.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

const item = (t: number, m = 'a'): InsertItem => ({
  measurement: { time: new Date(t), m, v: 1 },
  timeMs: t,
  metadata: makeBucketMetadata(m),
});

async function stage(catalog: BucketCatalog, at: number): Promise<WriteBatch> {
  const [result] = await catalog.insert(ns, kTestBucketing, [item(at)], 'disallow', catalog.newOpId());
  if (result?.kind !== 'staged') throw new Error('not staged');
  return result.batch;
}

/**
 * Hold the stripe of series 'a': an insert of another series of that stripe whose reopening query waits
 * until `release` is called.
 */
async function holdStripeOfA(
  catalog: BucketCatalog,
): Promise<{ release: () => void; done: Promise<unknown> }> {
  const stripeOf = (m: string) => stripeNumber(keyFor(ns, makeBucketMetadata(m)));
  let other = 'z0';
  for (let i = 1; stripeOf(other) !== stripeOf('a'); i++) other = `z${i}`;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inQuery = new Promise<void>((resolve) => (entered = resolve));
  const source: ReopeningSource = {
    fetchBucket: () => Promise.resolve(undefined),
    queryBuckets: async function* () {
      entered();
      await gate;
      yield* [];
    },
    replaceBucket: () => Promise.resolve(false),
  };
  const done = catalog.insert(
    ns,
    { ...kTestBucketing, reopeningIndex: 'present' },
    [item(T0, other)],
    'allow',
    catalog.newOpId(),
    source,
  );
  await inQuery;
  return { release, done };
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

  it('leaves a batch finished while the abort waited for the stripe as it is', async () => {
    // Arrange: writer 1's batch is prepared; writer 2 stages into the same bucket; the stripe is held.
    const catalog = newTestCatalog();
    const first = await stage(catalog, T0);
    catalog.claimWriteBatchCommitRights(first);
    await catalog.prepareCommit(first);
    const second = await stage(catalog, T0 + 1000);
    const held = await holdStripeOfA(catalog);
    // Act: writer 1 finishes, and its cleanup aborts, both queued behind the held stripe.
    const finished = catalog.finish(first);
    const aborted = catalog.abort(first, new Error('late cleanup'));
    held.release();
    await Promise.all([finished, aborted, held.done]);
    // Assert
    expect(await first.result.promise).toMatchObject({ kind: 'insert' });
    expect(second.state).toBe('staging');
    expect(first.bucket.state).toBe('normal');
  });

  it.each([true, false])(
    'a batch finished after a clear removed its bucket leaves the memory estimate at 0 (compressed: %s)',
    async (compressed) => {
      // Arrange
      const catalog = newTestCatalog({ parameters: { timeseriesAlwaysUseCompressedBuckets: compressed } });
      const batch = await stage(catalog, T0);
      catalog.claimWriteBatchCommitRights(batch);
      await catalog.prepareCommit(batch);
      expect(catalog.serverStatus().memoryUsage).toBeGreaterThan(0);
      // Act
      await catalog.clear(ns);
      await catalog.finish(batch);
      // Assert
      expect(catalog.serverStatus()).toMatchObject({ numBuckets: 0, memoryUsage: 0 });
    },
  );
});

describe('BucketCatalog.drop while an insert waits', () => {
  it('stages the insert into the collection as it is after the drop, not into the dropped one', async () => {
    // Arrange: an insert of two new series waits for its reopening read.
    const catalog = newTestCatalog();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const source: ReopeningSource = {
      fetchBucket: () => Promise.resolve(undefined),
      queryBuckets: () => (async function* () {})(),
      replaceBucket: () => Promise.resolve(false),
      reopeningCandidates: async (queries) => {
        await gate;
        return queries.map(() => []);
      },
    };
    const options = { ...kTestBucketing, reopeningIndex: 'present' as const };
    const pending = catalog.insert(
      ns,
      options,
      [item(T0, 'a'), item(T0, 'b')],
      'allow',
      catalog.newOpId(),
      source,
    );
    // Act: the collection is dropped meanwhile.
    await catalog.drop(ns);
    release();
    const staged = await pending;
    // Assert: its buckets belong to the collection the catalog lists.
    expect(staged.map((r) => r.kind)).toEqual(['staged', 'staged']);
    expect(catalog.executionStats(ns)?.numActiveBuckets).toBe(2);
    expect(catalog.serverStatus().numBuckets).toBe(2);
  });
});
