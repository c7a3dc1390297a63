/**
 * Internal steps of the bucket catalog (`bucket_catalog_internal.h`): finding an eligible bucket,
 * rollover, allocation, closing, archiving and idle-bucket expiry. Each step takes the catalog state first
 * and, where it touches a stripe's maps, the {@link StripeLock} proving the stripe is held.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import type { Measurement } from '../bucket-format/bucket-document.js';
import type { BucketIdGenerator } from '../bucket-format/bucket-oid.js';
import { drainThresholdFor, MeasurementMap } from '../bucket-format/measurement-map.js';
import type { DrainPolicy } from '../bucket-format/measurement-map.js';
import { createMinMax, updateMinMax } from '../bucket-format/min-max.js';
import { invariant } from '../util/invariant.js';
import {
  firstFlatShape,
  flatShapeOf,
  isFlatLayout,
  kNoFlatShape,
  matchesKnownShape,
  widenedFlatShape,
} from './flat-shape.js';
import type { FlatShape } from './flat-shape.js';
import { createSchema, sameSchema, startsFlatSchema, updateSchema } from '../bucket-format/schema.js';
import type { Schema, SchemaUpdateOptions } from '../bucket-format/schema.js';
import { roundTimestampBySeconds, timeWindowPosition } from '../bucket-format/time-rounding.js';
import { TimeseriesError, TsBucketsError } from '../errors.js';
import { kBSONObjMaxUserSize } from '../util/bson-value.js';
import { MeasurementLayout } from '../util/bson-validation.js';
import { defineField } from '../util/safe-record.js';
import {
  addOpenBatch,
  calculateBucketFieldsAndSizeChange,
  firstRowSizeChange,
  kNoChange,
  makeOpenBucket,
  openBatchFor,
  updateBucketSchema,
} from './bucket.js';
import type { Bucket, BucketSizeChange } from './bucket.js';
import { makeBucketId, makeBucketKey, stripeNumber } from './bucket-identifiers.js';
import type { BucketKey } from './bucket-identifiers.js';
import type { BucketMetadata } from './bucket-metadata.js';
import type { ExecutionStats, ExecutionStatsController } from './execution-stats.js';
import { archivedBucketMemoryUsage, bucketMemoryUsage, kLargeMeasurementBytes } from './memory-usage.js';
import { PackedItem } from './packed-item.js';
import { reopeningQueryFilter, takeArchivedCandidate } from './reopening.js';
import type { ReopeningRequest, ReopeningSource } from './reopening.js';
import type { StoredBucket } from '../storage/storage.js';
import type { BucketStateRegistry } from './bucket-state-registry.js';
import { rolloverActionFor } from './rollover.js';
import type { RolloverReason } from './rollover.js';
import { addOpenBucket, removeOpenBucket } from './stripe.js';
import type { ArchivedBucket, Stripe, StripeLock } from './stripe.js';
import { countStagedBy, makeWriteBatch } from './write-batch.js';
import type { WriteBatch } from './write-batch.js';

/** The largest bucket a few large measurements may grow to (`kLargeMeasurementsMaxBucketSize`). */
export const kLargeMeasurementsMaxBucketSize: number = 16 * 1024 * 1024 - 4 * 1024 * 1024;

/** The earliest time a `Date` holds, epoch ms. */
const kMinDateMs = -8.64e15;

/**
 * The bytes of a bucket document's `meta` element: its series key is the BSON of `{"": meta}` (as a
 * latin1 string), one byte more than the element named `meta` (`bucket-metadata.ts`).
 */
function metaElementBytes(bucket: Bucket): number {
  return bucket.hasMeta ? bucket.key.metaKey.length - 1 : 0;
}

/** Server parameters the catalog reads, resolved once by the engine. */
export interface CatalogParameters {
  /** `timeseriesBucketMaxCount`. */
  readonly timeseriesBucketMaxCount: number;
  /** `timeseriesBucketMaxSize` in bytes. */
  readonly timeseriesBucketMaxSize: number;
  /** `timeseriesBucketMinCount`. */
  readonly timeseriesBucketMinCount: number;
  /** `timeseriesIdleBucketExpiryMemoryUsageThreshold`, resolved to bytes. */
  readonly timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: number;
  /** `timeseriesIdleBucketExpiryMaxCountPerAttempt`. */
  readonly timeseriesIdleBucketExpiryMaxCountPerAttempt: number;
  /**
   * `timeseriesAlwaysUseCompressedBuckets`: new buckets are written compressed from their first commit.
   * @defaultValue false (the 5.x–7.x format)
   */
  readonly timeseriesAlwaysUseCompressedBuckets?: boolean;
  /**
   * `timeseriesValidateCompressedBuckets`: a whole-bucket compression (a version-1 bucket reopened in the
   * 8.0+ format) is decoded and compared before it is written.
   * @defaultValue true
   */
  readonly timeseriesValidateCompressedBuckets?: boolean;
}

/** The bucketing options of one collection, as the catalog needs them. */
export interface BucketingOptions {
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField: string | undefined;
  /** `bucketMaxSpanSeconds`. */
  readonly bucketMaxSpanSeconds: number;
  /** Effective `bucketRoundingSeconds` (the preset's when a granularity is set). */
  readonly bucketRoundingSeconds: number;
  /**
   * Whether the `{meta, time}` index that query-based reopening needs exists (MongoDB skips the query,
   * counting it as failed, without it).
   */
  readonly reopeningIndex: 'present' | 'absent';
}

/** Per-collection state held by the catalog. */
export interface CollectionState {
  /** Namespace. */
  readonly ns: string;
  /** Bucketing options of the latest insert (collMod changes apply to new buckets). */
  options: BucketingOptions;
  /** Stats controller updating this collection's and the global stats. */
  readonly stats: ExecutionStatsController;
  /** The last flat shape a bucket of this collection accepted, shared by the buckets that have it. */
  lastShape?: FlatShape | undefined;
  /**
   * A layout whose measurements have exactly the flat shape `lastShape` (the first measurement of the
   * last new bucket had it): a new bucket's first measurement of that layout has that shape unread.
   */
  lastShapeLayout?: MeasurementLayout | undefined;
  /** The schema of the last bucket opened, shared by the new buckets that record the same paths. */
  lastSchema?: Schema | undefined;
  /**
   * A flat layout whose measurements start `lastSchema` (`startsFlatSchema`: the answer is the same for
   * every measurement of a flat layout, see `isFlatLayout`): not asked again for that layout.
   */
  lastSchemaLayout?: MeasurementLayout | undefined;
  /** The field names a commit last gave a bucket, shared by the buckets with the same columns. */
  lastFieldNames?: ReadonlySet<string> | undefined;
  /** The uncommitted names last made for a new bucket, shared by the new buckets staging the same names. */
  lastNewFieldNames?: ReadonlySet<string> | undefined;
  /**
   * The frozen list of names `lastNewFieldNames` was last found equal to (a row plan's fields): the same
   * list again is not compared name by name.
   */
  lastNewFieldNamesFrom?: ReadonlyArray<string> | undefined;
}

