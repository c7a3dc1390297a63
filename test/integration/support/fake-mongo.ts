/**
 * A driver-shaped, in-memory MongoDB for tests without a server: `FakeDb` / `FakeCollection` implement the
 * `Db` / `Collection` methods MongoStorage uses (`MongoDbLike`), typed with the driver's own option and
 * result types, with MongoDB semantics from mingo.
 *
 * Fidelity choices:
 * - documents are stored as BSON bytes (serialized like the driver does, with the driver's own copy of
 *   js-bson) and deserialized on every read
 *   with the caller's BSON options (`promoteValues`, ...), so types, copies and field order behave as over
 *   the wire;
 * - filters, sorts and counts are evaluated on a promoted view (numbers as JS numbers), as the server
 *   compares numbers across types; updates are applied to the unpromoted view, so untouched values keep
 *   their BSON types;
 * - errors are the driver's classes (`MongoServerError` with the server's code and codeName,
 *   `MongoInvalidArgumentError`), and `create` of an existing namespace fails with `NamespaceExists` as
 *   servers before 7.0 do;
 * - faults can be queued per operation: fail `'before'` applying (nothing written) or `'after'` applying
 *   (the write happened but its reply was lost).
 */
import { BSON, MongoInvalidArgumentError, MongoServerError } from 'mongodb';
import { Aggregator, Context, Query, updateMany as mingoUpdateMany } from 'mingo';
import { evalExpr } from 'mingo/core';
import type { PipelineStage } from 'mingo/updater';
import type {
  AggregateOptions,
  AnyBulkWriteOperation,
  BulkWriteOptions,
  BulkWriteResult,
  CollectionInfo,
  CreateCollectionOptions,
  CreateIndexesOptions,
  DeleteResult,
  Document,
  Filter,
  FindOptions,
  IndexSpecification,
  InsertOneResult,
  UpdateFilter,
  UpdateOptions,
  UpdateResult,
} from 'mongodb';

import type { MongoCollectionLike, MongoCursorLike, MongoDbLike } from '../../../src/mongodb/index.js';
import { isBsonValue } from '../../../src/util/bson-type.js';

// The driver's own copy of js-bson (its CommonJS build, not this package's ESM import): documents come
// back as the real driver returns them, so a check that only holds for one copy of bson fails here too.
const { EJSON, ObjectId, calculateObjectSize, deserialize, serialize } = BSON;
type DeserializeOptions = BSON.DeserializeOptions;

/** Operations that can be made to fail. */
export type FakeOperation =
  | 'insertOne'
  | 'bulkWrite'
  | 'updateOne'
  | 'replaceOne'
  | 'updateMany'
  | 'find'
  | 'deleteMany'
  | 'countDocuments'
  | 'aggregate'
  | 'createIndex'
  | 'listIndexes'
  | 'dropIndex'
  | 'createCollection'
  | 'listCollections'
  | 'dropCollection'
  | 'command';

/** A queued fault. */
export interface FakeFault {
  /** The operation it applies to. */
  readonly op: FakeOperation;
  /** Only for this collection (any when omitted). */
  readonly collection?: string;
  /** `'before'`: throw without applying; `'after'`: apply, then throw (a lost reply). */
  readonly when: 'before' | 'after';
  /** What to throw. */
  readonly error: Error;
}

interface CollectionState {
  readonly docs: Map<string, Uint8Array>;
  readonly indexes: Map<string, Document>;
}

interface ViewState {
  readonly info: CollectionInfo;
}

const kSerializeOptions = { checkKeys: false, ignoreUndefined: false, serializeFunctions: false } as const;
const kPromoted: DeserializeOptions = { promoteValues: true, promoteLongs: true };
const kUnpromoted: DeserializeOptions = { promoteValues: false };

/** `$bsonSize`, which mingo lacks: the BSON size of the evaluated value (server 4.4+). */
function bsonSize(obj: unknown, expr: unknown, options: unknown): unknown {
  const v = evalExpr(obj, expr, options as Parameters<typeof evalExpr>[2]);
  return v == null ? null : calculateObjectSize(v);
}
const kBsonSizeContext = Context.init({ expression: { $bsonSize: bsonSize } });

