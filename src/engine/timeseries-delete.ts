/**
 * `deleteMany` and `deleteOne` on a time-series collection (docs/mongodb-behaviour.md §12.1, MongoDB 7.0+
 * arbitrary deletes).
 *
 * The filter is split by the reader's bucket predicates (docs/mongodb-behaviour.md §10.3) into a loose bucket filter and
 * an exact per-measurement event filter:
 *
 * | filter                         | per candidate bucket                                                    |
 * |--------------------------------|-------------------------------------------------------------------------|
 * | metaField only (no event part) | the whole bucket document is deleted                                    |
 * | anything else                  | unpacked; matching measurements removed; the rest repacked under the    |
 * |                                | same `_id` with recomputed `control.min/max` (the rounded time minimum  |
 * |                                | kept), compressed again if it was; deleted when nothing is left         |
 *
 * Each bucket is a direct write (docs/mongodb-behaviour.md §8), guarded on the state it was read in and re-read when
 * another direct writer changed it meanwhile. `deletedCount` counts measurements, as MongoDB's `n`.
 * `deleteOne` removes the first matching measurement of the first candidate bucket holding one (a
 * metaField-only filter too: the bucket is repacked without it, or deleted when it held only that one).
 *
 * @packageDocumentation
 */
import { compressBucket, decompressBucket } from '../bucket-format/bucket-compression.js';
import { makeNewBucketDocument } from '../bucket-format/bucket-document.js';
import type { Measurement } from '../bucket-format/bucket-document.js';
import { createMinMax, maxDocument, minDocument, updateMinMax } from '../bucket-format/min-max.js';
import { TimeseriesError } from '../errors.js';
import { createBucketPredicates } from '../reader/bucket-predicates.js';
import { bsonColumnDecoder, bucketMeasurementCount, bucketVersion } from '../reader/bucket-unpacker.js';
import type { BucketFilter, StoredBucket } from '../storage/storage.js';
import { BsonQuery } from '../util/bson-query.js';
import type { QueryFilter } from '../util/bson-query.js';
import { bucketStateGuard } from '../bucket-format/bucket-document.js';
import { isPlainObject } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { directWriteTarget, kMaxDirectWriteAttempts, withDirectWrite } from './direct-write.js';
import type { WriteContext } from './direct-write.js';

/**
 * Options of `deleteMany`: none is applied yet. MongoDB's `collation` is refused (`InvalidOptions`), not
 * ignored.
 */
export type DeleteManyOptions = Readonly<Record<string, never>>;

/** Result of `deleteMany`. */
export interface DeleteResult {
  /** Always `true`. */
  readonly acknowledged: true;
  /** Measurements deleted. */
  readonly deletedCount: number;
}

/**
 * Delete every measurement matching `filter`.
 *
 * @param ctx - the collection's catalog, storage and fields.
 * @param filter - a MongoDB query over measurements (`{}` deletes everything).
 * @returns the number of measurements deleted.
 * @throws {@link TimeseriesError} for a malformed bucket, or `WriteConflict` when a bucket keeps changing
 *   under the delete.
 * @example
 * ```ts
 * await deleteMany(ctx, { sensor: 'a', temp: { $gt: 40 } });
 * ```
 */
export async function deleteMany(ctx: WriteContext, filter: QueryFilter): Promise<DeleteResult> {
  return await deleteMatching(ctx, filter, Number.POSITIVE_INFINITY);
}

/**
 * Delete one measurement matching `filter` (the first one found; none when nothing matches).
 *
 * @param ctx - the collection's catalog, storage and fields.
 * @param filter - a MongoDB query over measurements.
 * @returns `deletedCount` 0 or 1.
 * @throws {@link TimeseriesError} as {@link deleteMany}.
 */
export async function deleteOne(ctx: WriteContext, filter: QueryFilter): Promise<DeleteResult> {
  return await deleteMatching(ctx, filter, 1);
}

/** Delete up to `limit` measurements matching `filter`. */
async function deleteMatching(ctx: WriteContext, filter: QueryFilter, limit: number): Promise<DeleteResult> {
  const { bucketFilter, eventFilter } = createBucketPredicates(filter, {
    timeField: ctx.timeField,
    metaField: ctx.metaField,
    bucketMaxSpanSeconds: ctx.bucketMaxSpanSeconds,
    // The widest bounds: a delete must see every bucket that could hold a match.
    fixedBuckets: false,
    // `_id` bounds are only an optimisation and are wrong for extended-range buckets.
    idBounds: 'omit',
  });
  const event = eventFilter === undefined ? undefined : new BsonQuery(eventFilter);
  const candidates: StoredBucket[] = [];
  for await (const doc of ctx.storage.find(ctx.bucketsNs, bucketFilter, { projection: { _id: 1, meta: 1 } }))
    candidates.push(doc);
  let deletedCount = 0;
  for (const candidate of candidates) {
    if (deletedCount >= limit) break;
    const target = directWriteTarget(candidate);
    deletedCount += await withDirectWrite(ctx.catalog, ctx.ns, target, () =>
      deleteFromBucket(ctx, { ...bucketFilter, _id: target._id }, event, limit - deletedCount),
    );
  }
  return { acknowledged: true, deletedCount };
}

