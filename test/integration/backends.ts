/**
 * The backends of the storage matrix: the embedded `MemoryStorage`, `MongoStorage` over the in-memory
 * driver fake, and `MongoStorage` over a real server (`MONGODB_URI`).
 */
import { randomBytes } from 'node:crypto';

import { MongoClient } from 'mongodb';
import type { Db } from 'mongodb';

import { MemoryStorage } from '../../src/index.js';
import { MongoStorage } from '../../src/mongodb/index.js';
import type { MongoStorageMode, MongoStorageOptions } from '../../src/mongodb/index.js';
import type { BackendFactory, StorageBackend } from './storage-suite.js';
import { FakeDb } from './support/fake-mongo.js';

/** Retries without timers: tests never sleep. */
export const kInstantRetry: NonNullable<MongoStorageOptions['retry']> = {
  sleep: () => Promise.resolve(),
  random: () => 0.5,
};

/** A fresh `MemoryStorage` per test; every `open()` returns the same instance. */
export const memoryBackend: BackendFactory = () => {
  const storage = new MemoryStorage();
  return Promise.resolve({
    open: () => storage,
    collectionName: (base) => base,
    dispose: () => Promise.resolve(),
  });
};

/** A `StorageBackend` over the driver fake, exposing the fake for fault injection. */
export interface FakeMongoBackend extends StorageBackend {
  readonly db: FakeDb;
  open(options?: MongoStorageOptions): MongoStorage;
}

/**
 * A fresh fake database per test; every `open()` is a new `MongoStorage` over it (another process).
 *
 * @param mode - the storage mode.
 * @param defaults - options of every storage opened (before those given to `open`).
 */
export function fakeMongoBackend(
  mode: MongoStorageMode,
  defaults: MongoStorageOptions = {},
): () => Promise<FakeMongoBackend> {
  return () => {
    const db = new FakeDb('tsbuckets');
    return Promise.resolve({
      db,
      open: (options: MongoStorageOptions = {}) =>
        new MongoStorage(db, { mode, retry: kInstantRetry, ...defaults, ...options }),
      collectionName: (base: string) => base,
      dispose: () => Promise.resolve(),
      uncompressedWhileOpen: (defaults.openBucketForm ?? 'measured') !== 'compressed',
    });
  };
}

/** Connection to the server of `MONGODB_URI`, shared by a test file. */
export interface ServerConnection {
  readonly client: MongoClient;
  readonly db: Db;
}

/**
 * Connect to `MONGODB_URI` (database `MONGODB_DB`, default `tsbuckets_test`).
 *
 * @param uri - the connection string.
 * @returns the client and database.
 */
export async function connectServer(uri: string): Promise<ServerConnection> {
  const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 10_000 });
  return { client, db: client.db(process.env.MONGODB_DB ?? 'tsbuckets_test') };
}

/**
 * A backend over a real server: unique collection names per test, dropped afterwards.
 *
 * @param connection - returns the shared connection (opened in `beforeAll`).
 * @param mode - the storage mode.
 * @param defaults - options of every storage opened.
 */
export function serverMongoBackend(
  connection: () => ServerConnection,
  mode: MongoStorageMode,
  defaults: MongoStorageOptions = {},
): BackendFactory {
  return () => {
    const { db } = connection();
    const suffix = randomBytes(4).toString('hex');
    const names: string[] = [];
    const backend: StorageBackend = {
      open: () => new MongoStorage(db, { mode, ...defaults }),
      uncompressedWhileOpen: (defaults.openBucketForm ?? 'measured') !== 'compressed',
      collectionName: (base) => {
        const name = `${base}_${suffix}`;
        names.push(name);
        return name;
      },
      dispose: async () => {
        for (const name of names) {
          await db.dropCollection(mode === 'timeseries' ? name : `${name}.buckets`).catch(() => false);
        }
      },
    };
    return Promise.resolve(backend);
  };
}