const kGranularitySpans: Readonly<Record<string, number>> = { seconds: 3600, minutes: 86400, hours: 2592000 };

/**
 * An in-memory database with the driver `Db` shape.
 */
export class FakeDb implements MongoDbLike {
  readonly databaseName: string;
  /** Faults consumed in order by the first matching operation. */
  readonly faults: FakeFault[] = [];
  /**
   * Write errors of single writes, in order: the first lets `skip` writes (`bulkWrite` operations,
   * `insertOne`s and `updateOne`s, counted across calls) succeed, then fails the next one with `error` (in
   * a `bulkWrite`, a write error at its index).
   */
  readonly operationFaults: Array<{ skip: number; readonly error: MongoServerError }> = [];
  /** Every operation as `op:collection`, in call order. */
  readonly calls: string[] = [];
  readonly #collections = new Map<string, CollectionState>();
  readonly #views = new Map<string, ViewState>();

  /** Whether collections have `bulkWrite` (false: a driver shape without it, one write per bucket). */
  bulkWrite = true;

  constructor(databaseName = 'fakedb') {
    this.databaseName = databaseName;
  }

  collection(name: string): FakeCollection {
    return new FakeCollection(this, name);
  }

  /** Collection names (not views). */
  collectionNames(): string[] {
    return [...this.#collections.keys()];
  }

  /** Raw stored documents of a collection, deserialized with `options`. */
  rawDocuments(name: string, options: DeserializeOptions = kUnpromoted): Document[] {
    return [...(this.#collections.get(name)?.docs.values() ?? [])].map((b) => deserialize(b, options));
  }

  /** @internal state of a collection, created on first write like the server. */
  state(name: string, create: 'create' | 'lookup'): CollectionState | undefined {
    let s = this.#collections.get(name);
    if (s === undefined && create === 'create') {
      if (this.#views.has(name))
        throw serverError(
          166,
          'CommandNotSupportedOnView',
          `Namespace ${this.databaseName}.${name} is a view, not a collection`,
        );
      s = { docs: new Map(), indexes: new Map() };
      this.#collections.set(name, s);
    }
    return s;
  }

  /**
   * @internal meet the next operation fault at a write: a `bulkWrite` operation, an `insertOne` or an
   * `updateOne` (throws when it fails it).
   */
  operationFault(): void {
    const f = this.operationFaults[0];
    if (f === undefined) return;
    if (f.skip > 0) {
      f.skip--;
      return;
    }
    this.operationFaults.shift();
    throw f.error;
  }

  /** @internal consume a matching fault at a point of an operation. */
  async fault(op: FakeOperation, collection: string, when: 'before' | 'after'): Promise<void> {
    if (when === 'before') {
      this.calls.push(`${op}:${collection}`);
      // Let other writers run between operations, as over a network.
      await Promise.resolve();
      await Promise.resolve();
    }
    const i = this.faults.findIndex(
      (f) => f.op === op && f.when === when && (f.collection === undefined || f.collection === collection),
    );
    if (i < 0) return;
    const [f] = this.faults.splice(i, 1);
    throw f!.error;
  }

  async createCollection(name: string, options: CreateCollectionOptions = {}): Promise<FakeCollection> {
    await this.fault('createCollection', name, 'before');
    if (this.#collections.has(name) || this.#views.has(name)) {
      throw serverError(48, 'NamespaceExists', `Collection ${this.databaseName}.${name} already exists.`);
    }
    const { timeseries, expireAfterSeconds } = options;
    if (timeseries !== undefined) {
      const ts: Document = { ...timeseries };
      if (ts.granularity === undefined && ts.bucketMaxSpanSeconds === undefined) ts.granularity = 'seconds';
      if (typeof ts.granularity === 'string') ts.bucketMaxSpanSeconds = kGranularitySpans[ts.granularity];
      this.#views.set(name, {
        info: {
          name,
          type: 'timeseries',
          options: { timeseries: ts, ...(expireAfterSeconds === undefined ? {} : { expireAfterSeconds }) },
          info: { readOnly: false },
        },
      });
      const buckets = this.state(`system.buckets.${name}`, 'create')!;
      // MongoDB 6.3+ creates the {meta, control.min.<time>, control.max.<time>} index for a metaField.
      if (typeof timeseries.metaField === 'string') {
        const t = timeseries.timeField;
        const indexName = `${timeseries.metaField}_1_${t}_1`;
        buckets.indexes.set(indexName, {
          v: 2,
          key: { meta: 1, [`control.min.${t}`]: 1, [`control.max.${t}`]: 1 },
          name: indexName,
          originalSpec: { key: { [timeseries.metaField]: 1, [t]: 1 }, name: indexName, v: 2 },
        });
      }
    } else {
      this.state(name, 'create');
    }
    await this.fault('createCollection', name, 'after');
    return this.collection(name);
  }

  listCollections(filter: Document, _options: { nameOnly: false }): MongoCursorLike<CollectionInfo> {
    return new FakeCursor(async () => {
      await this.fault('listCollections', '', 'before');
      const infos: CollectionInfo[] = [...this.#views.values()].map((v) => v.info);
      for (const name of this.#collections.keys()) infos.push({ name, type: 'collection', options: {} });
      const query = new Query(filter);
      return infos.filter((i) => query.test(i));
    });
  }

  async dropCollection(name: string): Promise<boolean> {
    await this.fault('dropCollection', name, 'before');
    const view = this.#views.delete(name);
    if (view) this.#collections.delete(`system.buckets.${name}`);
    return this.#collections.delete(name) || view;
  }

  /** `Db.command`: only `collMod` of a time-series collection's bucketing options and TTL. */
  async command(command: Document): Promise<Document> {
    const name = String(command.collMod);
    await this.fault('command', name, 'before');
    const view = this.#views.get(name);
    if (command.collMod === undefined || view === undefined) {
      throw serverError(26, 'NamespaceNotFound', `ns does not exist: ${this.databaseName}.${name}`);
    }
    const options = view.info.options as Document;
    const ts: Document = { ...(options.timeseries as Document), ...(command.timeseries as Document) };
    if (typeof ts.granularity === 'string') {
      ts.bucketMaxSpanSeconds = kGranularitySpans[ts.granularity];
      delete ts.bucketRoundingSeconds;
    } else {
      delete ts.granularity;
    }
    options.timeseries = ts;
    if (command.expireAfterSeconds === 'off') delete options.expireAfterSeconds;
    else if (typeof command.expireAfterSeconds === 'number')
      options.expireAfterSeconds = command.expireAfterSeconds;
    return { ok: 1 };
  }
}

/** A collection handle with the driver `Collection` shape. */
export class FakeCollection implements MongoCollectionLike {
  readonly collectionName: string;
  readonly #db: FakeDb;

  /** {@inheritDoc MongoCollectionLike.bulkWrite} (absent when the database's `bulkWrite` is off). */
  readonly bulkWrite?: (
    operations: AnyBulkWriteOperation[],
    options?: BulkWriteOptions,
  ) => Promise<BulkWriteResult>;

  constructor(db: FakeDb, name: string) {
    this.#db = db;
    this.collectionName = name;
    if (db.bulkWrite) this.bulkWrite = (operations, options) => this.#bulkWrite(operations, options);
  }

  get #ns(): string {
    return `${this.#db.databaseName}.${this.collectionName}`;
  }

  async insertOne(doc: Document): Promise<InsertOneResult> {
    await this.#db.fault('insertOne', this.collectionName, 'before');
    this.#db.operationFault();
    this.#insert(doc);
    await this.#db.fault('insertOne', this.collectionName, 'after');
    return { acknowledged: true, insertedId: doc._id as BSON.ObjectId };
  }

  /**
   * The driver's `bulkWrite` for `insertOne` and `updateOne` operations: one round trip (one fault point
   * before, one after). Per-operation failures are thrown as the driver's `MongoBulkWriteError` is: its
   * `writeErrors` (`index`, `code`, `errmsg`) and `result` (counts of what was done); ordered stops at the
   * first.
   */
  async #bulkWrite(
    operations: AnyBulkWriteOperation[],
    options: BulkWriteOptions = {},
  ): Promise<BulkWriteResult> {
    await this.#db.fault('bulkWrite', this.collectionName, 'before');
    const ordered = options.ordered ?? true;
    const counts = { insertedCount: 0, matchedCount: 0, modifiedCount: 0, deletedCount: 0, upsertedCount: 0 };
    const writeErrors: Array<{ index: number; code: unknown; errmsg: string }> = [];
    for (let index = 0; index < operations.length; index++) {
      const op = operations[index] as Document;
      try {
        this.#db.operationFault();
        if (op.insertOne !== undefined) {
          this.#insert((op.insertOne as { document: Document }).document);
          counts.insertedCount++;
        } else if (op.updateOne !== undefined) {
          const { filter, update } = op.updateOne as {
            filter: Filter<Document>;
            update: Document | Document[];
          };
          checkUpdate(update);
          const result = this.#update(filter, update, 'one');
          counts.matchedCount += result.matchedCount;
          counts.modifiedCount += result.modifiedCount;
        } else {
          throw new MongoInvalidArgumentError(
            `fake bulkWrite supports insertOne and updateOne, got ${Object.keys(op).join()}`,
          );
        }
      } catch (error) {
        if (!(error instanceof MongoServerError)) throw error;
        writeErrors.push({ index, code: error.code, errmsg: error.errmsg });
        if (ordered) break;
      }
    }
    await this.#db.fault('bulkWrite', this.collectionName, 'after');
    const result = { ok: 1, ...counts, insertedIds: {}, upsertedIds: {} };
    if (writeErrors.length > 0) {
      throw Object.assign(new Error(writeErrors[0]!.errmsg), {
        name: 'MongoBulkWriteError',
        code: writeErrors[0]!.code,
        writeErrors,
        result,
      });
    }
    return result as unknown as BulkWriteResult;
  }

  #insert(doc: Document): void {
    // The driver adds an _id to the caller's document when it has none.
    if (!('_id' in doc)) doc._id = new ObjectId();
    const state = this.#db.state(this.collectionName, 'create')!;
    const key = idKey(doc._id);
    if (state.docs.has(key)) {
      throw serverError(
        11000,
        'DuplicateKey',
        `E11000 duplicate key error collection: ${this.#ns} index: _id_ dup key: { _id: ${EJSON.stringify(doc._id)} }`,
        {
          keyPattern: { _id: 1 },
          keyValue: { _id: doc._id as unknown },
        },
      );
    }
    state.docs.set(key, serialize(doc, kSerializeOptions));
  }

  async updateOne(
    filter: Filter<Document>,
    update: UpdateFilter<Document> | Document[],
    options: UpdateOptions = {},
  ): Promise<UpdateResult> {
    await this.#db.fault('updateOne', this.collectionName, 'before');
    this.#db.operationFault();
    checkUpdate(update);
    let result = this.#update(filter, update, 'one');
    if (options.upsert === true && result.matchedCount === 0) result = this.#upsert(filter, update);
    await this.#db.fault('updateOne', this.collectionName, 'after');
    return result;
  }

  /** The server's upsert: a document from the filter's equality fields, then the update as an insert. */
  #upsert(filter: Filter<Document>, update: UpdateFilter<Document> | Document[]): UpdateResult {
    const seed: Document = {};
    for (const [k, v] of Object.entries(filter as Document)) {
      const operator =
        typeof v === 'object' && v !== null && Object.keys(v as object).some((x) => x.startsWith('$'));
      if (!k.startsWith('$') && !operator) seed[k] = v as unknown;
    }
    seed._id ??= new ObjectId();
    const docs = [seed];
    const modifier = Array.isArray(update) ? update : setOnInsertAsSet(update);
    mingoUpdateMany(docs, {}, modifier as PipelineStage[], { cloneMode: 'none' });
    const state = this.#db.state(this.collectionName, 'create')!;
    state.docs.set(idKey(docs[0]!._id), serialize(docs[0]!, kSerializeOptions));
    return {
      acknowledged: true,
      matchedCount: 0,
      modifiedCount: 0,
      upsertedCount: 1,
      upsertedId: seed._id as BSON.ObjectId,
    };
  }

