/**
 * Bucket reopening (docs/mongodb-behaviour.md §9; `bucket_catalog_internal.cpp` `findArchivedCandidate`,
 * `getQueryReopeningCandidate`, `rehydrateBucket`, `reopenBucket`): late measurements go back into a
 * bucket already on disk instead of a new, tiny one.
 *
 * - Archive-based: the series' archived record with the largest start `<= t` and `t - start < span` is
 *   fetched by `_id` (`numBucketsFetched` / `numBucketFetchesFailed`).
 * - Query-based: when no archived candidate exists and the series has no open bucket (or its open bucket
 *   rolled over for time backward), the buckets collection is queried for a bucket of the series whose
 *   window contains `t`, not closed, not full, under the size limit — only when the `{meta, time}` index
 *   exists (`numBucketsQueried` / `numBucketQueriesFailed`).
 * - The document is rehydrated (min/max and schema from `control.min`/`control.max`, count from the time
 *   column) and installed: the series' current bucket is closed (`numBucketsClosedDueToReopening`).
 *
 * In the 5.x–7.x format a compressed (version 2 or 3) bucket is first rewritten uncompressed, guarded on
 * its version and count, since open buckets are appended to as version 1; in the 8.0+ format a version-1
 * bucket is first compressed, and a compressed one is reopened by rebuilding its columns' encoders from
 * the stored binaries.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { compressBucket, decompressBucketSized } from '../bucket-format/bucket-compression.js';
import { bucketStateGuard, metaGuard } from '../bucket-format/bucket-document.js';
import { BSONColumn } from '../bucket-format/bson-column/bson-column.js';
import { MeasurementMap } from '../bucket-format/measurement-map.js';
import type { DrainPolicy } from '../bucket-format/measurement-map.js';
import { minMaxFromDocuments } from '../bucket-format/min-max.js';
import { schemaFromDocuments } from '../bucket-format/schema.js';
import type { ReopeningQuery, StoredBucket } from '../storage/storage.js';
import { getOwnField, hasOwnField } from '../util/safe-record.js';
import { makeOpenBucket } from './bucket.js';
import type { Bucket } from './bucket.js';
import type { BucketingOptions, CatalogState, CollectionState } from './bucket-catalog-internal.js';
import { closeOpenBucket, expireIdleBuckets } from './bucket-catalog-internal.js';
import { makeBucketId } from './bucket-identifiers.js';
import type { BucketKey } from './bucket-identifiers.js';
import { makeBucketMetadata } from './bucket-metadata.js';
import { bucketMemoryUsage } from './memory-usage.js';
import { addOpenBucket } from './stripe.js';
import type { ArchivedBucket, StripeLock } from './stripe.js';
import { bsonValueSize } from '../util/bson-value.js';
import { isBsonValue } from '../util/bson-type.js';

/** Where the catalog reads bucket documents from when it reopens them (the engine's storage). */
export interface ReopeningSource {
  /**
   * The bucket document with this `_id`, if stored.
   *
   * @param id - the bucket id.
   */
  fetchBucket(id: ObjectId): Promise<StoredBucket | undefined>;
  /**
   * Bucket documents matching `filter`, in storage order, read lazily.
   *
   * @param filter - a MongoDB filter over bucket fields.
   */
  queryBuckets(filter: Readonly<Record<string, unknown>>): AsyncIterable<StoredBucket>;
  /**
   * Replace the document matching `filter` (a direct write: the uncompressed form of a compressed bucket
   * being reopened).
   *
   * @param filter - `_id` plus guard conditions.
   * @param doc - the new document.
   * @returns whether a document matched.
   */
  replaceBucket(filter: Readonly<Record<string, unknown>>, doc: StoredBucket): Promise<boolean>;
  /**
   * Optional: `true` when the storage certainly holds no bucket of the series, known without I/O (a
   * series it has never seen). The catalog then skips the reopening query, which would find nothing, and
   * counts it as failed (`numBucketQueriesFailed`) as it counts such a query. `false` when unsure.
   *
   * @param hasMeta - whether the series has a meta value.
   * @param normalizedMeta - its normalised value.
   */
  holdsNoBucketsOf?(hasMeta: boolean, normalizedMeta: unknown): boolean;
  /**
   * Optional: the answers of many reopening queries read at once (each query would be a round trip):
   * per query, the documents matching its filter in storage order, or `undefined` when the read does not
   * answer it. The catalog asks once per insert call about the series that have no open bucket.
   *
   * @param queries - each series' reopening filter, and its meta.
   */
  reopeningCandidates?(
    queries: ReadonlyArray<ReopeningQuery>,
  ): Promise<ReadonlyArray<StoredBucket[] | undefined>>;
}

