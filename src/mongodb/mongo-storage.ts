/**
 * `MongoStorage`: bucket documents in a real MongoDB through the official driver (docs/mongodb.md).
 *
 * @packageDocumentation
 */
import type {
  CollectionInfo,
  CreateCollectionOptions,
  Document,
  Filter,
  FindOptions,
  IndexSpecification,
  TimeSeriesCollectionOptions,
  UpdateFilter,
} from 'mongodb';
import { calculateObjectSize, deserialize, serialize } from 'bson';
import type { ObjectId } from 'bson';

import {
  bucketStateGuard,
  bucketUpdateDocument,
  commitGuardFilter,
} from '../bucket-format/bucket-document.js';
import { compressBucket } from '../bucket-format/bucket-compression.js';
import type { CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import { TimeseriesError, TsBucketsError } from '../errors.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  ClosedBucketOutcome,
  ClosedBucketsOptions,
  NamespaceOptions,
  ReopeningQuery,
  Storage,
  StorageFindOptions,
  StorageCommit,
  StorageIndex,
  StorageUpdateResult,
  StoredBucket,
} from '../storage/storage.js';
import { kCompressClosedBuckets, kReopeningCandidates } from '../storage/storage.js';
import { bulkCommitWrites } from './bulk-commit.js';
import { CompressedColumnCache, spliceOntoStored } from './compressed-columns.js';
import {
  compressedPlanApplied,
  planCompressedCommit,
  recordCompressedOutcome,
  UncompressedOpenBuckets,
} from './open-bucket-form.js';
import type { OpenBucketState } from './open-bucket-form.js';
import { canonicalizeDocument, kReadBsonOptions, sameBsonDocument } from './bson-values.js';
import type { MongoCollectionLike, MongoDbLike } from './driver-shape.js';
import { isDuplicateKeyError, MongoStorageError } from './mongo-storage-error.js';
import type { MongoStorageOperation } from './mongo-storage-error.js';
import { resolveMongoStorageOptions } from './mongo-storage-options.js';
import type {
  MongoStorageMode,
  MongoStorageOptions,
  ResolvedMongoStorageConfig,
} from './mongo-storage-options.js';
import { plainNamespaceFor, serverNamespaceFor } from './namespaces.js';
import type { ServerNamespace } from './namespaces.js';
import { runWithRetries } from './retry.js';
import { equalityIndexKey, metaIndexKeys } from '../storage/meta-equality.js';
import { BsonQuery } from '../util/bson-query.js';
import { documentAlreadyWritten, insertAlreadyWritten, updateAlreadyApplied } from './write-verification.js';

/**
 * Most filter bytes in one `find` of `#reopeningCandidates`: its command stays far below the 16 MiB a
 * command may be.
 */
const kReadAheadBytes = 4 * 1024 * 1024;

/** Server error codes handled as expected outcomes. */
const kNamespaceNotFound = 26;
const kIndexNotFound = 27;
const kNamespaceExists = 48;
const kIndexOptionsConflict = 85;
const kIndexKeySpecsConflict = 86;
/** An engine buckets namespace (`<db>.system.buckets.<name>`); any other is a plain collection. */
const kBucketsNamespace = /^[^.]*\.system\.buckets\./su;

/** A buckets namespace resolved to its driver collection (cached per namespace). */
interface Target extends ServerNamespace {
  readonly buckets: MongoCollectionLike;
  /**
   * `'plain'` for the collections of rollups (counters): their updates are not idempotent (`$inc`), so
   * they are sent once and never retried; a failure makes the engine recompute instead.
   */
  readonly kind: 'buckets' | 'plain';
}

/**
 * A {@link Storage} keeping bucket documents in MongoDB through the official `mongodb` driver.
 *
 * - Mode `'timeseries'` (default): `createNamespace` creates a native time-series collection with the
 *   same options and bucket documents are written to its `system.buckets.<name>`, so the server's own
 *   view (`db.<name>.find()`) returns what tsbuckets wrote. Needs the privilege to write
 *   `system.buckets` collections, and a server that still has them (see `docs/mongodb.md`).
 * - Mode `'buckets'`: a plain collection `<name>.buckets` with the
 *   `{meta: 1, 'control.min.<time>': 1, 'control.max.<time>': 1}` index when there is a metaField.
 *
 * Several processes may write to the same collections: a commit's update is one guarded single-document
 * update (`notMatched` when another writer changed the bucket), and a duplicate `_id` on insert is a
 * `TimeseriesError` `DuplicateKey` (the catalog retries with a new id). Transient errors are retried with
 * bounded exponential backoff and jitter; a write whose reply was lost is checked against the stored
 * bucket before it is reported as not applied, so a commit is never applied twice nor reported lost while
 * stored. Other failures reject with a {@link MongoStorageError} whose `cause` is the driver's error.
 *
 * Values read back keep their BSON types (see `bson-values.ts`: int32 → `number`, double → `number` or,
 * when integral, `Double`, int64 → `Long`).
 *
 * The database is the `Db` given here, whatever the engine's `dbName`. `close()` does not close the
 * `MongoClient`: the application owns it.
 *
 * @example
 * ```ts
 * import { MongoClient } from 'mongodb';
 * import { BucketEngine } from 'tsbuckets';
 * import { MongoStorage } from 'tsbuckets/mongodb';
 *
 * const client = await MongoClient.connect(process.env.MONGODB_URI!);
 * const db = client.db('metrics');
 * const engine = new BucketEngine({ storage: new MongoStorage(db, { mode: 'timeseries' }), dbName: db.databaseName });
 * const weather = await engine.createCollection('weather', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
 * await weather.insertMany([{ ts: new Date(), sensor: 'a', temp: 21.5 }]);
 * await engine.close();
 * await client.close();
 * ```
 */