  async updateMany(
    filter: Filter<Document>,
    update: UpdateFilter<Document> | Document[],
  ): Promise<UpdateResult> {
    await this.#db.fault('updateMany', this.collectionName, 'before');
    checkUpdate(update);
    const result = this.#update(filter, update, 'many');
    await this.#db.fault('updateMany', this.collectionName, 'after');
    return result;
  }

  async replaceOne(filter: Filter<Document>, replacement: Document): Promise<UpdateResult> {
    await this.#db.fault('replaceOne', this.collectionName, 'before');
    if (Object.keys(replacement).some((k) => k.startsWith('$'))) {
      throw new MongoInvalidArgumentError('Replacement document must not contain atomic operators');
    }
    const [key] = this.#matching(filter, 'one');
    let matchedCount = 0;
    let modifiedCount = 0;
    if (key !== undefined) {
      const state = this.#db.state(this.collectionName, 'lookup')!;
      const old = deserialize(state.docs.get(key)!, kUnpromoted);
      if ('_id' in replacement && idKey(replacement._id) !== key) {
        throw serverError(
          66,
          'ImmutableField',
          "After applying the update, the (immutable) field '_id' was found to have been altered",
        );
      }
      const bytes = serialize({ _id: old._id as unknown, ...replacement }, kSerializeOptions);
      matchedCount = 1;
      if (!Buffer.from(bytes).equals(state.docs.get(key)!)) modifiedCount = 1;
      state.docs.set(key, bytes);
    }
    await this.#db.fault('replaceOne', this.collectionName, 'after');
    return { acknowledged: true, matchedCount, modifiedCount, upsertedCount: 0, upsertedId: null };
  }

