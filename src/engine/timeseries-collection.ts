/**
 * A time-series collection (README, Use): inserts go through the bucket catalog into the buckets collection.
 *
 * @packageDocumentation
 */

import { Mutex } from 'async-mutex';

import { insertItem, kLongCall } from '../catalog/bucket-catalog.js';
import type { BucketCatalog } from '../catalog/bucket-catalog.js';
import type { BucketingOptions, InsertItem, ReopeningSource } from '../catalog/bucket-catalog.js';
import type { BucketMetadata, BucketMetadataCache } from '../catalog/bucket-metadata.js';
import type { ExecutionStatsSnapshot } from '../catalog/execution-stats.js';
import { PackedItem } from '../catalog/packed-item.js';
import { BulkWriteError, TimeseriesError } from '../errors.js';
import type { WriteError } from '../errors.js';
import { resolveCollMod } from '../options.js';
import type { CollModOptions, ResolvedCollectionOptions } from '../options.js';
import type { BucketFilter, Storage, StoredBucket } from '../storage/storage.js';
import { holdsNoBucketsOf, reopeningCandidatesReader } from '../storage/storage.js';
import { cloneBsonValue } from '../util/bson-value.js';
import { copyMeasurement, makeWalk, packOrCopy } from '../util/bson-validation.js';
import type { MeasurementLayout } from '../util/bson-validation.js';
import { PackedRows } from '../util/packed-rows.js';
import { checkNoScript, checkPipeline } from '../util/query-validation.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import {
  aggregate as readerAggregate,
  countDocuments as readerCount,
  find as readerFind,
} from '../reader/reader.js';
import type {
  FindOptions,
  MeasurementDocument,
  PipelineStage,
  ReaderContext,
  ReaderCursor,
} from '../reader/reader.js';
import type { QueryFilter } from '../util/bson-query.js';
import type { Clock } from '../util/clock.js';
import { Deferred } from '../util/deferred.js';
import {
  checkDocument,
  checkDocumentOrPipeline,
  checkFilterArgument,
  checkDeleteOptions,
  checkFindArguments,
  checkIndexKeyNames,
  checkInsertArguments,
  checkOptions,
  checkUpdateOptions,
} from './argument-checks.js';
import { CallGate } from './call-gate.js';
import { Cursor } from '../reader/cursor.js';
import type { BatchGuard } from '../reader/cursor.js';
import { metaGuard } from '../bucket-format/bucket-document.js';
import type { WriteContext } from './direct-write.js';
import { reopeningIndexStatus } from './index-translation.js';
import type { CreateIndexOptions, IndexKeySpec, TimeseriesIndexDescription } from './index-translation.js';
import { deleteMany, deleteOne } from './timeseries-delete.js';
import type { DeleteManyOptions, DeleteResult } from './timeseries-delete.js';
import { createIndex, dropIndex, listIndexes } from './timeseries-indexes.js';
import type { IndexContext } from './timeseries-indexes.js';
import { updateMany } from './timeseries-update.js';
import type { UpdateManyOptions, UpdateResult } from './timeseries-update.js';
import { commitMeasurements } from './write-commit.js';
import { isBsonValue } from '../util/bson-type.js';
import { affectedBucketsFilter } from '../rollups/affected-buckets.js';
import type { RollupExplain, RollupHandle } from '../rollups/handle.js';
import { RollupSet } from '../rollups/rollup-set.js';
import type { CreateRollupOptions, RollupDescription, RollupStats } from '../rollups/rollup-set.js';
import type { RollupSpec } from '../rollups/spec.js';

/**
 * The type of a measurement's `_id`: its declared type when `TSchema` has one, else `unknown`.
 *
 * @typeParam TSchema - the measurements' type.
 */
export type InferIdType<TSchema> = TSchema extends { readonly _id?: infer Id } ? Id : unknown;

/**
 * Result of `insertOne`, shaped like the driver's.
 *
 * tsbuckets never invents an `_id` (the server does not either; drivers add one on the client): a
 * measurement is stored as given, so `insertedId` is the measurement's own `_id`, or `undefined` when it
 * has none.
 *
 * @typeParam TSchema - the measurements' type.
 */
export interface InsertOneResult<TSchema = MeasurementDocument> {
  /** Always `true`: the write was acknowledged after storage accepted it. */
  readonly acknowledged: true;
  /** The measurement's `_id`, or `undefined` when it has none. */
  readonly insertedId: InferIdType<TSchema> | undefined;
  /** 1. */
  readonly insertedCount: 1;
}

/**
 * Result of `insertMany`, shaped like the driver's.
 *
 * @typeParam TSchema - the measurements' type.
 */
export interface InsertManyResult<TSchema = MeasurementDocument> {
  /** Always `true`. */
  readonly acknowledged: true;
  /** Number of measurements stored. */
  readonly insertedCount: number;
  /**
   * The `_id` of each stored measurement that has one, keyed by its index in the call's array.
   * Measurements without `_id` are stored without one and have no entry (tsbuckets does not invent ids,
   * as the server does not), so with no `_id`s this is `{}` and `insertedCount` is the number stored.
   */
  readonly insertedIds: Readonly<Record<number, InferIdType<TSchema>>>;
}