/** Called when a bucket is closed (soft or hard) so its document can be finalised (compressed). */
export type BucketClosedHook = (ns: string, oid: ObjectId) => void;

/** The whole catalog's state: plain data, driven by the functions of this module. */
export interface CatalogState {
  /** The 32 stripes. */
  readonly stripes: ReadonlyArray<Stripe>;
  /** Resolved parameters. */
  readonly parameters: CatalogParameters;
  /** Source of bucket ids. */
  readonly idGenerator: BucketIdGenerator;
  /** Stats of the whole catalog. */
  readonly globalStats: ExecutionStats;
  /** Collections that have inserted at least once, by namespace. */
  readonly collections: Map<string, CollectionState>;
  /** Estimated bytes held by open and archived buckets. */
  memoryUsage: number;
  /** Next opId for callers that must not share batches (ordered inserts). */
  nextOpId: number;
  /** Finalises closed buckets. */
  readonly onBucketClosed: BucketClosedHook | undefined;
  /** Whether late measurements may reopen buckets from storage (`'enabled'` by default). */
  readonly reopening: 'enabled' | 'disabled';
  /** Whether compressed buckets defer their encoding to the storage (`MeasurementMap`'s deferred mode). */
  readonly deferredColumns: boolean;
  /** When deferred maps ask to be drained: set from the number of buckets as buckets are allocated. */
  readonly drain: DrainPolicy;
}

/** One measurement to stage, with what the caller already derived from it. */
export interface InsertItem {
  /**
   * The measurement, owned by the catalog from now on: its values are stored as they are (a time-series
   * collection passes the copy its validation walk made; see `util/bson-validation.ts`).
   */
  readonly measurement: Measurement;
  /** Its time, epoch ms. */
  readonly timeMs: number;
  /** Its series. */
  readonly metadata: BucketMetadata;
  /**
   * The layout the validation walk gave the measurement (`copyMeasurement`), if any: lets the rollover
   * check skip reading the fields of a measurement whose layout a bucket's shape already matched. Only
   * tokens the walk made count; anything else is ignored.
   */
  readonly layout?: MeasurementLayout | undefined;
}

/** An {@link InsertItem} made by a constructor (see `makeWriteBatch` on why, and when not). */
class Item implements InsertItem {
  constructor(
    readonly measurement: Measurement,
    readonly timeMs: number,
    readonly metadata: BucketMetadata,
    readonly layout: MeasurementLayout | undefined,
  ) {}
}

/**
 * Measurements in a call from which its items are made by a literal (see {@link insertItem}): V8 tenures
 * the objects of a literal that mostly outlive young-generation collections, as a long call's items do
 * (they live until its commit), and copying them through the young generation cost more. Measured, when
 * batches were made the same way, between calls of 5 000 (0.83x the time per measurement as classes),
 * 10 000 (0.98x) and 20 000 (1.2x). Items of measurements held as rows of their call are a class always
 * (`PackedItem`).
 */
export const kLongCall = 8192;

/**
 * An item to stage, for a caller that makes one per measurement of a call (an insert): the item lives
 * until the call's commit, as its batch does.
 *
 * @param measurement - the measurement (see {@link InsertItem.measurement}).
 * @param timeMs - its time, epoch ms.
 * @param metadata - its series.
 * @param layout - the layout its validation walk gave it, if any.
 * @param longLived - whether the call has many measurements (`kLongCall`): its items outlive young
 *   collections.
 * @returns the item.
 */
export function insertItem(
  measurement: Measurement,
  timeMs: number,
  metadata: BucketMetadata,
  layout: MeasurementLayout | undefined,
  longLived: boolean,
): InsertItem {
  // A literal for a call of many measurements only (see kLongCall).
  return longLived
    ? { measurement, timeMs, metadata, layout }
    : new Item(measurement, timeMs, metadata, layout);
}

/** Who stages: the batch key (0 = shared with other unordered writers) and the writer's opId. */
export interface StagingOp {
  /** opId of the batches to stage into: 0 for shared batches. */
  readonly batchKey: number;
  /** The staging writer's opId. */
  readonly writer: number;
}

/** Outcome of staging one measurement. */
export type StageResult =
  | { readonly kind: 'staged'; readonly batch: WriteBatch }
  | { readonly kind: 'error'; readonly error: TimeseriesError };

/**
 * The stripe of a series.
 *
 * @param state - the catalog.
 * @param key - the series.
 * @returns its stripe.
 */
export function stripeFor(state: CatalogState, key: BucketKey): Stripe {
  return state.stripes[stripeNumber(key)] as Stripe;
}

/**
 * The stripe of an open bucket.
 *
 * @param state - the catalog.
 * @param bucket - the bucket.
 * @returns its series' stripe.
 */
export function stripeOfBucket(state: CatalogState, bucket: Bucket): Stripe {
  return state.stripes[bucket.stripe] as Stripe;
}

/** What the series of one insert call share, staged series by series by {@link stageSeries}. */
export interface SeriesStaging {
  /**
   * The collection: taken again under each stripe, as a drop while the call waited (for storage, or for a
   * stripe) replaced it.
   */
  coll: CollectionState;
  /** Its bucketing options. */
  readonly options: BucketingOptions;
  /** The call's measurements (every series'). */
  readonly items: ReadonlyArray<InsertItem>;
  /**
   * Every series' measurements, a run per series: their indices in `items`, each run sorted by time
   * (stable). An item's result goes to the same index of `out`.
   */
  readonly positions: ReadonlyArray<number>;
  /** Receives one result per item. */
  readonly out: StageResult[];
  /** Batch key and writer opId. */
  readonly op: StagingOp;
  /** Where reopened buckets are read from; `undefined` when the caller cannot read storage to reopen. */
  readonly source: ReopeningSource | undefined;
  /**
   * The answers of the call's reopening queries read together before staging
   * (`ReopeningSource.reopeningCandidates`).
   */
  readonly prefetched?: PrefetchedReopenings | undefined;
}

