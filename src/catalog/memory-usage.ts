/**
 * The catalog's estimate of the memory it holds (`memoryUsage` in serverStatus; docs/mongodb-behaviour.md §5.7).
 *
 * MongoDB counts allocator bytes, which cannot be reproduced; this estimate counts what a bucket keeps:
 * a fixed overhead for its bookkeeping (maps, sets, batch slots, min/max and schema roots), its series key
 * (two bytes per UTF-16 unit), and a per-field amount for the field-name sets and the min/max and schema
 * nodes of each top-level field. An archived record holds its key and a few numbers.
 *
 * The constants were calibrated on Node 20 with `bench/memory-calibration.ts`: 50 000 one-measurement
 * series (3 or 11 fields, numbers and a date) ingested into an engine whose storage keeps nothing, the
 * growth of `heapUsed` (after a full GC) divided by the number of open buckets. The buckets of a collection
 * share what is equal between them: the schema of new buckets that record the same paths, the column-name
 * sets that hold the same columns, the names and types of the typed min/max slots. A bucket whose fields
 * differ from its neighbours' holds its own (about 90 bytes per field more than estimated).
 *
 * Measured 2026-11-29 (19:41 UTC on; bytes per open bucket, 3 / 11 fields; the 20-measurement buckets
 * have run once, a run of 16, parked their builders and keep 4 measurements):
 *
 * | format                                                      | 1 measurement | 20 measurements |
 * |-------------------------------------------------------------|---------------|-----------------|
 * | 5.x-7.x (version-1 buckets)                                 | 2 095 / 3 438 |                 |
 * | compressed, deferred (over `MemoryStorage`), typed slots    | 1 912 / 2 059 | 4 334 / 7 595   |
 * | compressed, each commit encoded (`... 8.0 1 eager`)          | 3 912 / 8 629 |                 |
 *
 * so about 1 540 bytes per bucket and 166 per field for a version-1 bucket; a compressed bucket with typed
 * slots about 250 less per bucket and 4 less per field, plus about 590 per column with a builder and, once
 * its map has encoded, about 290 for its lists of encoders (a bucket opened from a row shares the row's
 * column names until then, and holds no list); a deferred one parks its builders between runs (one array of
 * numbers, 8 bytes each: 40 to 50 per column of numbers), keeps its measurements (about 23 bytes per field
 * for the first, 30 for each further value; measurements whose values come in column order record no
 * columns), and once the arrays that keep them have held a run they keep that room (per 16 measurements
 * of room about 900 bytes and 34 per field). Before the lists were made only when needed (2026-11-28/29),
 * the same buckets held 2 151 / 2 276 and 4 940 / 7 996 bytes.
 *
 * @packageDocumentation
 */
import type { Bucket } from './bucket.js';
import type { BucketKey } from './bucket-identifiers.js';

/** Fixed bytes per open bucket: the object, its maps and sets, ids, counters, min/max and schema roots. */
export const kBucketOverheadBytes = 1539;

/**
 * Fixed bytes per archived record: the record, its `ObjectId` (an object and a 12-byte array), the
 * series' map of records and the entries in the stripe's map. Measured with `bench/archived-memory.ts`
 * (100 000 series under the threshold, the catalog's heap freed by dropping its state): 451 bytes per
 * record with a 43-character key, 2026-11-25; with this value the catalog's heap is 0.93-0.97x the
 * threshold at 4 and 16 MiB (it was 1.31-1.70x when records were counted at 160 bytes).
 */
export const kArchivedBucketOverheadBytes = 370;

/**
 * Bytes per top-level field of a bucket: its min/max node (two slots, an index entry), and what its
 * schema node and its entries in the field-name sets cost when not shared.
 */
const kPerFieldBytes = 166;

/** Extra bytes per open bucket of the compressed format: its column map, min/max slots and snapshot. */
const kCompressedBucketExtraBytes = 355;

/**
 * Extra bytes of a compressed bucket's map once it has encoded (every commit over `MongoStorage`, a run
 * over `MemoryStorage`, a bucket reopened from its binary): its lists of encoders and of the measurement
 * each column last saw, and column names of its own (a bucket opened from a row shares that row's until
 * then).
 */
const kEncoderListsBytes = 285;

/** Extra bytes per field of a compressed bucket: its incremental column builder (encoder state, tail). */
const kPerColumnBuilderBytes = 593;

/** Bytes of the array a deferred bucket parks its column builders in, besides its numbers. */
const kParkedArrayBytes = 48;

/** Bytes per number of that array. */
const kParkedNumberBytes = 8;

/**
 * Extra bytes per field of a deferred compressed bucket that keeps measurements: the first one's value,
 * its share of the kept measurements' arrays and bounds.
 */
const kDeferredPerFieldBytes = 23;

/** Bytes per field of each further measurement a deferred bucket keeps. */
const kKeptValueBytes = 30;

/**
 * Bytes of the arrays of a deferred bucket that have held a run of kept measurements (their room), per
 * {@link kRunRoomCalibration} measurements of room.
 */
const kRunRoomBytes = 906;

/** Bytes per field of that room, per {@link kRunRoomCalibration} measurements of room. */
const kRunRoomPerFieldBytes = 34;

/**
 * The measurements of room the two figures above are given for: a unit of the calibration, not the drain
 * threshold, which may change without the bytes per measurement of room changing.
 */
const kRunRoomCalibration = 16;

/** Bytes a compressed bucket with typed min/max slots does not hold (the tree's root children). */
const kFlatMinMaxSavedBytes = 100;

/** Bytes per field such a bucket does not hold: the min/max node and its copies of dates. */
const kFlatMinMaxSavedPerFieldBytes = 170;

/**
 * A measurement whose estimated size in its bucket exceeds this many bytes counts its size in the bucket's
 * memory usage: the catalog holds its long strings or binaries (in `control.min`/`max`, and in the
 * measurements kept until encoded), which the per-field constants, calibrated on numbers, dates and short
 * strings, do not see. The server counts those bytes: a collection of 1 MiB measurements reaches a 10 MiB
 * threshold within a few buckets (`timeseries_collStats.js`).
 */
export const kLargeMeasurementBytes = 4096;

/**
 * Estimated bytes held by an open bucket.
 *
 * @param bucket - the bucket.
 * @returns bytes.
 */
export function bucketMemoryUsage(bucket: Bucket): number {
  const fields = bucket.fieldNames.size + (bucket.uncommittedFieldNames?.size ?? 0);
  const base =
    kBucketOverheadBytes +
    2 * bucket.signatureLength +
    fields * kPerFieldBytes +
    bucket.largeMeasurementBytes;
  const map = bucket.measurementMap;
  if (map === undefined) return base;
  const compressed =
    base -
    (bucket.minMax.slots === undefined ? 0 : kFlatMinMaxSavedBytes + fields * kFlatMinMaxSavedPerFieldBytes) +
    kCompressedBucketExtraBytes;
  if (!map.deferred) return compressed + kEncoderListsBytes + fields * kPerColumnBuilderBytes;
  const kept = map.keptCount;
  const parked = map.parkedArrayLength;
  return (
    compressed +
    (map.encodedColumns === 0 ? 0 : kEncoderListsBytes) +
    (map.encodedColumns - map.parkedColumns) * kPerColumnBuilderBytes +
    (parked === 0 ? 0 : kParkedArrayBytes + parked * kParkedNumberBytes) +
    (kept === 0 ? 0 : fields * (kDeferredPerFieldBytes + (kept - 1) * kKeptValueBytes)) +
    ((kRunRoomBytes + fields * kRunRoomPerFieldBytes) * map.runRoom) / kRunRoomCalibration
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