/** Options of `insertMany`. */
export interface InsertManyOptions {
  /**
   * `true`: stop at the first invalid measurement (those before it are inserted). `false`: insert every
   * valid measurement and report the others. Unordered inserts share batches with other writers.
   * @defaultValue true
   */
  readonly ordered?: boolean;
}

/** `coll.stats()` (collStats), with MongoDB's names. */
export interface CollectionStats {
  /** Namespace of the collection. */
  readonly ns: string;
  /** The time-series section. */
  readonly timeseries: Readonly<
    {
      bucketsNs: string;
      bucketCount: number;
      avgBucketSize?: number;
    } & ExecutionStatsSnapshot
  >;
  /** Counters of each rollup, by name (present when the collection has rollups). */
  readonly rollups?: Readonly<Record<string, RollupStats>>;
}

/** Raw access to the buckets collection. */
export interface BucketsView {
  /**
   * Find bucket documents.
   *
   * @param filter - a MongoDB filter over bucket fields.
   * @param options - projection.
   * @returns a cursor over the stored documents (do not mutate them).
   */
  find(
    filter?: BucketFilter,
    options?: { readonly projection?: Readonly<Record<string, 0 | 1 | boolean>> },
  ): Cursor<StoredBucket>;
  /**
   * Count bucket documents.
   *
   * @param filter - a MongoDB filter over bucket fields.
   * @returns the count.
   */
  countDocuments(filter?: BucketFilter): Promise<number>;
}

/** What a collection needs from its engine. */
export interface CollectionContext {
  readonly catalog: BucketCatalog;
  readonly storage: Storage;
  /** The engine's gate: its calls run through it, and `close()` closes it. */
  readonly gate: CallGate;
  /** Series identities of scalar metas seen by the engine's collections (normalised once, not per call). */
  readonly metadata: BucketMetadataCache;
  /** Finishes work an insert triggered (compressing the buckets it closed) before the insert returns. */
  readonly afterWrite: () => Promise<void>;
  /** The engine's clock (collMod's TTL bound). */
  readonly clock: Clock;
  /**
   * The collection is being dropped: the engine forgets it now, and a collection created with the same
   * name waits for `dropped` (the old one's buckets removed) before it starts.
   */
  readonly onDrop: (name: string, dropped: Promise<void>) => void;
  /**
   * Settled once `createCollection` has prepared the collection in storage (the engine lists it before):
   * a drop waits for it, so a creation that ends after the drop does not leave its namespace behind.
   */
  readonly created: Promise<void>;
}

/**
 * What each insert call's list of items (and of their positions) is copied from. Not a literal: V8 tracks
 * the arrays an array literal makes and, once a young collection finds nearly all of them alive (one that
 * falls inside a call does), allocates that literal's arrays in the old generation from then on
 * ("allocation-site pretenuring"). There they died after their call, and the measurement copies they
 * pointed to survived young collections until a full one: calls of 100 measurements (100 series) cost
 * 3.0 µs of CPU per measurement instead of 2.2. A copy of an array is not tracked.
 */
const kNoItems: ReadonlyArray<never> = [];

/**
 * The namespace of a collection's buckets, as the server names it.
 *
 * @param dbName - the database.
 * @param name - the time-series collection.
 * @returns `<db>.system.buckets.<name>`.
 */
export function bucketsNamespaceOf(dbName: string, name: string): string {
  return `${dbName}.system.buckets.${name}`;
}

/**
 * A time-series collection of a {@link BucketEngine}. Obtain one with `engine.createCollection()` or
 * `engine.collection()`.
 *
 * @typeParam TSchema - the measurements' type (as the driver's `Collection<TSchema>`): it types
 *   `insertOne`/`insertMany` and is the default document type of `find`. Not checked at run time.
 */
export class TimeseriesCollection<TSchema extends object = MeasurementDocument> {
  /** Collection name. */
  readonly name: string;
  /** Namespace (`<db>.<name>`). */
  readonly namespace: string;
  /** Namespace of the buckets collection (`<db>.system.buckets.<name>`). */
  readonly bucketsNamespace: string;
  readonly #ctx: CollectionContext;
  /** Calls on this handle; `drop()` closes it (see call-gate.ts). */
  readonly #gate = new CallGate();
  /**
   * Ordered calls commit one at a time. Each writes its measurements all or nothing, and one that cannot
   * prepare every batch withdraws them all, clearing their buckets and so every other call's batches
   * staged there: two ordered calls of one series at once cleared each other's on every retry, until
   * both failed with `TimeseriesBucketCleared`.
   */
  readonly #orderedCalls = new Mutex();
  /** Serialises `collMod`s (see {@link TimeseriesCollection.collMod}). */
  readonly #collMods = new Mutex();
  #dropped: Promise<void> | undefined;
  #options: ResolvedCollectionOptions;
  /**
   * Whether an index supports query-based reopening; the `{meta, time}` index is created with every
   * collection that has a metaField (MongoDB 6.3+), and index creation and drops recompute this.
   */
  #reopeningIndex: 'present' | 'absent';