export class MongoStorage implements Storage {
  /** The resolved, frozen options. */
  readonly config: ResolvedMongoStorageConfig;
  readonly #db: MongoDbLike;
  readonly #targets = new Map<string, Target>();
  /** Column bytes of the compressed buckets being appended to (commits are sent as whole columns). */
  readonly #columns = new CompressedColumnCache();
  /** The open buckets held as version 1 on the server (`openBucketForm`). */
  readonly #uncompressed = new UncompressedOpenBuckets();
  readonly #openBuckets: OpenBucketState = { columns: this.#columns, uncompressed: this.#uncompressed };

  /**
   * @param db - a driver `Db` (or an object of the same shape, see {@link MongoDbLike}).
   * @param options - mode and retry policy.
   * @throws {@link TimeseriesError} `BadValue` naming the option for invalid options.
   */
  constructor(db: MongoDbLike, options: MongoStorageOptions = {}) {
    // A MongoClient (or anything without `collection()`) would fail at the first call, far from here.
    if (typeof (db as { collection?: unknown } | null)?.collection !== 'function') {
      throw new TimeseriesError(
        'BadValue',
        'MongoStorage needs a driver Db (client.db(name)), with collection()',
        {
          field: 'db',
        },
      );
    }
    this.#db = db;
    this.config = resolveMongoStorageOptions(options);
  }

  /**
   * {@inheritDoc Storage.atomicOrderedCommits} False: an ordered `bulkWrite` keeps the writes before its
   * first failed operation, so the engine writes an ordered call whose series interleave in rounds.
   */
  readonly atomicOrderedCommits = false;

  /** {@inheritDoc Storage.writeConcurrency} */
  get writeConcurrency(): number {
    return this.config.writeConcurrency;
  }

  /** The storage mode. */
  get mode(): MongoStorageMode {
    return this.config.mode;
  }

  /**
   * The server collection holding the buckets of an engine namespace.
   *
   * @param ns - `<db>.system.buckets.<name>`.
   * @returns `system.buckets.<name>` (mode `'timeseries'`) or `<name>.buckets` (mode `'buckets'`).
   * @throws {@link TimeseriesError} `BadValue` for a namespace that is not a buckets namespace.
   */
  bucketsCollectionName(ns: string): string {
    return serverNamespaceFor(this.config.mode, ns).bucketsCollectionName;
  }