  find(filter: Filter<Document>, options: FindOptions = {}): MongoCursorLike<Document> {
    return new FakeCursor(async () => {
      await this.#db.fault('find', this.collectionName, 'before');
      const state = this.#db.state(this.collectionName, 'lookup');
      if (state === undefined) return [];
      let keys = this.#matching(filter, 'many');
      if (options.sort !== undefined) {
        const byObject = new Map<object, string>();
        const promoted = keys.map((k) => {
          const d = deserialize(state.docs.get(k)!, kPromoted);
          byObject.set(d, k);
          return d;
        });
        const sorted = new Query({})
          .find<Document>(promoted)
          .sort(options.sort as Record<string, 1 | -1>)
          .all();
        keys = sorted.map((d) => byObject.get(d)!);
      }
      if (options.limit !== undefined && options.limit !== 0) keys = keys.slice(0, Math.abs(options.limit));
      const readOptions = bsonReadOptions(options);
      return keys.map((k) => {
        const doc = deserialize(state.docs.get(k)!, readOptions);
        return options.projection === undefined ? doc : project(doc, options.projection);
      });
    });
  }

  async deleteMany(filter: Filter<Document>): Promise<DeleteResult> {
    await this.#db.fault('deleteMany', this.collectionName, 'before');
    const state = this.#db.state(this.collectionName, 'lookup');
    const keys = state === undefined ? [] : this.#matching(filter, 'many');
    for (const k of keys) state?.docs.delete(k);
    await this.#db.fault('deleteMany', this.collectionName, 'after');
    return { acknowledged: true, deletedCount: keys.length };
  }

