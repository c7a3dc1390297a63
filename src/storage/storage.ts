/**
 * The storage interface every backend implements (docs/mongodb.md). One `Storage` holds many buckets
 * collections, each addressed by its namespace (`<db>.system.buckets.<coll>` style strings chosen by the
 * engine). Documents are plain objects whose values are `bson` classes or JS primitives.
 *
 * @packageDocumentation
 */

import type { ObjectId } from 'bson';

import type { BucketCommit } from '../bucket-format/bucket-document.js';
import type { CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import type { CounterUpdate } from './counter-update.js';

/**
 * A later commit of the catalog to one bucket: cells appended to a version-1 bucket, or bytes appended
 * to the columns of a compressed bucket (`format: 'compressed'`).
 */
export type StorageCommit = BucketCommit | CompressedBucketCommit;

/**
 * `true` on a storage that takes compressed buckets' columns when it needs them (`DeferredColumns`:
 * commits with `deferred` set, first documents carrying `kDeferredColumns`). Internal: the engine defers
 * encoding only for such a storage; any other receives every commit's bytes.
 */
export const kTakesDeferredColumns: unique symbol = Symbol('tsbuckets.takesDeferredColumns');

/**
 * Whether `storage` takes deferred columns ({@link kTakesDeferredColumns}).
 *
 * @param storage - the engine's storage.
 * @returns whether it does.
 */
export function takesDeferredColumns(storage: object): boolean {
  return (storage as { [kTakesDeferredColumns]?: unknown })[kTakesDeferredColumns] === true;
}

/**
 * On a storage that can tell, without I/O, that it holds no bucket of a series: a method
 * `(ns, hasMeta, meta) => boolean` answering `true` only when no document of `ns` has `meta` equal to
 * `meta` (MongoDB equality; `hasMeta` false: no document without a `meta` field). `false` means "may
 * hold some". Internal: the catalog skips the reopening query of a series the storage has never seen (a
 * query that would find nothing), and counts it as the query it stands for.
 */
export const kHoldsNoBucketsOf: unique symbol = Symbol('tsbuckets.holdsNoBucketsOf');

/**
 * Whether `storage` knows, without I/O, that `ns` holds no bucket of the series ({@link kHoldsNoBucketsOf});
 * `false` on a storage that cannot tell.
 *
 * @param storage - the engine's storage.
 * @param ns - the buckets namespace.
 * @param hasMeta - whether the series has a meta value.
 * @param meta - its normalised value (as the reopening query's `meta` condition holds it).
 * @returns `true` when no document of the series is stored.
 */
export function holdsNoBucketsOf(storage: object, ns: string, hasMeta: boolean, meta: unknown): boolean {
  const probe = (storage as { [kHoldsNoBucketsOf]?: unknown })[kHoldsNoBucketsOf];
  return typeof probe === 'function' && (probe as HoldsNoBucketsOf).call(storage, ns, hasMeta, meta);
}

type HoldsNoBucketsOf = (ns: string, hasMeta: boolean, meta: unknown) => boolean;

/** A reopening query asked with others by {@link kReopeningCandidates}. */
export interface ReopeningQuery {
  /** The query (the catalog's reopening filter: conditions on `meta`, `control` and the time). */
  readonly filter: BucketFilter;
  /** Whether the series has a meta value (`filter` then requires `meta` equal to it, else absent). */
  readonly hasMeta: boolean;
  /** Its normalised value. */
  readonly normalizedMeta: unknown;
}

/**
 * On a storage that can answer many reopening queries with one read (where each query would be a round
 * trip): a method `(ns, queries) => Promise<Array<StoredBucket[] | undefined>>`, one answer per query:
 * the documents of `ns` that match its filter, in storage order, as a `find` with that filter would give
 * them, or `undefined` when this read does not answer it (the caller then queries). Rejects when the
 * read fails. Internal: the catalog asks once per insert call, before staging, for the series that have
 * no open bucket, and reopens from the answers (a bulk load's first call brings thousands of new series).
 */
export const kReopeningCandidates: unique symbol = Symbol('tsbuckets.reopeningCandidates');

/**
 * The {@link kReopeningCandidates} reader of `storage` bound to `ns`, or `undefined` when it has none.
 *
 * @param storage - the engine's storage.
 * @param ns - the buckets namespace.
 * @returns the reader.
 */
export function reopeningCandidatesReader(
  storage: object,
  ns: string,
):
  | ((queries: ReadonlyArray<ReopeningQuery>) => Promise<ReadonlyArray<StoredBucket[] | undefined>>)
  | undefined {
  const read = (storage as { [kReopeningCandidates]?: unknown })[kReopeningCandidates];
  if (typeof read !== 'function') return undefined;
  return (queries) => (read as ReopeningCandidates).call(storage, ns, queries);
}

type ReopeningCandidates = (
  ns: string,
  queries: ReadonlyArray<ReopeningQuery>,
) => Promise<ReadonlyArray<StoredBucket[] | undefined>>;

/**
 * On a storage that compresses closed buckets itself, many at once (`MongoStorage`: one read and one
 * write for all the buckets an insert call closed, where compressing them one by one costs two round trips
 * each): a method `(ns, ids, options) => Promise<ClosedBucketOutcome[]>` that compresses, of the buckets
 * of `ns` the catalog has closed for good (`ids`), those `options.which` names, and says what became of
 * each it tried. Internal: the engine calls it after each insert call that closed buckets. In the 8.0
 * format it is given only the buckets the storage keeps as version 1 while they are open (its commits
 * could otherwise only resend whole columns); in the 5.x–7.x format, every closed bucket. Never rejects:
 * the writes it follows are acknowledged, and a bucket left uncompressed stays readable as version 1.
 */
export const kCompressClosedBuckets: unique symbol = Symbol('tsbuckets.compressClosedBuckets');

/** What a {@link kCompressClosedBuckets} compression needs to know. */
export interface ClosedBucketsOptions {
  /** The time field (its column orders a bucket's rows). */
  readonly timeField: string;
  /** Decompress each compressed bucket and compare it before writing it (`timeseriesValidateCompressedBuckets`). */
  readonly validate: boolean;
  /**
   * `'held'` (8.0 format): only the buckets the storage keeps as version 1 while the catalog appends to
   * them compressed, compressed in the order appended whatever the size (the document the catalog would
   * have left); `'all'` (5.x–7.x format): every one still version 1, sorted by time, left as version 1
   * when compressing would not make it smaller (as the server compresses a bucket when it closes).
   */
  readonly which: 'held' | 'all';
}

/** What became of one bucket a {@link kCompressClosedBuckets} compression tried (for the statistics). */
export type ClosedBucketOutcome =
  | { readonly kind: 'compressed'; readonly bytesBefore: number; readonly bytesAfter: number }
  | { readonly kind: 'notSmaller'; readonly bytesBefore: number; readonly bytesAfter: number }
  | { readonly kind: 'failed' };

/** A storage's {@link kCompressClosedBuckets} method. */
export type CompressClosedBuckets = (
  ns: string,
  ids: ReadonlyArray<ObjectId>,
  options: ClosedBucketsOptions,
) => Promise<ReadonlyArray<ClosedBucketOutcome>>;

/**
 * The {@link kCompressClosedBuckets} method of `storage`, bound to it, or `undefined` when it has none.
 *
 * @param storage - the engine's storage.
 * @returns the method.
 */
export function closedBucketsCompressor(storage: object): CompressClosedBuckets | undefined {
  const compress = (storage as { [kCompressClosedBuckets]?: unknown })[kCompressClosedBuckets];
  if (typeof compress !== 'function') return undefined;
  return (ns, ids, options) => (compress as CompressClosedBuckets).call(storage, ns, ids, options);
}

/** A MongoDB query filter over bucket documents. */
export type BucketFilter = Readonly<Record<string, unknown>>;

/**
 * A MongoDB update: update operators (`{ $set: {...} }`) or an aggregation pipeline (an array of stages,
 * used when a field name cannot be written as a dotted path).
 */
export type BucketUpdateDocument =
  Readonly<Record<string, unknown>> | ReadonlyArray<Readonly<Record<string, unknown>>>;

/** What a storage may need to know about a time-series collection when creating its buckets collection. */
export interface NamespaceOptions {
  /** The `timeseries` options as MongoDB stores them (`timeField`, `metaField`, granularity or seconds). */
  readonly timeseries: Readonly<Record<string, unknown>>;
  /** TTL in seconds, when set. */
  readonly expireAfterSeconds?: number;
  /**
   * MongoDB's `timeseriesBucketingParametersHaveChanged`: a `collMod` changed the bucket span or rounding
   * once, so buckets may not start at multiples of the span. Absent means false.
   */
  readonly bucketingParametersHaveChanged?: boolean;
}

/** A stored bucket document (see `bucket-format/bucket-document.ts` for its exact shape). */
export type StoredBucket = Record<string, unknown>;

/** Options of {@link Storage.find}. */
export interface StorageFindOptions {
  /** MongoDB projection (inclusion or exclusion). */
  readonly projection?: Readonly<Record<string, 0 | 1 | boolean>>;
  /** MongoDB sort specification. */
  readonly sort?: Readonly<Record<string, 1 | -1>>;
  /** Maximum number of documents. */
  readonly limit?: number;
}

/** Outcome of {@link Storage.updateOne}. */
export type StorageUpdateResult =
  /** The guard matched a document and the update was applied. */
  | { readonly kind: 'updated' }
  /** No document matched the guard filter (someone else changed or removed the bucket). */
  | { readonly kind: 'notMatched' };

/** One bucket write of {@link Storage.commitWrites}. */
export type BucketWrite =
  /** A new bucket: insert the whole document (fails with `DuplicateKey` if its `_id` exists). */
  | { readonly kind: 'insert'; readonly document: StoredBucket }
  /** A later commit to an existing bucket, guarded as in {@link Storage.applyCommit}. */
  | { readonly kind: 'update'; readonly commit: StorageCommit };

/** What became of one write of {@link Storage.commitWrites}. */
export type BucketWriteOutcome =
  /** Written. */
  | { readonly kind: 'applied' }
  /** An update whose guard matched no document (someone else changed or removed the bucket). */
  | { readonly kind: 'notMatched' }
  /** The write failed (e.g. `DuplicateKey`, a storage error); nothing of it was written. */
  | { readonly kind: 'failed'; readonly error: unknown }
  /** Not written because an ordered call stopped at an earlier write (or, atomic, at any write). */
  | { readonly kind: 'notApplied' };

/** Options of {@link Storage.commitWrites}. */
export interface CommitWritesOptions {
  /**
   * Apply the writes in order and stop at the first that fails: the writes after it are `notApplied`. A
   * backend may be stronger: `MemoryStorage` applies all or none, and also stops at a guard miss.
   */
  readonly ordered: boolean;
}

/** An index on a buckets collection, in bucket-field terms. */
export interface StorageIndex {
  /** Index name. */
  readonly name: string;
  /** Key pattern over bucket fields, e.g. `{ meta: 1, 'control.min.ts': 1 }`. */
  readonly key: Readonly<Record<string, unknown>>;
  /** Extra index options as given to `createIndex` (e.g. `originalSpec`). */
  readonly options?: Readonly<Record<string, unknown>>;
}

/**
 * A buckets store. Implementations: `MemoryStorage` (embedded default) and `MongoStorage`
 * (`tsbuckets/mongodb`). All methods are async and may reject with a storage error; the catalog treats a
 * rejected write as "not written".
 */
export interface Storage {
  /**
   * How many bucket writes (`insertOne` and `applyCommit`, each to a different bucket) one insert call
   * may have in flight at once. A storage across a network sets it above 1, so that an insert touching
   * many series waits for a few round trips rather than one per bucket; an in-memory storage leaves it
   * at 1 (each write completes at once, and one at a time is cheapest).
   *
   * @defaultValue 1
   */
  readonly writeConcurrency?: number;
  /**
   * Whether an ordered `commitWrites` is all or nothing (a failed write leaves every write of the call
   * unapplied). When it is not (or `commitWrites` is absent), the engine cuts an ordered call whose series
   * interleave into rounds, each series contiguous within a round, written one round at a time: a write
   * applied before a failure then never holds a measurement after the failed index. A call with each
   * series contiguous is one round either way.
   *
   * @defaultValue false
   */
  readonly atomicOrderedCommits?: boolean;
  /**
   * Prepare a buckets collection (idempotent).
   *
   * @param ns - namespace of the buckets collection (`<db>.system.buckets.<name>`).
   * @param options - the time-series collection's options (a backend may create a native collection).
   */
  createNamespace(ns: string, options: NamespaceOptions): Promise<void>;
  /**
   * The options this backend keeps for a namespace (those of its first `createNamespace`, as
   * `setNamespaceOptions` changed them since), so that an engine started again over the same storage
   * refuses other options (`NamespaceExists`) and knows whether the bucketing parameters ever changed.
   * A backend without it keeps no options: an engine then never assumes fixed buckets.
   *
   * @param ns - namespace of the buckets collection.
   * @returns the options, or `undefined` when the namespace was never created here (or was dropped).
   */
  namespaceOptions?(ns: string): Promise<NamespaceOptions | undefined>;
  /**
   * The collection's options changed (collMod): a backend that keeps a copy of them (a native
   * time-series collection) updates it.
   *
   * @param ns - namespace of the buckets collection.
   * @param options - the new options, as `createNamespace` takes them; `expireAfterSeconds` absent means
   *   no TTL.
   */
  setNamespaceOptions(ns: string, options: NamespaceOptions): Promise<void>;
  /**
   * Remove a buckets collection and its indexes (no error if absent).
   *
   * @param ns - namespace of the buckets collection.
   */
  dropNamespace(ns: string): Promise<void>;
  /**
   * Insert one new bucket document.
   *
   * @param ns - namespace.
   * @param doc - the whole bucket document; ownership passes to the storage (callers do not mutate it).
   * @throws a `TimeseriesError` with code `DuplicateKey` if the `_id` exists.
   */
  insertOne(ns: string, doc: StoredBucket): Promise<void>;
  /**
   * Apply a later commit of the catalog to its bucket: only if the bucket holds exactly the measurements
   * the catalog committed (`commitGuardFilter`, or `compressedCommitGuard` for a compressed bucket), as
   * one atomic single-document update.
   *
   * @param ns - namespace.
   * @param commit - bucket id, expected measurement count and the changes (`bucketUpdateDocument` gives
   *   a version-1 commit as a MongoDB update; a compressed commit carries each column's new tail bytes).
   * @returns `updated`, or `notMatched` when another writer changed or removed the bucket.
   */
  applyCommit(ns: string, commit: StorageCommit): Promise<StorageUpdateResult>;
  /**
   * Write the buckets of one insert call at once: new buckets inserted and later commits applied, each as
   * `insertOne` and `applyCommit` would, in one storage call (one round trip across a network).
   * Optional: without it the engine writes one bucket at a time.
   *
   * @param ns - namespace.
   * @param writes - the call's bucket writes, each to a different bucket; ownership of inserted documents
   *   passes to the storage.
   * @param options - `ordered`: stop at the first write that fails.
   * @returns one outcome per write, in the same order. Rejects only when no outcome can be told apart
   *   (the engine then fails every write).
   */
  commitWrites?(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]>;
  /**
   * Apply an update to the single document matching `filter` (which always pins `_id`).
   *
   * @param ns - namespace.
   * @param filter - `_id` plus optional guard conditions.
   * @param update - MongoDB update operators.
   * @returns whether a document matched.
   */
  updateOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<StorageUpdateResult>;
  /**
   * Apply an update (operators, or a pipeline) to the single document matching `filter`, or insert one
   * built from the filter's `_id` and the update when none matches (MongoDB's `upsert: true`, with
   * `$setOnInsert` applied only on insert). Optional: rollups need it; it is never retried after an
   * ambiguous failure (an `$inc` must not be applied twice), the caller recomputes instead.
   *
   * @param ns - namespace (any collection of the engine's database, not only buckets).
   * @param filter - `{ _id: <value> }`.
   * @param update - MongoDB update operators or an update pipeline.
   * @returns whether a document was updated or inserted.
   */
  upsertOne?(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<'updated' | 'inserted'>;
  /**
   * Apply a counter update (structured `$setOnInsert`/`$inc`/`$min`/`$max`, see `counter-update.ts`) to
   * the document with the given `_id`, inserting it first when missing and `upsert` is `'upsert'`.
   * Optional, for storages that apply documents in place: the rollups use it when present, and otherwise
   * send `counterUpdateDocument(update)` through {@link Storage.upsertOne} or {@link Storage.updateOne},
   * which must give the same document.
   *
   * @param ns - namespace.
   * @param id - the document `_id`.
   * @param update - the counter update.
   * @param upsert - `'upsert'`: insert `{ _id, ...setOnInsert }` when missing; `'noUpsert'`: only update.
   * @returns whether a document was updated, inserted, or (without upsert) not found.
   */
  applyCounters?(
    ns: string,
    id: string,
    update: CounterUpdate,
    upsert: 'upsert' | 'noUpsert',
  ): Promise<'updated' | 'inserted' | 'notMatched'>;
  /**
   * Replace the document with the given `_id` (used by deletes that repack a bucket, and compression).
   *
   * @param ns - namespace.
   * @param filter - `_id` plus optional guard conditions.
   * @param doc - the new document (same `_id`).
   * @returns whether a document matched.
   */
  replaceOne(ns: string, filter: BucketFilter, doc: StoredBucket): Promise<StorageUpdateResult>;
  /**
   * Apply an update to every document matching `filter`.
   *
   * @param ns - namespace.
   * @param filter - bucket filter.
   * @param update - MongoDB update operators.
   * @returns the number of documents modified.
   */
  updateMany(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<number>;
  /**
   * Find bucket documents. Documents are yielded one by one (streaming) and belong to the caller: a
   * storage keeps no reference to what it yields, so changing a result (or projecting it) never changes
   * stored data.
   *
   * @param ns - namespace.
   * @param filter - bucket filter.
   * @param options - projection, sort, limit.
   */
  find(ns: string, filter: BucketFilter, options?: StorageFindOptions): AsyncIterable<StoredBucket>;
  /**
   * Read the documents matching `filter` where they are stored: `visit` gets each one and must neither
   * change nor keep it (it copies what it keeps). Optional, for storages that hold documents in memory:
   * a reader that keeps little of large documents (a rolling rollup's read sums each entity's `totals`
   * and returns the sums) uses it when present instead of `find`, which hands out whole copies.
   *
   * @param ns - namespace.
   * @param filter - bucket filter.
   * @param visit - called once per matching document, synchronously.
   * @returns the number of documents visited.
   */
  visitDocuments?(
    ns: string,
    filter: BucketFilter,
    visit: (doc: Readonly<StoredBucket>) => void,
  ): Promise<number>;
  /**
   * Delete every document matching `filter`.
   *
   * @param ns - namespace.
   * @param filter - bucket filter.
   * @returns the number of documents deleted.
   */
  deleteMany(ns: string, filter: BucketFilter): Promise<number>;
  /**
   * Count documents matching `filter`.
   *
   * @param ns - namespace.
   * @param filter - bucket filter (all documents when omitted).
   */
  countDocuments(ns: string, filter?: BucketFilter): Promise<number>;
  /**
   * Total BSON size in bytes of every document of the namespace (for `avgBucketSize`).
   *
   * @param ns - namespace.
   */
  totalSize(ns: string): Promise<number>;
  /**
   * Create an index (idempotent for an identical spec).
   *
   * @param ns - namespace.
   * @param index - name, key and options.
   */
  createIndex(ns: string, index: StorageIndex): Promise<void>;
  /**
   * List indexes of the namespace.
   *
   * @param ns - namespace.
   */
  listIndexes(ns: string): Promise<ReadonlyArray<StorageIndex>>;
  /**
   * Drop an index by name.
   *
   * @param ns - namespace.
   * @param name - index name.
   * @returns whether the index existed.
   */
  dropIndex(ns: string, name: string): Promise<boolean>;
  /** Release resources. */
  close(): Promise<void>;
}
