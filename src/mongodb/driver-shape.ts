/**
 * The part of the `mongodb` driver's `Db` and `Collection` that `MongoStorage` uses, written with the
 * driver's own parameter and result types. A driver `Db` satisfies {@link MongoDbLike} as is; tests pass
 * an in-memory fake with the same shape.
 *
 * @packageDocumentation
 */
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

/** The cursor methods used (`FindCursor`, `AggregationCursor`, `ListIndexesCursor`, `ListCollectionsCursor`). */
export interface MongoCursorLike<T> extends AsyncIterable<T> {
  /** All remaining documents. */
  toArray(): Promise<T[]>;
  /** Release the server cursor. */
  close(): Promise<void>;
}

/** The `Collection` methods used by `MongoStorage` (signatures of the driver's `Collection<Document>`). */
export interface MongoCollectionLike {
  /** The collection name. */
  readonly collectionName: string;
  /** `Collection.insertOne`. */
  insertOne(doc: Document): Promise<InsertOneResult>;
  /** `Collection.updateOne` (update operators or an aggregation pipeline; `upsert` for rollups). */
  updateOne(
    filter: Filter<Document>,
    update: UpdateFilter<Document> | Document[],
    options?: UpdateOptions,
  ): Promise<UpdateResult>;
  /** `Collection.replaceOne`. */
  replaceOne(filter: Filter<Document>, replacement: Document): Promise<UpdateResult | Document>;
  /** `Collection.updateMany`. */
  updateMany(filter: Filter<Document>, update: UpdateFilter<Document> | Document[]): Promise<UpdateResult>;
  /** `Collection.find`. */
  find(filter: Filter<Document>, options?: FindOptions): MongoCursorLike<Document>;
  /** `Collection.deleteMany`. */
  deleteMany(filter: Filter<Document>): Promise<DeleteResult>;
  /** `Collection.countDocuments`. */
  countDocuments(filter?: Filter<Document>): Promise<number>;
  /** `Collection.aggregate`. */
  aggregate(pipeline: Document[], options?: AggregateOptions): MongoCursorLike<Document>;
  /** `Collection.createIndex`. */
  createIndex(indexSpec: IndexSpecification, options?: CreateIndexesOptions): Promise<string>;
  /** `Collection.listIndexes`. */
  listIndexes(): MongoCursorLike<Document>;
  /** `Collection.dropIndex`. */
  dropIndex(indexName: string): Promise<Document>;
  /**
   * `Collection.bulkWrite`: the bucket writes of one insert call in one round trip. Optional: without it
   * each bucket is written with its own `insertOne` or `updateOne`.
   */
  bulkWrite?(operations: AnyBulkWriteOperation[], options?: BulkWriteOptions): Promise<BulkWriteResult>;
}

/** The `Db` methods used by `MongoStorage`. A driver `Db` is one. */
export interface MongoDbLike {
  /** The database name. */
  readonly databaseName: string;
  /** `Db.collection`. */
  collection(name: string): MongoCollectionLike;
  /** `Db.createCollection` (the `create` command). */
  createCollection(name: string, options?: CreateCollectionOptions): Promise<unknown>;
  /** `Db.listCollections` with full collection information. */
  listCollections(filter: Document, options: { nameOnly: false }): MongoCursorLike<CollectionInfo>;
  /** `Db.dropCollection`. */
  dropCollection(name: string): Promise<boolean>;
  /** `Db.command` (used for `collMod`). */
  command(command: Document): Promise<Document>;
}