/**
 * What to look for on disk: an archived bucket by `_id`, the documents a query finds, or the documents a
 * query found when read with the call's others before staging (`prefetched`, in catalog era `era`: used
 * while the era lasts, else the query is made again).
 */
export type ReopeningRequest =
  | { readonly kind: 'archived'; readonly record: ArchivedBucket }
  | { readonly kind: 'query'; readonly filter: Readonly<Record<string, unknown>> }
  | {
      readonly kind: 'prefetched';
      readonly filter: Readonly<Record<string, unknown>>;
      readonly docs: ReadonlyArray<StoredBucket>;
      readonly era: number;
    };

/**
 * Take the archived record of `key` that can hold time `timeMs`: the largest start `<= timeMs` with
 * `timeMs - start < span`. The record is removed from the archive (it is either reopened or gone).
 *
 * The record no longer counts as an active bucket; installing the reopened bucket counts it again.
 *
 * @param state - the catalog.
 * @param lock - the series' stripe, held.
 * @param coll - the collection.
 * @param key - the series.
 * @param timeMs - the measurement time.
 * @param maxSpanSeconds - the collection's span.
 * @returns the record, or `undefined`.
 */
export function takeArchivedCandidate(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  key: BucketKey,
  timeMs: number,
  maxSpanSeconds: number,
): ArchivedBucket | undefined {
  const records = lock.stripe.archivedBuckets.get(key.signature);
  if (records === undefined) return undefined;
  let best: ArchivedBucket | undefined;
  for (const record of records.values()) {
    if (record.startMs <= timeMs && (best === undefined || record.startMs > best.startMs)) best = record;
  }
  if (best === undefined || timeMs - best.startMs >= maxSpanSeconds * 1000) return undefined;
  records.delete(best.startMs);
  if (records.size === 0) lock.stripe.archivedBuckets.delete(key.signature);
  state.memoryUsage -= best.memoryUsage;
  coll.stats.addActiveBuckets(-1);
  return best;
}

/**
 * The query-based reopening filter of docs/mongodb-behaviour.md §9.2 (the size condition is checked on the results).
 *
 * @param options - the collection's bucketing options.
 * @param params - `timeseriesBucketMaxCount`.
 * @param hasMeta - whether the series has a meta value.
 * @param normalizedMeta - its normalised value.
 * @param timeMs - the measurement time.
 * @returns a MongoDB filter over bucket fields.
 */
export function reopeningQueryFilter(
  options: BucketingOptions,
  params: { readonly timeseriesBucketMaxCount: number },
  hasMeta: boolean,
  normalizedMeta: unknown,
  timeMs: number,
): Readonly<Record<string, unknown>> {
  const t = options.timeField;
  return {
    $and: [
      { $or: [{ 'control.closed': { $exists: false } }, { 'control.closed': false }] },
      // Not full: version 1 has no count (its time column must not reach the last index); 2 and 3 do.
      {
        $or: [
          { 'control.count': { $exists: false } },
          { 'control.count': { $lt: params.timeseriesBucketMaxCount } },
        ],
      },
      { [`control.min.${t}`]: { $lte: new Date(timeMs) } },
      { [`control.min.${t}`]: { $gt: new Date(timeMs - options.bucketMaxSpanSeconds * 1000) } },
      // `$eq` compares the meta whole: as a bare value, a document whose field names start with `$`
      // (`{$exists: false}`) would be read as operators, and a regex would match strings.
      hasMeta ? { meta: { $eq: normalizedMeta } } : { meta: { $exists: false } },
      {
        $or: [
          { 'control.version': { $ne: 1 } },
          { [`data.${t}.${params.timeseriesBucketMaxCount - 1}`]: { $exists: false } },
        ],
      },
    ],
  };
}

