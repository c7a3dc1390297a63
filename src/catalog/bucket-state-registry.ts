/**
 * Direct writes and eras (`bucket_catalog/bucket_state_registry.h`, docs/mongodb-behaviour.md §8): every write to a bucket
 * document that does not come from the catalog (updates, deletes, TTL, raw bucket writes) announces itself
 * before it touches storage and again when it is done, so the catalog never appends to a bucket from a
 * stale picture and never reopens a bucket whose document is being rewritten.
 *
 * Per bucket id the registry keeps the number of pending direct writes; the catalog's own view of the
 * bucket (open, prepared, cleared, archived) lives on the bucket and the stripe:
 *
 * | event                        | open bucket in the catalog                       | registry               |
 * |------------------------------|--------------------------------------------------|------------------------|
 * | direct write starts          | marked cleared; unprepared batches fail with     | count + 1; era + 1     |
 * |                              | `TimeseriesBucketCleared`; removed once its      | when it was 0          |
 * |                              | prepared batch (if any) finished; archived       |                        |
 * |                              | record dropped                                   |                        |
 * | direct write finishes        | —                                                | count − 1; era + 1     |
 * |                              |                                                  | when it reaches 0      |
 * | reopening reads the document | installed only if no direct write is pending and | (read only)            |
 * |                              | the era did not move while it read               |                        |
 *
 * MongoDB answers a direct write on a prepared bucket with a WriteConflict that the writer retries; here
 * the direct writer waits for the prepared batch to settle instead (the same outcome without a retry
 * loop in the caller). The era is MongoDB's: a single counter that moves whenever a bucket starts or stops
 * being directly written, captured by reopening before it reads and compared before it installs.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { objectIdHex } from '../util/bson-value.js';
import { invariant } from '../util/invariant.js';
import type { CatalogState } from './bucket-catalog-internal.js';
import { closeOpenBucket, failUnpreparedBatches } from './bucket-catalog-internal.js';
import type { StripeLock } from './stripe.js';
import type { WriteBatch } from './write-batch.js';

/** Pending direct writes and the era (plain state, changed by the functions of this module). */
export interface BucketStateRegistry {
  /** Moves when a bucket gets its first pending direct write and when its last one finishes. */
  currentEra: number;
  /** Number of pending direct writes, by hex bucket id (absent = none). */
  readonly directWrites: Map<string, number>;
}

/**
 * An empty registry.
 *
 * @returns era 0, no pending direct write.
 */
export function makeBucketStateRegistry(): BucketStateRegistry {
  return { currentEra: 0, directWrites: new Map() };
}

/**
 * Record that a direct write on `bucketId` starts (before the catalog's copy is cleared, so a reopening
 * already reading the document sees the era move).
 *
 * @param registry - the registry.
 * @param bucketId - the bucket about to be written.
 */
export function registerDirectWriteStart(registry: BucketStateRegistry, bucketId: ObjectId): void {
  const hex = objectIdHex(bucketId);
  const pending = registry.directWrites.get(hex) ?? 0;
  if (pending === 0) registry.currentEra++;
  registry.directWrites.set(hex, pending + 1);
}

/**
 * Record that a direct write on `bucketId` is over (written or not).
 *
 * @param registry - the registry.
 * @param bucketId - the bucket written.
 */
export function registerDirectWriteFinish(registry: BucketStateRegistry, bucketId: ObjectId): void {
  const hex = objectIdHex(bucketId);
  const pending = registry.directWrites.get(hex) ?? 0;
  invariant(pending > 0, 2301, `direct write finish without start on bucket ${hex}`);
  if (pending === 1) {
    registry.directWrites.delete(hex);
    registry.currentEra++;
  } else {
    registry.directWrites.set(hex, pending - 1);
  }
}

/**
 * Whether a bucket document read while the era was `eraBeforeRead` may be installed in the catalog: no
 * direct write is pending on it and none started or finished since the read began.
 *
 * @param registry - the registry.
 * @param bucketId - the bucket read.
 * @param eraBeforeRead - {@link BucketStateRegistry.currentEra} captured before the read.
 * @returns `true` when the document is current.
 */
export function isSafeToReopen(
  registry: BucketStateRegistry,
  bucketId: ObjectId,
  eraBeforeRead: number,
): boolean {
  return registry.currentEra === eraBeforeRead && !registry.directWrites.has(objectIdHex(bucketId));
}

/** Outcome of {@link clearBucketForDirectWrite}. */
export type DirectWriteClearing =
  /** The stripe no longer holds the bucket (open or archived). */
  | { readonly kind: 'cleared' }
  /** The bucket is cleared but its prepared batch is still being written: wait for it, then clear again. */
  | { readonly kind: 'waitForPrepared'; readonly prepared: WriteBatch };

/**
 * Remove a bucket about to be directly written from one stripe: the open bucket is marked cleared, its
 * unprepared batches fail with `TimeseriesBucketCleared` (their writers re-stage them), and it is
 * forgotten unless a prepared batch is in flight; an archived record of it is dropped.
 *
 * @param state - the catalog.
 * @param lock - the stripe, held.
 * @param bucketId - the bucket.
 * @returns whether the stripe is done with the bucket or a prepared batch must finish first.
 */
export function clearBucketForDirectWrite(
  state: CatalogState,
  lock: StripeLock,
  bucketId: ObjectId,
): DirectWriteClearing {
  const hex = objectIdHex(bucketId);
  const stripe = lock.stripe;
  const bucket = stripe.openBucketsById.get(hex);
  if (bucket !== undefined) {
    const coll = state.collections.get(bucket.id.ns);
    bucket.state = 'cleared';
    failUnpreparedBatches(bucket);
    if (bucket.preparedBatch !== undefined)
      return { kind: 'waitForPrepared', prepared: bucket.preparedBatch };
    if (coll !== undefined) closeOpenBucket(state, lock, coll, bucket, 'forgotten');
  }
  for (const [signature, records] of stripe.archivedBuckets) {
    for (const [startMs, record] of records) {
      if (!record.oid.equals(bucketId)) continue;
      records.delete(startMs);
      state.memoryUsage -= record.memoryUsage;
      state.collections.get(record.ns)?.stats.addActiveBuckets(-1);
    }
    if (records.size === 0) stripe.archivedBuckets.delete(signature);
  }
  return { kind: 'cleared' };
}

/**
 * Whether a stripe holds the bucket, open or archived (read without the lock to pick the stripes to lock).
 *
 * @param lockFree - the stripe's maps.
 * @param lockFree.openBucketsById - open buckets by hex id.
 * @param lockFree.archivedBuckets - archived records.
 * @param bucketId - the bucket.
 * @returns `true` when {@link clearBucketForDirectWrite} has something to do there.
 */
export function stripeHoldsBucket(
  lockFree: Pick<StripeLock['stripe'], 'openBucketsById' | 'archivedBuckets'>,
  bucketId: ObjectId,
): boolean {
  if (lockFree.openBucketsById.has(objectIdHex(bucketId))) return true;
  for (const records of lockFree.archivedBuckets.values()) {
    for (const record of records.values()) if (record.oid.equals(bucketId)) return true;
  }
  return false;
}