  async countDocuments(filter: Filter<Document> = {}): Promise<number> {
    await this.#db.fault('countDocuments', this.collectionName, 'before');
    return this.#db.state(this.collectionName, 'lookup') === undefined
      ? 0
      : this.#matching(filter, 'many').length;
  }

  /**
   * Runs the pipeline with mingo on the unpromoted documents (exact `$bsonSize`). A leading `$match` is
   * answered as `find` answers its filter: on unpromoted documents mingo would compare the classes of
   * numbers (an int32 1 and a double 1 are equal to the server).
   */
  aggregate(pipeline: Document[], options: AggregateOptions = {}): MongoCursorLike<Document> {
    return new FakeCursor(async () => {
      await this.#db.fault('aggregate', this.collectionName, 'before');
      const first = pipeline[0];
      const match =
        first !== undefined && Object.keys(first).length === 1 && Object.hasOwn(first, '$match')
          ? (first.$match as Filter<Document>)
          : undefined;
      const docs =
        match === undefined
          ? this.#db.rawDocuments(this.collectionName, kUnpromoted)
          : this.#matching(match, 'many').map((key) =>
              deserialize(this.#db.state(this.collectionName, 'lookup')!.docs.get(key)!, kUnpromoted),
            );
      const stages = match === undefined ? pipeline : pipeline.slice(1);
      const out =
        stages.length === 0
          ? docs
          : new Aggregator(stages, { context: kBsonSizeContext }).run<Document>(docs);
      // Round-trip through BSON like a reply from the server.
      return out.map((d) => deserialize(serialize(d, kSerializeOptions), bsonReadOptions(options)));
    });
  }

