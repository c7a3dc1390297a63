/**
 * The buckets `inspect` and `stats` read: a collection in MongoDB (`--uri`), or a file ingested into the
 * embedded engine first (for trying the commands, and for tests without a server).
 *
 * @packageDocumentation
 */
import type { Command } from 'commander';

import type { BucketCatalogServerStatus } from '../catalog/bucket-catalog.js';
import type { CollectionStats } from '../engine/timeseries-collection.js';
import type { MongoDbLike } from '../mongodb/driver-shape.js';
import type { Storage } from '../storage/storage.js';
import { TimeseriesError } from '../errors.js';
import { isPlainObject } from '../util/bson-value.js';
import { openTarget } from './collection-target.js';
import type { FileCollectionOptions } from './ingest.js';
import { addFileCollectionOptions, addMongoOptions, loadFile } from './ingest.js';
import type { CommandIo } from './io.js';

/** Options of the commands that read buckets. */
export interface BucketSourceOptions extends FileCollectionOptions {
  /** MongoDB connection string. */
  readonly uri?: string;
  /** Database. */
  readonly db?: string;
  /** `MongoStorage` mode. */
  readonly mode: 'timeseries' | 'buckets';
}

/** An open buckets collection. */
export interface BucketSource {
  /** The storage. */
  readonly storage: Storage;
  /** The buckets namespace in it. */
  readonly bucketsNs: string;
  /** The collection's time field. */
  readonly timeField: string;
  /** The collection's metaField, if any. */
  readonly metaField: string | undefined;
  /** The in-process engine's statistics (embedded source only: a catalog lives in the ingesting process). */
  readonly engineStats?: () => Promise<{
    readonly stats: CollectionStats;
    readonly bucketCatalog: BucketCatalogServerStatus;
  }>;
  /** The server's `collStats` (MongoDB source only), or `undefined` when the server refuses it. */
  readonly serverCollStats?: () => Promise<Readonly<Record<string, unknown>> | undefined>;
  /** Release it. */
  close(): Promise<void>;
}

/**
 * Add the options that choose the source to a command: `[file]` and the ingest options, or `--uri`.
 *
 * @param command - a command.
 * @returns the command.
 */
export function addBucketSourceOptions(command: Command): Command {
  command.argument(
    '[file]',
    'ingest this .ndjson/.json or .csv file (.gz too) into the embedded engine first (instead of --uri)',
  );
  addFileCollectionOptions(command);
  return addMongoOptions(command);
}

/**
 * The time-series options of a MongoDB collection, from `listCollections`.
 *
 * @param db - the database.
 * @param name - the time-series collection.
 * @returns its time field and metaField, or `undefined` when it is not a time-series collection.
 */
export async function serverTimeseriesFields(
  db: MongoDbLike,
  name: string,
): Promise<{ readonly timeField: string; readonly metaField: string | undefined } | undefined> {
  const [info] = await db.listCollections({ name }, { nameOnly: false }).toArray();
  const ts = (info as { options?: { timeseries?: unknown } } | undefined)?.options?.timeseries;
  if (!isPlainObject(ts) || typeof ts.timeField !== 'string') return undefined;
  return { timeField: ts.timeField, metaField: typeof ts.metaField === 'string' ? ts.metaField : undefined };
}

/**
 * Open the buckets of a MongoDB collection through `MongoStorage`.
 *
 * @param db - the database.
 * @param options - collection, mode, and the fields when the server does not know them (mode `buckets`).
 * @param close - releases the connection.
 * @returns the source.
 */
export async function mongoBucketSource(
  db: MongoDbLike,
  options: BucketSourceOptions,
  close: () => Promise<void>,
): Promise<BucketSource> {
  const { MongoStorage } = await import('../mongodb/mongo-storage.js');
  const fields =
    options.mode === 'timeseries' ? await serverTimeseriesFields(db, options.collection) : undefined;
  const storage = new MongoStorage(db, { mode: options.mode });
  return {
    storage,
    bucketsNs: `${db.databaseName}.system.buckets.${options.collection}`,
    timeField: fields?.timeField ?? options.timeField,
    metaField: fields === undefined ? options.metaField : fields.metaField,
    serverCollStats: async () => {
      try {
        return await db.command({ collStats: options.collection });
      } catch {
        return undefined;
      }
    },
    close: async () => {
      await storage.close();
      await close();
    },
  };
}

/**
 * Open the source the options name.
 *
 * @param file - a file to ingest into the embedded engine, or `undefined` with `--uri`.
 * @param options - the command's options.
 * @param io - where to report rejected lines.
 * @returns the source.
 * @throws TimeseriesError without a file and without `--uri`, or with both.
 */
export async function openBucketSource(
  file: string | undefined,
  options: BucketSourceOptions,
  io: CommandIo,
): Promise<BucketSource> {
  if (file === undefined) {
    if (options.uri === undefined)
      throw new TimeseriesError('BadValue', 'give either a FILE to ingest or --uri');
    const { connectMongo } = await import('../mongodb/mongo-connection.js');
    const connection = await connectMongo(options.uri, options.db);
    return mongoBucketSource(connection.db, options, () => connection.close());
  }
  if (options.uri !== undefined)
    throw new TimeseriesError('BadValue', 'give either a FILE to ingest or --uri, not both');
  const target = await openTarget({ ...options, uri: undefined });
  try {
    await loadFile(file, target, { ...options, batchSize: 1000, writers: 1, strict: false }, io);
  } catch (error) {
    await target.close();
    throw error;
  }
  return {
    storage: target.engine.storage,
    bucketsNs: target.coll.bucketsNamespace,
    timeField: options.timeField,
    metaField: options.metaField,
    engineStats: async () => ({
      stats: await target.coll.stats(),
      bucketCatalog: target.engine.serverStatus().bucketCatalog,
    }),
    close: () => target.close(),
  };
}
