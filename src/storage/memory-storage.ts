import { calculateObjectSize, ObjectId } from 'bson';
import { Query } from 'mingo';
import { update as applyUpdate, updateOne } from 'mingo/updater';
import type { PipelineStage } from 'mingo/updater';

import { TimeseriesError } from '../errors.js';
import { defineField } from '../util/safe-record.js';
import { applySetFieldPipeline, isSetFieldPipeline } from './set-field-pipeline.js';
import { applySetUpdate, matchExistsFilter } from './set-update.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  NamespaceOptions,
  Storage,
  StorageFindOptions,
  StorageIndex,
  StorageUpdateResult,
  StoredBucket,
} from './storage.js';

/** One buckets collection held in memory. */
interface MemoryNamespace {
  /** Documents by hex `_id`, in insertion order (a clustered collection's natural order is `_id` order). */
  readonly docs: Map<string, StoredBucket>;
  /** Indexes by name (metadata only; lookups by `_id` use the map). */
  readonly indexes: Map<string, StorageIndex>;
}

/**
 * The embedded default {@link Storage}: bucket documents kept as plain objects in memory, filters and
 * updates evaluated with `mingo` (MongoDB query and update semantics on plain objects).
 *
 * Updates are applied in place with the changed paths only, so a commit's cost does not grow with the
 * size of its bucket. Filters that pin `_id` to one ObjectId are answered by a map lookup.
 *
 * @example
 * ```ts
 * const engine = new BucketEngine({ storage: new MemoryStorage() });
 * ```
 */
export class MemoryStorage implements Storage {
  readonly #namespaces = new Map<string, MemoryNamespace>();

