/**
 * The catalog's estimate of the memory it holds (`memoryUsage` in serverStatus; INTERNALS §5.7).
 *
 * MongoDB counts allocator bytes, which cannot be reproduced; this estimate counts what a bucket keeps:
 * a fixed overhead for its bookkeeping (maps, sets, batch slots, min/max and schema roots), its series key
 * (two bytes per UTF-16 unit), and a per-field amount for the field-name sets and the min/max and schema
 * nodes of each top-level field. An archived record holds its key and a few numbers.
 *
 * @packageDocumentation
 */
import type { Bucket } from './bucket.js';
import type { BucketKey } from './bucket-identifiers.js';

/** Fixed bytes per open bucket: the object, its maps and sets, ids and counters. */
export const kBucketOverheadBytes = 640;

/** Fixed bytes per archived record. */
export const kArchivedBucketOverheadBytes = 96;

/** Bytes per field name tracked by a bucket (set entries for committed and pending column names). */
const kPerFieldBytes = 48;

/**
 * Estimated bytes held by an open bucket.
 *
 * @param bucket - the bucket.
 * @returns bytes.
 */
export function bucketMemoryUsage(bucket: Bucket): number {
  const fields = bucket.fieldNames.size + bucket.uncommittedFieldNames.size;
  return kBucketOverheadBytes + 2 * bucket.key.signature.length + fields * kPerFieldBytes;
}

/**
 * Estimated bytes held by an archived record.
 *
 * @param key - the record's series.
 * @returns bytes.
 */
export function archivedBucketMemoryUsage(key: BucketKey): number {
  return kArchivedBucketOverheadBytes + 2 * key.signature.length;
}