  /**
   * {@inheritDoc Storage.createNamespace}
   *
   * Mode `'timeseries'` creates the time-series collection (`create` with `timeseries` and
   * `expireAfterSeconds`); mode `'buckets'` creates `<name>.buckets` and, with a metaField, its
   * `{meta, control.min.<time>, control.max.<time>}` index. An existing collection with the same options
   * is accepted.
   *
   * @throws {@link TimeseriesError} `NamespaceExists` if the collection exists with other options or of
   *   another type; {@link MongoStorageError} for driver errors.
   */
  async createNamespace(ns: string, options: NamespaceOptions): Promise<void> {
    const target = this.#target(ns);
    const mode = this.config.mode;
    switch (mode) {
      case 'timeseries': {
        const create: CreateCollectionOptions = {
          timeseries: serverTimeseriesOptions(options.timeseries),
          ...(options.expireAfterSeconds === undefined
            ? {}
            : { expireAfterSeconds: options.expireAfterSeconds }),
        };
        await this.#run('createNamespace', target.collectionName, () =>
          this.#createCollection(target.collectionName, create, (info) =>
            sameTimeseriesCollection(info, create),
          ),
        );
        return;
      }
      case 'buckets': {
        await this.#run('createNamespace', target.bucketsCollectionName, () =>
          this.#createCollection(
            target.bucketsCollectionName,
            {},
            (info) => (info.type ?? 'collection') === 'collection',
          ),
        );
        const timeField = options.timeseries.timeField;
        const metaField = options.timeseries.metaField;
        if (typeof timeField === 'string' && typeof metaField === 'string') {
          // The index MongoDB 6.3+ creates for a time-series collection with a metaField (query-based
          // reopening and series/time lookups use it), with the same spec as the engine's.
          await this.createIndex(ns, {
            name: `${metaField}_1_${timeField}_1`,
            key: { meta: 1, [`control.min.${timeField}`]: 1, [`control.max.${timeField}`]: 1 },
            options: { originalSpec: { key: { [metaField]: 1, [timeField]: 1 } } },
          });
        }
        return;
      }
      default: {
        const never: never = mode;
        throw new TypeError(`unknown MongoStorage mode ${String(never)}`);
      }
    }
  }

  /**
   * {@inheritDoc Storage.setNamespaceOptions}
   *
   * Mode `'timeseries'` sends `collMod` so that the server's view unpacks with the new span and its TTL
   * follows; mode `'buckets'` keeps no options on the server.
   */
  async setNamespaceOptions(ns: string, options: NamespaceOptions): Promise<void> {
    if (this.config.mode !== 'timeseries') return;
    const target = this.#target(ns);
    const { timeField: _time, metaField: _meta, ...bucketing } = serverTimeseriesOptions(options.timeseries);
    await this.#run('setNamespaceOptions', target.collectionName, () =>
      this.#db.command({
        collMod: target.collectionName,
        timeseries: bucketing,
        expireAfterSeconds: options.expireAfterSeconds ?? 'off',
      }),
    );
  }

  /** {@inheritDoc Storage.dropNamespace} */
  async dropNamespace(ns: string): Promise<void> {
    const target = this.#target(ns);
    // Mode 'timeseries' drops the time-series collection (view and buckets together).
    const name = this.config.mode === 'timeseries' ? target.collectionName : target.bucketsCollectionName;
    await this.#run('dropNamespace', name, async () => {
      try {
        await this.#db.dropCollection(name);
      } catch (error) {
        if (codeOf(error) !== kNamespaceNotFound) throw error;
      }
    });
    this.#targets.delete(ns);
    this.#forget(ns);
  }

  /**
   * {@inheritDoc Storage.insertOne}
   *
   * @throws {@link TimeseriesError} `DuplicateKey` (the driver's error as `cause`) if the `_id` exists;
   *   {@link MongoStorageError} for other driver errors.
   */
  async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    await this.#run('insertOne', bucketsCollectionName, async (attempt) => {
      try {
        await buckets.insertOne(doc);
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
        // After a lost reply, the duplicate may be this writer's own earlier attempt.
        if (attempt > 0) {
          const stored = await readById(buckets, doc._id);
          if (stored !== undefined && insertAlreadyWritten(stored, doc)) return;
        }
        const message = error instanceof Error ? error.message : String(error);
        throw new TimeseriesError('DuplicateKey', message, { cause: error, ...bucketIdDetail(doc._id) });
      }
    });
    this.#columns.remember(ns, doc);
  }

  /**
   * {@inheritDoc Storage.commitWrites}
   *
   * One `bulkWrite` (ordered as the call), retried as single writes are, with each write's outcome read
   * from the result (src/mongodb/bulk-commit.ts). One bucket at a time instead when the driver's
   * collection has no `bulkWrite`, or for a rollup's collection.
   */
  async commitWrites(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]> {
    const { buckets, bucketsCollectionName, kind } = this.#target(ns);
    if (kind === 'buckets' && buckets.bulkWrite !== undefined) {
      return bulkCommitWrites(
        {
          ns,
          buckets: buckets as typeof buckets & Required<Pick<typeof buckets, 'bulkWrite'>>,
          collectionName: bucketsCollectionName,
          columns: this.#columns,
          openBucketForm: this.config.openBucketForm,
          uncompressed: this.#uncompressed,
          run: (attempt) => this.#run('bulkWrite', bucketsCollectionName, attempt),
        },
        writes,
        options.ordered,
      );
    }
    return this.#commitOneByOne(ns, writes, options.ordered);
  }

  /** The writes of {@link MongoStorage.commitWrites} one at a time, stopping at a failure when ordered. */
  async #commitOneByOne(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    ordered: boolean,
  ): Promise<BucketWriteOutcome[]> {
    const outcomes: BucketWriteOutcome[] = [];
    let stopped = false;
    for (const write of writes) {
      if (stopped) {
        outcomes.push({ kind: 'notApplied' });
        continue;
      }
      try {
        if (write.kind === 'insert') {
          await this.insertOne(ns, write.document);
          outcomes.push({ kind: 'applied' });
        } else {
          const result = await this.applyCommit(ns, write.commit);
          outcomes.push({ kind: result.kind === 'updated' ? 'applied' : 'notMatched' });
        }
      } catch (error) {
        outcomes.push({ kind: 'failed', error });
        stopped = ordered;
      }
    }
    return outcomes;
  }

  /**
   * {@inheritDoc Storage.applyCommit}
   *
   * Sent as one guarded `updateOne` (see {@link MongoStorage.updateOne} for retries and lost replies).
   */
  applyCommit(ns: string, commit: StorageCommit): Promise<StorageUpdateResult> {
    if (commit.format === 'compressed') return this.#applyCompressedCommit(ns, commit);
    return this.updateOne(ns, commitGuardFilter(commit), bucketUpdateDocument(commit.update));
  }

  /**
   * A compressed bucket's commit as one guarded `updateOne`, in the form `openBucketForm` chooses
   * (open-bucket-form.ts): every column it extends whole, guarded on `_id` and `control.count` (their
   * current bytes from the cache, or from one read of the bucket when it is not cached); the bucket
   * rewritten as version 1; or, for a bucket held as version 1, the commit's cells.
   */
  async #applyCompressedCommit(ns: string, commit: CompressedBucketCommit): Promise<StorageUpdateResult> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const held = this.#uncompressed.get(ns, commit.bucketId);
    let spliced = held === undefined ? this.#columns.splice(ns, commit) : undefined;
    if (held === undefined && spliced === undefined) {
      const stored = await this.#run('find', bucketsCollectionName, () => readById(buckets, commit.bucketId));
      spliced = stored === undefined ? undefined : spliceOntoStored(stored, commit);
    }
    const plan = planCompressedCommit(this.config.openBucketForm, held, commit, spliced);
    if (plan.kind === 'skipped') return kNotMatched;
    const result = await this.#run('updateOne', bucketsCollectionName, async (attempt) => {
      const written = await buckets.updateOne(plan.filter, driverUpdate(plan.update));
      if (written.matchedCount > 0) return kUpdated;
      if (attempt > 0) {
        // A lost reply: the update may be in.
        const stored = await readById(buckets, commit.bucketId);
        if (stored !== undefined && compressedPlanApplied(stored, plan)) return kUpdated;
      }
      return kNotMatched;
    });
    recordCompressedOutcome(this.#openBuckets, ns, plan, result.kind === 'updated');
    return result;
  }

  /** Forget what this storage knows of a bucket's stored form (a direct write), or of a namespace's. */
  #forget(ns: string, id?: unknown): void {
    this.#columns.forget(ns, id);
    this.#uncompressed.forget(ns, id);
  }

  /**
   * {@inheritDoc Storage.updateOne}
   *
   * `notMatched` when `matchedCount` is 0 (another writer changed or removed the bucket), unless an earlier
   * attempt of this call failed transiently and the stored bucket already holds this update.
   */
  async updateOne(
    ns: string,
    filter: BucketFilter,
    update: BucketUpdateDocument,
  ): Promise<StorageUpdateResult> {
    const { buckets, bucketsCollectionName, kind } = this.#target(ns);
    // A write from outside the catalog's commits: the cached columns may no longer be the stored ones.
    this.#forget(ns, filter._id);
    if (kind === 'plain') {
      return await this.#once('updateOne', bucketsCollectionName, async () =>
        (await buckets.updateOne(filter, driverUpdate(update))).matchedCount > 0 ? kUpdated : kNotMatched,
      );
    }
    return this.#run('updateOne', bucketsCollectionName, async (attempt): Promise<StorageUpdateResult> => {
      const result = await buckets.updateOne(filter, driverUpdate(update));
      if (result.matchedCount > 0) return kUpdated;
      if (attempt > 0 && filter._id !== undefined) {
        const stored = await readById(buckets, filter._id);
        if (stored !== undefined && updateAlreadyApplied(stored, update)) return kUpdated;
      }
      return kNotMatched;
    });
  }

  /**
   * {@inheritDoc Storage.upsertOne}
   *
   * One `updateOne` with `upsert: true`, sent once: after a transient error nobody knows whether an `$inc`
   * was applied, so the error is reported (as a {@link MongoStorageError}) and the engine recomputes.
   */
  async upsertOne(
    ns: string,
    filter: BucketFilter,
    update: BucketUpdateDocument,
  ): Promise<'updated' | 'inserted'> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    return await this.#once('upsertOne', bucketsCollectionName, async () => {
      const result = await buckets.updateOne(filter, driverUpdate(update), { upsert: true });
      return result.upsertedCount > 0 ? 'inserted' : 'updated';
    });
  }

  /** {@inheritDoc Storage.replaceOne} */
  async replaceOne(ns: string, filter: BucketFilter, doc: StoredBucket): Promise<StorageUpdateResult> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    this.#forget(ns, filter._id);
    return this.#run('replaceOne', bucketsCollectionName, async (attempt): Promise<StorageUpdateResult> => {
      const result = await buckets.replaceOne(filter, doc);
      if (typeof result.matchedCount === 'number' && result.matchedCount > 0) return kUpdated;
      if (attempt > 0 && filter._id !== undefined) {
        const stored = await readById(buckets, filter._id);
        if (stored !== undefined && documentAlreadyWritten(stored, doc)) return kUpdated;
      }
      return kNotMatched;
    });
  }

  /**
   * {@inheritDoc Storage.updateMany}
   *
   * Returns the server's `modifiedCount`. After a transient failure the update is sent again; updates are
   * idempotent (`$set`), but the count then covers only the last attempt.
   */
  async updateMany(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<number> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    this.#forget(ns);
    const result = await this.#run('updateMany', bucketsCollectionName, () =>
      buckets.updateMany(filter as Filter<Document>, driverUpdate(update)),
    );
    return result.modifiedCount;
  }

  /**
   * {@inheritDoc Storage.find}
   *
   * Opening the cursor (up to its first document) is retried on transient errors; an error while
   * streaming later documents rejects the iteration (restarting would repeat documents).
   */
  async *find(
    ns: string,
    filter: BucketFilter,
    options: StorageFindOptions = {},
  ): AsyncIterable<StoredBucket> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const findOptions: FindOptions = {
      ...kReadBsonOptions,
      ...(options.projection === undefined ? {} : { projection: options.projection }),
      ...(options.sort === undefined ? {} : { sort: options.sort }),
      ...(options.limit !== undefined && options.limit > 0 ? { limit: options.limit } : {}),
    };
    const opened = await this.#run('find', bucketsCollectionName, async () => {
      const cursor = buckets.find(filter, findOptions);
      const iterator = cursor[Symbol.asyncIterator]();
      try {
        return { cursor, iterator, first: await iterator.next() };
      } catch (error) {
        await cursor.close().catch(() => undefined);
        throw error;
      }
    });
    try {
      let step = opened.first;
      while (step.done !== true) {
        yield canonicalizeDocument(step.value);
        try {
          step = await opened.iterator.next();
        } catch (error) {
          throw new MongoStorageError({
            operation: 'find',
            collection: bucketsCollectionName,
            attempts: 1,
            cause: error,
          });
        }
      }
    } finally {
      await opened.cursor.close().catch(() => undefined);
    }
  }

  /** {@inheritDoc Storage.deleteMany} */
  async deleteMany(ns: string, filter: BucketFilter): Promise<number> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    this.#forget(ns);
    const result = await this.#run('deleteMany', bucketsCollectionName, () =>
      buckets.deleteMany(filter as Filter<Document>),
    );
    return result.deletedCount;
  }

  /** {@inheritDoc Storage.countDocuments} */
  async countDocuments(ns: string, filter: BucketFilter = {}): Promise<number> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    return this.#run('countDocuments', bucketsCollectionName, () =>
      buckets.countDocuments(filter as Filter<Document>),
    );
  }

  /** {@inheritDoc Storage.totalSize} Computed on the server with `$bsonSize` (MongoDB 4.4+). */
  async totalSize(ns: string): Promise<number> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const [row] = await this.#run('totalSize', bucketsCollectionName, () =>
      buckets.aggregate([{ $group: { _id: null, size: { $sum: { $bsonSize: '$$ROOT' } } } }]).toArray(),
    );
    const size: unknown = row?.size;
    return typeof size === 'number' ? size : Number(size ?? 0);
  }

  // Many reopening queries answered by one read (kReopeningCandidates): a call's new series cost one round
  // trip, not one each. (A static block: it reads the private target and retries, and is not part of the
  // class's declared shape.)
  static {
    Object.defineProperty(MongoStorage.prototype, kReopeningCandidates, {
      value(
        this: MongoStorage,
        ns: string,
        queries: ReadonlyArray<ReopeningQuery>,
      ): Promise<Array<StoredBucket[] | undefined>> {
        return this.#reopeningCandidates(ns, queries);
      },
    });
  }

  // Closed buckets compressed many at once (kCompressClosedBuckets): the ones this storage held as
  // version 1 while they were open (8.0 format, open-bucket-form.ts), or every one (5.x–7.x format).
  static {
    Object.defineProperty(MongoStorage.prototype, kCompressClosedBuckets, {
      value(
        this: MongoStorage,
        ns: string,
        ids: ReadonlyArray<ObjectId>,
        options: ClosedBucketsOptions,
      ): Promise<ClosedBucketOutcome[]> {
        return this.#compressClosed(ns, ids, options);
      },
    });
  }

  /**
   * Compress closed buckets (those `options.which` names): one read of all of them still version 1,
   * then one `bulkWrite` (or an `updateOne` each) setting each one's `control` and `data` compressed,
   * guarded on the document as read (a direct write in between wins). When fewer match than were sent,
   * the ones still version 1 are read to tell which were not compressed. Never rejects: a bucket left
   * as version 1 is `failed` when the storage failed, and stays readable as it is.
   */
  async #compressClosed(
    ns: string,
    ids: ReadonlyArray<ObjectId>,
    options: ClosedBucketsOptions,
  ): Promise<ClosedBucketOutcome[]> {
    const held = this.#uncompressed.take(ns, ids);
    const wanted = options.which === 'held' ? held : ids;
    if (wanted.length === 0) return [];
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const outcomes: ClosedBucketOutcome[] = [];
    const writes: Array<{
      id: ObjectId;
      filter: BucketFilter;
      update: Document;
      outcome: ClosedBucketOutcome;
    }> = [];
    // Until the read answers, every wanted bucket would be left as version 1 by a failure.
    let pending = wanted.length;
    try {
      const docs = await this.#run('find', bucketsCollectionName, () =>
        buckets.find({ _id: { $in: wanted }, 'control.version': 1 }, kReadBsonOptions).toArray(),
      );
      pending = 0;
      for (const raw of docs) {
        const doc = canonicalizeDocument(raw);
        // Held while open: what the catalog would have written had it stayed compressed (rows in the
        // order appended, whatever the size). Otherwise the server's compression on close.
        const result = compressBucket(
          doc,
          options.timeField,
          options.which === 'held'
            ? { validate: options.validate, whenNotSmaller: 'compress', order: 'stored' }
            : { validate: options.validate },
        );
        if (result.kind === 'failed') outcomes.push(kFailedCompression);
        else if (result.kind === 'notSmaller') outcomes.push(result);
        else {
          // `_id`, `control`, `meta`, `data`: only the two that change are set, in place.
          writes.push({
            id: doc._id as ObjectId,
            filter: bucketStateGuard(doc, options.timeField),
            update: { $set: { control: result.doc.control, data: result.doc.data } },
            outcome: { kind: 'compressed', bytesBefore: result.bytesBefore, bytesAfter: result.bytesAfter },
          });
        }
      }
      if (writes.length === 0) return outcomes;
      pending = writes.length;
      let matched = 0;
      if (buckets.bulkWrite !== undefined) {
        const bulkWrite = buckets.bulkWrite.bind(buckets);
        const result = await this.#run('bulkWrite', bucketsCollectionName, () =>
          bulkWrite(
            writes.map((w) => ({ updateOne: { filter: w.filter, update: w.update } })),
            { ordered: false },
          ),
        );
        matched = result.matchedCount;
      } else {
        for (const w of writes) {
          const result = await this.#run('updateOne', bucketsCollectionName, () =>
            buckets.updateOne(w.filter, w.update),
          );
          matched += result.matchedCount;
        }
      }
      if (matched === writes.length) return [...outcomes, ...writes.map((w) => w.outcome)];
      // A short count (a guard missed, or a retry found its own write done): the ones still version 1
      // were not compressed.
      const left = await this.#run('find', bucketsCollectionName, () =>
        buckets
          .find({ _id: { $in: writes.map((w) => w.id) }, 'control.version': 1 }, { projection: { _id: 1 } })
          .toArray(),
      );
      const uncompressed = new Set(left.map((d) => String(d._id)));
      for (const w of writes) if (!uncompressed.has(String(w.id))) outcomes.push(w.outcome);
      return outcomes;
    } catch {
      // Left as version 1.
      for (let i = 0; i < pending; i++) outcomes.push(kFailedCompression);
      return outcomes;
    }
  }

  /**
   * The answers of many reopening queries from one `find` of their `$or` (in chunks of at most
   * {@link kReadAheadBytes} of filters), each document found given to the queries it matches, in the
   * order found. Only the queries whose meta has one of the document's equality keys can match it (the
   * keys of `MemoryStorage`'s meta index, of the meta as the server returns it: a lone surrogate comes
   * back as U+FFFD, a number as int32 or double); those are tested with their filter, compared as BSON.
   * A query whose meta is null or an array, whose matches no one key holds, is not read (`undefined`:
   * the catalog queries it).
   */
  async #reopeningCandidates(
    ns: string,
    queries: ReadonlyArray<ReopeningQuery>,
  ): Promise<Array<StoredBucket[] | undefined>> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const answers = new Array<StoredBucket[] | undefined>(queries.length).fill(undefined);
    const byKey = new Map<string, number[]>();
    const chunks: BucketFilter[][] = [[]];
    let bytes = 0;
    for (let i = 0; i < queries.length; i++) {
      const { filter, hasMeta, normalizedMeta } = queries[i] as ReopeningQuery;
      let key: string | undefined = '';
      if (hasMeta) {
        const returned = deserialize(serialize({ v: normalizedMeta }), kReadBsonOptions) as { v: unknown };
        key = equalityIndexKey(canonicalizeDocument(returned).v);
      }
      if (key === undefined) continue;
      answers[i] = [];
      const same = byKey.get(key);
      if (same === undefined) byKey.set(key, [i]);
      else same.push(i);
      const size = calculateObjectSize(filter);
      if (bytes + size > kReadAheadBytes && bytes > 0) {
        chunks.push([]);
        bytes = 0;
      }
      bytes += size;
      (chunks[chunks.length - 1] as BucketFilter[]).push(filter);
    }
    const tests = new Map<number, BsonQuery>();
    for (const filters of chunks) {
      if (filters.length === 0) continue;
      // Batches of a few documents per query (a series mostly has one bucket to reopen), rather than the
      // driver's 101 documents, each batch after the first being one more round trip.
      const found = await this.#run('find', bucketsCollectionName, () =>
        buckets.find({ $or: filters }, { ...kReadBsonOptions, batchSize: 4 * filters.length }).toArray(),
      );
      for (const raw of found) {
        const doc = canonicalizeDocument(raw);
        const keys = metaIndexKeys(doc);
        let answering = false;
        for (const key of typeof keys === 'string' ? [keys] : keys) {
          for (const i of byKey.get(key) ?? []) {
            const answer = answers[i] as StoredBucket[];
            let test = tests.get(i);
            if (test === undefined) {
              test = new BsonQuery((queries[i] as ReopeningQuery).filter);
              tests.set(i, test);
            }
            // An array meta files a document under several keys: once per query.
            if (answer[answer.length - 1] !== doc && test.test(doc)) {
              answer.push(doc);
              answering = true;
            }
          }
        }
        // A bucket the catalog may reopen: its first commit then needs no read of its columns.
        if (answering) this.#columns.remember(ns, doc);
      }
    }
    return answers;
  }

  /**
   * {@inheritDoc Storage.createIndex}
   *
   * `index.options` are passed to the server's `createIndexes` as index options. An existing index with
   * the same name and key but other options (`IndexOptionsConflict`) is accepted.
   */
  async createIndex(ns: string, index: StorageIndex): Promise<void> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    await this.#run('createIndex', bucketsCollectionName, async () => {
      try {
        await buckets.createIndex(index.key as IndexSpecification, { ...index.options, name: index.name });
      } catch (error) {
        const code = codeOf(error);
        if (code !== kIndexOptionsConflict && code !== kIndexKeySpecsConflict) throw error;
        // An index of that name and key exists with other options (e.g. created by the server for a
        // time-series collection, or by `createNamespace`): the requested index is there.
        const existing = await buckets.listIndexes().toArray();
        const same = existing.find((spec) => spec.name === index.name);
        if (same === undefined || !sameBsonDocument(same.key as Document, index.key)) throw error;
      }
    });
  }

  /**
   * {@inheritDoc Storage.listIndexes}
   *
   * The `_id` index is not listed (it is implicit, as in `MemoryStorage`); a missing collection has none.
   */
  async listIndexes(ns: string): Promise<ReadonlyArray<StorageIndex>> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    const specs = await this.#run('listIndexes', bucketsCollectionName, async () => {
      try {
        return await buckets.listIndexes().toArray();
      } catch (error) {
        if (codeOf(error) === kNamespaceNotFound) return [];
        throw error;
      }
    });
    const out: StorageIndex[] = [];
    for (const spec of specs) {
      const { name, key, v: _v, ns: _ns, ...rest } = spec;
      if (typeof name !== 'string' || name === '_id_') continue;
      out.push({
        name,
        key: key as Record<string, unknown>,
        ...(Object.keys(rest).length === 0 ? {} : { options: rest }),
      });
    }
    return out;
  }

  /** {@inheritDoc Storage.dropIndex} */
  async dropIndex(ns: string, name: string): Promise<boolean> {
    const { buckets, bucketsCollectionName } = this.#target(ns);
    return this.#run('dropIndex', bucketsCollectionName, async (attempt) => {
      try {
        await buckets.dropIndex(name);
        return true;
      } catch (error) {
        const code = codeOf(error);
        // After a lost reply, "not found" may mean this call's earlier attempt dropped it.
        if (code === kIndexNotFound || code === kNamespaceNotFound) return attempt > 0;
        throw error;
      }
    });
  }

  /**
   * {@inheritDoc Storage.close}
   *
   * Does not close the `MongoClient`, which belongs to the application.
   */
  close(): Promise<void> {
    this.#targets.clear();
    return Promise.resolve();
  }

  #target(ns: string): Target {
    let target = this.#targets.get(ns);
    if (target === undefined) {
      const plain = kBucketsNamespace.test(ns) ? undefined : plainNamespaceFor(ns);
      const names = plain ?? serverNamespaceFor(this.config.mode, ns);
      target = {
        ...names,
        buckets: this.#db.collection(names.bucketsCollectionName),
        kind: plain === undefined ? 'buckets' : 'plain',
      };
      this.#targets.set(ns, target);
    }
    return target;
  }

  /**
   * Run one storage operation with retries; a tsbuckets error thrown by `attempt` (an expected outcome such
   * as `DuplicateKey`) passes through, any other final error becomes a {@link MongoStorageError}.
   */
  async #run<T>(
    operation: MongoStorageOperation,
    collection: string,
    attempt: (attemptNumber: number) => Promise<T>,
  ): Promise<T> {
    const outcome = await runWithRetries(this.config.retry, attempt);
    if (outcome.kind === 'ok') return outcome.value;
    if (TsBucketsError.isTsBucketsError(outcome.error)) throw outcome.error;
    throw new MongoStorageError({ operation, collection, attempts: outcome.attempts, cause: outcome.error });
  }

  /** Run one storage operation once (no retry), errors wrapped as {@link MongoStorage.#run} does. */
  async #once<T>(
    operation: MongoStorageOperation,
    collection: string,
    attempt: () => Promise<T>,
  ): Promise<T> {
    try {
      return await attempt();
    } catch (error) {
      if (TsBucketsError.isTsBucketsError(error)) throw error;
      throw new MongoStorageError({ operation, collection, attempts: 1, cause: error });
    }
  }

  /**
   * `create`, accepting an existing collection for which `accept(info)` holds (servers before 7.0 answer
   * `NamespaceExists` even for identical options).
   */
  async #createCollection(
    name: string,
    options: CreateCollectionOptions,
    accept: (info: CollectionInfo) => boolean,
  ): Promise<void> {
    try {
      await this.#db.createCollection(name, options);
    } catch (error) {
      if (codeOf(error) !== kNamespaceExists) throw error;
      const [info] = await this.#db.listCollections({ name }, { nameOnly: false }).toArray();
      if (info !== undefined && accept(info)) return;
      throw new TimeseriesError(
        'NamespaceExists',
        `Collection ${this.#db.databaseName}.${name} already exists with different options.`,
        { cause: error },
      );
    }
  }
}