/** Delete the matching measurements of one bucket, up to `limit`; returns how many were deleted. */
async function deleteFromBucket(
  ctx: WriteContext,
  filter: BucketFilter,
  event: BsonQuery | undefined,
  limit: number,
): Promise<number> {
  for (let attempt = 0; attempt < kMaxDirectWriteAttempts; attempt++) {
    let doc: StoredBucket | undefined;
    for await (const found of ctx.storage.find(ctx.bucketsNs, filter, { limit: 1 })) doc = found;
    if (doc === undefined) return 0;
    const guard = bucketStateGuard(doc, ctx.timeField);
    // A metaField-only filter matches the whole bucket: deleted whole when the limit allows.
    const n = event === undefined ? bucketMeasurementCount(doc, ctx.timeField, bsonColumnDecoder) : undefined;
    if (n !== undefined && n <= limit) {
      if ((await ctx.storage.deleteMany(ctx.bucketsNs, guard)) === 1) return n;
      continue;
    }
    const rows = measurementsOf(doc, ctx.timeField, ctx.metaField);
    let removed = 0;
    const kept = rows.filter((row) => {
      if (removed >= limit || (event !== undefined && !event.test(row))) return true;
      removed++;
      return false;
    });
    if (removed === 0) return 0;
    if (kept.length === 0) {
      if ((await ctx.storage.deleteMany(ctx.bucketsNs, guard)) === 1) return removed;
      continue;
    }
    const repacked = repackBucket(doc, kept, ctx.timeField, ctx.metaField, ctx.catalog.bucketFormat);
    // Rewritten, the bucket takes no more appends (see docs/mongodb.md, several writers): another engine
    // with the bucket open would splice its next commit into columns that are not the ones it knows, a
    // guard on the count alone letting it through when the bucket holds as many measurements again.
    (repacked.control as Record<string, unknown>).closed = true;
    if ((await ctx.storage.replaceOne(ctx.bucketsNs, guard, repacked)).kind === 'updated') return removed;
  }
  throw new TimeseriesError(
    'WriteConflict',
    `Time-series bucket ${String(filter._id)} kept changing during the delete`,
  );
}

/**
 * The measurements of a bucket in bucket order, each with its fields in `data` column order and the
 * bucket's meta under the metaField (so the event filter sees what a reader sees).
 *
 * @param doc - a stored bucket (any version).
 * @param timeField - the time field.
 * @param metaField - the metaField, if any.
 * @returns fresh measurement objects (values shared with `doc`).
 */
export function measurementsOf(
  doc: StoredBucket,
  timeField: string,
  metaField: string | undefined,
): Measurement[] {
  const v1 = bucketVersion(doc) === 1 ? doc : decompressBucket(doc);
  const data = getOwnField(v1, 'data');
  if (!isPlainObject(data)) return [];
  const time = getOwnField(data, timeField);
  if (!isPlainObject(time)) return [];
  const columns = Object.keys(data).map((name) => [name, getOwnField(data, name)] as const);
  const metaName = metaField !== undefined && hasOwnField(doc, 'meta') ? metaField : undefined;
  return Object.keys(time).map((row) => {
    const measurement: Record<string, unknown> = {};
    for (const [name, column] of columns) {
      if (isPlainObject(column) && hasOwnField(column, row)) defineField(measurement, name, column[row]);
    }
    if (metaName !== undefined) defineField(measurement, metaName, doc.meta);
    return measurement;
  });
}

/**
 * The bucket rebuilt from the measurements it keeps: same `_id` and meta, `control.min.<time>` still
 * the rounded start, the other bounds recomputed; compressed (version 2, sorted by time) in the 8.0 format
 * whatever it was, as MongoDB 8.0 rewrites it; in the 5.x–7.x format a version-1 bucket stays version 1
 * and a compressed one is compressed again when that makes it smaller.
 *
 * @param doc - the stored bucket.
 * @param kept - its remaining measurements (at least one), in bucket order.
 * @param timeField - the time field.
 * @param metaField - the metaField, if any (left out of `data` and min/max).
 * @param format - the catalog's bucket format.
 * @returns the new document.
 */
export function repackBucket(
  doc: StoredBucket,
  kept: ReadonlyArray<Measurement>,
  timeField: string,
  metaField: string | undefined,
  format: 'alwaysCompressed' | 'compressOnClose' = 'compressOnClose',
): StoredBucket {
  const minMax = createMinMax();
  const control = getOwnField(doc, 'control');
  const min = isPlainObject(control) ? getOwnField(control, 'min') : undefined;
  const start = isPlainObject(min) ? getOwnField(min, timeField) : undefined;
  if (start instanceof Date) {
    // The rounded start stays the minimum, as on the server (the `_id` encodes it).
    const seed: Record<string, unknown> = {};
    defineField(seed, timeField, start);
    updateMinMax(minMax, seed);
  }
  for (const measurement of kept) updateMinMax(minMax, measurement, { skipField: metaField });
  const rebuilt = makeNewBucketDocument({
    id: directWriteTarget(doc)._id,
    hasMeta: hasOwnField(doc, 'meta'),
    normalizedMeta: doc.meta,
    min: minDocument(minMax),
    max: maxDocument(minMax),
    measurements: kept,
    metaField,
  }) as unknown as StoredBucket;
  // A version-1 bucket stays so in the 5.x–7.x format; the 8.0 format compresses it (as the server's
  // timeseries_write_compresses_uncompressed_bucket.js expects of a delete).
  if (bucketVersion(doc) === 1 && format !== 'alwaysCompressed') return rebuilt;
  const compressed = compressBucket(rebuilt, timeField, {
    whenNotSmaller: format === 'alwaysCompressed' ? 'compress' : 'keepUncompressed',
  });
  return compressed.kind === 'compressed' ? compressed.doc : rebuilt;
}