/**
 * The answers of a call's reopening queries read before staging, by series signature, read in catalog era
 * `era` of `registry`. An answer is used once, by the query it answers (same series, same time), and
 * only while the era lasts: once a direct write has ended since the read, the series is queried.
 */
export interface PrefetchedReopenings {
  readonly answers: Map<string, PrefetchedReopening>;
  readonly registry: BucketStateRegistry;
  readonly era: number;
}

/** A series' reopening query answered before staging (see {@link PrefetchedReopenings}). */
export interface PrefetchedReopening {
  /** The time the query was made for (the series' earliest measurement in the call), epoch ms. */
  readonly timeMs: number;
  /** The query. */
  readonly filter: Readonly<Record<string, unknown>>;
  /** The documents it found, in storage order. */
  readonly docs: ReadonlyArray<StoredBucket>;
}

/** One series of a {@link SeriesStaging}: its key and its run of `positions`. */
export interface SeriesRun {
  /** The series. */
  readonly key: BucketKey;
  /** First index of the run in `positions`. */
  readonly start: number;
  /** End of the run (exclusive). */
  readonly end: number;
}

/**
 * Stage the measurements of one series (already sorted by time) into batches, under the stripe lock.
 *
 * @param state - the catalog.
 * @param lock - the series' stripe, held.
 * @param series - the call's measurements and where their results go.
 * @param run - the series and its run of `series.positions`.
 * @param resume - where to resume after a pause.
 * @returns where staging stopped to reopen a bucket, or `undefined` when every item was handled.
 */
export function stageSeries(
  state: CatalogState,
  lock: StripeLock,
  series: SeriesStaging,
  run: SeriesRun,
  resume?: StageResume,
): StagePause | undefined {
  const { coll, options, items, positions, out, op, source } = series;
  const reopening = source === undefined ? 'done' : 'allowed';
  const key = run.key;
  // Consecutive measurements go to the same bucket until one needs a rollover (docs/mongodb-behaviour.md §5.6, newest).
  let current: Bucket | undefined;
  for (let i = resume?.index ?? run.start; i < run.end; i++) {
    const position = positions[i] as number;
    const item = items[position] as InsertItem;
    let chosen: EligibleBucket | undefined;
    // The bucket and size change when the current bucket takes the item (no result object on this path).
    let fits: BucketSizeChange | undefined;
    try {
      // Why the bucket this call was filling does not take the item: the series had a bucket (so a new one
      // is not "due to metadata"), and only a time-backward rollover allows query-based reopening.
      let rolledOver: Exclude<RolloverReason, 'none'> | undefined;
      if (current?.state === 'normal' && lock.stripe.openBucketsById.get(current.id.hex) === current) {
        const check = determineRolloverReason(state, coll, options, current, item);
        if (typeof check !== 'string') fits = check;
        else {
          rolledOver = check;
          if (current.rolloverAction === 'none') rollover(state, lock, coll, current, check);
        }
      }
      if (fits === undefined) {
        const resumed = resume?.index === i;
        chosen = findEligibleBucket(
          state,
          lock,
          coll,
          options,
          key,
          item,
          resumed ? resume.reopening : reopening,
          resumed ? resume.why : undefined,
          rolledOver,
          source,
          series.prefetched,
        );
      }
    } catch (error) {
      // A value BSON cannot hold (a symbol, a function, a value nested past the stack) is found while
      // sizing the measurement, before anything is staged for it: reject this measurement only, so that
      // the call's other measurements, staged in batches other writers may commit, keep an outcome.
      // Broken invariants are bugs and still throw.
      if (TsBucketsError.isTsBucketsError(error) && !TimeseriesError.isTimeseriesError(error)) throw error;
      out[position] = {
        kind: 'error',
        error: TimeseriesError.isTimeseriesError(error)
          ? error
          : new TimeseriesError('BadValue', 'measurement cannot be stored as BSON', { cause: error }),
      };
      continue;
    }
    if (fits === undefined) {
      // Set in the try whenever the current bucket did not take the item.
      invariant(chosen !== undefined, 2010, 'stageSeries chose no bucket');
      if (chosen.kind === 'reopen') return { index: i, request: chosen.request, why: chosen.why };
      if (chosen.kind === 'error') {
        out[position] = chosen;
        continue;
      }
      current = chosen.bucket;
      fits = chosen.change;
    }
    // One result object per batch, shared by its measurements.
    out[position] = stageInto(state, lock, coll, current as Bucket, item, fits, op).staged;
  }
  return undefined;
}

/** The last {@link skipOptions} made: every call of a collection passes the same metaField. */
let lastSkip: SchemaUpdateOptions = { skipField: undefined };

/**
 * The schema and min/max options that leave out `metaField`, without an object per measurement.
 *
 * @param metaField - the collection's metaField.
 * @returns `{ skipField: metaField }` (shared: do not mutate).
 */
export function skipOptions(metaField: string | undefined): SchemaUpdateOptions {
  if (lastSkip.skipField !== metaField) lastSkip = { skipField: metaField };
  return lastSkip;
}

/**
 * A bucket that accepts a measurement, with the size it adds; or a bucket to look for on disk first; or why
 * the measurement cannot be staged.
 */
type EligibleBucket =
  | { readonly kind: 'found'; readonly bucket: Bucket; readonly change: BucketSizeChange }
  | { readonly kind: 'reopen'; readonly request: ReopeningRequest; readonly why: 'metadata' | 'rollover' }
  | { readonly kind: 'error'; readonly error: TimeseriesError };

/** Where {@link stageSeries} stopped to reopen a bucket from disk (the caller does the I/O). */
export interface StagePause {
  /** Index (in the call's `positions`) of the measurement waiting for the reopened bucket. */
  readonly index: number;
  /** What to read. */
  readonly request: ReopeningRequest;
  /** Why a new bucket would be needed: counts `numBucketsOpenedDueToMetadata` if one is allocated. */
  readonly why: 'metadata' | 'rollover';
}