const kUpdated: StorageUpdateResult = Object.freeze({ kind: 'updated' });
const kFailedCompression: ClosedBucketOutcome = Object.freeze({ kind: 'failed' });
const kNotMatched: StorageUpdateResult = Object.freeze({ kind: 'notMatched' });

/** The server's `timeseries` options: granularity alone when set (accepted by every 5.0+ server). */
function serverTimeseriesOptions(stored: Readonly<Record<string, unknown>>): TimeSeriesCollectionOptions {
  const { timeField, metaField, granularity, bucketMaxSpanSeconds, bucketRoundingSeconds } = stored;
  if (typeof timeField !== 'string') {
    throw new TimeseriesError('BadValue', "time-series options must have a string 'timeField'", {
      field: 'timeseries.timeField',
    });
  }
  const out: TimeSeriesCollectionOptions = { timeField };
  if (typeof metaField === 'string') out.metaField = metaField;
  if (typeof granularity === 'string') {
    out.granularity = granularity;
    return out;
  }
  if (typeof bucketMaxSpanSeconds === 'number') out.bucketMaxSpanSeconds = bucketMaxSpanSeconds;
  if (typeof bucketRoundingSeconds === 'number') out.bucketRoundingSeconds = bucketRoundingSeconds;
  return out;
}