  async createIndex(indexSpec: IndexSpecification, options: CreateIndexesOptions = {}): Promise<string> {
    await this.#db.fault('createIndex', this.collectionName, 'before');
    const key = indexSpec as Document;
    const name =
      options.name ??
      Object.entries(key)
        .map(([k, v]) => `${k}_${String(v)}`)
        .join('_');
    const state = this.#db.state(this.collectionName, 'create')!;
    const existing = state.indexes.get(name);
    const { name: _name, ...rest } = options;
    const spec: Document = { v: 2, key, name, ...rest };
    if (existing !== undefined) {
      if (EJSON.stringify(existing.key) !== EJSON.stringify(spec.key)) {
        throw serverError(
          86,
          'IndexKeySpecsConflict',
          `An existing index has the same name but a different key: ${name}`,
        );
      }
      if (EJSON.stringify(existing) !== EJSON.stringify(spec)) {
        throw serverError(
          85,
          'IndexOptionsConflict',
          `An existing index has the same name as the requested index: ${name}`,
        );
      }
    } else {
      state.indexes.set(name, spec);
    }
    await this.#db.fault('createIndex', this.collectionName, 'after');
    return name;
  }

  listIndexes(): MongoCursorLike<Document> {
    return new FakeCursor(async () => {
      await this.#db.fault('listIndexes', this.collectionName, 'before');
      const state = this.#db.state(this.collectionName, 'lookup');
      if (state === undefined) throw serverError(26, 'NamespaceNotFound', `ns does not exist: ${this.#ns}`);
      return [{ v: 2, key: { _id: 1 }, name: '_id_' }, ...state.indexes.values()].map((d) =>
        deserialize(serialize(d)),
      );
    });
  }

  async dropIndex(indexName: string): Promise<Document> {
    await this.#db.fault('dropIndex', this.collectionName, 'before');
    const state = this.#db.state(this.collectionName, 'lookup');
    if (state === undefined) throw serverError(26, 'NamespaceNotFound', `ns not found ${this.#ns}`);
    if (!state.indexes.delete(indexName)) {
      throw serverError(27, 'IndexNotFound', `index not found with name [${indexName}]`);
    }
    await this.#db.fault('dropIndex', this.collectionName, 'after');
    return { nIndexesWas: state.indexes.size + 2, ok: 1 };
  }