  /**
   * @param ctx - catalog, storage and open check of the engine.
   * @param dbName - database name.
   * @param name - collection name.
   * @param options - resolved options.
   * @internal use `engine.createCollection()`.
   */
  constructor(ctx: CollectionContext, dbName: string, name: string, options: ResolvedCollectionOptions) {
    this.#ctx = ctx;
    this.name = name;
    this.namespace = `${dbName}.${name}`;
    this.bucketsNamespace = bucketsNamespaceOf(dbName, name);
    this.#options = options;
    this.#reopeningIndex = options.metaField === undefined ? 'absent' : 'present';
    // One read for a call's new series, on a storage that can answer their queries together (MongoStorage).
    const read = reopeningCandidatesReader(ctx.storage, this.bucketsNamespace);
    if (read !== undefined) this.#reopeningSource.reopeningCandidates = read;
    this.#rollups = new RollupSet({
      storage: ctx.storage,
      clock: ctx.clock,
      dbName,
      collectionName: name,
      bucketsNs: this.bucketsNamespace,
      timeField: options.timeField,
      metaField: options.metaField,
      raw: (filter) => this.find(filter),
    });
  }

  /** The collection's rollups (definitions loaded from storage on first use). */
  readonly #rollups: RollupSet;

  /**
   * Reads buckets from storage for the catalog's reopening. A document read while a direct write on it
   * was pending, started or finished is not handed to the catalog (docs/mongodb-behaviour.md §8 eras), and the
   * uncompressed rewrite is guarded on the meta it read.
   */
  readonly #reopeningSource: ReopeningSource = {
    fetchBucket: async (id) => {
      const era = this.#ctx.catalog.currentEra();
      for await (const doc of this.#ctx.storage.find(this.bucketsNamespace, { _id: id }, { limit: 1 }))
        return this.#ctx.catalog.isSafeToReopen(id, era) ? doc : undefined;
      return undefined;
    },
    queryBuckets: (filter) => this.#reopenableBuckets(filter),
    holdsNoBucketsOf: (hasMeta, meta) =>
      holdsNoBucketsOf(this.#ctx.storage, this.bucketsNamespace, hasMeta, meta),
    replaceBucket: async (filter, doc) =>
      (await this.#ctx.storage.replaceOne(this.bucketsNamespace, { ...filter, ...metaGuard(doc) }, doc))
        .kind === 'updated',
  };

  async *#reopenableBuckets(filter: BucketFilter): AsyncIterable<StoredBucket> {
    const era = this.#ctx.catalog.currentEra();
    for await (const doc of this.#ctx.storage.find(this.bucketsNamespace, filter)) {
      if (isBsonValue(doc._id, 'ObjectId') && this.#ctx.catalog.isSafeToReopen(doc._id, era)) yield doc;
    }
  }

  /** The collection's resolved options. */
  get options(): ResolvedCollectionOptions {
    return this.#options;
  }

  #bucketing(): BucketingOptions {
    const o = this.#options;
    return {
      timeField: o.timeField,
      metaField: o.metaField,
      bucketMaxSpanSeconds: o.bucketMaxSpanSeconds,
      bucketRoundingSeconds: o.bucketRoundingSeconds,
      reopeningIndex: this.#reopeningIndex,
    };
  }

  /**
   * Insert one measurement.
   *
   * @param doc - a measurement with a `Date` in the time field.
   * @returns `{ acknowledged: true, insertedId, insertedCount: 1 }` once stored; `insertedId` is the
   *   measurement's `_id`, or `undefined` when it has none (none is invented).
   * @throws {@link BulkWriteError} with the MongoDB error of the measurement.
   */
  async insertOne(doc: Readonly<TSchema>): Promise<InsertOneResult<TSchema>> {
    const { insertedIds } = await this.insertMany([doc], { ordered: true });
    return { acknowledged: true, insertedId: insertedIds[0], insertedCount: 1 };
  }

  /**
   * Insert measurements (MongoDB semantics). Each call's measurements are grouped by series and sorted by
   * time before staging; unordered calls share write batches with concurrent writers (group commit).
   *
   * @param docs - measurements, each with a `Date` in the time field.
   * @param options - `ordered` (default `true`).
   * @returns the number inserted, and the `_id`s of the inserted measurements that have one by index.
   * @throws {@link BulkWriteError} listing the failed measurements (`writeErrors`; an ordered call's first only) and `insertedCount`.
   * @example
   * ```ts
   * await coll.insertMany([{ ts: new Date(), sensor: 'a', temp: 21.5 }], { ordered: false });
   * ```
   */
  insertMany(
    docs: ReadonlyArray<Readonly<TSchema>>,
    options?: InsertManyOptions,
  ): Promise<InsertManyResult<TSchema>> {
    return this.#call(() => this.#insertMany(docs, options));
  }

  /**
   * The series of a validated meta value (`undefined`: none), found by `given`, the value as the caller gave
   * it, where that is an object the engine has seen.
   *
   * @throws {@link TimeseriesError} `BadValue` for a meta BSON cannot hold.
   */
  #seriesOf(meta: unknown, given: unknown): BucketMetadata {
    try {
      return this.#ctx.metadata.get(meta, given);
    } catch (cause) {
      if (TimeseriesError.isTimeseriesError(cause)) throw cause;
      const metaField = this.#options.metaField;
      throw new TimeseriesError('BadValue', `'${metaField ?? ''}' cannot be stored as BSON`, {
        ...(metaField === undefined ? {} : { field: metaField }),
        cause,
      });
    }
  }

  async #insertMany(
    docs: ReadonlyArray<Readonly<TSchema>>,
    options: InsertManyOptions = {},
  ): Promise<InsertManyResult<TSchema>> {
    const ordered = checkInsertArguments(docs, options).ordered !== false;
    const { timeField, metaField } = this.#options;
    const writeErrors: WriteError[] = [];
    const items: InsertItem[] = kNoItems.slice();
    const indexOf: number[] = kNoItems.slice();
    // One normalisation (a BSON serialisation) per distinct scalar meta value in the call; object metas
    // are looked up in the engine's cache, by the caller's object or its contents.
    const metaCache = new Map<unknown, BucketMetadata>();
    const walk = makeWalk();
    const longLived = docs.length >= kLongCall;
    // A meta object the engine has met before is neither copied nor normalised again: the walk stores
    // the series' normalised meta in its place (the series is then known without another lookup); any
    // other is copied, and its copy checked against what the cache finds by the caller's object.
    let knownMeta: BucketMetadata | undefined;
    if (metaField !== undefined) {
      walk.knownField = metaField;
      walk.knownValue = (value, w) => {
        knownMeta = this.#ctx.metadata.known(value);
        if (knownMeta === undefined) return undefined;
        // The key is the BSON of `{"": meta}`: more than the value's bytes.
        w.size += knownMeta.key.length;
        return knownMeta.normalizedMeta;
      };
      // A new series' meta object in a measurement held as a row: the series found from the validated
      // copy, so that the measurement stays a row (a failure refuses it as a copy's would).
      walk.newValue = (copy, given) => {
        knownMeta = this.#seriesOf(copy, given);
        return knownMeta.normalizedMeta;
      };
    }
    // A compressed bucket that defers its encoding packs a measurement of numbers and dates from a row of
    // numbers: the call then holds such measurements as rows, not copies (util/packed-rows.ts); rollups
    // fold them from their rows too.
    const state = this.#ctx.catalog.state;
    const rows =
      state.deferredColumns && state.parameters.timeseriesAlwaysUseCompressedBuckets === true
        ? new PackedRows(docs.length)
        : undefined;
    for (let i = 0; i < docs.length; i++) {
      const doc: unknown = docs[i];
      // Every measurement is validated (and copied, or packed) in one walk before anything is staged, in
      // both modes: what is stored is exactly what was validated, and a refused measurement stages nothing.
      // `undefined` when packed into `rows` (the walk then describes it).
      let measurement: Record<string, unknown> | undefined;
      knownMeta = undefined;
      try {
        measurement =
          rows === undefined ? copyMeasurement(doc, walk) : packOrCopy(doc, walk, rows, metaField, timeField);
      } catch (error) {
        writeErrors.push(toWriteError(i, error));
        if (ordered) break;
        continue;
      }
      const plan = measurement === undefined ? walk.layout?.rowPlan(metaField, timeField) : undefined;
      let timeMs: number;
      let hasMeta: boolean;
      let meta: unknown;
      if (plan !== undefined) {
        timeMs = walk.rowTimeMs;
        hasMeta = plan.metaAt >= 0;
        meta = hasMeta ? walk.rowMeta : undefined;
      } else {
        const copy = measurement as Record<string, unknown>;
        const timeValue = getOwnField(copy, timeField);
        if (!(timeValue instanceof Date)) {
          const message = `'${timeField}' must be present and contain a valid BSON UTC datetime value`;
          writeErrors.push(toWriteError(i, new TimeseriesError('BadValue', message, { field: timeField })));
          if (ordered) break;
          continue;
        }
        timeMs = timeValue.getTime();
        hasMeta = metaField !== undefined && hasOwnField(copy, metaField);
        meta = hasMeta ? copy[metaField as string] : undefined;
      }
      // -0 is a double and 0 an int32 (different series), but a Map sees them as one key.
      const cacheable = typeof meta !== 'object' && !Object.is(meta, -0);
      let metadata = cacheable ? metaCache.get(meta) : knownMeta;
      if (metadata === undefined) {
        try {
          // Found by the caller's object as the walk read it (not read again: a getter runs once).
          metadata = this.#seriesOf(meta, hasMeta ? walk.givenMeta : meta);
        } catch (error) {
          writeErrors.push(toWriteError(i, error));
          if (ordered) break;
          continue;
        }
        if (cacheable) metaCache.set(meta, metadata);
      }
      if (plan !== undefined) {
        items.push(
          new PackedItem(
            rows as PackedRows,
            walk.row,
            timeMs,
            metadata,
            walk.layout as MeasurementLayout,
            plan,
          ),
        );
      } else {
        const copy = measurement as Record<string, unknown>;
        // The staged measurement keeps the series' shared meta, not its own copy: the copy was needed only
        // to find the series, and each copy kept until the commit is garbage collection's work.
        if (hasMeta && typeof meta === 'object' && meta !== null && meta !== metadata.normalizedMeta) {
          defineField(copy, metaField as string, metadata.normalizedMeta);
        }
        items.push(insertItem(copy, timeMs, metadata, walk.layout, longLived));
      }
      indexOf.push(i);
    }
    await this.#rollups.ready();
    const commit = () =>
      commitMeasurements(
        {
          catalog: this.#ctx.catalog,
          storage: this.#ctx.storage,
          bucketsNs: this.bucketsNamespace,
          reopeningSource: this.#reopeningSource,
          rollups: this.#rollups,
        },
        this.namespace,
        this.#bucketing(),
        items,
        ordered ? 'disallow' : 'allow',
      );
    const outcomes = ordered ? await this.#orderedCalls.runExclusive(commit) : await commit();
    await this.#ctx.afterWrite();
    let insertedCount = 0;
    const insertedIds: Record<number, InferIdType<TSchema>> = {};
    outcomes.forEach((outcome, j) => {
      const index = indexOf[j] as number;
      if (outcome.kind === 'inserted') {
        insertedCount++;
        // The id as stored (the validated copy), not read again from the caller's document; a packed
        // measurement has none (its layout's row plan excludes one).
        const item = items[j] as InsertItem;
        const id = item instanceof PackedItem ? undefined : getOwnField(item.measurement, '_id');
        if (id !== undefined) insertedIds[index] = id as InferIdType<TSchema>;
      } else writeErrors.push(toWriteError(index, outcome.error));
    });
    if (writeErrors.length > 0) {
      writeErrors.sort((a, b) => a.index - b.index);
      // An ordered call stops at its first failure: a measurement refused by validation after it (found
      // before anything was committed) was never reached.
      if (ordered) writeErrors.length = 1;
      throw new BulkWriteError(writeErrors, insertedCount);
    }
    return { acknowledged: true, insertedCount, insertedIds };
  }

  /**
   * Run a call through the engine's gate and this collection's: refused once either is closed, and
   * counted in flight so that `close()` and `drop()` wait for it.
   */
  #call<T>(call: () => Promise<T>): Promise<T> {
    return this.#ctx.gate.run(() => this.#gate.run(call));
  }

  /** The check of a call that returns a cursor (its reads happen later, as it is iterated). */
  #assertUsable(): void {
    this.#ctx.gate.assertOpen();
    this.#gate.assertOpen();
  }

  /**
   * Runs each batch pulled by this collection's cursors as a call, so `drop()` and `close()` wait for a
   * batch being read and no cursor reads storage after they resolve. Once the collection is dropped its
   * cursors are killed: the next batch rejects with `QueryPlanKilled` "collection dropped", MongoDB's
   * answer to a `getMore` on a cursor of a dropped collection; once the engine is closed, with the
   * engine's `Interrupted`. One gate check per batch, never per document.
   */
  readonly #cursorGuard: BatchGuard = (pull) =>
    this.#gate.state === 'open'
      ? this.#call(pull)
      : Promise.reject(new TimeseriesError('QueryPlanKilled', `collection dropped: ${this.namespace}`));

  #reader(): ReaderContext {
    this.#assertUsable();
    return {
      storage: this.#ctx.storage,
      bucketsNs: this.bucketsNamespace,
      options: this.#options,
      guard: this.#cursorGuard,
    };
  }

  /**
   * Find measurements (docs/architecture.md, read path): the filter is translated to a bucket filter (see `explain()`), only
   * matching buckets are unpacked, then each measurement is filtered exactly. Measurements come back with
   * the time field first, then the metaField, then the other fields, with their BSON types.
   *
   * @typeParam T - the type of the returned documents (unchecked, as the driver's `find<T>()`); give one
   *   when a projection changes their shape.
   * @param filter - a MongoDB query over measurements.
   * @param options - `projection`, `sort`, `limit`, `skip`.
   * @returns a streaming cursor with `explain()`.
   * @example
   * ```ts
   * const latest = await coll.find({ sensor: 'a' }, { sort: { ts: -1 }, limit: 1 }).toArray();
   * ```
   */
  find<T extends object = TSchema>(filter: QueryFilter = {}, options: FindOptions = {}): ReaderCursor<T> {
    checkFindArguments(filter, options);
    return readerFind(this.#reader(), filter, options) as ReaderCursor<T>;
  }

  /**
   * Aggregate over measurements: a leading `$match` is pushed down to buckets, the rest of the pipeline
   * runs on the unpacked stream (mingo).
   *
   * @typeParam T - the type of the pipeline's output documents (unchecked, as the driver's
   *   `aggregate<T>()`).
   * @param pipeline - aggregation stages.
   * @returns a streaming cursor.
   */
  aggregate<T extends object = MeasurementDocument>(pipeline: ReadonlyArray<PipelineStage>): ReaderCursor<T> {
    checkPipeline(pipeline);
    return readerAggregate(this.#reader(), pipeline) as ReaderCursor<T>;
  }

  /**
   * Count measurements matching a filter.
   *
   * @param filter - a MongoDB query over measurements.
   * @returns the count.
   */
  countDocuments(filter: QueryFilter = {}): Promise<number> {
    return this.#call(() => {
      checkFilterArgument(filter, 'count.query');
      return readerCount(this.#reader(), filter);
    });
  }

  /**
   * Drop the collection: later calls on this object are refused (`NamespaceNotFound`), the calls in
   * flight are waited for, then its open buckets are forgotten by the catalog and its buckets collection
   * and indexes removed from storage. The engine stops listing it at once; a collection created again
   * with the same name starts once the drop is done, empty.
   *
   * @returns `true` (also for a second drop of the same object).
   */
  async drop(): Promise<boolean> {
    await this.#ctx.gate.run(() => (this.#dropped ??= this.#dropAfterCalls()));
    return true;
  }

  async #dropAfterCalls(): Promise<void> {
    const done = new Deferred<void>();
    this.#ctx.onDrop(this.name, done.promise);
    try {
      await this.#gate.close(
        () => new TimeseriesError('NamespaceNotFound', `Collection ${this.namespace} was dropped`),
      );
      // Its creation failed or not, what it wrote to storage is there before the drop removes it.
      await this.#ctx.created.catch(() => undefined);
      await this.#rollups.dropAll();
      await this.#ctx.catalog.drop(this.namespace);
      await this.#ctx.storage.dropNamespace(this.bucketsNamespace);
    } finally {
      done.resolve();
    }
  }

  /** Raw access to the buckets collection. */
  get buckets(): BucketsView {
    const storage = this.#ctx.storage;
    const ns = this.bucketsNamespace;
    return {
      find: (filter = {}, options = {}) => {
        this.#assertUsable();
        checkFilterArgument(filter, 'find.filter');
        checkOptions(options, 'find');
        checkOptions(options.projection, 'find.projection');
        checkNoScript(options.projection);
        return new Cursor(
          () =>
            copiesOf(
              storage.find(
                ns,
                filter,
                options.projection === undefined ? {} : { projection: options.projection },
              ),
            ),
          'documents',
          this.#cursorGuard,
        );
      },
      countDocuments: (filter = {}) =>
        this.#call(() => {
          checkFilterArgument(filter, 'count.query');
          return storage.countDocuments(ns, filter);
        }),
    };
  }

  /**
   * collStats: bucket count, average bucket size and the catalog's execution statistics.
   *
   * @returns the statistics, with MongoDB's names.
   */
  stats(): Promise<CollectionStats> {
    return this.#call(() => this.#stats());
  }

  async #stats(): Promise<CollectionStats> {
    const storage = this.#ctx.storage;
    const bucketCount = await storage.countDocuments(this.bucketsNamespace);
    const exec = this.#ctx.catalog.executionStats(this.namespace) ?? this.#ctx.catalog.emptyExecutionStats();
    const timeseries: Record<string, unknown> = { bucketsNs: this.bucketsNamespace, bucketCount };
    if (bucketCount > 0) {
      timeseries.avgBucketSize = Math.floor((await storage.totalSize(this.bucketsNamespace)) / bucketCount);
    }
    const rollups = this.#rollups.stats();
    return {
      ns: this.namespace,
      timeseries: Object.freeze({ ...timeseries, ...exec }) as CollectionStats['timeseries'],
      ...(Object.keys(rollups).length === 0 ? {} : { rollups }),
    };
  }

  #writeContext(): WriteContext {
    this.#assertUsable();
    const o = this.#options;
    return {
      catalog: this.#ctx.catalog,
      storage: this.#ctx.storage,
      ns: this.namespace,
      bucketsNs: this.bucketsNamespace,
      timeField: o.timeField,
      metaField: o.metaField,
      bucketMaxSpanSeconds: o.bucketMaxSpanSeconds,
    };
  }

  /**
   * Update the metaField of whole buckets (docs/mongodb-behaviour.md §12, docs/mongodb-behaviour.md §12.2): the query and every updated path
   * must be on the metaField; only update operators are accepted (no replacement, no pipeline, no
   * upsert). The new meta is normalised (object fields sorted), as a series is its normalised meta.
   *
   * @param filter - a query on the metaField only (`$expr` and `$where` are refused).
   * @param update - update operators on the metaField only.
   * @param options - `upsert` must not be `true`; `arrayFilters` for `$[<identifier>]` paths (a positional
   *   `$` path resolves against the query); a `collation` is refused.
   * @returns measurement counts, as MongoDB reports them: `matchedCount` measurements are in the buckets
   *   that matched, `modifiedCount` in those whose meta changed.
   * @throws {@link TimeseriesError} `InvalidOptions` (or `FailedToParse` for a malformed operator) with
   *   MongoDB's message for each refusal.
   * @example
   * ```ts
   * await coll.updateMany({ 'sensor.site': 'north' }, { $set: { 'sensor.site': 'N' } });
   * ```
   */
  async updateMany(
    filter: QueryFilter,
    update: Readonly<Record<string, unknown>>,
    options: UpdateManyOptions = {},
  ): Promise<UpdateResult> {
    return await this.#call(() => {
      checkFilterArgument(filter, 'update.q', 'write');
      checkDocumentOrPipeline(update, 'update.u');
      const checked = checkUpdateOptions(options);
      const ctx = this.#writeContext();
      return this.#rollups.directWrite(affectedBucketsFilter(filter, this.#options), () =>
        updateMany(ctx, filter, update, checked),
      );
    });
  }

  /**
   * Delete measurements (docs/mongodb-behaviour.md §12, docs/mongodb-behaviour.md §12.1, MongoDB 7.0+): a metaField-only filter deletes whole
   * buckets; any other filter unpacks the candidate buckets, removes the matching measurements and
   * rewrites each bucket under the same `_id` (or deletes it when empty).
   *
   * @param filter - a MongoDB query over measurements (`{}` deletes everything).
   * @param options - none is applied; a `collation` is refused with `InvalidOptions`.
   * @returns the number of measurements deleted.
   * @example
   * ```ts
   * await coll.deleteMany({ sensor: 'a', ts: { $lt: new Date('2024-01-01') } });
   * ```
   */
  async deleteMany(filter: QueryFilter, options: DeleteManyOptions = {}): Promise<DeleteResult> {
    return await this.#call(() => {
      checkFilterArgument(filter, 'delete.q', 'write');
      checkDeleteOptions(options);
      const ctx = this.#writeContext();
      return this.#rollups.directWrite(affectedBucketsFilter(filter, this.#options), () =>
        deleteMany(ctx, filter),
      );
    });
  }

  /**
   * Delete one measurement matching the filter (MongoDB 7.0+ on time-series collections): the first one
   * found; its bucket is rewritten under the same `_id` without it, or deleted when it held only that one.
   *
   * @param filter - a MongoDB query over measurements.
   * @param options - none is applied; a `collation` is refused with `InvalidOptions`.
   * @returns `deletedCount` 1, or 0 when nothing matched.
   * @example
   * ```ts
   * await coll.deleteOne({ sensor: 'a', ts: new Date('2024-01-01T00:00:00Z') });
   * ```
   */
  async deleteOne(filter: QueryFilter, options: DeleteManyOptions = {}): Promise<DeleteResult> {
    return await this.#call(() => {
      checkFilterArgument(filter, 'delete.q', 'write');
      checkDeleteOptions(options);
      const ctx = this.#writeContext();
      return this.#rollups.directWrite(affectedBucketsFilter(filter, this.#options), () =>
        deleteOne(ctx, filter),
      );
    });
  }

  #indexContext(): IndexContext {
    this.#assertUsable();
    return { storage: this.#ctx.storage, bucketsNs: this.bucketsNamespace, options: this.#options };
  }

  async #refreshReopeningIndex(): Promise<void> {
    const indexes = await this.#ctx.storage.listIndexes(this.bucketsNamespace);
    this.#reopeningIndex = reopeningIndexStatus(this.#options, indexes);
  }

  /**
   * Create an index over measurement fields, translated to bucket fields (docs/mongodb-behaviour.md §12.3). An index
   * starting with the metaField then the time field re-enables query-based reopening.
   *
   * @param key - the key pattern (`{ sensor: 1, ts: -1 }`, `{ 'sensor.loc': '2dsphere' }`...).
   * @param options - index options (`name`, `sparse`, metaField-only `partialFilterExpression`...).
   * @returns the index name.
   * @throws {@link TimeseriesError} with MongoDB's code and message for a refused spec or a conflict.
   * @example
   * ```ts
   * await coll.createIndex({ temp: -1 }); // { 'control.max.temp': -1, 'control.min.temp': -1 } on buckets
   * ```
   */
  async createIndex(key: IndexKeySpec, options: CreateIndexOptions = {}): Promise<string> {
    return await this.#call(async () => {
      checkIndexKeyNames(key);
      const name = await createIndex(
        this.#indexContext(),
        key,
        checkOptions(options, 'createIndexes.indexes'),
      );
      await this.#refreshReopeningIndex();
      return name;
    });
  }

  /**
   * The collection's indexes as created (their `originalSpec`), including the default `{meta, time}`
   * index of a collection with a metaField.
   *
   * @returns `{ v: 2, key, name, ...options }` per index.
   */
  async listIndexes(): Promise<TimeseriesIndexDescription[]> {
    return await this.#call(() => listIndexes(this.#indexContext()));
  }

  /**
   * Drop an index by name or key pattern. Dropping the last index that supports query-based reopening
   * (the default `{meta, time}` index) switches that reopening off, as in MongoDB.
   *
   * @param nameOrKey - the index name, `'*'` for every index, or its key pattern over measurement fields.
   * @throws {@link TimeseriesError} `IndexNotFound`.
   */
  async dropIndex(nameOrKey: string | IndexKeySpec): Promise<void> {
    await this.#call(async () => {
      await dropIndex(this.#indexContext(), nameOrKey);
      await this.#refreshReopeningIndex();
    });
  }

  /**
   * collMod (docs/mongodb-behaviour.md §2.6): raise the granularity or the custom bucketing seconds, or set, change or
   * remove (`'off'`) `expireAfterSeconds`. Open buckets keep their start and take the new span (the
   * rollover check reads the current options, as MongoDB's does); buckets opened later use the new
   * rounding.
   *
   * @param mod - the changes.
   * @throws {@link TimeseriesError} with MongoDB's code and message for an invalid transition.
   * @example
   * ```ts
   * await coll.collMod({ granularity: 'minutes', expireAfterSeconds: 86400 });
   * ```
   */
  collMod(mod: CollModOptions): Promise<void> {
    // One at a time, as the server's collection lock has them: each resolves from the options the one
    // before it left, and the storage keeps the same options the collection then has.
    return this.#call(() => this.#collMods.runExclusive(() => this.#collMod(mod)));
  }

  async #collMod(mod: CollModOptions): Promise<void> {
    checkDocument(mod, 'collMod');
    const next = resolveCollMod(this.#options, mod, this.#ctx.clock);
    if (next === this.#options) return;
    // The storage first: if it refuses, the collection keeps its options.
    const stored = next.storedOptions;
    await this.#ctx.storage.setNamespaceOptions(this.bucketsNamespace, {
      timeseries: stored.timeseries as unknown as Record<string, unknown>,
      ...(stored.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: stored.expireAfterSeconds }),
      ...(next.bucketingParametersHaveChanged && { bucketingParametersHaveChanged: true }),
    });
    this.#options = next;
  }

  /**
   * Create a rollup (docs/rollups.md): a pre-aggregation maintained in the same commit as the
   * measurements. `layout: 'slots'` keeps one document per group and slot, `'calendar'` one document per
   * group and period with pre-allocated nested slots, `'rolling'` a `totals[]` window on entity documents
   * of another collection. Existing measurements are backfilled first (commits wait meanwhile).
   *
   * @param name - the rollup name (letters, digits, `_`, `-`).
   * @param spec - the rollup spec.
   * @param options - `onProgress` for the backfill.
   * @throws {@link TimeseriesError} `InvalidOptions` for a bad spec, `NamespaceExists` for a taken name.
   * @example
   * ```ts
   * await coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor', fields: { temp: ['avg', 'max'] } });
   * ```
   */
  async createRollup(name: string, spec: RollupSpec, options: CreateRollupOptions = {}): Promise<void> {
    await this.#call(() => this.#rollups.create(name, spec, options));
  }

  /**
   * The collection's rollups, by name.
   *
   * @returns name, spec and namespace of each.
   */
  async listRollups(): Promise<RollupDescription[]> {
    return await this.#call(() => this.#rollups.list());
  }

  /**
   * Drop a rollup and its documents (a rolling rollup's `totals` are removed from the entities).
   *
   * @param name - the rollup name.
   * @returns whether it existed.
   */
  async dropRollup(name: string): Promise<boolean> {
    return await this.#call(() => this.#rollups.drop(name));
  }

  /**
   * The read handle of a rollup. Its calls reject with `NamespaceNotFound` when there is no such rollup.
   *
   * @param name - the rollup name.
   * @returns the handle.
   * @example
   * ```ts
   * const day = await coll.rollup('hourly').find({ group: 'a' }, { sort: { start: 1 } });
   * ```
   */
  rollup(name: string): RollupHandle {
    const handle = (): Promise<RollupHandle> => this.#call(() => this.#rollups.handle(name));
    const rollupHandle: RollupHandle = {
      name,
      find: async (filter, options) => (await handle()).find(filter, options),
      aggregate: async (pipeline) => (await handle()).aggregate(pipeline),
      explain: async (filter): Promise<RollupExplain> => (await handle()).explain(filter),
    };
    return Object.freeze(rollupHandle);
  }

  /**
   * Run a direct write on this collection's buckets (the TTL monitor's deletions) so that its rollups are
   * recomputed over the buckets it may change.
   *
   * @param bucketFilter - a filter matching every bucket the write may change.
   * @param write - the write.
   * @returns what `write` returns.
   * @internal
   */
  async withRollupsRecomputed<T>(bucketFilter: BucketFilter, write: () => Promise<T>): Promise<T> {
    return await this.#rollups.directWrite(bucketFilter, write);
  }
}

function toWriteError(index: number, error: unknown): WriteError {
  if (TimeseriesError.isTimeseriesError(error)) {
    return { index, code: error.code, codeName: error.codeName, errmsg: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { index, code: 1, codeName: 'InternalError', errmsg: message };
}

/** Copies of stored buckets: the embedded storage hands out the documents it holds. */
async function* copiesOf(source: AsyncIterable<StoredBucket>): AsyncIterable<StoredBucket> {
  for await (const doc of source) yield cloneBsonValue(doc) as StoredBucket;
}
