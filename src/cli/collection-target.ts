/**
 * Where a command writes or reads: the embedded engine (no `--uri`) or MongoDB through `MongoStorage`
 * (`--uri`, `--db`, `--mode`), and the time-series collection in it.
 *
 * @packageDocumentation
 */
import { BucketEngine } from '../engine/bucket-engine.js';
import type { TimeseriesCollection } from '../engine/timeseries-collection.js';
import type { Granularity, TimeseriesOptions } from '../options.js';

/** The options naming a collection and its bucketing. */
export interface TargetOptions {
  /** MongoDB connection string; embedded engine when absent. */
  readonly uri?: string | undefined;
  /** Database (with `uri`). */
  readonly db?: string | undefined;
  /** `MongoStorage` mode (with `uri`). */
  readonly mode: 'timeseries' | 'buckets';
  /** How `MongoStorage` keeps open compressed buckets on the server (with `uri`; default `'measured'`). */
  readonly openBucketForm?: 'measured' | 'compressed' | 'uncompressed' | undefined;
  /** The time-series collection. */
  readonly collection: string;
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField?: string | undefined;
  /** A granularity preset (exclusive with `span`). */
  readonly granularity?: Granularity | undefined;
  /** A custom span in seconds: `bucketMaxSpanSeconds` = `bucketRoundingSeconds`. */
  readonly span?: number | undefined;
}

/** An open engine and collection. */
export interface OpenTarget {
  /** The engine. */
  readonly engine: BucketEngine;
  /** The collection. */
  readonly coll: TimeseriesCollection;
  /** `'embedded'` or the MongoDB storage mode. */
  readonly where: 'embedded' | 'timeseries' | 'buckets';
  /** Close the engine and the MongoDB client. */
  close(): Promise<void>;
}

/**
 * The `timeseries` options of `createCollection` for the command's options.
 *
 * @param options - time field, metaField, granularity or span.
 * @returns the options.
 */
export function timeseriesOptionsOf(options: TargetOptions): TimeseriesOptions {
  return {
    timeField: options.timeField,
    metaField: options.metaField,
    granularity: options.granularity,
    bucketMaxSpanSeconds: options.span,
    bucketRoundingSeconds: options.span,
  };
}

/**
 * Open the engine and create (or open, with the same options) the collection.
 *
 * @param options - where and which collection.
 * @returns the open target.
 * @throws TimeseriesError for invalid collection options; the driver's error when MongoDB is unreachable.
 */
export async function openTarget(options: TargetOptions): Promise<OpenTarget> {
  // The catalog's TTL monitor is for long-lived processes; a command runs once.
  if (options.uri === undefined) {
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection(options.collection, {
      timeseries: timeseriesOptionsOf(options),
    });
    return { engine, coll, where: 'embedded', close: () => engine.close() };
  }
  // Loaded only with a URI: the embedded commands never load the driver.
  const { connectMongo } = await import('../mongodb/mongo-connection.js');
  const { MongoStorage } = await import('../mongodb/mongo-storage.js');
  const connection = await connectMongo(options.uri, options.db);
  try {
    const engine = new BucketEngine({
      storage: new MongoStorage(connection.db, {
        mode: options.mode,
        ...(options.openBucketForm === undefined ? {} : { openBucketForm: options.openBucketForm }),
      }),
      dbName: connection.db.databaseName,
      ttlMonitor: 'disabled',
    });
    const coll = await engine.createCollection(options.collection, {
      timeseries: timeseriesOptionsOf(options),
    });
    return {
      engine,
      coll,
      where: options.mode,
      close: async () => {
        await engine.close();
        await connection.close();
      },
    };
  } catch (error) {
    await connection.close();
    throw error;
  }
}