/** How {@link stageSeries} resumes after a pause. */
export interface StageResume {
  /** The measurement to resume at. */
  readonly index: number;
  /** `'done'` after the reopening attempt for this measurement: allocate rather than ask again. */
  readonly reopening: 'allowed' | 'done';
  /** The allocation reason recorded when the pause was taken. */
  readonly why: 'metadata' | 'rollover' | undefined;
}

/** The size change when the item fits, else why the bucket rolls over (no object per measurement). */
type RolloverCheck = BucketSizeChange | Exclude<RolloverReason, 'none'>;

/**
 * Whether `item` fits `bucket`, or why not (docs/mongodb-behaviour.md §5.2, newest order): time forward, time backward,
 * count, size (with the large-measurement exemption, after which the schema check still runs), schema.
 * A passing schema check records the measurement's new paths in the bucket's schema.
 *
 * @param state - the catalog.
 * @param coll - the collection (for the kept-open statistic).
 * @param options - the collection's bucketing options.
 * @param bucket - a candidate bucket.
 * @param item - the measurement.
 * @returns the size change when the item fits, else the rollover reason.
 */
export function determineRolloverReason(
  state: CatalogState,
  coll: CollectionState,
  options: BucketingOptions,
  bucket: Bucket,
  item: InsertItem,
): RolloverCheck {
  const params = state.parameters;
  // The span is the collection's current one, not the one the bucket was opened with: a collMod raising
  // the granularity widens open buckets too, as the server's rollover check reads the live options.
  switch (timeWindowPosition(item.timeMs, bucket.startMs, options.bucketMaxSpanSeconds)) {
    case 'after':
      return 'timeForward';
    case 'before':
      return 'timeBackward';
    case 'inside':
      break;
  }
  if (bucket.numMeasurements >= params.timeseriesBucketMaxCount) return 'count';
  const { metaField } = options;
  // A compressed bucket that accepted these flat fields already: no new field, no schema change, no size.
  const known = bucket.measurementMap !== undefined && matchesKnownShape(bucket.knownShape, item, metaField);
  const change = known ? kNoChange : calculateBucketFieldsAndSizeChange(bucket, item.measurement, metaField);
  // The absolute ceiling counts the meta too: it is in the document (a meta of megabytes leaves room for
  // a single measurement, as the server's bson_too_large tests pin).
  const ceiling = kLargeMeasurementsMaxBucketSize - metaElementBytes(bucket);
  const limit = Math.min(params.timeseriesBucketMaxSize, ceiling);
  const newSize = bucketSize(bucket, limit - change.sizeToBeAdded) + change.sizeToBeAdded;
  // A parameter above 16 MiB still never lets a bucket document grow past what BSON holds: such a
  // measurement goes to a new bucket, where one too large for any bucket is refused (BSONObjectTooLarge).
  if (newSize > params.timeseriesBucketMaxSize || newSize > ceiling) {
    if (bucket.numMeasurements >= params.timeseriesBucketMinCount || newSize > ceiling) return 'size';
    if (!bucket.keptOpenDueToLargeMeasurements) {
      bucket.keptOpenDueToLargeMeasurements = true;
      coll.stats.inc('numBucketsKeptOpenDueToLargeMeasurements');
    }
  }
  if (known) return change;
  if (updateBucketSchema(bucket, item.measurement, skipOptions(metaField)) === 'incompatible') {
    return 'schemaChange';
  }
  // A shape from the bucket's first measurement (allocateBucket; a reopened bucket's from the first one
  // checked here), widened by later ones with fields it lacks (optional fields); a bucket whose first
  // measurement is not flat (a string) keeps none, rather than trying again with every measurement.
  const shape = bucket.knownShape;
  if (bucket.measurementMap !== undefined && shape !== kNoFlatShape) {
    const next =
      shape === undefined
        ? flatShapeOf(item.measurement, metaField, coll.lastShape)
        : widenedFlatShape(shape, item.measurement, metaField, coll.lastShape);
    if (next !== undefined && next !== coll.lastShape) {
      coll.lastShape = next;
      coll.lastShapeLayout = undefined;
    }
    bucket.knownShape = next ?? kNoFlatShape;
  }
  return change;
}

/**
 * Find a bucket that accepts `item`, rolling over the series' current bucket if it does not, and
 * allocating a new bucket when no candidate fits (docs/mongodb-behaviour.md §5.6, newest): candidates are buckets pending
 * soft close (fewest measurements first), then pending archive (fewest first), whose window contains the
 * time, then the series' current bucket.
 */