  /** Keys of matching documents in natural (insertion) order. */
  #matching(sent: Filter<Document>, which: 'one' | 'many'): string[] {
    const state = this.#db.state(this.collectionName, 'lookup');
    if (state === undefined) return [];
    // The filter as the server receives it: serialized by the driver's bson, whatever copy made its values.
    const filter = deserialize(serialize({ filter: sent }, kSerializeOptions), kPromoted).filter as Document;
    const query = new Query(withPublicComparisons(filter) as Filter<Document>);
    const out: string[] = [];
    // A filter pinning `_id` to an ObjectId is answered by the _id index.
    const id: unknown = filter._id;
    if (isBsonValue(id, 'ObjectId')) {
      const bytes = state.docs.get(id.toHexString());
      return bytes !== undefined && query.test(deserialize(bytes, kPromoted)) ? [id.toHexString()] : [];
    }
    for (const [k, bytes] of state.docs) {
      if (query.test(deserialize(bytes, kPromoted))) {
        out.push(k);
        if (which === 'one') break;
      }
    }
    return out;
  }

  #update(
    filter: Filter<Document>,
    update: UpdateFilter<Document> | Document[],
    which: 'one' | 'many',
  ): UpdateResult {
    const state = this.#db.state(this.collectionName, 'lookup');
    const keys = this.#matching(filter, which);
    let modifiedCount = 0;
    for (const k of keys) {
      const before = state!.docs.get(k)!;
      // Other collections (rollups: $inc, $min, $max, pipelines) need numbers mingo can add: promoted
      // values (the serializer writes integers back as int32, as the server keeps them).
      const docs = [deserialize(before, isBucketsCollection(this.collectionName) ? kUnpromoted : kPromoted)];
      // mingo's root updater has every expression operator. cloneMode 'none': the document is serialized
      // right away, nothing keeps references to the update.
      // `$setOnInsert` does nothing to an existing document (mingo does not know it).
      mingoUpdateMany(docs, {}, withoutSetOnInsert(update) as PipelineStage[], { cloneMode: 'none' });
      setBinaries(docs[0]!, update);
      const after = serialize(docs[0]!, kSerializeOptions);
      if (!Buffer.from(after).equals(before)) modifiedCount++;
      state!.docs.set(k, after);
    }
    return {
      acknowledged: true,
      matchedCount: keys.length,
      modifiedCount,
      upsertedCount: 0,
      upsertedId: null,
    };
  }
}

/**
 * Apply the `$set`s of BinData values again, directly. mingo skips a `$set` whose value it finds equal to
 * the current one, and compares objects with a custom `toString` by that string: a `Binary` prints its
 * bytes as UTF-8, so two columns that differ only in bytes that are not valid UTF-8 look equal and the
 * new one would be dropped. MongoDB compares BinData byte for byte.
 */
function setBinaries(doc: Document, update: UpdateFilter<Document> | Document[]): void {
  if (Array.isArray(update)) return;
  const $set = (update as { $set?: Record<string, unknown> }).$set;
  if ($set === undefined) return;
  for (const [path, value] of Object.entries($set)) {
    if ((value as { _bsontype?: unknown } | null)?._bsontype !== 'Binary') continue;
    const segments = path.split('.');
    let node = doc as Record<string, unknown>;
    for (const segment of segments.slice(0, -1)) node = node[segment] as Record<string, unknown>;
    node[segments[segments.length - 1]!] = value;
  }
}

/** A cursor computing its documents on first use, like a driver cursor's first `getMore`. */
export class FakeCursor<T> implements MongoCursorLike<T> {
  readonly #load: () => Promise<T[]>;
  #docs: T[] | undefined;
  #closed = false;
  closeCount = 0;

  constructor(load: () => Promise<T[]>) {
    this.#load = load;
  }

  async toArray(): Promise<T[]> {
    const out: T[] = [];
    for await (const d of this) out.push(d);
    return out;
  }

  close(): Promise<void> {
    this.#closed = true;
    this.closeCount++;
    return Promise.resolve();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    this.#docs ??= await this.#load();
    try {
      while (!this.#closed) {
        const next = this.#docs.shift();
        if (next === undefined) return;
        yield next;
      }
    } finally {
      this.#closed = true;
    }
  }
}

/** A `MongoServerError` as the driver builds it from a server reply. */
export function serverError(
  code: number,
  codeName: string,
  errmsg: string,
  extra: Document = {},
  errorLabels: string[] = [],
): MongoServerError {
  return new MongoServerError({
    ok: 0,
    errmsg,
    code,
    codeName,
    ...extra,
    ...(errorLabels.length > 0 ? { errorLabels } : {}),
  });
}

function idKey(id: unknown): string {
  return isBsonValue(id, 'ObjectId') ? id.toHexString() : EJSON.stringify({ v: id }, { relaxed: false });
}

