/**
 * A stripe of the catalog (`bucket_catalog/bucket_catalog.h` `Stripe`): the open, idle and archived buckets
 * of the series that hash to it, guarded by one mutex.
 *
 * Lock order: a caller holds at most one stripe mutex at a time, and never holds one while waiting for a
 * batch result or another bucket's prepared batch. Functions that read or change a stripe's maps take a
 * {@link StripeLock} token; only {@link withStripe} creates one, so the signature shows the lock is held.
 *
 * @packageDocumentation
 */
import { Mutex } from 'async-mutex';

import type { ObjectId } from 'bson';

import type { Bucket } from './bucket.js';
import { IdleList } from './idle-list.js';

/** An archived bucket: closed in memory but remembered for archive-based reopening (docs/mongodb-behaviour.md §9.1). */
export interface ArchivedBucket {
  /** The bucket's `_id`. */
  readonly oid: ObjectId;
  /** Rounded start, epoch ms. */
  readonly startMs: number;
  /** Namespace of the collection. */
  readonly ns: string;
  /** Estimated bytes of catalog memory held by the record. */
  readonly memoryUsage: number;
}

/** The state of one stripe. */
export interface Stripe {
  /** Guards the maps below across awaits. */
  readonly mutex: Mutex;
  /** Open buckets by hex id. */
  readonly openBucketsById: Map<string, Bucket>;
  /**
   * Open buckets by series signature (at most one per series accepts new measurements). An array, not a
   * set: a series has one to a few open buckets, and an empty set alone costs ~150 bytes per series.
   */
  readonly openBucketsByKey: Map<string, Bucket[]>;
  /**
   * Idle buckets (open, no rollover pending, no uncommitted batch) in the order they became idle: the
   * first entry is the least recently idle, expired first under memory pressure.
   */
  readonly idleBuckets: IdleList;
  /** Archived buckets by series signature, then by start time. */
  readonly archivedBuckets: Map<string, Map<number, ArchivedBucket>>;
}

/** Proof that the caller holds a stripe's mutex. Only {@link withStripe} creates one. */
export interface StripeLock {
  /** The locked stripe. */
  readonly stripe: Stripe;
  /** @internal brand: no other code can build this type. */
  readonly [kLockBrand]: true;
}

declare const kLockBrand: unique symbol;

/**
 * A new, empty stripe.
 *
 * @returns the stripe.
 */
export function makeStripe(): Stripe {
  return {
    mutex: new Mutex(),
    openBucketsById: new Map(),
    openBucketsByKey: new Map(),
    idleBuckets: new IdleList(),
    archivedBuckets: new Map(),
  };
}

/**
 * Run `fn` holding the stripe's mutex. Use for work that awaits while holding the stripe.
 *
 * @param stripe - the stripe to lock.
 * @param fn - the work; receives the lock token.
 * @returns what `fn` returns.
 */
export function withStripe<T>(stripe: Stripe, fn: (lock: StripeLock) => Promise<T>): Promise<T> {
  return stripe.mutex.runExclusive(() => fn({ stripe } as StripeLock));
}

/**
 * Run synchronous work `fn` holding the stripe.
 *
 * When nobody holds the mutex, `fn` runs at once without acquiring it: JavaScript cannot interleave a
 * synchronous function, and with the mutex free no holder is suspended in the middle of its work. This
 * skips the mutex's promise round trips on the hot path (several per commit). When the mutex is held
 * (an async holder is awaiting), `fn` waits for it like any other acquirer.
 *
 * @param stripe - the stripe to lock.
 * @param fn - synchronous work; receives the lock token.
 * @returns what `fn` returns.
 */
export function withStripeSync<T>(stripe: Stripe, fn: (lock: StripeLock) => T): T | Promise<T> {
  if (!stripe.mutex.isLocked()) return fn({ stripe } as StripeLock);
  return stripe.mutex.runExclusive(() => fn({ stripe } as StripeLock));
}

/**
 * Record an open bucket under its series.
 *
 * @param lock - the bucket's stripe, held.
 * @param bucket - a bucket not yet listed.
 */
export function addOpenBucket(lock: StripeLock, bucket: Bucket): void {
  const stripe = lock.stripe;
  const series = stripe.openBucketsByKey.get(bucket.key.signature);
  if (series === undefined) stripe.openBucketsByKey.set(bucket.key.signature, [bucket]);
  else series.push(bucket);
}

/**
 * Remove an open bucket from its series' list, and the list once empty.
 *
 * @param lock - the bucket's stripe, held.
 * @param bucket - the bucket.
 */
export function removeOpenBucket(lock: StripeLock, bucket: Bucket): void {
  const stripe = lock.stripe;
  const series = stripe.openBucketsByKey.get(bucket.key.signature);
  if (series === undefined) return;
  const at = series.indexOf(bucket);
  if (at >= 0) {
    // Shift and pop rather than splice (no array of what is removed).
    for (let i = at + 1; i < series.length; i++) series[i - 1] = series[i] as Bucket;
    series.pop();
  }
  if (series.length === 0) stripe.openBucketsByKey.delete(bucket.key.signature);
}
