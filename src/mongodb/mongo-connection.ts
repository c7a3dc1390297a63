/**
 * Connecting to MongoDB from a URI, for the `tsbuckets` command's `--uri` option. The driver is loaded
 * only here and only when a URI is given, so the embedded commands never load it.
 *
 * @packageDocumentation
 */
import type { MongoDbLike } from './driver-shape.js';
import { loadMongoDriver } from './driver.js';

/** An open connection: the database and how to close the client. */
export interface MongoConnection {
  /** The database. */
  readonly db: MongoDbLike;
  /** Close the client. */
  close(): Promise<void>;
}

/**
 * Connect to `uri` and open database `dbName` (or the URI's default database, or `test`).
 *
 * @param uri - a MongoDB connection string.
 * @param dbName - the database; `undefined` for the URI's database.
 * @returns the connection.
 * @throws TsBucketsError when the `mongodb` package is not installed; the driver's error when the URI is
 *   invalid or no server answers within 10 s.
 */
export async function connectMongo(uri: string, dbName: string | undefined): Promise<MongoConnection> {
  // A missing driver (an optional peer) gives the package's clear error rather than a bare import failure.
  loadMongoDriver();
  const { MongoClient } = await import('mongodb');
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 10_000 });
  return {
    db: client.db(dbName),
    close: () => client.close(),
  };
}