function findEligibleBucket(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  options: BucketingOptions,
  key: BucketKey,
  item: InsertItem,
  reopening: 'allowed' | 'done',
  pausedWhy: 'metadata' | 'rollover' | undefined,
  rolledOver: Exclude<RolloverReason, 'none'> | undefined,
  source: ReopeningSource | undefined,
  prefetched?: PrefetchedReopenings,
): EligibleBucket {
  const open = lock.stripe.openBucketsByKey.get(key.signature);
  // A bucket the caller already rolled over for this item counts as the series' current bucket.
  let hadCurrent = rolledOver !== undefined;
  let queryAllowed = rolledOver === undefined || rolledOver === 'timeBackward';
  if (open !== undefined) {
    // Made only when a rolled-over bucket could take the item (rare): this runs for every measurement
    // whose call has no bucket of its series yet.
    let alternates: Bucket[] | undefined;
    let current: Bucket | undefined;
    for (const bucket of open) {
      if (bucket.state !== 'normal') continue;
      if (bucket.rolloverAction === 'none') current = bucket;
      else if (
        (bucket.rolloverAction === 'softClose' || bucket.rolloverAction === 'archive') &&
        timeWindowPosition(item.timeMs, bucket.startMs, options.bucketMaxSpanSeconds) === 'inside'
      ) {
        (alternates ??= []).push(bucket);
      }
    }
    if (alternates !== undefined) {
      if (alternates.length > 1) alternates.sort(compareAlternates);
      for (const bucket of alternates) {
        const check = determineRolloverReason(state, coll, options, bucket, item);
        if (typeof check !== 'string') return { kind: 'found', bucket, change: check };
      }
    }
    if (current !== undefined) {
      hadCurrent = true;
      const check = determineRolloverReason(state, coll, options, current, item);
      if (typeof check !== 'string') return { kind: 'found', bucket: current, change: check };
      // Query-based reopening only follows a time-backward rollover (or no open bucket at all).
      queryAllowed = check === 'timeBackward';
      rollover(state, lock, coll, current, check);
    }
  }
  const why = pausedWhy ?? (hadCurrent ? 'rollover' : 'metadata');
  if (reopening === 'allowed' && state.reopening === 'enabled') {
    const record = takeArchivedCandidate(state, lock, coll, key, item.timeMs, options.bucketMaxSpanSeconds);
    if (record !== undefined) return { kind: 'reopen', request: { kind: 'archived', record }, why };
    if (queryAllowed) {
      const hasMeta = item.metadata.normalizedMeta !== undefined;
      // The query's answer, read with the call's other series before staging (used once).
      let answered = prefetched?.answers.get(key.signature);
      if (answered?.timeMs !== item.timeMs) answered = undefined;
      else prefetched?.answers.delete(key.signature);
      if (prefetched?.registry.currentEra !== prefetched?.era) answered = undefined;
      if (options.reopeningIndex === 'absent') {
        // MongoDB skips the query without its index and counts it as failed.
        coll.stats.inc('numBucketQueriesFailed');
      } else if (answered !== undefined && answered.docs.length > 0) {
        const { filter, docs } = answered;
        const era = (prefetched as PrefetchedReopenings).era;
        return { kind: 'reopen', request: { kind: 'prefetched', filter, docs, era }, why };
      } else if (
        answered !== undefined ||
        source?.holdsNoBucketsOf?.(hasMeta, item.metadata.normalizedMeta) === true
      ) {
        // The query found nothing when read with the call's others, or the storage has never seen the
        // series (a bulk load's first call brings thousands of them; each query was a pause and a read).
        coll.stats.inc('numBucketQueriesFailed');
      } else {
        const filter = reopeningQueryFilter(
          options,
          state.parameters,
          hasMeta,
          item.metadata.normalizedMeta,
          item.timeMs,
        );
        return { kind: 'reopen', request: { kind: 'query', filter }, why };
      }
    }
  }
  return allocateBucket(state, lock, coll, options, key, item, why);
}

/** Soft-closed before archived, then fewest measurements first. */
function compareAlternates(a: Bucket, b: Bucket): number {
  if (a.rolloverAction !== b.rolloverAction) return a.rolloverAction === 'softClose' ? -1 : 1;
  return a.numMeasurements - b.numMeasurements;
}

/**
 * Open a new bucket for `item`'s series starting at the item's rounded time. Expires idle buckets of the
 * stripe first if the catalog is over its memory threshold.
 */
function allocateBucket(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  options: BucketingOptions,
  key: BucketKey,
  item: InsertItem,
  why: 'metadata' | 'rollover',
): EligibleBucket {
  expireIdleBuckets(state, lock);
  const startMs = roundTimestampBySeconds(item.timeMs, options.bucketRoundingSeconds);
  // The earliest dates with a rounding that does not divide them: a start no Date holds (the server's
  // int64 milliseconds would; a js-bson Date cannot carry it).
  if (startMs < kMinDateMs) {
    return {
      kind: 'error',
      error: new TimeseriesError(
        'BadValue',
        `'${options.timeField}' rounds down to a bucket start before the earliest date a Date holds (${new Date(kMinDateMs).toISOString()})`,
      ),
    };
  }
  let id = makeBucketId(key.ns, state.idGenerator.next(startMs));
  // An id already open in this stripe: re-seed and retry, as the server does (docs/mongodb-behaviour.md §1.2).
  for (let attempt = 0; lock.stripe.openBucketsById.has(id.hex); attempt++) {
    if (attempt >= 16) {
      return {
        kind: 'error',
        error: new TimeseriesError(
          'OIDGenerationCollision',
          "Unable to insert documents due to internal OID generation collision. Increase the value of server parameter 'timeseriesInsertMaxRetriesOnDuplicates' and try again",
        ),
      };
    }
    state.idGenerator.reseed();
    id = makeBucketId(key.ns, state.idGenerator.next(startMs));
  }
  const minMax = createMinMax();
  // The rounded start is folded in before any measurement: control.min.<time> is the rounded time.
  const seed: Record<string, unknown> = {};
  defineField(seed, options.timeField, new Date(startMs));
  updateMinMax(minMax, seed, { skipField: undefined });
  // The collection's buckets mostly record the same paths: they share one schema until one adds a path.
  // A measurement held as a row of its call is not built to answer what its layout already answered.
  const layout = item.layout instanceof MeasurementLayout ? item.layout : undefined;
  let schema = coll.lastSchema;
  if (schema === undefined || layout === undefined || layout !== coll.lastSchemaLayout) {
    if (schema !== undefined && startsFlatSchema(schema, item.measurement, options.metaField)) {
      coll.lastSchemaLayout =
        layout !== undefined && isFlatLayout(layout, options.metaField) ? layout : undefined;
    } else {
      const own = createSchema();
      updateSchema(own, item.measurement, { skipField: options.metaField });
      if (schema === undefined || !sameSchema(own, schema)) {
        coll.lastSchema = own;
        coll.lastSchemaLayout = undefined;
        schema = own;
      }
    }
  }
  const bucket = makeOpenBucket({
    id,
    key,
    collection: coll,
    hasMeta: item.metadata.normalizedMeta !== undefined,
    normalizedMeta: item.metadata.normalizedMeta,
    startMs,
    minMax,
    schema,
    schemaShared: true,
    size: 0,
    // Chosen once per bucket: a bucket keeps the format it was opened in (the server hard-closes a bucket
    // whose format no longer matches; here the parameter is fixed for the catalog's life).
    measurementMap:
      state.parameters.timeseriesAlwaysUseCompressedBuckets === true
        ? new MeasurementMap(options.timeField, state.deferredColumns ? 'deferred' : 'eager', state.drain)
        : undefined,
    committedMeasurements: 0,
    fieldNames: [],
  });
  const change =
    item instanceof PackedItem && bucket.measurementMap !== undefined
      ? firstRowSizeChange(item)
      : calculateBucketFieldsAndSizeChange(bucket, item.measurement, options.metaField);
  if (change.sizeToBeAdded + metaElementBytes(bucket) > kBSONObjMaxUserSize) {
    coll.stats.inc('numBucketDocumentsTooLargeInsert');
    return {
      kind: 'error',
      error: new TimeseriesError(
        'BSONObjectTooLarge',
        `Measurement too large: the bucket document would exceed ${kBSONObjMaxUserSize} bytes`,
      ),
    };
  }
  if (bucket.measurementMap !== undefined) {
    let shape: FlatShape | undefined;
    if (layout !== undefined && layout === coll.lastShapeLayout && coll.lastShape !== undefined) {
      shape = coll.lastShape;
      // As firstFlatShape records it: the shape's last layout known to fit.
      shape.layout = layout;
    } else {
      shape = firstFlatShape(item, options.metaField, coll.lastShape);
      if (shape !== undefined) {
        coll.lastShape = shape;
        coll.lastShapeLayout = layout;
      }
    }
    bucket.knownShape = shape ?? kNoFlatShape;
  }
  lock.stripe.openBucketsById.set(bucket.id.hex, bucket);
  addOpenBucket(lock, bucket);
  coll.stats.addActiveBuckets(1);
  if (state.drain.adaptive) state.drain.threshold = drainThresholdFor(state.globalStats.numActiveBuckets);
  bucket.memoryUsage = bucketMemoryUsage(bucket);
  state.memoryUsage += bucket.memoryUsage;
  bucket.pendingOpenedDueToMetadata = why === 'metadata';
  return { kind: 'found', bucket, change };
}