/** Outcome of {@link findReopeningCandidate}. */
export type ReopeningCandidate =
  | {
      readonly kind: 'found';
      readonly doc: StoredBucket;
      /** The document's BSON size when the query already measured it. */
      readonly size: number | undefined;
    }
  | { readonly kind: 'notFound' };

/**
 * Read the candidate document for a request and count the attempt.
 *
 * @param coll - the collection (for statistics).
 * @param source - the storage.
 * @param request - archived record or query.
 * @param maxSize - `timeseriesBucketMaxSize`: query results at or above it are skipped.
 * @returns the document, if any.
 */
export async function findReopeningCandidate(
  coll: CollectionState,
  source: ReopeningSource,
  request: ReopeningRequest,
  maxSize: number,
): Promise<ReopeningCandidate> {
  switch (request.kind) {
    case 'archived': {
      const doc = await source.fetchBucket(request.record.oid);
      coll.stats.inc(doc === undefined ? 'numBucketFetchesFailed' : 'numBucketsFetched');
      return doc === undefined ? { kind: 'notFound' } : { kind: 'found', doc, size: undefined };
    }
    case 'query':
    case 'prefetched': {
      const docs = request.kind === 'query' ? source.queryBuckets(request.filter) : request.docs;
      // The one that starts first, as the server's query (`$limit: 1` over the {meta, control.min,
      // control.max} index) finds it; whatever order the storage answers in.
      let best: { doc: StoredBucket; size: number; startMs: number } | undefined;
      for await (const doc of docs) {
        const size = bsonValueSize(doc);
        if (size >= maxSize) continue;
        const startMs = startOf(doc, coll.options.timeField);
        if (best === undefined || startMs < best.startMs) best = { doc, size, startMs };
      }
      if (best !== undefined) {
        coll.stats.inc('numBucketsQueried');
        return { kind: 'found', doc: best.doc, size: best.size };
      }
      coll.stats.inc('numBucketQueriesFailed');
      return { kind: 'notFound' };
    }
    default: {
      const never: never = request;
      throw new TypeError(`unknown reopening request ${String(never)}`);
    }
  }
}

/** A stored bucket's `control.min.<time>` in epoch ms (`+Infinity` when it has none: chosen last). */
function startOf(doc: StoredBucket, timeField: string): number {
  const min = (doc.control as { min?: Record<string, unknown> } | undefined)?.min;
  const start = min === undefined ? undefined : getOwnField(min, timeField);
  return start instanceof Date ? start.getTime() : Number.POSITIVE_INFINITY;
}

/**
 * The version-1 form of a reopening candidate: compressed documents are decompressed and written back
 * (guarded on `_id`, version, count and meta, so a concurrent change wins); version 1 is returned as is.
 *
 * @param source - the storage.
 * @param doc - the candidate document.
 * @returns the version-1 document (with its BSON size when it was decompressed here; a version-1
 *   candidate is returned as is, size unknown), or `undefined` when it could not be rewritten.
 */
export async function uncompressedForReopening(
  source: ReopeningSource,
  doc: StoredBucket,
): Promise<{ readonly doc: StoredBucket; readonly size: number | undefined } | undefined> {
  const control = doc.control as { version?: unknown; count?: unknown } | undefined;
  if (control?.version === 1) return { doc, size: undefined };
  if (control?.version !== 2 && control?.version !== 3) return undefined;
  let v1: { readonly doc: StoredBucket; readonly size: number } | undefined;
  try {
    v1 = decompressBucketSized(doc);
  } catch {
    return undefined;
  }
  if (v1 === undefined) return undefined;
  // Only the document read: its version, count and meta (a delete or a meta update since wins).
  const replaced = await source.replaceBucket(
    { _id: doc._id, 'control.version': control.version, 'control.count': control.count, ...metaGuard(doc) },
    v1.doc,
  );
  return replaced ? v1 : undefined;
}