  #ns(ns: string): MemoryNamespace {
    let entry = this.#namespaces.get(ns);
    if (entry === undefined) {
      entry = { docs: new Map(), indexes: new Map() };
      this.#namespaces.set(ns, entry);
    }
    return entry;
  }

  /** {@inheritDoc Storage.createNamespace} */
  createNamespace(ns: string, _options?: NamespaceOptions): Promise<void> {
    this.#ns(ns);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.dropNamespace} */
  dropNamespace(ns: string): Promise<void> {
    this.#namespaces.delete(ns);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.insertOne} */
  insertOne(ns: string, doc: StoredBucket): Promise<void> {
    const key = idKey(doc._id);
    const { docs } = this.#ns(ns);
    if (docs.has(key)) {
      return Promise.reject(
        new TimeseriesError(
          'DuplicateKey',
          `E11000 duplicate key error collection: ${ns} dup key: { _id: ${key} }`,
        ),
      );
    }
    docs.set(key, doc);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.updateOne} */
  updateOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<StorageUpdateResult> {
    const doc = this.#findOne(ns, filter);
    if (doc === undefined) return Promise.resolve({ kind: 'notMatched' });
    this.#apply(ns, doc, update, 'none');
    return Promise.resolve({ kind: 'updated' });
  }

  /** {@inheritDoc Storage.replaceOne} */
  replaceOne(ns: string, filter: BucketFilter, doc: StoredBucket): Promise<StorageUpdateResult> {
    const existing = this.#findOne(ns, filter);
    if (existing === undefined) return Promise.resolve({ kind: 'notMatched' });
    this.#ns(ns).docs.set(idKey(existing._id), doc);
    return Promise.resolve({ kind: 'updated' });
  }

  /** {@inheritDoc Storage.updateMany} */
  updateMany(ns: string, filter: BucketFilter, update: BucketUpdateDocument): Promise<number> {
    let n = 0;
    for (const doc of this.#matching(ns, filter)) {
      this.#apply(ns, doc, update, 'copy');
      n++;
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
      const query = new Query(filter, {});
      let cursor = query.find<StoredBucket>([...this.#ns(ns).docs.values()], projection).sort(sort);
      if (limit !== undefined && limit > 0) cursor = cursor.limit(limit);
      for (const doc of cursor.all()) yield doc;
      return;
    }
    let n = 0;
    for (const doc of this.#matching(ns, filter)) {
      if (limit !== undefined && limit > 0 && n >= limit) return;
      n++;
      yield projection === undefined ? doc : project(doc, projection);
      // Yield to the event loop between documents is implicit in async generators; documents added or
      // removed meanwhile are seen or not, as with a MongoDB cursor.
    }
  }

  /** {@inheritDoc Storage.deleteMany} */
  deleteMany(ns: string, filter: BucketFilter): Promise<number> {
    const { docs } = this.#ns(ns);
    const doomed = [...this.#matching(ns, filter)];
    for (const doc of doomed) docs.delete(idKey(doc._id));
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
    for (const doc of this.#ns(ns).docs.values()) total += calculateObjectSize(doc);
    return Promise.resolve(total);
  }

  /** {@inheritDoc Storage.createIndex} */
  createIndex(ns: string, index: StorageIndex): Promise<void> {
    this.#ns(ns).indexes.set(index.name, index);
    return Promise.resolve();
  }

  /** {@inheritDoc Storage.listIndexes} */
  listIndexes(ns: string): Promise<ReadonlyArray<StorageIndex>> {
    return Promise.resolve([...this.#ns(ns).indexes.values()]);
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
   * never mutated afterwards, so they can be stored without copying.
   */
  #apply(ns: string, doc: StoredBucket, update: BucketUpdateDocument, cloneMode: 'none' | 'copy'): void {
    if (isPipeline(update)) {
      if (isSetFieldPipeline(update)) {
        applySetFieldPipeline(doc, update);
        return;
      }
      const docs = [doc];
      updateOne(docs, {}, update as PipelineStage[], { cloneMode });
      this.#ns(ns).docs.set(idKey(doc._id), docs[0] as StoredBucket);
      return;
    }
    if (cloneMode === 'none' && applySetUpdate(doc, update)) return;
    applyUpdate(doc, update, undefined, undefined, { cloneMode });
  }

  #findOne(ns: string, filter: BucketFilter): StoredBucket | undefined {
    for (const doc of this.#matching(ns, filter)) return doc;
    return undefined;
  }

  /** Matching documents; a filter pinning `_id` to one ObjectId is a map lookup. */
  *#matching(ns: string, filter: BucketFilter): Generator<StoredBucket> {
    const { docs } = this.#ns(ns);
    const id = filter._id;
    const rest = id instanceof ObjectId ? withoutId(filter) : filter;
    if (id instanceof ObjectId) {
      const doc = docs.get(id.toHexString());
      if (doc === undefined) return;
      // A commit's guard is answered without compiling a query.
      const fast = matchExistsFilter(doc, rest);
      if (fast ?? new Query(rest, {}).test(doc)) yield doc;
      return;
    }
    const query = Object.keys(rest).length === 0 ? undefined : new Query(rest, {});
    // Snapshot the values: callers may delete while iterating.
    for (const doc of [...docs.values()]) {
      if (query === undefined || query.test(doc)) yield doc;
    }
  }
}

function isPipeline(
  update: BucketUpdateDocument,
): update is ReadonlyArray<Readonly<Record<string, unknown>>> {
  return Array.isArray(update);
}

function idKey(id: unknown): string {
  if (id instanceof ObjectId) return id.toHexString();
  throw new TimeseriesError('BadValue', 'bucket documents must have an ObjectId _id', { field: '_id' });
}

function withoutId(filter: BucketFilter): BucketFilter {
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(filter)) if (k !== '_id') defineField(rest, k, v);
  return rest;
}

function project(doc: StoredBucket, projection: NonNullable<StorageFindOptions['projection']>): StoredBucket {
  const [out] = new Query({}, {}).find<StoredBucket>([doc], projection).all();
  return out ?? {};
}