/** Add `item` to the caller's batch for `bucket`. */
function stageInto(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  bucket: Bucket,
  item: InsertItem,
  change: BucketSizeChange,
  op: StagingOp,
): WriteBatch {
  let batch = openBatchFor(bucket, op.batchKey);
  if (batch === undefined) {
    batch = makeWriteBatch(bucket, op.batchKey, coll.stats, item);
    addOpenBatch(bucket, batch);
    // A bucket with a batch is not idle; one that already had an open batch was not idle either.
    lock.stripe.idleBuckets.delete(bucket);
    // The flag moves to the bucket's first batch and is counted when that batch commits.
    if (bucket.pendingOpenedDueToMetadata) {
      bucket.pendingOpenedDueToMetadata = false;
      batch.openedDueToMetadata = true;
    }
  } else batch.items.push(item);
  countStagedBy(batch, op.writer);
  bucket.numMeasurements++;
  bucket.size += change.sizeToBeAdded;
  batch.uncommittedEstimate += change.uncommittedEstimate;
  // The memory estimate depends on the field names and the large measurements: recomputed when they change.
  const large = change.sizeToBeAdded > kLargeMeasurementBytes;
  if (large) bucket.largeMeasurementBytes += change.sizeToBeAdded;
  if (change.newFieldNames.length > 0) {
    bucket.uncommittedFieldNames = withUncommitted(coll, bucket.uncommittedFieldNames, change.newFieldNames);
  }
  if (large || change.newFieldNames.length > 0) updateBucketMemoryUsage(state, bucket);
  return batch;
}

/**
 * A bucket's uncommitted field names with `added` (names it has neither committed nor staged), as a new
 * set that is never changed. A new bucket staging the names the collection's last new bucket staged (every
 * series of a bulk load's first call) shares that one's set: a set of eleven names is about 500 bytes,
 * dropped at the bucket's first commit.
 */
function withUncommitted(
  coll: CollectionState,
  current: ReadonlySet<string> | undefined,
  added: ReadonlyArray<string>,
): ReadonlySet<string> {
  if (current === undefined) {
    const last = coll.lastNewFieldNames;
    if (last !== undefined && (added === coll.lastNewFieldNamesFrom || isUnionOf(last, kNoNames, added))) {
      if (Object.isFrozen(added)) coll.lastNewFieldNamesFrom = added;
      return last;
    }
    const names = new Set(added);
    coll.lastNewFieldNames = names;
    coll.lastNewFieldNamesFrom = Object.isFrozen(added) ? added : undefined;
    return names;
  }
  const names = new Set(current);
  for (let i = 0; i < added.length; i++) names.add(added[i] as string);
  return names;
}

/**
 * Record that `bucket` stops accepting measurements for `reason`; act now if it has no batch in flight,
 * else when its last batch finishes. Statistics are counted here, when the rollover happens.
 *
 * @param state - the catalog.
 * @param lock - the bucket's stripe, held.
 * @param coll - the collection.
 * @param bucket - the series' current bucket.
 * @param reason - why it rolls over.
 */
export function rollover(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  bucket: Bucket,
  reason: Exclude<RolloverReason, 'none'>,
): void {
  // Newest: a bucket already full by count or size is closed rather than archived (docs/mongodb-behaviour.md §5.5).
  const effective = reason === 'timeBackward' ? (fullBy(state, bucket) ?? reason) : reason;
  bucket.rolloverReason = effective;
  bucket.rolloverAction = rolloverActionFor[effective];
  coll.stats.inc(kRolloverStat[effective]);
  lock.stripe.idleBuckets.delete(bucket);
  if (bucket.openBatches.length === 0 && bucket.preparedBatch === undefined)
    performRolloverAction(state, lock, coll, bucket);
}

/**
 * The bucket's size as the rollover rules count it. A deferred bucket's columns count by their upper bound
 * while that stays within `limit`; above it, the committed measurements are encoded and measured (the
 * server's size after each commit is the measured one), so every decision is the one exact sizes give.
 */
function bucketSize(bucket: Bucket, limit: number): number {
  const map = bucket.measurementMap;
  if (map === undefined || !map.deferred) return bucket.size;
  const committed = bucket.numCommittedMeasurements;
  const bound = bucket.size + map.sizeBound(committed);
  if (bound <= limit) return bound;
  map.settle(committed);
  return bucket.size + map.sizeBound(committed);
}

/** Whether a bucket is full by count, or definitely full by size (`timeseriesBucketMinCount` reached). */
function fullBy(state: CatalogState, bucket: Bucket): 'count' | 'size' | undefined {
  const params = state.parameters;
  if (bucket.numMeasurements >= params.timeseriesBucketMaxCount) return 'count';
  if (
    bucket.numMeasurements >= params.timeseriesBucketMinCount &&
    bucketSize(bucket, params.timeseriesBucketMaxSize - 1) >= params.timeseriesBucketMaxSize
  ) {
    return 'size';
  }
  return undefined;
}

