/**
 * The TTL monitor for time-series collections (docs/mongodb-behaviour.md §13; the server's `ttl.cpp`).
 *
 * A bucket is deleted, whole, once every measurement it can hold is expired: when its start — the `_id`
 * time, which is the rounded `control.min.<time>` — is older than `now − expireAfterSeconds −
 * bucketMaxSpanSeconds`. The comparison is made on `control.min.<time>`, the start as a full date: an
 * `_id` holds only 32 bits of seconds, so buckets before 1970 or after 2106 ("extended range") have
 * wrapped `_id` times; judged by their real start they are deleted when old (1969) and kept when in the
 * future (2038, 2106), which is what MongoDB's two-range scan does (jstest `timeseries_ttl.js`).
 *
 * Each deletion is a direct write (docs/mongodb-behaviour.md §8): the catalog forgets the bucket first.
 *
 * @packageDocumentation
 */
import type { BucketCatalog } from '../catalog/bucket-catalog.js';
import type { Storage } from '../storage/storage.js';
import { defineField } from '../util/safe-record.js';
import { directWriteTarget, withDirectWrite } from './direct-write.js';

/** A collection with a TTL, as the monitor needs it. */
export interface TTLTarget {
  /** Namespace of the time-series collection. */
  readonly ns: string;
  /** Namespace of its buckets collection. */
  readonly bucketsNs: string;
  /** The time field. */
  readonly timeField: string;
  /** `expireAfterSeconds`. */
  readonly expireAfterSeconds: number;
  /** `bucketMaxSpanSeconds`. */
  readonly bucketMaxSpanSeconds: number;
}

/**
 * The expiry filter of a collection at time `nowMs`: buckets starting at or before the cutoff's second
 * (the server scans `_id` up to an ObjectId of the cutoff with its other bytes at their maximum, both ends
 * included; a bucket's start is a whole number of seconds).
 *
 * @param target - the collection.
 * @param nowMs - the current time, epoch ms.
 * @returns a filter over bucket documents.
 */
export function expiredBucketsFilter(target: TTLTarget, nowMs: number): Record<string, unknown> {
  const cutoff = nowMs - (target.expireAfterSeconds + target.bucketMaxSpanSeconds) * 1000;
  const filter: Record<string, unknown> = {};
  defineField(filter, `control.min.${target.timeField}`, {
    $lt: new Date((Math.floor(cutoff / 1000) + 1) * 1000),
  });
  return filter;
}

/**
 * Delete the expired buckets of one collection.
 *
 * @param catalog - the engine's catalog (direct writes).
 * @param storage - the storage.
 * @param target - the collection.
 * @param nowMs - the current time, epoch ms.
 * @returns the number of buckets deleted.
 */
export async function deleteExpiredBuckets(
  catalog: BucketCatalog,
  storage: Storage,
  target: TTLTarget,
  nowMs: number,
): Promise<number> {
  const filter = expiredBucketsFilter(target, nowMs);
  const expired = [];
  for await (const doc of storage.find(target.bucketsNs, filter, { projection: { _id: 1, meta: 1 } }))
    expired.push(directWriteTarget(doc));
  let deleted = 0;
  for (const bucket of expired) {
    deleted += await withDirectWrite(catalog, target.ns, bucket, () =>
      storage.deleteMany(target.bucketsNs, { ...filter, _id: bucket._id }),
    );
  }
  return deleted;
}

/**
 * A background TTL pass every `sleepMs` (MongoDB's `ttlMonitorSleepSecs`). The timer is `unref()`ed so
 * it never keeps the process alive; passes never overlap; a failed pass is retried at the next tick, as
 * the server's monitor logs and continues.
 */
export class TTLMonitor {
  readonly #pass: () => Promise<unknown>;
  readonly #timer: ReturnType<typeof setInterval>;
  #running: Promise<void> | undefined;

  /**
   * Start the monitor.
   *
   * @param sleepMs - interval between passes, ms.
   * @param pass - one TTL pass.
   */
  constructor(sleepMs: number, pass: () => Promise<unknown>) {
    this.#pass = pass;
    this.#timer = setInterval(() => {
      this.#tick();
    }, sleepMs);
    this.#timer.unref();
  }

  #tick(): void {
    if (this.#running !== undefined) return;
    this.#running = this.#pass().then(
      () => {
        this.#running = undefined;
      },
      () => {
        this.#running = undefined;
      },
    );
  }

  /** Stop the timer and wait for a pass in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#running;
  }
}
