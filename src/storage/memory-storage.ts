import { Buffer } from 'node:buffer';

import { serialize } from 'bson';
import { updateOne } from 'mingo';
import { update as applyUpdate } from 'mingo/updater';
import type { PipelineStage } from 'mingo/updater';

import { applyCommitToDocument, commitMatchesDocument } from '../bucket-format/bucket-document.js';
import { deferredFirstCommitOf, kDeferredColumns } from '../bucket-format/compressed-bucket.js';
import { TimeseriesError } from '../errors.js';
import { BsonQuery, compareBySort, compileSort } from '../util/bson-query.js';
import { defineField } from '../util/safe-record.js';
import { applyCounterUpdate, counterUpdateDocument } from './counter-update.js';
import type { CounterUpdate } from './counter-update.js';
import { handOut, handOutIndexes } from './hand-out.js';
import type { StorageProjection } from './hand-out.js';
import { LiveColumns } from './live-columns.js';
import { applySetFieldPipeline, isSetFieldPipeline } from './set-field-pipeline.js';
import { applyOperatorUpdate } from './operator-update.js';
import { applyPipelineUpdate } from './pipeline-update.js';
import { applySetUpdate, matchExistsFilter } from './set-update.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  NamespaceOptions,
  Storage,
  StorageFindOptions,
  StorageCommit,
  StorageIndex,
  StorageUpdateResult,
  StoredBucket,
} from './storage.js';
import { kHoldsNoBucketsOf, kTakesDeferredColumns } from './storage.js';
import { bsonValueSize, cloneBsonValue, isPlainObject, objectIdHex } from '../util/bson-value.js';
import { isBsonValue } from '../util/bson-type.js';
import { equalityIndexKey, equalityKey, everyOwnValue, metaIndexKeys } from './meta-equality.js';
import type { MetaKeys } from './meta-equality.js';

/** One buckets collection held in memory. */
interface MemoryNamespace {
  /** Documents by hex `_id`, in insertion order (a clustered collection's natural order is `_id` order). */
  readonly docs: Map<string, StoredBucket>;
  /** Indexes by name (their definitions; lookups use `docs` and `metaIndex`). */
  readonly indexes: Map<string, StorageIndex>;
  /**
   * The `{meta: 1, ...}` index, built when a read first needs it ({@link metaIndexOf}) and kept up to date
   * from then on: an ingest whose series all have open buckets never reads by meta, and would pay for
   * keying and filing every new bucket (a tenth of what creating a bucket costs) for nothing.
   */
  metaIndex: MetaIndex | undefined;
  /** Compressed buckets being appended to: their columns, and which documents are stale in `docs`. */
  readonly live: LiveColumns;
}

/**
 * The embedded default {@link Storage}: bucket documents kept as plain objects in memory, filters and
 * updates evaluated with `mingo` (MongoDB query and update semantics on plain objects).
 *
 * Updates are applied in place with the changed paths only, so a commit's cost does not grow with the
 * size of its bucket. Filters that pin `_id` to one ObjectId are answered by a map lookup.
 *
 * Compressed buckets (the default format) reach it as deferred columns: their commits carry the catalog's
 * encoder state instead of bytes, and the bytes are taken when a bucket is read or 16 measurements wait
 * (docs/bucket-format.md, "Deferred columns"). A subclass inherits this; one that overrides the write
 * methods should pass the writes on to these methods rather than store the documents itself.
 *
 * @example
 * ```ts
 * const engine = new BucketEngine({ storage: new MemoryStorage() });
 * ```
 */
export class MemoryStorage implements Storage {
  /** {@inheritDoc Storage.atomicOrderedCommits} An ordered `commitWrites` writes all or nothing. */
  readonly atomicOrderedCommits: boolean = true;
  readonly #namespaces = new Map<string, MemoryNamespace>();
  /** Each namespace's options, as a native collection keeps them (see {@link MemoryStorage.namespaceOptions}). */
  readonly #options = new Map<string, NamespaceOptions>();
  /** Keys of counter documents' ids (see `#counterKey`). */
  readonly #counterKeys = new Map<string, string>();