/**
 * The filter with the server's bucket-level `$_internalExprEq/Gt/Gte/Lt/Lte` as `$eq/$gt/...` (mingo has
 * only the public ones; they differ for arrays, which control min/max values never are).
 */
function withPublicComparisons(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withPublicComparisons);
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype)
    return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const key = k.startsWith('$_internalExpr') ? `$${k.slice('$_internalExpr'.length).toLowerCase()}` : k;
    out[key] = withPublicComparisons(v);
  }
  return out;
}

/** Whether a collection holds bucket documents (kept unpromoted: exact BSON types of every value). */
function isBucketsCollection(name: string): boolean {
  return name.startsWith('system.buckets.') || name.endsWith('.buckets');
}

function withoutSetOnInsert(
  update: UpdateFilter<Document> | Document[],
): UpdateFilter<Document> | Document[] {
  if (Array.isArray(update) || !('$setOnInsert' in update)) return update;
  const { $setOnInsert: _ignored, ...rest } = update as Document;
  return rest;
}

function setOnInsertAsSet(update: UpdateFilter<Document>): UpdateFilter<Document> {
  const { $setOnInsert, ...rest } = update as Document;
  if ($setOnInsert === undefined) return update;
  return { ...rest, $set: { ...((rest.$set as Document | undefined) ?? {}), ...($setOnInsert as Document) } };
}

function checkUpdate(update: UpdateFilter<Document> | Document[]): void {
  if (Array.isArray(update)) return;
  const keys = Object.keys(update);
  if (keys.length === 0 || !keys.every((k) => k.startsWith('$'))) {
    throw new MongoInvalidArgumentError('Update document requires atomic operators');
  }
}

function bsonReadOptions(options: DeserializeOptions): DeserializeOptions {
  const out: DeserializeOptions = {};
  if (options.promoteValues !== undefined) out.promoteValues = options.promoteValues;
  if (options.promoteLongs !== undefined) out.promoteLongs = options.promoteLongs;
  if (options.promoteBuffers !== undefined) out.promoteBuffers = options.promoteBuffers;
  if (options.bsonRegExp !== undefined) out.bsonRegExp = options.bsonRegExp;
  if (options.useBigInt64 !== undefined) out.useBigInt64 = options.useBigInt64;
  return out;
}

type ProjectionTree = Map<string, ProjectionTree | true>;

/** MongoDB inclusion/exclusion projection over dotted paths; output keeps the document's field order. */
function project(doc: Document, projection: Document): Document {
  const entries = Object.entries(projection);
  const inclusion = entries.some(([k, v]) => k !== '_id' && (v === 1 || v === true));
  const tree: ProjectionTree = new Map();
  for (const [path, v] of entries) {
    if (path === '_id') continue;
    const on = v === 1 || v === true;
    if (on !== inclusion) continue;
    let node = tree;
    const parts = path.split('.');
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node.set(part, true);
      else {
        let child = node.get(part);
        if (child === undefined || child === true) {
          child = new Map();
          node.set(part, child);
        }
        node = child;
      }
    });
  }
  const idOn = projection._id === undefined ? true : projection._id === 1 || projection._id === true;
  const out = inclusion ? include(doc, tree) : exclude(doc, tree);
  if (!idOn) delete out._id;
  else if (inclusion && '_id' in doc) return { _id: doc._id as unknown, ...out };
  return out;
}

function include(doc: Document, tree: ProjectionTree): Document {
  const out: Document = {};
  for (const [k, v] of Object.entries(doc) as Array<[string, unknown]>) {
    const node = tree.get(k);
    if (node === undefined) continue;
    if (node === true) out[k] = v;
    else if (isObject(v)) out[k] = include(v, node);
  }
  return out;
}

function exclude(doc: Document, tree: ProjectionTree): Document {
  const out: Document = {};
  for (const [k, v] of Object.entries(doc) as Array<[string, unknown]>) {
    const node = tree.get(k);
    if (node === true) continue;
    out[k] = node !== undefined && isObject(v) ? exclude(v, node) : v;
  }
  return out;
}

function isObject(v: unknown): v is Document {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