const kRolloverStat = {
  timeForward: 'numBucketsClosedDueToTimeForward',
  timeBackward: 'numBucketsArchivedDueToTimeBackward',
  count: 'numBucketsClosedDueToCount',
  size: 'numBucketsClosedDueToSize',
  cachePressure: 'numBucketsClosedDueToCachePressure',
  schemaChange: 'numBucketsClosedDueToSchemaChange',
} as const satisfies Record<Exclude<RolloverReason, 'none'>, string>;

/**
 * Carry out a bucket's pending rollover action: close it, or archive it.
 *
 * @param state - the catalog.
 * @param lock - the bucket's stripe, held.
 * @param coll - the collection.
 * @param bucket - a bucket with no batch in flight.
 */
export function performRolloverAction(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  bucket: Bucket,
): void {
  switch (bucket.rolloverAction) {
    case 'none':
      markBucketIdle(lock, bucket);
      return;
    case 'softClose':
    case 'hardClose':
      closeOpenBucket(state, lock, coll, bucket, 'closed');
      return;
    case 'archive':
      archiveBucket(state, lock, coll, bucket);
      return;
    default: {
      const never: never = bucket.rolloverAction;
      throw new TypeError(`unknown rollover action ${String(never)}`);
    }
  }
}

/** Mark a bucket idle: most recently idle at the end of the stripe's idle list. */
export function markBucketIdle(lock: StripeLock, bucket: Bucket): void {
  lock.stripe.idleBuckets.push(bucket);
}

/**
 * Remove an open bucket from the catalog.
 *
 * @param state - the catalog.
 * @param lock - the bucket's stripe, held.
 * @param coll - the collection.
 * @param bucket - the bucket.
 * @param how - `'closed'`: its document is final (finalise it); `'forgotten'`: cleared, leave storage alone;
 *   `'archived'`: replaced by an archived record (the active count is unchanged).
 */
export function closeOpenBucket(
  state: CatalogState,
  lock: StripeLock,
  coll: CollectionState,
  bucket: Bucket,
  how: 'closed' | 'forgotten' | 'archived',
): void {
  const stripe = lock.stripe;
  if (stripe.openBucketsById.get(bucket.id.hex) !== bucket) return;
  stripe.openBucketsById.delete(bucket.id.hex);
  stripe.idleBuckets.delete(bucket);
  removeOpenBucket(lock, bucket);
  state.memoryUsage -= bucket.memoryUsage;
  // Nothing appends to it any more: what the storage has not taken is encoded, the encoders let go. Not
  // while a batch's write is in flight (a collection cleared under it): the storage may still take it.
  if (bucket.preparedBatch === undefined) bucket.measurementMap?.seal(bucket.numCommittedMeasurements);
  if (how !== 'archived') coll.stats.addActiveBuckets(-1);
  if (how === 'closed' && bucket.numCommittedMeasurements > 0) {
    state.onBucketClosed?.(bucket.id.ns, bucket.id.oid);
  }
}

/**
 * Archive a bucket: drop it from memory and keep a small record for archive-based reopening. If a record
 * for the same series and start exists, the bucket is closed instead (docs/mongodb-behaviour.md §5.5).
 */
function archiveBucket(state: CatalogState, lock: StripeLock, coll: CollectionState, bucket: Bucket): void {
  // Newest: a bucket already full is closed instead (docs/mongodb-behaviour.md §5.5): reopening it could add nothing.
  // (A time-backward rollover has made that choice already; this is for expiry under memory pressure.)
  const full = fullBy(state, bucket);
  if (full !== undefined) {
    coll.stats.inc(kRolloverStat[full]);
    closeOpenBucket(state, lock, coll, bucket, 'closed');
    return;
  }
  let records = lock.stripe.archivedBuckets.get(bucket.key.signature);
  if (records?.has(bucket.startMs) === true) {
    closeOpenBucket(state, lock, coll, bucket, 'closed');
    return;
  }
  closeOpenBucket(state, lock, coll, bucket, 'archived');
  if (records === undefined) {
    records = new Map();
    lock.stripe.archivedBuckets.set(bucket.key.signature, records);
  }
  const memoryUsage = archivedBucketMemoryUsage(bucket.key);
  records.set(bucket.startMs, { oid: bucket.id.oid, startMs: bucket.startMs, ns: bucket.id.ns, memoryUsage });
  state.memoryUsage += memoryUsage;
}

/**
 * Expire idle buckets of one stripe while the catalog is over its memory threshold (docs/mongodb-behaviour.md §5.7): the
 * least recently idle bucket is archived; then archived records are dropped. At most
 * `timeseriesIdleBucketExpiryMaxCountPerAttempt + 1` per call (the server's `<=`).
 *
 * @param state - the catalog.
 * @param lock - the stripe, held.
 */
export function expireIdleBuckets(state: CatalogState, lock: StripeLock): void {
  const params = state.parameters;
  const threshold = params.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes;
  const maxCount = params.timeseriesIdleBucketExpiryMaxCountPerAttempt;
  let numExpired = 0;
  const stripe = lock.stripe;
  while (stripe.idleBuckets.size > 0 && state.memoryUsage > threshold && numExpired <= maxCount) {
    const bucket = stripe.idleBuckets.first() as Bucket;
    const coll = state.collections.get(bucket.id.ns);
    if (coll === undefined || bucket.state !== 'normal') {
      stripe.idleBuckets.delete(bucket);
    } else {
      coll.stats.inc('numBucketsArchivedDueToMemoryThreshold');
      archiveBucket(state, lock, coll, bucket);
    }
    numExpired++;
  }
  while (stripe.archivedBuckets.size > 0 && state.memoryUsage > threshold && numExpired <= maxCount) {
    const [signature, records] = stripe.archivedBuckets.entries().next().value as [
      string,
      Map<number, ArchivedBucket>,
    ];
    const [startMs, record] = records.entries().next().value as [number, ArchivedBucket];
    records.delete(startMs);
    if (records.size === 0) stripe.archivedBuckets.delete(signature);
    state.memoryUsage -= record.memoryUsage;
    const coll = state.collections.get(record.ns);
    if (coll !== undefined) {
      coll.stats.inc('numBucketsClosedDueToMemoryThreshold');
      coll.stats.addActiveBuckets(-1);
      // Closed for good: its document is final and is compressed like any closed bucket (MongoDB 7.x
      // closes archived buckets through the same ClosedBucket path).
      state.onBucketClosed?.(record.ns, record.oid);
    }
    numExpired++;
  }
}