/** Whether an existing collection is a time-series collection with the requested options. */
function sameTimeseriesCollection(info: CollectionInfo, requested: CreateCollectionOptions): boolean {
  if (info.type !== 'timeseries') return false;
  const options = (info.options ?? {}) as Record<string, unknown>;
  const existing = (options.timeseries ?? {}) as Record<string, unknown>;
  const wanted = requested.timeseries ?? { timeField: '' };
  if (existing.timeField !== wanted.timeField || existing.metaField !== wanted.metaField) return false;
  if (wanted.granularity !== undefined) {
    if (existing.granularity !== wanted.granularity) return false;
  } else {
    if (numberOrUndefined(existing.bucketMaxSpanSeconds) !== wanted.bucketMaxSpanSeconds) return false;
    if (numberOrUndefined(existing.bucketRoundingSeconds) !== wanted.bucketRoundingSeconds) return false;
  }
  return numberOrUndefined(options.expireAfterSeconds) === requested.expireAfterSeconds;
}

function numberOrUndefined(value: unknown): number | undefined {
  return value === undefined || value === null ? undefined : Number(value);
}

function driverUpdate(update: BucketUpdateDocument): UpdateFilter<Document> | Document[] {
  return Array.isArray(update) ? (update as Document[]) : update;
}

function codeOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}

function bucketIdDetail(id: unknown): { bucketId?: string } {
  const hex = (id as { toHexString?: unknown } | null | undefined)?.toHexString;
  return typeof hex === 'function' ? { bucketId: String(hex.call(id)) } : {};
}

async function readById(collection: MongoCollectionLike, id: unknown): Promise<StoredBucket | undefined> {
  const [doc] = await collection
    .find({ _id: id } as Filter<Document>, { ...kReadBsonOptions, limit: 1 })
    .toArray();
  return doc === undefined ? undefined : canonicalizeDocument(doc);
}
