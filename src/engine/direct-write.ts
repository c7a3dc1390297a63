/**
 * Direct writes from the facade (docs/mongodb-behaviour.md §8): every write to a bucket document that does not come from
 * the catalog is announced to the catalog before the document is read and after it is written, and a
 * read-modify-write is guarded on the state it read.
 *
 * The announcement keeps the catalog from appending to, or reopening, a bucket whose document changes
 * under it. The guard keeps two direct writers from overwriting each other: without MongoDB's storage
 * transactions, a rewrite matches only the document it was computed from (its format version, measurement
 * count and meta), and a writer whose guard fails reads the document again.
 *
 * @packageDocumentation
 */

import type { BucketCatalog, DirectWriteTarget } from '../catalog/bucket-catalog.js';
import { TimeseriesError } from '../errors.js';
import type { Storage, StoredBucket } from '../storage/storage.js';
import { hasOwnField } from '../util/safe-record.js';
import { isBsonValue } from '../util/bson-type.js';

/** What an update or delete needs from its collection. */
export interface WriteContext {
  /** The engine's catalog. */
  readonly catalog: BucketCatalog;
  /** The storage. */
  readonly storage: Storage;
  /** Namespace of the time-series collection. */
  readonly ns: string;
  /** Namespace of its buckets collection. */
  readonly bucketsNs: string;
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField: string | undefined;
  /** `bucketMaxSpanSeconds`. */
  readonly bucketMaxSpanSeconds: number;
}

/** How often one bucket is re-read after another direct writer changed it under a guarded write. */
export const kMaxDirectWriteAttempts = 16;

/**
 * The `_id` and `meta` of a bucket document read from storage, checked.
 *
 * @param doc - a stored bucket document (or its `{_id, meta}` projection).
 * @returns the target of a direct write.
 * @throws {@link TimeseriesError} `BadValue` when `_id` is not an ObjectId.
 */
export function directWriteTarget(doc: StoredBucket): DirectWriteTarget {
  const id = doc._id;
  if (!isBsonValue(id, 'ObjectId')) {
    throw new TimeseriesError('BadValue', 'bucket documents must have an ObjectId _id', { field: '_id' });
  }
  return hasOwnField(doc, 'meta') ? { _id: id, meta: doc.meta } : { _id: id };
}

/**
 * Run a direct write on one bucket between `directWriteStart` and `directWriteFinish`.
 *
 * @param catalog - the engine's catalog.
 * @param ns - namespace of the time-series collection.
 * @param bucket - the bucket's `_id` and stored `meta`.
 * @param write - reads and writes the bucket document; runs after the catalog forgot the bucket.
 * @returns what `write` returns.
 */
export async function withDirectWrite<T>(
  catalog: BucketCatalog,
  ns: string,
  bucket: DirectWriteTarget,
  write: () => Promise<T>,
): Promise<T> {
  await catalog.directWriteStart(ns, bucket);
  try {
    return await write();
  } finally {
    catalog.directWriteFinish(bucket._id);
  }
}