  #ns(ns: string): MemoryNamespace {
    let entry = this.#namespaces.get(ns);
    if (entry === undefined) {
      entry = {
        docs: new Map(),
        indexes: new Map(),
        metaIndex: undefined,
        live: new LiveColumns(),
      };
      this.#namespaces.set(ns, entry);
    }
    return entry;
  }

  /** {@inheritDoc Storage.createNamespace} The options of an existing namespace are kept as they are. */
  createNamespace(ns: string, options?: NamespaceOptions): Promise<void> {
    this.#ns(ns);
    if (options !== undefined && !this.#options.has(ns)) this.#options.set(ns, copyOptions(options));
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.namespaceOptions} */
  namespaceOptions(ns: string): Promise<NamespaceOptions | undefined> {
    const kept = this.#options.get(ns);
    return Promise.resolve(kept === undefined ? undefined : copyOptions(kept));
  }

  /** {@inheritDoc Storage.setNamespaceOptions} */
  setNamespaceOptions(ns: string, options: NamespaceOptions): Promise<void> {
    this.#options.set(ns, copyOptions(options));
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.dropNamespace} */
  dropNamespace(ns: string): Promise<void> {
    this.#namespaces.delete(ns);
    this.#options.delete(ns);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.insertOne} */
  insertOne(ns: string, doc: StoredBucket): Promise<void> {
    return settle(() => {
      this.#insert(ns, doc);
    });
  }

  /** Insert a document, or throw (`DuplicateKey`, or a meta that cannot be indexed) having stored nothing. */
  #insert(ns: string, doc: StoredBucket): void {
    const key = idKey(doc._id);
    const entry = this.#ns(ns);
    if (entry.docs.has(key)) throw duplicateKey(ns, key);
    // Indexed first: a document whose meta cannot be indexed is not stored (all or nothing).
    indexNewMeta(entry, key, doc);
    const first = deferredFirstCommitOf(doc);
    if (first === undefined) {
      entry.live.forget(key);
      entry.docs.set(key, doc);
      return;
    }
    // A first commit whose columns the catalog's encoders hold: kept (as a skeleton), filled in when read.
    Reflect.deleteProperty(doc, kDeferredColumns);
    entry.docs.set(key, entry.live.adopt(key, doc, first));
  }

  /**
   * {@inheritDoc Storage.commitWrites}
   *
   * Synchronous underneath: one promise for the whole call. Ordered calls are atomic: every write's guard
   * is checked first and nothing is written unless all of them hold.
   */
  commitWrites(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]> {
    const outcomes = new Array<BucketWriteOutcome>(writes.length);
    if (options.ordered) {
      const refused = this.#refusal(ns, writes);
      if (refused !== undefined) {
        outcomes.fill(kNotApplied);
        outcomes[refused.index] = refused.outcome;
        return Promise.resolve(outcomes);
      }
    }
    for (let i = 0; i < writes.length; i++) {
      const write = writes[i] as BucketWrite;
      try {
        if (write.kind === 'insert') {
          this.#insert(ns, write.document);
          outcomes[i] = kApplied;
        } else {
          outcomes[i] = this.#applyCommit(ns, write.commit) ? kApplied : kNotMatched;
        }
      } catch (error) {
        outcomes[i] = { kind: 'failed', error };
      }
    }
    return Promise.resolve(outcomes);
  }

  /** The first write that would not apply, and why (nothing is changed). */
  #refusal(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
  ): { readonly index: number; readonly outcome: BucketWriteOutcome } | undefined {
    const entry = this.#ns(ns);
    const inserted = new Set<string>();
    for (let index = 0; index < writes.length; index++) {
      const write = writes[index] as BucketWrite;
      if (write.kind === 'insert') {
        const key = idKey(write.document._id);
        if (entry.docs.has(key) || inserted.has(key)) {
          return { index, outcome: { kind: 'failed', error: duplicateKey(ns, key) } };
        }
        inserted.add(key);
        try {
          checkIndexable(write.document);
        } catch (error) {
          return { index, outcome: { kind: 'failed', error } };
        }
        continue;
      }
      const commit = write.commit;
      const key = commit.format === 'compressed' ? commit.bucketIdHex : objectIdHex(commit.bucketId);
      const matches =
        commit.format === 'compressed'
          ? entry.live.matches(key, entry.docs, commit)
          : entry.docs.has(key) && commitMatchesDocument(entry.docs.get(key) as StoredBucket, commit);
      if (!matches) return { index, outcome: kNotMatched };
    }
    return undefined;
  }

  /**
   * {@inheritDoc Storage.applyCommit}
   *
   * The guard is checked and the changes applied directly on the stored document: a map lookup and one
   * property store per value, whatever the size of the bucket.
   */
  applyCommit(ns: string, commit: StorageCommit): Promise<StorageUpdateResult> {
    return Promise.resolve(this.#applyCommit(ns, commit) ? { kind: 'updated' } : { kind: 'notMatched' });
  }

  /** Apply a commit if its guard holds; returns whether it did. */
  #applyCommit(ns: string, commit: StorageCommit): boolean {
    const entry = this.#ns(ns);
    // Spliced into the bucket's live columns; its document is rebuilt when it is next read.
    if (commit.format === 'compressed') return entry.live.apply(commit.bucketIdHex, entry.docs, commit);
    const key = objectIdHex(commit.bucketId);
    const doc = entry.docs.get(key);
    return doc !== undefined && applyCommitToDocument(doc, commit);
  }

  /** {@inheritDoc Storage.updateOne} */
  updateOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<StorageUpdateResult> {
    return Promise.resolve(this.#updateOne(ns, filter, update) ? kUpdated : kNotMatchedUpdate);
  }

  /** Update the document matching `filter`; returns whether one matched. */
  #updateOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): boolean {
    const doc = this.#findOne(ns, filter);
    if (doc === undefined) return false;
    this.#apply(ns, doc, update, 'none');
    return true;
  }

  /**
   * {@inheritDoc Storage.upsertOne}
   *
   * Operators go through mingo's updater (`$setOnInsert` is applied as `$set` on insert and dropped
   * otherwise), pipelines through mingo's pipeline updater, so rollups send the same update documents
   * to this storage and to MongoDB.
   */
  upsertOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<'updated' | 'inserted'> {
    return Promise.resolve(this.#upsertOne(ns, filter, update));
  }

  /**
   * {@inheritDoc Storage.applyCounters}
   *
   * The rollups' counters: a map lookup and a walk of each (already split) path in the stored document.
   * A shape the in-place path refuses goes through the general update path as its update document.
   */
  applyCounters(
    ns: string,
    id: string,
    update: CounterUpdate,
    upsert: 'upsert' | 'noUpsert',
  ): Promise<'updated' | 'inserted' | 'notMatched'> {
    const entry = this.#ns(ns);
    const key = this.#counterKey(id);
    entry.live.materializeOne(key, entry.docs);
    const existing = entry.docs.get(key);
    if (existing === undefined && upsert === 'noUpsert') return kCountersNotMatched;
    const target: StoredBucket = existing ?? { _id: id };
    if (applyCounterUpdate(target, update, existing === undefined ? 'inserting' : 'updating') === 'applied') {
      entry.live.forget(key);
      if (existing === undefined) entry.docs.set(key, target);
      // Rollup documents have no meta: filed once, on insert.
      if (existing === undefined || Object.hasOwn(target, 'meta')) indexMeta(entry, key, target);
      return existing === undefined ? kCountersInserted : kCountersUpdated;
    }
    const document = counterUpdateDocument(update);
    if (upsert === 'upsert') return Promise.resolve(this.#upsertOne(ns, { _id: id }, document));
    return this.#updateOne(ns, { _id: id }, document) ? kCountersUpdated : kCountersNotMatched;
  }

  /**
   * The map key of a counter document's string `_id`, memoised: a rollup passes the same id string for
   * every commit to a slot, so its key is built (and hashed) once instead of once per commit.
   */
  #counterKey(id: string): string {
    let key = this.#counterKeys.get(id);
    if (key === undefined) {
      if (this.#counterKeys.size >= kMaxCounterKeys) this.#counterKeys.clear();
      key = idKey(id);
      this.#counterKeys.set(id, key);
    }
    return key;
  }

  /** Upsert (see {@link MemoryStorage.upsertOne}). */
  #upsertOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): 'updated' | 'inserted' {
    const existing = this.#findOne(ns, filter);
    const entry = this.#ns(ns);
    if (!isPipeline(update)) {
      // The rollups' own updates ($inc, $min, $max, $setOnInsert) are applied without mingo.
      const target: StoredBucket = existing ?? {};
      if (existing === undefined) defineField(target, '_id', filter._id);
      if (
        applyOperatorUpdate(target, update, existing === undefined ? 'inserting' : 'updating') === 'applied'
      ) {
        const key = idKey(target._id);
        if (existing === undefined) entry.docs.set(key, target);
        // Rollup and entity documents have no meta: filed once, on insert.
        if (existing === undefined || Object.hasOwn(target, 'meta')) indexMeta(entry, key, target);
        return existing === undefined ? 'inserted' : 'updated';
      }
    }
    if (existing !== undefined) {
      this.#apply(ns, existing, withoutSetOnInsert(update), 'copy');
      return 'updated';
    }
    const doc: StoredBucket = {};
    defineField(doc, '_id', filter._id);
    const key = idKey(doc._id);
    entry.docs.set(key, doc);
    this.#apply(ns, doc, setOnInsertAsSet(update), 'copy');
    indexMeta(entry, key, entry.docs.get(key) as StoredBucket);
    return 'inserted';
  }

  /** {@inheritDoc Storage.replaceOne} */
  replaceOne(ns: string, filter: BucketFilter, doc: StoredBucket): Promise<StorageUpdateResult> {
    const existing = this.#findOne(ns, filter);
    if (existing === undefined) return Promise.resolve({ kind: 'notMatched' });
    const key = idKey(existing._id);
    return settle(() => {
      indexMeta(this.#ns(ns), key, doc);
      this.#ns(ns).live.forget(key);
      this.#ns(ns).docs.set(key, doc);
      return { kind: 'updated' };
    });
  }

  /** {@inheritDoc Storage.updateMany} */
  updateMany(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<number> {
    let n = 0;
    for (const doc of this.#matching(ns, filter)) {
      // Like MongoDB's modifiedCount: a document the update leaves unchanged is not counted.
      if (this.#apply(ns, doc, update, 'copy')) n++;
    }
    return Promise.resolve(n);
  }

  /** {@inheritDoc Storage.find} */
  // eslint-disable-next-line @typescript-eslint/require-await -- an async generator: the Storage contract streams.
  async *find(
    ns: string,
    filter: BucketFilter,
    options: StorageFindOptions = {},
  ): AsyncIterable<StoredBucket> {
    const { projection, sort, limit } = options;
    if (sort !== undefined) {
      // Filter and order with BSON semantics (bson-query): mingo orders js-bson classes incorrectly.
      const compiledSort = compileSort(sort);
      const sorted = [...this.#matching(ns, filter)].sort((a, b) => compareBySort(a, b, compiledSort));
      const n = limit !== undefined && limit > 0 ? Math.min(limit, sorted.length) : sorted.length;
      for (let i = 0; i < n; i++) {
        yield handOut(sorted[i] as StoredBucket, projection);
      }
      return;
    }
    let n = 0;
    for (const doc of this.#reading(ns, filter, projection)) {
      if (limit !== undefined && limit > 0 && n >= limit) return;
      n++;
      yield doc;
      // Yield to the event loop between documents is implicit in async generators; documents added or
      // removed meanwhile are seen or not, as with a MongoDB cursor.
    }
  }

  /** {@inheritDoc Storage.visitDocuments} */
  visitDocuments(
    ns: string,
    filter: BucketFilter,
    visit: (doc: Readonly<StoredBucket>) => void,
  ): Promise<number> {
    return settle(() => {
      let n = 0;
      for (const doc of this.#matching(ns, filter)) {
        visit(doc);
        n++;
      }
      return n;
    });
  }

  /** {@inheritDoc Storage.deleteMany} */
  deleteMany(ns: string, filter: BucketFilter): Promise<number> {
    const entry = this.#ns(ns);
    const doomed = [...this.#matching(ns, filter)];
    for (const doc of doomed) {
      const key = idKey(doc._id);
      entry.docs.delete(key);
      entry.live.forget(key);
      unindexMeta(entry, key);
    }
    return Promise.resolve(doomed.length);
  }

  /** {@inheritDoc Storage.countDocuments} */
  countDocuments(ns: string, filter: BucketFilter = {}): Promise<number> {
    if (Object.keys(filter).length === 0) return Promise.resolve(this.#ns(ns).docs.size);
    let n = 0;
    for (const _doc of this.#matching(ns, filter)) n++;
    return Promise.resolve(n);
  }

  /** {@inheritDoc Storage.totalSize} */
  totalSize(ns: string): Promise<number> {
    let total = 0;
    const entry = this.#ns(ns);
    entry.live.materialize(entry.docs);
    for (const doc of entry.docs.values()) total += bsonValueSize(doc);
    return Promise.resolve(total);
  }

  /** {@inheritDoc Storage.createIndex} */
  createIndex(ns: string, index: StorageIndex): Promise<void> {
    this.#ns(ns).indexes.set(index.name, cloneBsonValue(index) as StorageIndex);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.listIndexes} */
  listIndexes(ns: string): Promise<ReadonlyArray<StorageIndex>> {
    return Promise.resolve(handOutIndexes(this.#ns(ns).indexes.values()));
  }

  /** {@inheritDoc Storage.dropIndex} */
  dropIndex(ns: string, name: string): Promise<boolean> {
    return Promise.resolve(this.#ns(ns).indexes.delete(name));
  }

  /** {@inheritDoc Storage.close} */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /**
   * Apply update operators in place (changed paths only), or a pipeline (which rebuilds the document).
   * `cloneMode 'none'` is used for the catalog's commits: the update's values are owned by the caller and
   * never mutated afterwards, so they can be stored without copying. Returns whether the document changed
   * (commits and pipelines always count as changes).
   */
  #apply(ns: string, doc: StoredBucket, update: BucketUpdateDocument, cloneMode: 'none' | 'copy'): boolean {
    // Not a commit: the bucket's document is the truth again, its live columns are dropped.
    this.#ns(ns).live.forget(idKey(doc._id));
    if (isPipeline(update)) {
      if (isSetFieldPipeline(update)) {
        applySetFieldPipeline(doc, update);
        return true;
      }
      // The rolling rollups' pipelines (and other simple ones) without mingo's interpreter.
      const next = applyPipelineUpdate(doc, update);
      if (next !== undefined) {
        this.#ns(ns).docs.set(idKey(doc._id), next);
        indexMeta(this.#ns(ns), idKey(doc._id), next);
        return true;
      }
      const docs = [doc];
      updateOne(docs, {}, update as PipelineStage[], { cloneMode });
      const replaced = docs[0] as StoredBucket;
      indexMeta(this.#ns(ns), idKey(doc._id), replaced);
      this.#ns(ns).docs.set(idKey(doc._id), replaced);
      return true;
    }
    // Counter updates ($inc/$min/$max, no $set: a $set's modified count needs mingo's comparison).
    if (!Object.hasOwn(update, '$set') && applyOperatorUpdate(doc, update, 'updating') === 'applied') {
      if (Object.hasOwn(doc, 'meta')) indexMeta(this.#ns(ns), idKey(doc._id), doc);
      return true;
    }
    if (cloneMode === 'none') {
      const outcome = applySetUpdate(doc, update);
      // A commit's $set does not touch meta: the meta index stays valid without re-filing.
      if (outcome === 'applied') return true;
      if (outcome === 'appliedToMeta') {
        indexMeta(this.#ns(ns), idKey(doc._id), doc);
        return true;
      }
    }
    const modified = applyUpdate(doc, update, undefined, undefined, { cloneMode });
    indexMeta(this.#ns(ns), idKey(doc._id), doc);
    return modified.length > 0;
  }

  #findOne(ns: string, filter: BucketFilter): StoredBucket | undefined {
    const entry = this.#ns(ns);
    const key = idEqualityKey(filter._id);
    if (key !== undefined) {
      // The commit path (and a rollup document's): a map lookup and the guard, without a generator.
      entry.live.materializeOne(key, entry.docs);
      const doc = entry.docs.get(key);
      return doc !== undefined && matchesBesidesId(doc, filter) ? doc : undefined;
    }
    for (const doc of this.#matching(ns, filter)) return doc;
    return undefined;
  }

  // Whether `ns` holds no bucket of a series, from the meta index (kHoldsNoBucketsOf): a series never seen
  // needs no reopening query. Only while `find` is this class's: a subclass that reads differently
  // answers through its reads. (A static block: it reads the private namespaces, and is not part of the
  // class's declared shape.)
  static {
    Object.defineProperty(MemoryStorage.prototype, kHoldsNoBucketsOf, {
      value(this: MemoryStorage, ns: string, hasMeta: boolean, meta: unknown): boolean {
        if (this.find !== MemoryStorage.prototype.find) return false;
        // A namespace without documents holds none of any series (a new collection's first calls, each
        // series of which would otherwise be keyed twice: here and when its bucket is inserted).
        const entry = this.#namespaces.get(ns);
        if (entry === undefined || entry.docs.size === 0) return true;
        const key = hasMeta ? equalityIndexKey(meta) : '';
        return key !== undefined && !metaIndexOf(entry).byMeta.has(key);
      },
    });
  }

  /** Matching documents as stored; a filter pinning `_id` to one ObjectId is a map lookup. */
  *#matching(ns: string, filter: BucketFilter): Generator<StoredBucket> {
    const entry = this.#ns(ns);
    const { docs, live } = entry;
    const candidates = candidatesOf(entry, filter);
    let test: ((doc: StoredBucket) => boolean) | undefined;
    for (const key of candidates.keys) {
      // Only the documents a read looks at are rebuilt from their live columns.
      live.materializeOne(key, docs);
      const doc = docs.get(key);
      if (doc !== undefined && (test ??= testerOf(filter, candidates.byId))(doc)) yield doc;
    }
  }

  /**
   * Matching documents for a reader, who owns each (hand-out.ts): a bucket the catalog changed since its
   * document was last built is built for the reader and not kept (one build, no copy of it, and the
   * namespace keeps holding the lighter document it held); any other is a copy of the stored document.
   */
  *#reading(
    ns: string,
    filter: BucketFilter,
    projection: StorageProjection | undefined,
  ): Generator<StoredBucket> {
    const entry = this.#ns(ns);
    const { docs, live } = entry;
    const candidates = candidatesOf(entry, filter);
    let test: ((doc: StoredBucket) => boolean) | undefined;
    for (const key of candidates.keys) {
      const built = live.readerDocument(key, docs);
      const doc = built ?? docs.get(key);
      if (doc === undefined || !(test ??= testerOf(filter, candidates.byId))(doc)) continue;
      yield built !== undefined && projection === undefined ? built : handOut(doc, projection);
    }
  }
}

/**
 * The keys of the documents of `entry` that may match `filter`, as a new array (callers may delete while
 * iterating), and whether an `_id` condition picked them (then only the rest of the filter is tested): an
 * `_id` equal to one value or `$in` a list, a meta the index files, or every document.
 */
/** A copy of namespace options that shares nothing with the caller's (their values are scalars). */
function copyOptions(options: NamespaceOptions): NamespaceOptions {
  return { ...options, timeseries: { ...options.timeseries } };
}

function candidatesOf(
  entry: MemoryNamespace,
  filter: BucketFilter,
): { readonly keys: ReadonlyArray<string>; readonly byId: boolean } {
  const id = filter._id;
  const key = idEqualityKey(id);
  if (key !== undefined) return { keys: [key], byId: true };
  // `{_id: {$in: [...]}}` (a keyed fetch of rollup or entity documents): one lookup per value.
  const inKeys = idInKeys(id);
  if (inKeys !== undefined) return { keys: inKeys, byId: true };
  // A filter pinning meta reads only that series' buckets (the meta index); others scan.
  const metaKey = metaKeyOfFilter(filter);
  return {
    keys: metaKey === undefined ? [...entry.docs.keys()] : postingsOf(metaIndexOf(entry).byMeta, metaKey),
    byId: false,
  };
}

/**
 * How the documents {@link candidatesOf} picked are tested: the filter besides `_id` when `_id` picked them,
 * else the whole filter (`BsonQuery`: exact BSON comparison semantics, mingo for other operators; compiled
 * once there is a candidate: a series' first reopening query has none).
 */
function testerOf(filter: BucketFilter, byId: boolean): (doc: StoredBucket) => boolean {
  if (byId) return (doc) => matchesBesidesId(doc, filter);
  if (Object.keys(filter).length === 0) return () => true;
  const query = new BsonQuery(filter);
  return (doc) => query.test(doc);
}

// Compressed buckets' columns are taken from the catalog's encoders when read (or every few commits): a
// commit costs what recording its count costs, and the encoding runs a bucket at a time (subclasses too).
Object.defineProperty(MemoryStorage.prototype, kTakesDeferredColumns, { value: true });

/**
 * The buckets filed under one meta index key: one hex id, or a set of them. Most series have one bucket
 * in storage at a time (the open one) until they have run long: a set per series was most of what the
 * index cost per bucket.
 */
type MetaPostings = string | Set<string>;

/** File `hex` under `key`. */
function post(index: Map<string, MetaPostings>, key: string, hex: string): void {
  const postings = index.get(key);
  if (postings === undefined) index.set(key, hex);
  else if (typeof postings !== 'string') postings.add(hex);
  else if (postings !== hex) index.set(key, new Set([postings, hex]));
}

/** Take `hex` out of `key`'s postings. */
function unpost(index: Map<string, MetaPostings>, key: string, hex: string): void {
  const postings = index.get(key);
  if (postings === hex) index.delete(key);
  else if (typeof postings === 'object' && postings.delete(hex) && postings.size === 1) {
    index.set(key, postings.values().next().value as string);
  }
}

/** The hex ids filed under `key`, as a new array (callers may change the index while using it). */
function postingsOf(index: ReadonlyMap<string, MetaPostings>, key: string): string[] {
  const postings = index.get(key);
  if (postings === undefined) return [];
  return typeof postings === 'string' ? [postings] : [...postings];
}

/**
 * The `{meta: 1}` index of a namespace: hex ids of the buckets of each series, keyed by
 * {@link metaIndexKeys}, so that lookups by series (reopening, meta filters) read only that series'
 * buckets.
 */
interface MetaIndex {
  readonly byMeta: Map<string, MetaPostings>;
  /** The keys each document is filed under, by hex id (several for an array meta). */
  readonly metaKeyOf: Map<string, MetaKeys>;
}

/** The namespace's meta index, built from its documents the first time a read needs it. */
function metaIndexOf(entry: MemoryNamespace): MetaIndex {
  let index = entry.metaIndex;
  if (index === undefined) {
    index = { byMeta: new Map(), metaKeyOf: new Map() };
    // Every document's meta was checked when it was written (checkIndexable): none throws here.
    for (const [hex, doc] of entry.docs) postMeta(index, hex, metaIndexKeys(doc));
    entry.metaIndex = index;
  }
  return index;
}

/**
 * Throw what keying `doc` for the meta index would throw (a meta nested too deep to key, or circular),
 * so that a document the index could not hold is never stored, whether the index is built yet or not. A
 * meta of scalars, or an object of them (tags), is always keyed: it is not walked twice.
 */
function checkIndexable(doc: Readonly<Record<string, unknown>>): void {
  if (!Object.prototype.hasOwnProperty.call(doc, 'meta') || isScalarMeta(doc.meta)) return;
  const meta = doc.meta;
  if (isPlainObject(meta) && everyOwnValue(meta, isScalarMeta)) return;
  metaIndexKeys(doc);
}

/** A string, number, boolean or null: keyed without recursion or serialisation. */
function isScalarMeta(value: unknown): boolean {
  return (
    value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
  );
}

/**
 * File a document in the meta index (replacing its previous entries), or only check it while the namespace
 * has no index. Its keys are computed before anything changes, so a meta that cannot be keyed leaves the
 * index as it was.
 */
function indexMeta(entry: MemoryNamespace, hex: string, doc: StoredBucket): void {
  const index = entry.metaIndex;
  if (index === undefined) {
    checkIndexable(doc);
    return;
  }
  const keys = metaIndexKeys(doc);
  unindexMeta(entry, hex);
  postMeta(index, hex, keys);
}

/**
 * File a new document (`hex` not in the namespace) in the meta index: nothing to take out first (a
 * document leaves the index when it leaves the namespace).
 */
function indexNewMeta(entry: MemoryNamespace, hex: string, doc: StoredBucket): void {
  const index = entry.metaIndex;
  if (index === undefined) checkIndexable(doc);
  else postMeta(index, hex, metaIndexKeys(doc));
}

/** File `hex` under each of `keys`, and remember them for taking it out. */
function postMeta(index: MetaIndex, hex: string, keys: MetaKeys): void {
  if (typeof keys === 'string') post(index.byMeta, keys, hex);
  else for (const key of keys) post(index.byMeta, key, hex);
  index.metaKeyOf.set(hex, keys);
}

function unindexMeta(entry: MemoryNamespace, hex: string): void {
  const index = entry.metaIndex;
  const keys = index?.metaKeyOf.get(hex);
  if (index === undefined || keys === undefined) return;
  index.metaKeyOf.delete(hex);
  if (typeof keys === 'string') unpost(index.byMeta, keys, hex);
  else for (const key of keys) unpost(index.byMeta, key, hex);
}

/**
 * The meta index key a filter pins, if it pins one: `meta: <value>` (a value that is not an operator
 * object) or `meta: {$exists: false}`, at the top level or in a top-level `$and`.
 */
function metaKeyOfFilter(filter: BucketFilter): string | undefined {
  const direct = metaConditionKey(filter);
  if (direct !== undefined) return direct;
  const and = filter.$and;
  if (!Array.isArray(and)) return undefined;
  for (const clause of and as unknown[]) {
    if (typeof clause === 'object' && clause !== null) {
      const key = metaConditionKey(clause as BucketFilter);
      if (key !== undefined) return key;
    }
  }
  return undefined;
}

function metaConditionKey(filter: BucketFilter): string | undefined {
  if (!Object.prototype.hasOwnProperty.call(filter, 'meta')) return undefined;
  const condition = filter.meta;
  if (isPlainObject(condition)) {
    const keys = Object.keys(condition);
    if (keys.some((k) => k.startsWith('$'))) {
      if (keys.length !== 1) return undefined;
      if (condition.$exists === false) return '';
      // `$eq` compares its value whole, even a document whose field names look like operators.
      return keys[0] === '$eq' ? equalityIndexKey(condition.$eq) : undefined;
    }
  }
  return equalityIndexKey(condition);
}

/** Outcomes shared by every write they describe (read-only). */
const kApplied: BucketWriteOutcome = Object.freeze({ kind: 'applied' });
const kNotMatched: BucketWriteOutcome = Object.freeze({ kind: 'notMatched' });
const kNotApplied: BucketWriteOutcome = Object.freeze({ kind: 'notApplied' });
/** Counter document keys memoised (about the documents written per slot across every rollup). */
const kMaxCounterKeys = 16_384;
/** Results of updateOne and applyCounters, shared (a settled promise is immutable). */
const kUpdated: StorageUpdateResult = Object.freeze({ kind: 'updated' });
const kNotMatchedUpdate: StorageUpdateResult = Object.freeze({ kind: 'notMatched' });
const kCountersUpdated: Promise<'updated'> = Promise.resolve('updated');
const kCountersInserted: Promise<'inserted'> = Promise.resolve('inserted');
const kCountersNotMatched: Promise<'notMatched'> = Promise.resolve('notMatched');

/** MongoDB's duplicate `_id` error. */
function duplicateKey(ns: string, key: string): TimeseriesError {
  return new TimeseriesError(
    'DuplicateKey',
    `E11000 duplicate key error collection: ${ns} dup key: { _id: ${key} }`,
  );
}

/** The outcome of a synchronous step as a promise: what it throws becomes a rejection, as storages fail. */
function settle<T>(step: () => T): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function isPipeline(
  update: BucketUpdateDocument,
): update is ReadonlyArray<Readonly<Record<string, unknown>>> {
  return Array.isArray(update);
}

/**
 * The map key of an `_id`: an ObjectId's hex (buckets), `s<string>` for a string (rollup documents), and
 * for other values (entity documents keyed by a sensor id) a key equal for `_id`s MongoDB's unique index
 * treats as equal. No ObjectId hex starts with `s` or `k`.
 */
function idKey(id: unknown): string {
  if (isBsonValue(id, 'ObjectId')) return objectIdHex(id);
  if (typeof id === 'string') return `s${id}`;
  if (
    id === undefined ||
    Array.isArray(id) ||
    (isPlainObject(id) && Object.keys(id).some((k) => k.startsWith('$')))
  ) {
    throw new TimeseriesError('BadValue', 'a document _id must be a value that is not an array', {
      field: '_id',
    });
  }
  const key = equalityKey(id);
  if (key !== '#') return `k${key}`;
  const holder: Record<string, unknown> = {};
  defineField(holder, '', id);
  return `kb${Buffer.from(serialize(holder)).toString('hex')}`;
}

/** The keys of `{$in: [...]}` over strings, ObjectIds and safe integers (deduplicated), if it is one. */
function idInKeys(id: unknown): ReadonlyArray<string> | undefined {
  if (!isPlainObject(id)) return undefined;
  const names = Object.keys(id);
  const values = id.$in;
  if (names.length !== 1 || !Array.isArray(values)) return undefined;
  const keys = new Set<string>();
  for (const v of values as unknown[]) {
    const k = idEqualityKey(v);
    if (k === undefined) return undefined;
    keys.add(k);
  }
  return [...keys];
}

/** The key of an `_id` equality condition (a value that is not an operator document), if it is one. */
function idEqualityKey(id: unknown): string | undefined {
  if (isBsonValue(id, 'ObjectId')) return objectIdHex(id);
  if (typeof id === 'string') return `s${id}`;
  if (typeof id === 'number' && Number.isSafeInteger(id)) return `kn${id === 0 ? 0 : id}`;
  return undefined;
}

/**
 * Whether `doc` (found by `_id`) matches the rest of `filter`: a commit's `$exists` guard is evaluated
 * directly, anything else with a compiled query.
 */
function matchesBesidesId(doc: StoredBucket, filter: BucketFilter): boolean {
  return matchExistsFilter(doc, filter) ?? new BsonQuery(withoutId(filter)).test(doc);
}

function withoutId(filter: BucketFilter): BucketFilter {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filter)) if (k !== '_id') defineField(rest, k, v);
  return rest;
}

function withoutSetOnInsert(update: BucketUpdateDocument): BucketUpdateDocument {
  if (isPipeline(update) || !Object.prototype.hasOwnProperty.call(update, '$setOnInsert')) return update;
  const { $setOnInsert: _ignored, ...rest } = update;
  return rest;
}

function setOnInsertAsSet(update: BucketUpdateDocument): BucketUpdateDocument {
  if (isPipeline(update) || !Object.prototype.hasOwnProperty.call(update, '$setOnInsert')) return update;
  const { $setOnInsert: insert, ...rest } = update;
  const set = { ...(isPlainObject(rest.$set) ? rest.$set : {}), ...(insert as Record<string, unknown>) };
  return { ...rest, $set: set };
}