/** Recompute a bucket's share of the catalog's memory estimate. */
export function updateBucketMemoryUsage(state: CatalogState, bucket: Bucket): void {
  const usage = bucketMemoryUsage(bucket);
  state.memoryUsage += usage - bucket.memoryUsage;
  bucket.memoryUsage = usage;
}

/**
 * The series key of a measurement's metadata within a namespace (kept on the metadata: see
 * `BucketMetadata.bucketKey`).
 *
 * @param ns - namespace.
 * @param metadata - the measurement's series.
 * @returns the key.
 */
export function keyFor(ns: string, metadata: BucketMetadata): BucketKey {
  const cached = metadata.bucketKey;
  if (cached !== undefined && cached.ns === ns) return cached;
  const key = makeBucketKey(ns, metadata.key);
  metadata.bucketKey = key;
  return key;
}

/**
 * Add the columns a commit created to the bucket's field names, and take them out of its uncommitted
 * names: a shared set is copied first, and the result is shared with the collection's last set when
 * equal (the buckets of a collection mostly have the same columns; a set of eleven names costs about 400
 * bytes).
 *
 * @param coll - the bucket's collection.
 * @param bucket - the bucket.
 * @param created - the columns its commit created.
 */
export function addCommittedColumns(
  coll: CollectionState,
  bucket: Bucket,
  created: ReadonlyArray<string>,
): void {
  if (created.length === 0) return;
  bucket.uncommittedFieldNames = withoutCommitted(bucket.uncommittedFieldNames, created);
  const last = coll.lastFieldNames;
  // Compared before anything is built: a bucket whose names become the last set's takes that set.
  if (last !== undefined && isUnionOf(last, bucket.fieldNames, created)) {
    bucket.fieldNames = last;
    bucket.fieldNamesShared = true;
    return;
  }
  const names = bucket.fieldNamesShared ? new Set(bucket.fieldNames) : (bucket.fieldNames as Set<string>);
  // Indexed: an iterator per batch is garbage per measurement when every batch holds one.
  for (let i = 0; i < created.length; i++) names.add(created[i] as string);
  bucket.fieldNames = names;
  bucket.fieldNamesShared = true;
  coll.lastFieldNames = names;
}

/**
 * A bucket's uncommitted names without the columns a commit created, as a new set (the set may be shared:
 * see {@link withUncommitted}), or `undefined` when none is left: every new bucket stages its fields as
 * uncommitted, and a set its first commit empties is dropped, not kept for the bucket's life.
 */
function withoutCommitted(
  current: ReadonlySet<string> | undefined,
  created: ReadonlyArray<string>,
): ReadonlySet<string> | undefined {
  if (current === undefined || isUnionOf(current, kNoNames, created)) return undefined;
  const left = new Set<string>();
  for (const name of current) if (!created.includes(name)) left.add(name);
  return left.size === 0 ? undefined : left;
}

/** No names (the committed names of a bucket without columns, for {@link isUnionOf}). */
const kNoNames: ReadonlySet<string> = new Set();

/** Whether `set` holds exactly the names of `names` and `added` (distinct names). */
function isUnionOf(
  set: ReadonlySet<string>,
  names: ReadonlySet<string>,
  added: ReadonlyArray<string>,
): boolean {
  let size = names.size;
  for (let i = 0; i < added.length; i++) {
    const name = added[i] as string;
    if (!set.has(name)) return false;
    if (!names.has(name)) size++;
  }
  if (size !== set.size) return false;
  // Only a bucket that had columns before this commit (a new bucket's first commit has none) iterates.
  if (names.size > 0) for (const name of names) if (!set.has(name)) return false;
  return true;
}

/**
 * Remove every open bucket and archived record of `ns` from `stripe` (drop / clear).
 *
 * @param state - the catalog.
 * @param lock - the stripe, held.
 * @param coll - the collection.
 */
export function clearNamespace(state: CatalogState, lock: StripeLock, coll: CollectionState): void {
  for (const bucket of [...lock.stripe.openBucketsById.values()]) {
    if (bucket.id.ns !== coll.ns) continue;
    bucket.state = 'cleared';
    if (bucket.preparedBatch === undefined) failUnpreparedBatches(bucket);
    closeOpenBucket(state, lock, coll, bucket, 'forgotten');
  }
  for (const [signature, records] of [...lock.stripe.archivedBuckets]) {
    for (const [startMs, record] of [...records]) {
      if (record.ns !== coll.ns) continue;
      records.delete(startMs);
      state.memoryUsage -= record.memoryUsage;
      coll.stats.addActiveBuckets(-1);
    }
    if (records.size === 0) lock.stripe.archivedBuckets.delete(signature);
  }
}

/**
 * Fail every unprepared batch of the cleared `bucket` with `error`.
 *
 * @param bucket - the bucket.
 * @param error - the failure given to the batches' waiters; by default a {@link clearedError}, made only
 *   when a batch waits (an error records a stack trace: dropping a collection of 10 000 open buckets, none
 *   with a batch, took 96 ms instead of 59-68 making errors nobody saw).
 */
export function failUnpreparedBatches(bucket: Bucket, error?: TimeseriesError): void {
  const batches = bucket.openBatches;
  if (batches.length === 0) return;
  error ??= clearedError(bucket);
  for (const batch of batches) {
    batch.state = 'finished';
    batch.result.reject(error);
  }
  batches.length = 0;
}

/**
 * The error given to batches of a bucket cleared before they committed; writers retry them.
 *
 * @param bucket - the cleared bucket.
 * @returns a `TimeseriesBucketCleared` error.
 */
export function clearedError(bucket: Bucket): TimeseriesError {
  return new TimeseriesError(
    'TimeseriesBucketCleared',
    `Time-series bucket ${bucket.id.hex} for collection ${bucket.id.ns} was cleared`,
    { bucketId: bucket.id.hex },
  );
}