/**
 * The compressed form of a reopening candidate (MongoDB 8.0+, `compressUncompressedBucketOnReopen`): a
 * version-1 document is compressed (sorted by time) and written back, guarded on `_id`, version 1, its
 * measurement count and its meta; a compressed document is returned as is.
 *
 * @param source - the storage.
 * @param doc - the candidate document.
 * @param timeField - the collection's time field.
 * @param validate - `timeseriesValidateCompressedBuckets`: decode the compressed columns and compare.
 * @returns the compressed document (with its BSON size when it was compressed here), `frozen` when
 *   compression failed (the server freezes such a bucket), or `undefined` when it could not be written.
 */
export async function compressedForReopening(
  source: ReopeningSource,
  doc: StoredBucket,
  timeField: string,
  validate: boolean,
): Promise<{ readonly doc: StoredBucket; readonly size: number | undefined } | 'frozen' | undefined> {
  const control = doc.control as { version?: unknown } | undefined;
  if (control?.version === 2 || control?.version === 3) return { doc, size: undefined };
  if (control?.version !== 1) return undefined;
  const result = compressBucket(doc, timeField, { validate, whenNotSmaller: 'compress' });
  if (result.kind !== 'compressed') return 'frozen';
  // Only the document read: version 1 with its measurements (index n - 1 present, n absent) and its
  // meta. Index n absent alone let a delete since (fewer measurements, marked closed) be overwritten.
  const replaced = await source.replaceBucket(bucketStateGuard(doc, timeField), result.doc);
  return replaced ? { doc: result.doc, size: result.bytesAfter } : undefined;
}

/** Outcome of {@link rehydrateBucket}. */
export type RehydrateResult =
  { readonly kind: 'ok'; readonly bucket: Bucket } | { readonly kind: 'failed'; readonly reason: string };

/**
 * Rebuild an open bucket from a stored document (`rehydrateBucket`): version 1 for the 5.x–7.x format,
 * version 2 or 3 for the 8.0+ format.
 *
 * @param collection - the collection (its bucketing options are those of its latest insert).
 * @param key - the series the measurement belongs to.
 * @param doc - the stored document.
 * @param size - its BSON size, when already known.
 * @param format - which format the catalog writes: the document must be in it.
 * @param mode - a compressed bucket's encoding: deferred when the storage takes the columns itself.
 * @param drain - deferred, when the map asks to be drained (the catalog's policy).
 * @returns the bucket, or why it cannot be reopened.
 */
export function rehydrateBucket(
  collection: CollectionState,
  key: BucketKey,
  doc: StoredBucket,
  size?: number,
  format: 'uncompressed' | 'compressed' = 'uncompressed',
  mode: 'eager' | 'deferred' = 'eager',
  drain?: DrainPolicy,
): RehydrateResult {
  const options = collection.options;
  const id = doc._id;
  if (!isBsonValue(id, 'ObjectId')) return { kind: 'failed', reason: 'bucket _id is not an ObjectId' };
  const control = doc.control as Record<string, unknown> | undefined;
  if (control === undefined || typeof control !== 'object') return { kind: 'failed', reason: 'no control' };
  if (control.closed === true) {
    return { kind: 'failed', reason: 'Bucket has been marked closed and is not eligible for reopening' };
  }
  const compressed = control.version === 2 || control.version === 3;
  if (control.version !== 1 && !compressed) return { kind: 'failed', reason: 'unknown bucket version' };
  if (compressed !== (format === 'compressed')) {
    return { kind: 'failed', reason: `the bucket must be ${format} first` };
  }
  const hasMeta = hasOwnField(doc, 'meta');
  const metadata = makeBucketMetadata(hasMeta ? doc.meta : undefined);
  if (metadata.key !== key.metaKey) return { kind: 'failed', reason: 'meta does not match the series' };
  const min = control.min as Record<string, unknown>;
  const max = control.max as Record<string, unknown>;
  const start = getOwnField(min, options.timeField);
  const data = doc.data as Record<string, Record<string, unknown>> | undefined;
  const timeColumn = data === undefined ? undefined : getOwnField(data, options.timeField);
  if (!(start instanceof Date) || typeof timeColumn !== 'object' || timeColumn === null) {
    return { kind: 'failed', reason: 'missing time field in control.min or data' };
  }
  const schema = schemaFromDocuments(min, max);
  if (schema.kind !== 'ok') return { kind: 'failed', reason: 'mixed-schema bucket' };
  let measurementMap: MeasurementMap | undefined;
  if (compressed) {
    try {
      const stored = Number(control.count);
      const count = Number.isInteger(stored) && stored >= 0 ? stored : columnLength(timeColumn);
      // A sorted (version 2) bucket's last measurement has its greatest time; a version-3 bucket is
      // unsorted already and never asks.
      const lastTimeMs = control.version === 2 ? lastTime(max, options.timeField) : Number.NaN;
      measurementMap = MeasurementMap.fromBinaries(
        options.timeField,
        data as Record<string, unknown>,
        count,
        lastTimeMs,
        mode,
        drain,
      );
    } catch {
      return { kind: 'failed', reason: 'malformed compressed column' };
    }
  }
  const count = measurementMap?.count ?? Object.keys(timeColumn).length;
  const bucket = makeOpenBucket({
    id: makeBucketId(key.ns, id),
    key,
    collection,
    hasMeta,
    normalizedMeta: metadata.normalizedMeta,
    startMs: start.getTime(),
    minMax: minMaxFromDocuments(min, max),
    schema: schema.schema,
    // A deferred map counts the columns itself (MeasurementMap.sizeBound): the bucket's size is the rest.
    size:
      (size ?? bsonValueSize(doc)) - (measurementMap?.deferred === true ? measurementMap.compressedSize : 0),
    measurementMap,
    // `rehydrateBucket`: a reopened version-3 bucket stays unsorted.
    sortedByTime: control.version !== 3,
    committedMeasurements: count,
    fieldNames: Object.keys(data as object),
  });
  return { kind: 'ok', bucket };
}

