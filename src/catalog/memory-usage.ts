/**
 * The catalog's estimate of the memory it holds (`memoryUsage` in serverStatus; docs/mongodb-behaviour.md §5.7).
 *
 * MongoDB counts allocator bytes, which cannot be reproduced; this estimate counts what a bucket keeps:
 * a fixed overhead for its bookkeeping (maps, sets, batch slots, min/max and schema roots), its series key
 * (two bytes per UTF-16 unit), and a per-field amount for the field-name sets and the min/max and schema
 * nodes of each top-level field. An archived record holds its key and a few numbers.
 *
 * The constants were calibrated on Node 20 with `bench/memory-calibration.ts`: 50 000 one-measurement
 * series ingested into an engine whose storage keeps nothing, the growth of `heapUsed` (after a full GC)
 * divided by the number of open buckets. Measured 2026-11-22: 2 084 bytes per bucket with 3 fields and
 * 3 838 with 11, i.e. about 220 bytes per field and about 1 360 per bucket besides its key. A bucket of
 * the compressed format (MongoDB 8.0's) also holds one incremental column builder per field, its column
 * map and its min/max slots: measured 2026-11-25 (after the builders gave up their buffers when empty),
 * 5 867 bytes with 3 fields and 13 114 with 11, i.e. about 690 bytes more per field and 1 720 more per
 * bucket. A column whose open control block holds values keeps up to about 300 bytes more.
 *
 * Over `MemoryStorage` a compressed bucket defers its encoding (`MeasurementMap`): a column has its builder
 * only once a measurement was encoded, and the bucket keeps the measurements not yet encoded (at most
 * about 16). Measured 2026-11-25 (`bench/memory-calibration.ts 3|11 8.0 1|20`): with one measurement and
 * no builder, 4 383 bytes with 3 fields and 6 962 with 11 (about 270 per bucket and 100 per field over the
 * compressed bucket without its builders); with 20 measurements, 7 566 and 15 587.
 *
 * A compressed bucket whose fields are all numbers and dates keeps `control.min`/`control.max` in typed
 * slots and lets go of the min/max tree's nodes: measured with one measurement per bucket, 3 / 11 fields,
 * 5 306 / 11 186 bytes when each commit is encoded at once (`... 8.0 1 eager`) and 3 814 / 5 369 deferred,
 * about 100 bytes per bucket and 150 per field less than with the nodes.
 *
 * @packageDocumentation
 */
import type { Bucket } from './bucket.js';
import type { BucketKey } from './bucket-identifiers.js';

/** Fixed bytes per open bucket: the object, its maps and sets, ids, counters, min/max and schema roots. */
export const kBucketOverheadBytes = 1360;

/**
 * Fixed bytes per archived record: the record, its `ObjectId` (an object and a 12-byte array), the
 * series' map of records and the entries in the stripe's map. Measured with `bench/archived-memory.ts`
 * (100 000 series under the threshold, the catalog's heap freed by dropping its state): 451 bytes per
 * record with a 43-character key, 2026-11-25; with this value the catalog's heap is 0.93-0.97x the
 * threshold at 4 and 16 MiB (it was 1.31-1.70x when records were counted at 160 bytes).
 */
export const kArchivedBucketOverheadBytes = 370;

/**
 * Bytes per top-level field of a bucket: its min/max node (two slots, an index entry), its schema node and
 * its entries in the field-name sets.
 */
const kPerFieldBytes = 220;

/**
 * Extra bytes per open bucket of the compressed format: its column map, min/max slots and snapshot, and
 * the builders' shared parts.
 */
const kCompressedBucketExtraBytes = 1720;

/** Extra bytes per field of a compressed bucket: its incremental column builder (encoder state, tail). */
const kPerColumnBuilderBytes = 690;

/** Extra bytes of a deferred compressed bucket: its kept measurements' array and bounds. */
const kDeferredBucketBytes = 270;

/** Extra bytes per field of a deferred compressed bucket: the first kept measurement's value and name. */
const kDeferredPerFieldBytes = 100;

/** Bytes per field of each further measurement a deferred bucket keeps. */
const kKeptValueBytes = 30;

/** Bytes a compressed bucket with typed min/max slots does not hold (the tree's root children). */
const kFlatMinMaxSavedBytes = 100;

/** Bytes per field such a bucket does not hold: the min/max node and its copies of dates. */
const kFlatMinMaxSavedPerFieldBytes = 150;

/**
 * Estimated bytes held by an open bucket.
 *
 * @param bucket - the bucket.
 * @returns bytes.
 */
export function bucketMemoryUsage(bucket: Bucket): number {
  const fields = bucket.fieldNames.size + (bucket.uncommittedFieldNames?.size ?? 0);
  const base = kBucketOverheadBytes + 2 * bucket.key.signature.length + fields * kPerFieldBytes;
  const map = bucket.measurementMap;
  if (map === undefined) return base;
  const compressed =
    base -
    (bucket.minMax.slots === undefined ? 0 : kFlatMinMaxSavedBytes + fields * kFlatMinMaxSavedPerFieldBytes) +
    kCompressedBucketExtraBytes;
  if (!map.deferred) return compressed + fields * kPerColumnBuilderBytes;
  const kept = map.keptCount;
  return (
    compressed +
    map.encodedColumns * kPerColumnBuilderBytes +
    (kept === 0 ? 0 : kDeferredBucketBytes + fields * (kDeferredPerFieldBytes + (kept - 1) * kKeptValueBytes))
  );
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