/**
 * Install a rehydrated bucket as its series' current bucket (`reopenBucket`): the current bucket is
 * closed (or, with batches in flight, soft-closed once they finish); if the bucket is already open in
 * memory, that copy is used instead (`numDuplicateBucketsReopened`).
 *
 * @param state - the catalog.
 * @param lock - the series' stripe, held.
 * @param coll - the collection.
 * @param bucket - the rehydrated bucket.
 * @returns the bucket now open for the series.
 */
export function installReopenedBucket(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  bucket: Bucket,
): Bucket {
  const stripe = lock.stripe;
  const existing = stripe.openBucketsById.get(bucket.id.hex);
  if (existing !== undefined) {
    coll.stats.inc('numDuplicateBucketsReopened');
    return existing;
  }
  // As when a bucket is allocated, the stripe sheds idle buckets first if the catalog is over its memory
  // threshold (docs/mongodb-behaviour.md §5.7).
  expireIdleBuckets(state, lock);
  // A copy: closing a bucket removes it from the series' list.
  const series = [...(stripe.openBucketsByKey.get(bucket.key.signature) ?? [])];
  for (const other of series) {
    if (other.rolloverAction !== 'none') continue;
    coll.stats.inc('numBucketsClosedDueToReopening');
    if (other.openBatches.length === 0 && other.preparedBatch === undefined) {
      closeOpenBucket(state, lock, coll, other, 'closed');
    } else {
      other.rolloverAction = 'softClose';
      other.rolloverReason = 'timeForward';
    }
  }
  stripe.openBucketsById.set(bucket.id.hex, bucket);
  addOpenBucket(lock, bucket);
  stripe.idleBuckets.push(bucket);
  bucket.memoryUsage = bucketMemoryUsage(bucket);
  state.memoryUsage += bucket.memoryUsage;
  coll.stats.addActiveBuckets(1);
  coll.stats.inc('numBucketsReopened');
  return bucket;
}

/** The number of entries of a stored BSONColumn (decoded: only for a bucket without `control.count`). */
function columnLength(column: unknown): number {
  const { buffer, position } = column as { buffer: Uint8Array; position: number };
  return BSONColumn.decode(buffer.subarray(0, position)).length;
}

function lastTime(max: Record<string, unknown>, timeField: string): number {
  const t = getOwnField(max, timeField);
  return t instanceof Date ? t.getTime() : Number.NaN;
}
