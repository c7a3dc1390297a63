/**
 * MongoStorage specifics over the driver fake: modes and namespaces, value representation, error
 * translation, retries with backoff, ambiguous (lost-reply) writes, and the engine under injected faults.
 */
import { Double, Int32, Long, ObjectId, serialize } from 'bson';
import type { Binary } from 'bson';
import {
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoOperationTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import type { Db } from 'mongodb';
import fc from 'fast-check';
import { describe, expect, expectTypeOf, it } from 'vitest';

import { BucketEngine, BulkWriteError, MemoryStorage, TimeseriesError } from '../../src/index.js';
import type { StoredBucket } from '../../src/index.js';
import {
  MongoStorage,
  MongoStorageError,
  backoffDelayMs,
  isDuplicateKeyError,
  isTransientMongoError,
  resolveMongoStorageOptions,
} from '../../src/mongodb/index.js';
import type {
  MongoDbLike,
  MongoStorageMode,
  MongoStorageOptions,
  OpenBucketForm,
} from '../../src/mongodb/index.js';
import type { MongoCollectionLike } from '../../src/mongodb/driver-shape.js';
import { compressBucket, decompressBucket } from '../../src/bucket-format/bucket-compression.js';
import {
  compressedCommitAlreadyApplied,
  insertAlreadyWritten,
  updateAlreadyApplied,
} from '../../src/mongodb/write-verification.js';
import { kInstantRetry } from './backends.js';
import {
  afterWaveArb,
  allBuckets,
  expectStoredAsModel,
  insertCallArb,
  multiplicity,
  runWaves,
  storedMeasurements,
  waveArb,
  writerCalls,
} from './storage-suite.js';
import { FakeDb, serverError } from './support/fake-mongo.js';
import { reopeningCandidatesReader } from '../../src/storage/storage.js';
import { BsonQuery } from '../../src/util/bson-query.js';

const t0 = Date.parse('2024-10-04T10:00:00Z');
const at = (seconds: number): Date => new Date(t0 + seconds * 1000);
const kTimeseries = {
  timeField: 'ts',
  metaField: 'sensor',
  granularity: 'seconds',
  bucketMaxSpanSeconds: 3600,
} as const;
const kParameters = { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 } as const;

const network = () => new MongoNetworkError('connection 3 to 127.0.0.1:27017 closed');
const notPrimary = () => serverError(10107, 'NotWritablePrimary', 'not primary', {}, ['RetryableWriteError']);
const unauthorized = () =>
  serverError(13, 'Unauthorized', 'not authorized on db to execute command { insert: ... }');

function bucket(id: ObjectId, n: number, meta: unknown = 'a'): StoredBucket {
  const ts: Record<string, Date> = {};
  const v: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    ts[String(i)] = at(i);
    v[String(i)] = i;
  }
  return {
    _id: id,
    control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(n - 1), v: n - 1 } },
    meta,
    data: { ts, v },
  };
}

/**
 * A `Db` over `fake` whose collections call `watch` with each operation of every `bulkWrite`, before
 * sending it on (everything else passes through).
 */
function watchingBulkWrites(fake: FakeDb, watch: (operation: Record<string, unknown>) => void): FakeDb {
  const watching = (coll: MongoCollectionLike): MongoCollectionLike =>
    new Proxy(coll, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (prop !== 'bulkWrite') return (value as (...a: unknown[]) => unknown).bind(target);
        return (operations: ReadonlyArray<Record<string, unknown>>, options: unknown) => {
          for (const op of operations) watch(op);
          return (value as (...a: unknown[]) => unknown).call(target, operations, options);
        };
      },
    });
  return new Proxy(fake, {
    get(target, prop, receiver) {
      if (prop === 'collection') return (name: string) => watching(target.collection(name));
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A storage over a fresh fake database, recording backoff delays. */
function setup(mode: MongoStorageMode = 'buckets', maxRetries = 5) {
  const db = new FakeDb('metrics');
  const delays: number[] = [];
  const storage = new MongoStorage(db, {
    mode,
    retry: {
      maxRetries,
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
      random: () => 0.5,
    },
  });
  const ns = 'tsbuckets.system.buckets.weather';
  const name = storage.bucketsCollectionName(ns);
  return { db, storage, delays, ns, name };
}

describe('MongoStorage options', () => {
  it('resolves defaults into a frozen config', () => {
    const config = resolveMongoStorageOptions();
    expect(config.mode).toBe('timeseries');
    expect(config.retry).toMatchObject({ maxRetries: 5, initialDelayMs: 50, maxDelayMs: 2000 });
    expect(config.writeConcurrency).toBe(16);
    expect(config.openBucketForm).toBe('measured');
    expect(new MongoStorage(new FakeDb(), { writeConcurrency: 4 }).writeConcurrency).toBe(4);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.retry)).toBe(true);
    expect(new MongoStorage(new FakeDb(), { mode: 'buckets' }).mode).toBe('buckets');
  });

  it.each([
    [{ mode: 'plain' as MongoStorageMode }, 'mode'],
    [{ retry: { maxRetries: -1 } }, 'retry.maxRetries'],
    [{ retry: { maxRetries: 1.5 } }, 'retry.maxRetries'],
    [{ retry: { initialDelayMs: Number.NaN } }, 'retry.initialDelayMs'],
    [{ retry: { maxDelayMs: -1 } }, 'retry.maxDelayMs'],
    [{ retry: { initialDelayMs: 100, maxDelayMs: 10 } }, 'retry.initialDelayMs'],
    [{ writeConcurrency: 0 }, 'writeConcurrency'],
    [{ writeConcurrency: 2.5 }, 'writeConcurrency'],
    [{ openBucketForm: 'v1' as OpenBucketForm }, 'openBucketForm'],
  ])('rejects %j naming the option', (options, field) => {
    let error: unknown;
    try {
      resolveMongoStorageOptions(options);
    } catch (e) {
      error = e;
    }
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect(error).toMatchObject({ codeName: 'BadValue', field });
  });

  it('bounds the backoff delay by initialDelayMs * 2^k and maxDelayMs, with jitter', () => {
    const config = resolveMongoStorageOptions({
      retry: { initialDelayMs: 100, maxDelayMs: 1000, random: () => 0.999 },
    }).retry;
    expect([0, 1, 2, 3, 4, 10].map((k) => backoffDelayMs(config, k))).toEqual([99, 199, 399, 799, 999, 999]);
    const low = resolveMongoStorageOptions({ retry: { random: () => 0 } }).retry;
    expect(backoffDelayMs(low, 3)).toBe(0);
  });

  it('accepts a driver Db', () => {
    expectTypeOf<Db>().toExtend<MongoDbLike>();
    expectTypeOf<FakeDb>().toExtend<MongoDbLike>();
  });

  it('refuses unknown options (a misspelt mode is not ignored), options that are not an object, and a non-Db', () => {
    const codeOf = (run: () => unknown) => {
      try {
        run();
      } catch (e) {
        return TimeseriesError.isTimeseriesError(e) ? [e.codeName, e.message] : ['untyped', String(e)];
      }
      return ['accepted', ''];
    };
    expect(codeOf(() => resolveMongoStorageOptions({ moed: 'buckets' } as MongoStorageOptions))).toEqual([
      'IDLUnknownField',
      "BSON field 'MongoStorageOptions.moed' is an unknown field.",
    ]);
    expect(codeOf(() => resolveMongoStorageOptions({ retry: { max: 1 } } as MongoStorageOptions))[0]).toBe(
      'IDLUnknownField',
    );
    expect(codeOf(() => resolveMongoStorageOptions(null as unknown as MongoStorageOptions))[0]).toBe(
      'BadValue',
    );
    expect(codeOf(() => new MongoStorage({} as MongoDbLike))).toEqual([
      'BadValue',
      'MongoStorage needs a driver Db (client.db(name)), with collection()',
    ]);
    // A cap below the default first delay, given alone, bounds the first delay too.
    expect(resolveMongoStorageOptions({ retry: { maxDelayMs: 10 } }).retry).toMatchObject({
      initialDelayMs: 10,
      maxDelayMs: 10,
    });
  });
});

describe('MongoStorage modes', () => {
  it("mode 'timeseries' creates a native time-series collection and writes to system.buckets.<name>", async () => {
    const { db, storage, ns, name } = setup('timeseries');
    expect(name).toBe('system.buckets.weather');
    await storage.createNamespace(ns, { timeseries: kTimeseries, expireAfterSeconds: 86400 });
    const [info] = await db.listCollections({ name: 'weather' }, { nameOnly: false }).toArray();
    expect(info).toMatchObject({
      type: 'timeseries',
      options: {
        timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'seconds' },
        expireAfterSeconds: 86400,
      },
    });
    await storage.insertOne(ns, bucket(new ObjectId(), 1));
    expect(db.rawDocuments('system.buckets.weather')).toHaveLength(1);
    // Idempotent: the server answers NamespaceExists, the options are compared.
    await storage.createNamespace(ns, { timeseries: kTimeseries, expireAfterSeconds: 86400 });
  });

  it("mode 'timeseries' follows collMod: granularity and TTL reach the server's collection", async () => {
    const db = new FakeDb('metrics');
    const engine = new BucketEngine({
      storage: new MongoStorage(db, { mode: 'timeseries' }),
      dbName: 'metrics',
    });
    const coll = await engine.createCollection('weather', {
      timeseries: { timeField: 'ts', metaField: 'sensor' },
      expireAfterSeconds: 60,
    });
    await coll.collMod({ granularity: 'minutes', expireAfterSeconds: 'off' });
    const [info] = await db.listCollections({ name: 'weather' }, { nameOnly: false }).toArray();
    expect(info?.options).toEqual({
      timeseries: {
        timeField: 'ts',
        metaField: 'sensor',
        granularity: 'minutes',
        bucketMaxSpanSeconds: 86400,
      },
    });
    expect(coll.options.granularity).toBe('minutes');
    await engine.close();
  });

  it("mode 'timeseries' sends custom bucketing without granularity", async () => {
    const { db, storage, ns } = setup('timeseries');
    const timeseries = { timeField: 'ts', bucketMaxSpanSeconds: 900, bucketRoundingSeconds: 900 };
    await storage.createNamespace(ns, { timeseries });
    const [info] = await db.listCollections({ name: 'weather' }, { nameOnly: false }).toArray();
    expect(info?.options?.timeseries).toEqual(timeseries);
    await storage.createNamespace(ns, { timeseries });
  });

  it('rejects an existing collection with other options with NamespaceExists', async () => {
    const { storage, ns } = setup('timeseries');
    await storage.createNamespace(ns, { timeseries: kTimeseries });
    const error: unknown = await storage
      .createNamespace(ns, { timeseries: { ...kTimeseries, metaField: 'other' } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeseriesError);
    expect(error).toMatchObject({ codeName: 'NamespaceExists', code: 48 });
    expect((error as Error).cause).toBeInstanceOf(MongoServerError);
    const ttl: unknown = await storage
      .createNamespace(ns, { timeseries: kTimeseries, expireAfterSeconds: 5 })
      .catch((e: unknown) => e);
    expect(ttl).toMatchObject({ codeName: 'NamespaceExists' });
  });

  it("mode 'buckets' creates <name>.buckets with the meta/time index", async () => {
    const { db, storage, ns, name } = setup('buckets');
    expect(name).toBe('weather.buckets');
    await storage.createNamespace(ns, { timeseries: kTimeseries });
    await storage.createNamespace(ns, { timeseries: kTimeseries });
    expect(db.collectionNames()).toEqual(['weather.buckets']);
    expect(await storage.listIndexes(ns)).toEqual([
      {
        name: 'sensor_1_ts_1',
        key: { meta: 1, 'control.min.ts': 1, 'control.max.ts': 1 },
        options: { originalSpec: { key: { sensor: 1, ts: 1 } } },
      },
    ]);
    const plain = setup('buckets');
    await plain.storage.createNamespace(plain.ns, { timeseries: { timeField: 'ts' } });
    expect(await plain.storage.listIndexes(plain.ns)).toEqual([]);
  });

  it('rejects a namespace that is not a buckets namespace', () => {
    const { storage } = setup();
    expect(() => storage.bucketsCollectionName('db.weather')).toThrow(TimeseriesError);
  });

  it('treats missing collections and indexes as empty', async () => {
    const { storage, ns } = setup();
    expect(await storage.listIndexes(ns)).toEqual([]);
    expect(await storage.dropIndex(ns, 'nope')).toBe(false);
    expect(await storage.countDocuments(ns)).toBe(0);
    expect(await storage.totalSize(ns)).toBe(0);
    await storage.dropNamespace(ns);
    await storage.close();
  });
});

describe('MongoStorage values', () => {
  it('reads int32 as number, integral double as Double, other doubles as number, int64 as Long', async () => {
    const { storage, ns } = setup();
    const id = new ObjectId();
    await storage.insertOne(ns, {
      _id: id,
      a: new Int32(5),
      b: new Double(2),
      c: new Double(2.5),
      d: Long.fromNumber(3),
      e: 2 ** 31,
      f: -0,
      nested: { arr: [new Int32(1), new Double(1), 1.5] },
    });
    const [doc] = await allBuckets(storage, ns);
    expect(doc).toStrictEqual({
      _id: id,
      a: 5,
      b: new Double(2),
      c: 2.5,
      d: Long.fromNumber(3),
      e: new Double(2 ** 31),
      f: new Double(-0),
      nested: { arr: [1, new Double(1), 1.5] },
    });
  });
});

describe('MongoStorage: many reopening queries in one read (kReopeningCandidates)', () => {
  // What a query finds, in storage order, compared as the server compares (the fake's mingo compares
  // embedded documents regardless of field order).
  const matching = async (storage: MongoStorage, ns: string, filter: Record<string, unknown>) => {
    const query = new BsonQuery(filter);
    const out: StoredBucket[] = [];
    for await (const doc of storage.find(ns, {})) if (query.test(doc)) out.push(doc);
    return out;
  };
  // Not a decimal nor a document whose fields another one has in another order: the fake's mingo compares
  // those unlike the server (the keys are the ones MemoryStorage's index uses, tested with them there).
  const metaValue = fc.oneof(
    fc.constantFrom<unknown>(1, 2, 1.5, 2.5, 'a', 'b', '\ud83d', '\ufffd', null, true, new Date(0)),
    fc.constantFrom<unknown>(new Int32(1), new Long(1), new Double(1), new Double(2.5)),
    fc.constantFrom<unknown>(
      { a: 1, b: 2 },
      { a: 1.5 },
      { a: new Double(1), b: 2 },
      [1, 2],
      [1],
      ['a'],
      [[1, 2]],
    ),
    // Documents whose field names look like operators: values like any other.
    fc.constantFrom<unknown>({ $exists: false }, { $gt: 1 }, { $eq: 'a' }),
  );
  // A stored document's meta, or none; a series: its meta, or none.
  const metaOrNone = fc.option(metaValue, { nil: undefined });
  // A reopening query's shape: the meta compared whole (or absent), and a condition on the time.
  const reopening = (meta: unknown, t: number): Record<string, unknown> => ({
    $and: [
      meta === undefined ? { meta: { $exists: false } } : { meta: { $eq: meta } },
      { 'control.min.t': { $lte: new Date(t) } },
    ],
  });
  const read = (storage: MongoStorage, ns: string) => reopeningCandidatesReader(storage, ns)!;

  it('answers each query with what it finds, in storage order, from one find', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(metaOrNone, fc.integer({ min: 0, max: 3 })), { maxLength: 8 }),
        fc.array(fc.tuple(metaOrNone, fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 6 }),
        async (stored, asked) => {
          const { storage, ns, db } = setup();
          for (const [meta, t] of stored) {
            const control = { min: { t: new Date(t) } };
            await storage.insertOne(
              ns,
              meta === undefined ? { _id: new ObjectId(), control } : { _id: new ObjectId(), control, meta },
            );
          }
          const queries = asked.map(([m, t]) => ({
            filter: reopening(m, t),
            hasMeta: m !== undefined,
            normalizedMeta: m,
          }));
          const before = db.calls.length;
          const answers = await read(storage, ns)(queries);
          expect(db.calls.slice(before).every((c) => c.startsWith('find:'))).toBe(true);
          expect(db.calls.length - before).toBeLessThanOrEqual(1);
          expect(answers).toHaveLength(asked.length);
          for (let i = 0; i < asked.length; i++) {
            const [m] = asked[i]!;
            const answer = answers[i];
            // A null or array meta is not read: the catalog queries it.
            if (m === null || Array.isArray(m)) expect(answer).toBeUndefined();
            else {
              const found = await matching(storage, ns, queries[i]!.filter);
              expect(answer?.map((d) => String(d._id))).toEqual(found.map((d) => String(d._id)));
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('answers every series of a call with one find', async () => {
    const { storage, ns, db } = setup();
    const h1 = { _id: new ObjectId(), control: { min: { t: new Date(0) } }, meta: { host: 'h1' } };
    const seven = { _id: new ObjectId(), control: { min: { t: new Date(0) } }, meta: 7 };
    await storage.insertOne(ns, h1);
    await storage.insertOne(ns, seven);
    const before = db.calls.length;
    const answers = await read(
      storage,
      ns,
    )(
      [{ host: 'h1' }, { host: 'h2' }, new Double(7), 8, undefined, [1, 2], null].map((m) => ({
        filter: reopening(m, 10),
        hasMeta: m !== undefined,
        normalizedMeta: m,
      })),
    );
    // 7.0 is the same series as 7 for MongoDB's equality; an array or null meta is not read.
    expect(answers.map((a) => a?.map((d) => String(d._id)))).toEqual([
      [String(h1._id)],
      [],
      [String(seven._id)],
      [],
      [],
      undefined,
      undefined,
    ]);
    expect(db.calls.slice(before)).toEqual([`find:${storage.bucketsCollectionName(ns)}`]);
  });

  it('rejects when the read fails', async () => {
    const { storage, ns, db } = setup('buckets', 0);
    db.faults.push({ op: 'find', when: 'before', error: unauthorized() });
    await expect(
      read(
        storage,
        ns,
      )(['a', 'b'].map((m) => ({ filter: reopening(m, 0), hasMeta: true, normalizedMeta: m }))),
    ).rejects.toBeInstanceOf(MongoStorageError);
  });
});

describe('MongoStorage errors and retries', () => {
  it('turns a driver duplicate key error into TimeseriesError DuplicateKey with the driver error as cause', async () => {
    const { db, storage, ns, name } = setup();
    const id = new ObjectId();
    await storage.insertOne(ns, bucket(id, 1));
    const error: unknown = await storage.insertOne(ns, bucket(id, 2)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeseriesError);
    expect(error).toMatchObject({ code: 11000, codeName: 'DuplicateKey', bucketId: id.toHexString() });
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(MongoServerError);
    expect(isDuplicateKeyError(cause)).toBe(true);
    expect(db.calls.filter((c) => c === `insertOne:${name}`)).toHaveLength(2);
  });

  it('retries transient errors with exponential backoff and jitter', async () => {
    const { db, storage, delays, ns, name } = setup();
    db.faults.push(
      { op: 'insertOne', when: 'before', error: network() },
      { op: 'insertOne', when: 'before', error: notPrimary() },
      {
        op: 'insertOne',
        when: 'before',
        error: new MongoServerSelectionError('Server selection timed out', {} as never),
      },
    );
    await storage.insertOne(ns, bucket(new ObjectId(), 1));
    expect(delays).toEqual([25, 50, 100]);
    expect(db.calls.filter((c) => c === `insertOne:${name}`)).toHaveLength(4);
    expect(db.rawDocuments(name)).toHaveLength(1);
  });

  it('does not retry other errors and surfaces them with code, codeName and cause', async () => {
    const { db, storage, delays, ns, name } = setup();
    const driverError = unauthorized();
    db.faults.push({ op: 'insertOne', when: 'before', error: driverError });
    const error: unknown = await storage.insertOne(ns, bucket(new ObjectId(), 1)).catch((e: unknown) => e);
    expect(MongoStorageError.isMongoStorageError(error)).toBe(true);
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect(error).toMatchObject({
      code: 13,
      codeName: 'Unauthorized',
      operation: 'insertOne',
      collection: name,
      attempts: 1,
    });
    expect((error as Error).cause).toBe(driverError);
    expect((error as Error).name).toBe('MongoStorageError');
    expect(delays).toEqual([]);
  });

  it("a write error inside a bulk write keeps the server's code and message (the driver's WriteError)", () => {
    // A MongoBulkWriteError's writeErrors are the driver's WriteError objects, not Errors: an index, a
    // code and an errmsg (no codeName).
    const writeError = { index: 0, code: 13, errmsg: 'not authorized on db to execute command' };
    const error = new MongoStorageError({
      operation: 'bulkWrite',
      collection: 'c',
      attempts: 1,
      cause: writeError,
    });
    expect(error).toMatchObject({ code: 13, codeName: 'Unauthorized' });
    expect(error.message).toBe(
      "MongoStorage bulkWrite on 'c' failed after 1 attempt(s): not authorized on db to execute command",
    );
    const unnamed = new MongoStorageError({
      operation: 'bulkWrite',
      collection: 'c',
      attempts: 1,
      cause: { index: 0, code: 4321, errmsg: 'x' },
    });
    expect(unnamed).toMatchObject({ code: 4321, codeName: 'Location4321' });
  });

  it('a refused first connection is reported as HostUnreachable with its cause, not as "Topology is closed"', async () => {
    // Arrange: the driver's first attempt fails to reach the server and closes the client's topology.
    const { db, storage, ns } = setup();
    const refused = new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:1', {} as never);
    db.faults.push(
      { op: 'insertOne', when: 'before', error: refused },
      { op: 'insertOne', when: 'before', error: new MongoTopologyClosedError() },
    );
    // Act
    const error: unknown = await storage.insertOne(ns, bucket(new ObjectId(), 1)).catch((e: unknown) => e);
    // Assert
    expect(error).toMatchObject({ code: 6, codeName: 'HostUnreachable', attempts: 2 });
    expect((error as Error).cause).toBe(refused);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });

  it('rejects after maxRetries retries', async () => {
    const { db, storage, ns } = setup('buckets', 2);
    for (let i = 0; i < 3; i++)
      db.faults.push({ op: 'find', when: 'before', error: new MongoNetworkTimeoutError('timed out') });
    const error: unknown = await allBuckets(storage, ns).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 89, codeName: 'NetworkTimeout', operation: 'find', attempts: 3 });
    db.faults.push({ op: 'countDocuments', when: 'before', error: network() });
    db.faults.push({ op: 'countDocuments', when: 'before', error: network() });
    db.faults.push({ op: 'countDocuments', when: 'before', error: network() });
    expect(await storage.countDocuments(ns).catch((e: unknown) => e)).toMatchObject({
      code: 6,
      codeName: 'HostUnreachable',
      attempts: 3,
    });
  });

  it('recognises transient errors of another driver copy by name and labels', () => {
    const foreign = Object.assign(new Error('closed'), { name: 'MongoNetworkError' });
    expect(isTransientMongoError(foreign)).toBe(true);
    const labelled = Object.assign(new Error('x'), {
      name: 'MongoServerError',
      code: 91,
      errorLabels: ['RetryableWriteError'],
    });
    expect(isTransientMongoError(labelled)).toBe(true);
    expect(isTransientMongoError(new Error('plain'))).toBe(false);
    expect(isTransientMongoError(unauthorized())).toBe(false);
  });

  it('a client-side operation timeout (timeoutMS) is retried as a lost reply, and is MaxTimeMSExpired at last', async () => {
    const timeout = () => new MongoOperationTimeoutError('Timed out during socket read (1000ms)');
    expect(isTransientMongoError(timeout())).toBe(true);
    const error = new MongoStorageError({
      operation: 'insertOne',
      collection: 'c',
      attempts: 6,
      cause: timeout(),
    });
    expect(error).toMatchObject({ code: 50, codeName: 'MaxTimeMSExpired' });
    // Applied, its reply lost to the timeout: retried, the duplicate found to be its own, stored once.
    const { db, storage, ns, name } = setup();
    const doc = bucket(new ObjectId(), 1);
    db.faults.push({ op: 'insertOne', when: 'after', error: timeout() });
    await storage.insertOne(ns, doc);
    expect(db.calls.filter((c) => c === `insertOne:${name}`)).toHaveLength(2);
    expect(await allBuckets(storage, ns)).toStrictEqual([bucket(doc._id as ObjectId, 1)]);
  });

  it('an insert whose reply was lost is not reported as a duplicate', async () => {
    const { db, storage, ns, name } = setup();
    const doc = bucket(new ObjectId(), 2);
    db.faults.push({ op: 'insertOne', when: 'after', error: network() });
    await storage.insertOne(ns, doc);
    expect(db.calls.filter((c) => c === `insertOne:${name}`)).toHaveLength(2);
    expect(await allBuckets(storage, ns)).toStrictEqual([bucket(doc._id as ObjectId, 2)]);
  });

  it('an insert whose _id another writer took meanwhile is still a duplicate', async () => {
    const { db, storage, ns } = setup();
    const id = new ObjectId();
    db.faults.push({ op: 'insertOne', when: 'before', error: network() });
    const other = new MongoStorage(db, { mode: 'buckets', retry: kInstantRetry });
    // Another series' bucket, of other measurements, under the same _id.
    const theirs = { ...bucket(id, 1, 'other'), data: { ts: { '0': at(7) }, v: { '0': 70 } } };
    const racing = new MongoStorage(db, {
      mode: 'buckets',
      retry: { random: () => 0, sleep: () => other.insertOne(ns, theirs) },
    });
    const error: unknown = await racing.insertOne(ns, bucket(id, 1)).catch((e: unknown) => e);
    expect(error).toMatchObject({ codeName: 'DuplicateKey' });
    expect((await allBuckets(storage, ns)).map((b) => b.meta)).toEqual(['other']);
  });

  it('a guarded update whose reply was lost is reported as updated, and applied once', async () => {
    const { db, storage, ns } = setup();
    const id = new ObjectId();
    await storage.insertOne(ns, bucket(id, 2));
    db.faults.push({ op: 'updateOne', when: 'after', error: notPrimary() });
    const guard = { _id: id, 'data.ts.1': { $exists: true }, 'data.ts.2': { $exists: false } };
    const update = {
      $set: { 'data.ts.2': at(2), 'data.v.2': 2, 'control.max.ts': at(2), 'control.max.v': 2 },
    };
    expect(await storage.updateOne(ns, guard, update)).toEqual({ kind: 'updated' });
    expect(await allBuckets(storage, ns)).toStrictEqual([bucket(id, 3)]);
  });

  it('a guarded update that lost to another writer during a retry is notMatched', async () => {
    const { db, storage, ns } = setup();
    const id = new ObjectId();
    await storage.insertOne(ns, bucket(id, 2));
    const other = new MongoStorage(db, { mode: 'buckets', retry: kInstantRetry });
    const guard = { _id: id, 'data.ts.1': { $exists: true }, 'data.ts.2': { $exists: false } };
    const theirs = { $set: { 'data.ts.2': at(2), 'data.v.2': 200 } };
    const ours = { $set: { 'data.ts.2': at(2), 'data.v.2': 2 } };
    const racing = new MongoStorage(db, {
      mode: 'buckets',
      retry: {
        random: () => 0,
        sleep: async () => {
          await other.updateOne(ns, guard, theirs);
        },
      },
    });
    db.faults.push({ op: 'updateOne', when: 'before', error: network() });
    expect(await racing.updateOne(ns, guard, ours)).toEqual({ kind: 'notMatched' });
    const [stored] = await allBuckets(storage, ns);
    expect((stored!.data as { v: Record<string, unknown> }).v['2']).toBe(200);
  });

  it('a replace whose reply was lost is reported as updated', async () => {
    const { db, storage, ns } = setup();
    const id = new ObjectId();
    await storage.insertOne(ns, bucket(id, 2));
    db.faults.push({ op: 'replaceOne', when: 'after', error: network() });
    expect(await storage.replaceOne(ns, { _id: id, 'data.ts.2': { $exists: false } }, bucket(id, 3))).toEqual(
      { kind: 'updated' },
    );
    expect(await allBuckets(storage, ns)).toStrictEqual([bucket(id, 3)]);
  });

  it('updateAlreadyApplied compares data cells, whole new columns cell by cell', () => {
    const id = new ObjectId();
    const stored = bucket(id, 3);
    (stored.data as Record<string, unknown>).x = { '1': 'a', '2': 'b' };
    expect(updateAlreadyApplied(stored, { $set: { 'data.ts.2': at(2), 'data.v.2': 2 } })).toBe(true);
    expect(updateAlreadyApplied(stored, { $set: { 'data.ts.2': at(2), 'data.v.2': new Double(2) } })).toBe(
      false,
    );
    expect(updateAlreadyApplied(stored, { $set: { 'data.x': { '1': 'a' } } })).toBe(true);
    expect(updateAlreadyApplied(stored, { $set: { 'data.y': { '1': 'a' } } })).toBe(false);
    expect(updateAlreadyApplied(stored, { $set: { meta: 'a' } })).toBe(true);
    expect(updateAlreadyApplied(stored, { $set: { meta: 'b' } })).toBe(false);
  });

  it('insertAlreadyWritten finds an inserted bucket that others appended to, closed, or moved to another meta, since', () => {
    // A lost reply, then another writer reopened the bucket and appended (and maybe closed it): the
    // retried insert's duplicate _id is this writer's own bucket, not another's (it was once taken for
    // another writer's, and its measurements were written again to a new bucket: stored twice).
    const inserted: StoredBucket = {
      _id: new ObjectId(),
      control: { version: 1, min: { ts: at(5), v: 9 }, max: { ts: at(5), v: 9 } },
      meta: 'a',
      data: { ts: { '0': at(5) }, v: { '0': 9 } },
    };
    const appended: StoredBucket = {
      ...inserted,
      control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(5), v: 9 } },
      data: { ts: { '0': at(5), '1': at(0) }, v: { '0': 9, '1': 0 }, w: { '1': 1 } },
    };
    expect(insertAlreadyWritten(inserted, inserted)).toBe(true);
    expect(insertAlreadyWritten(appended, inserted)).toBe(true);
    const closed = compressBucket(appended, 'ts', { whenNotSmaller: 'compress' });
    expect(closed.kind).toBe('compressed');
    if (closed.kind === 'compressed')
      expect(insertAlreadyWritten(closed.doc as StoredBucket, inserted)).toBe(true);
    // Rewritten by another writer's delete since (marked closed), even without this writer's measurement.
    const trimmed: StoredBucket = {
      ...appended,
      control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(0), v: 0 }, closed: true },
      data: { ts: { '0': at(0) }, v: { '0': 0 } },
    };
    expect(insertAlreadyWritten(trimmed, inserted)).toBe(true);
    // Another writer's update of the metaField since: the bucket holds this writer's rows, so it is it.
    expect(insertAlreadyWritten({ ...appended, meta: 'b' }, inserted)).toBe(true);
    // Another series under the same _id without this writer's rows (closed or not), or the same series
    // without this writer's measurement: not it.
    expect(insertAlreadyWritten({ ...trimmed, meta: 'b' }, inserted)).toBe(false);
    expect(
      insertAlreadyWritten({ ...appended, meta: 'b', data: { ts: { '0': at(1) }, v: { '0': 9 } } }, inserted),
    ).toBe(false);
    expect(insertAlreadyWritten({ ...appended, data: { ts: { '1': at(0) }, v: { '1': 0 } } }, inserted)).toBe(
      false,
    );
    expect(insertAlreadyWritten({ ...appended, data: { ts: { '0': at(5) }, v: { '0': 8 } } }, inserted)).toBe(
      false,
    );
  });

  it('compressedCommitAlreadyApplied finds a commit in a bucket others appended to, or trimmed, since', () => {
    // The commit appended measurement 2 (v = 2) to a bucket of two; its columns as sent.
    const compressed = (doc: StoredBucket): StoredBucket => {
      const result = compressBucket(doc, 'ts', { whenNotSmaller: 'compress' });
      if (result.kind !== 'compressed') throw new Error('not compressed');
      return result.doc;
    };
    const id = new ObjectId();
    const sent = compressed(bucket(id, 3));
    const data = sent.data as Record<string, Binary>;
    const columns = new Map(Object.entries(data));
    const commit = { numPreviouslyCommittedMeasurements: 2, count: 3 };
    // As sent, and with another writer's measurements appended since.
    expect(compressedCommitAlreadyApplied(sent, commit, columns)).toBe(true);
    expect(compressedCommitAlreadyApplied(compressed(bucket(id, 5)), commit, columns)).toBe(true);
    // A delete rewrote it since, keeping this commit's measurement (the count went down: once taken as
    // not applied, the measurement was written again, and stored twice).
    const trimmed: StoredBucket = {
      ...bucket(id, 1),
      control: { version: 1, min: { ts: at(2), v: 2 }, max: { ts: at(2), v: 2 }, closed: true },
      data: { ts: { '0': at(2) }, v: { '0': 2 } },
    };
    expect(compressedCommitAlreadyApplied(compressed(trimmed), commit, columns)).toBe(true);
    // Not applied (the bucket as before it), or applied and then deleted: written again.
    expect(compressedCommitAlreadyApplied(compressed(bucket(id, 2)), commit, columns)).toBe(false);
    const without: StoredBucket = {
      ...trimmed,
      data: { ts: { '0': at(0) }, v: { '0': 0 } },
      control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(0), v: 0 }, closed: true },
    };
    expect(compressedCommitAlreadyApplied(compressed(without), commit, columns)).toBe(false);
  });

  it('updateAlreadyApplied looks for the rows of an update in a bucket compressed since, whatever their index', () => {
    // Another writer appended and closed the bucket: compressed, its rows sorted by time. A commit of
    // cells is in only if each of its measurements is one of the rows (it was once judged by the bytes of
    // the columns, which its cells left unchanged: a measurement acknowledged and not stored).
    const v1: StoredBucket = {
      _id: new ObjectId(),
      control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(5), v: 9 } },
      meta: 'a',
      data: { ts: { '0': at(5), '1': at(0), '2': at(3) }, v: { '0': 9, '1': 0, '2': 3 } },
    };
    const compressed = compressBucket(v1, 'ts', { whenNotSmaller: 'compress' });
    expect(compressed.kind).toBe('compressed');
    if (compressed.kind !== 'compressed') return;
    const stored = compressed.doc as StoredBucket;
    // Index 1 of the version-1 bucket (t = 0) is row 0 once compressed.
    expect(updateAlreadyApplied(stored, { $set: { 'data.ts.1': at(0), 'data.v.1': 0 } })).toBe(true);
    expect(
      updateAlreadyApplied(stored, {
        $set: { 'data.ts.1': at(0), 'data.v.1': 0, 'data.ts.2': at(3), 'data.v.2': 3 },
      }),
    ).toBe(true);
    expect(updateAlreadyApplied(stored, { $set: { 'data.ts.1': at(0), 'data.v.1': 1 } })).toBe(false);
    expect(updateAlreadyApplied(stored, { $set: { 'data.ts.3': at(0), 'data.v.3': 0, 'data.w.3': 1 } })).toBe(
      false,
    );
    // Rewritten by a delete since (marked closed): its cells are looked for as rows too.
    const rewritten: StoredBucket = {
      ...v1,
      control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(5), v: 9 }, closed: true },
      data: { ts: { '0': at(0), '1': at(5) }, v: { '0': 0, '1': 9 } },
    };
    expect(updateAlreadyApplied(rewritten, { $set: { 'data.ts.1': at(0), 'data.v.1': 0 } })).toBe(true);
    expect(updateAlreadyApplied(rewritten, { $set: { 'data.ts.2': at(3), 'data.v.2': 3 } })).toBe(false);
    // A commit of two measurements, one of which the delete removed: in (a commit is applied whole; taken
    // as not applied, the other was written again and stored twice).
    expect(
      updateAlreadyApplied(rewritten, {
        $set: { 'data.ts.1': at(0), 'data.v.1': 0, 'data.ts.2': at(3), 'data.v.2': 3 },
      }),
    ).toBe(true);
    // Each row stands for one measurement: two equal measurements need two equal rows.
    expect(
      updateAlreadyApplied(stored, {
        $set: { 'data.ts.3': at(0), 'data.v.3': 0, 'data.ts.4': at(0), 'data.v.4': 0 },
      }),
    ).toBe(false);
  });
});

/**
 * fast-check: a transient error (a network error or NotWritablePrimary) before or after an operation
 * applies (after: a lost reply).
 */
const transientFaultArb = fc.record({
  op: fc.constantFrom(
    'bulkWrite' as const,
    'insertOne' as const,
    'updateOne' as const,
    'replaceOne' as const,
    'find' as const,
  ),
  when: fc.constantFrom('before' as const, 'after' as const),
  network: fc.boolean(),
});

describe('BucketEngine over MongoStorage with injected faults', () => {
  /** An engine (its own MongoStorage) on the 'weather' collection of `db`. */
  async function engineOn(db: FakeDb, maxRetries: number, parameters: Record<string, number | boolean>) {
    const storage = new MongoStorage(db, { mode: 'timeseries', retry: { ...kInstantRetry, maxRetries } });
    const engine = new BucketEngine({ storage, parameters: { ...kParameters, ...parameters } });
    const coll = await engine.createCollection('weather', {
      timeseries: { timeField: 'ts', metaField: 'sensor' },
    });
    return { storage, engine, coll };
  }

  async function engineSetup(maxRetries = 5, bulkWrite = false) {
    const db = new FakeDb('metrics');
    // Without bulkWrite each bucket is written with its own insertOne or updateOne.
    db.bulkWrite = bulkWrite;
    return { db, ...(await engineOn(db, maxRetries, { timeseriesBucketMaxCount: 5 })) };
  }

  const rows = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => ({ ts: at(i), sensor: `s${i % 2}`, mid: `${prefix}${i}`, v: i }));

  it('stores every measurement exactly once through transient errors and lost replies', async () => {
    const { db, storage, engine, coll } = await engineSetup();
    const name = 'system.buckets.weather';
    db.faults.push(
      { op: 'insertOne', when: 'before', error: network() },
      { op: 'insertOne', when: 'after', error: network() },
      { op: 'updateOne', when: 'before', error: notPrimary() },
      { op: 'updateOne', when: 'after', error: network() },
      { op: 'updateOne', when: 'after', error: notPrimary() },
    );
    for (let i = 0; i < 6; i++)
      await coll.insertMany(rows(30, `b${i}-`).slice(i * 5, i * 5 + 5), { ordered: i % 2 === 0 });
    expect(db.faults).toEqual([]);
    const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
    const counts = multiplicity(stored, 'mid');
    expect(counts.size).toBe(30);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(db.rawDocuments(name).length).toBe(6);
    await engine.close();
  });

  it('with bulkWrite, stores every measurement exactly once through transient errors and lost replies', async () => {
    const { db, storage, engine, coll } = await engineSetup(5, true);
    const name = 'system.buckets.weather';
    db.faults.push(
      { op: 'bulkWrite', when: 'before', error: network() },
      { op: 'bulkWrite', when: 'after', error: network() },
      { op: 'bulkWrite', when: 'before', error: notPrimary() },
      { op: 'bulkWrite', when: 'after', error: network() },
      { op: 'bulkWrite', when: 'after', error: notPrimary() },
    );
    for (let i = 0; i < 6; i++)
      await coll.insertMany(rows(30, `b${i}-`).slice(i * 5, i * 5 + 5), { ordered: i % 2 === 0 });
    expect(db.faults).toEqual([]);
    // One round trip per call and attempt: no single-document write was sent.
    expect(db.calls.filter((c) => c.startsWith('insertOne:') || c.startsWith('updateOne:'))).toEqual([]);
    const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
    const counts = multiplicity(stored, 'mid');
    expect(counts.size).toBe(30);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(db.rawDocuments(name).length).toBe(6);
    await engine.close();
  });

  it('with bulkWrite, an ordered call interleaving series stores and acknowledges exactly what precedes its failed index', async () => {
    // Series a, b, a, b, ...: one bulkWrite per round (a, b), so the k-th operation sent is measurement k.
    const docs = Array.from({ length: 8 }, (_, i) => ({ ts: at(i), sensor: `s${i % 2}`, mid: `m${i}` }));
    for (let k = 0; k < docs.length; k++) {
      const { db, storage, engine, coll } = await engineSetup(5, true);
      db.operationFaults.push({ skip: k, error: serverError(2, 'BadValue', `injected at ${k}`) });
      const error: unknown = await coll.insertMany(docs, { ordered: true }).catch((e: unknown) => e);
      expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
      if (!BulkWriteError.isBulkWriteError(error)) continue;
      expect(error.writeErrors.map((w) => w.index)).toEqual([k]);
      expect(error.insertedCount).toBe(k);
      const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
      expect(stored.map((r) => r.mid).sort()).toEqual(docs.slice(0, k).map((d) => d.mid));
      expect(db.calls.filter((c) => c.startsWith('bulkWrite:'))).toHaveLength(Math.floor(k / 2) + 1);
      await engine.close();
    }
  });

  it.each([true, false])(
    'an ordered call whose earlier bucket another writer changed reports what it stored after a later failure (bulkWrite: %s)',
    async (bulkWrite) => {
      // Arrange: writer A's open bucket of s0 is appended to by writer B, so A's next commit to it misses
      // its guard; in the same round A's bucket of s1 (later measurements) is written; the retry of the
      // first measurement then fails for good.
      const db = new FakeDb('metrics');
      db.bulkWrite = bulkWrite;
      const a = await engineOn(db, 5, {});
      const b = await engineOn(db, 5, {});
      await a.coll.insertMany([{ ts: at(0), sensor: 's0', mid: 'a-pre' }]);
      await b.coll.insertMany([{ ts: at(1), sensor: 's0', mid: 'b-pre' }]);
      db.operationFaults.push({ skip: 2, error: serverError(13, 'Unauthorized', 'not authorized') });
      // Act
      const docs = [
        { ts: at(2), sensor: 's0', mid: 'x0' },
        { ts: at(3), sensor: 's1', mid: 'x1' },
        { ts: at(4), sensor: 's1', mid: 'x2' },
      ];
      const error: unknown = await a.coll.insertMany(docs, { ordered: true }).catch((e: unknown) => e);
      // Assert: the failure at index 0 is reported, and the count says what is stored.
      expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
      if (!BulkWriteError.isBulkWriteError(error)) return;
      expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[0, 'Unauthorized']]);
      const stored = (await a.coll.find({ mid: { $in: ['x0', 'x1', 'x2'] } }).toArray()).map((d) => d.mid);
      expect(stored.sort()).toEqual(['x1', 'x2']);
      expect(error.insertedCount).toBe(stored.length);
      await a.engine.close();
      await b.engine.close();
    },
  );

  it.each([true, false])(
    "an insert whose reply was lost is found again after another writer's meta update (bulkWrite: %s)",
    async (bulkWrite) => {
      // Arrange: A's insert of a new bucket is applied, its reply lost; during A's backoff, B moves the
      // series to another meta.
      const db = new FakeDb('metrics');
      db.bulkWrite = bulkWrite;
      let during: (() => Promise<unknown>) | undefined;
      const storage = new MongoStorage(db, {
        mode: 'timeseries',
        retry: {
          ...kInstantRetry,
          sleep: async () => {
            const run = during;
            during = undefined;
            await run?.();
          },
        },
      });
      const a = new BucketEngine({ storage, parameters: kParameters });
      const collA = await a.createCollection('weather', {
        timeseries: { timeField: 'ts', metaField: 'sensor' },
      });
      const b = await engineOn(db, 5, {});
      db.faults.push({ op: bulkWrite ? 'bulkWrite' : 'insertOne', when: 'after', error: network() });
      during = () => b.coll.updateMany({ sensor: 's' }, { $set: { sensor: 't' } });
      // Act
      const result = await collA.insertMany([{ ts: at(0), sensor: 's', mid: 'only-one' }]);
      // Assert: stored once, under the new meta; the retry's duplicate _id was this insert.
      expect(result.insertedCount).toBe(1);
      const rows = await collA.find({}, { projection: { _id: 0, mid: 1, sensor: 1 } }).toArray();
      expect(rows).toEqual([{ sensor: 't', mid: 'only-one' }]);
      await a.close();
      await b.engine.close();
    },
  );

  it('through transient faults and failed writes, exactly the acknowledged measurements are stored, once', async () => {
    // Calls of either kind, in either format, with bulkWrite or one write per bucket; transient errors
    // before or after an operation (fewer than the retries: each retry meets at most one) and at most one
    // write that fails for good. What a call acknowledges (all of an unordered call but its writeErrors;
    // an ordered call up to its failed index) is stored exactly once, and nothing is stored twice. Only a
    // write that fails for good on the retry of an attempt whose reply was lost may have stored what it
    // did not acknowledge (as with the server: that attempt's outcome is unknown); without both, exactly
    // the acknowledged measurements are stored.
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.boolean(),
        fc.array(insertCallArb(30, 10), { minLength: 1, maxLength: 4 }),
        fc.array(transientFaultArb, { maxLength: 4 }),
        fc.option(fc.nat({ max: 20 })),
        async (bulkWrite, compressed, calls, faults, failAt) => {
          const db = new FakeDb('metrics');
          db.bulkWrite = bulkWrite;
          const { storage, engine, coll } = await engineOn(db, 5, {
            timeseriesBucketMaxCount: 4,
            timeseriesAlwaysUseCompressedBuckets: compressed,
          });
          for (const f of faults) {
            db.faults.push({ op: f.op, when: f.when, error: f.network ? network() : notPrimary() });
          }
          if (failAt !== null)
            db.operationFaults.push({ skip: failAt, error: serverError(2, 'BadValue', 'injected') });
          const acknowledged: string[] = [];
          const reported: string[] = [];
          for (const { ordered, docs } of writerCalls([coll], [calls])) {
            const error: unknown = await coll.insertMany(docs, { ordered }).then(
              () => undefined,
              (e: unknown) => e,
            );
            if (error === undefined) {
              acknowledged.push(...docs.map((d) => d.mid));
              continue;
            }
            expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
            if (!BulkWriteError.isBulkWriteError(error)) continue;
            const failed = new Set(error.writeErrors.map((w) => w.index));
            const end = ordered ? (error.writeErrors[0]?.index ?? 0) : docs.length;
            expect(error.insertedCount).toBe(end - (ordered ? 0 : failed.size));
            acknowledged.push(
              ...docs
                .slice(0, end)
                .filter((_, i) => !failed.has(i))
                .map((d) => d.mid),
            );
            // An ordered call's failed write may hold measurements after its failed index too.
            const attempted = ordered ? docs.slice(end) : docs.filter((_, i) => failed.has(i));
            reported.push(...attempted.map((d) => d.mid));
          }
          const stored = (await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor')).map(
            (r) => r.mid as string,
          );
          expect(new Set(stored).size).toBe(stored.length);
          const ambiguous = failAt !== null && faults.some((f) => f.when === 'after');
          if (!ambiguous) expect(stored.sort()).toEqual(acknowledged.sort());
          else {
            for (const mid of acknowledged) expect(stored).toContain(mid);
            for (const mid of stored) expect([...acknowledged, ...reported]).toContain(mid);
          }
          await engine.close();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('engines sharing a database through transient faults and lost replies store each measurement once', async () => {
    // Two or three engines (each its own MongoStorage over one database) write the same series at once,
    // in either format, with bulkWrite or without, while up to four operations fail transiently before
    // or after they apply (each retry meets at most one: fewer than the retries); then maybe a rename and
    // a delete by two of them and a second wave (runWaves). Every call succeeds, and the collection holds
    // exactly the model's measurements, each once, in its series.
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 2, max: 6 }),
        waveArb,
        afterWaveArb,
        fc.array(transientFaultArb, { maxLength: 4 }),
        async (bulkWrite, compressed, maxCount, writers, after, faults) => {
          const db = new FakeDb('metrics');
          db.bulkWrite = bulkWrite;
          const ingesters = await Promise.all(
            [...writers, ...(after?.writers ?? [])].map(() =>
              engineOn(db, 5, {
                timeseriesBucketMaxCount: maxCount,
                timeseriesAlwaysUseCompressedBuckets: compressed,
              }),
            ),
          );
          for (const f of faults) {
            db.faults.push({ op: f.op, when: f.when, error: f.network ? network() : notPrimary() });
          }
          const first = ingesters[0] as (typeof ingesters)[number];
          const model = await runWaves(
            ingesters.map((ingester) => ingester.coll),
            writers,
            after,
          );
          const stored = await storedMeasurements(first.storage, first.coll.bucketsNamespace, 'ts', 'sensor');
          expectStoredAsModel(stored, model);
          for (const { engine } of ingesters) await engine.close();
        },
      ),
      { numRuns: 100 },
    );
  });

  it('any ordered call stores and acknowledges exactly the measurements before its failed index, with bulkWrite or without', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.array(
          fc.record({ series: fc.integer({ min: 0, max: 2 }), offset: fc.integer({ min: 0, max: 20 }) }),
          {
            minLength: 1,
            maxLength: 12,
          },
        ),
        fc.nat({ max: 12 }),
        async (bulkWrite, points, skip) => {
          const { db, storage, engine, coll } = await engineSetup(5, bulkWrite);
          db.operationFaults.push({ skip, error: serverError(2, 'BadValue', 'injected') });
          const docs = points.map((p, i) => ({ ts: at(p.offset), sensor: `s${p.series}`, mid: `m${i}` }));
          const error: unknown = await coll.insertMany(docs, { ordered: true }).then(
            () => undefined,
            (e: unknown) => e,
          );
          let written = docs.length;
          if (error !== undefined) {
            expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
            if (BulkWriteError.isBulkWriteError(error)) {
              expect(error.writeErrors).toHaveLength(1);
              written = error.writeErrors[0]?.index ?? -1;
              expect(error.insertedCount).toBe(written);
            }
          }
          const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
          expect(stored.map((r) => r.mid).sort()).toEqual(
            docs
              .slice(0, written)
              .map((d) => d.mid)
              .sort(),
          );
          await engine.close();
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each([true, false])(
    'an ordered call deferred twice by late measurements reports the first one not stored (bulkWrite: %s)',
    async (bulkWrite) => {
      // Series s2 fills a bucket of five with m0..m3 and then goes back in time (m4 at 2 s, m5 at 1 s, m6 at
      // 0 s): sorted by time, a late measurement joins the full bucket's batch out of input order, so the
      // round is cut twice (at m6, then at m5). Deferred in input order, m5 is written with m6 and reported
      // when that write fails; it was once left out, unreported and unstored (found by the property above).
      const { db, storage, engine, coll } = await engineSetup(5, bulkWrite);
      db.operationFaults.push({ skip: 1, error: serverError(2, 'BadValue', 'injected') });
      const offsets = [0, 0, 0, 0, 2, 1, 0];
      const docs = [
        ...offsets.map((o, i) => ({ ts: at(o), sensor: 's2', mid: `m${i}` })),
        { ts: at(0), sensor: 's0', mid: 'm7' },
      ];
      const error: unknown = await coll.insertMany(docs, { ordered: true }).catch((e: unknown) => e);
      expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
      if (BulkWriteError.isBulkWriteError(error)) {
        expect(error.writeErrors.map((w) => w.index)).toEqual([5]);
        expect(error.insertedCount).toBe(5);
      }
      const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
      expect(stored.map((r) => r.mid).sort()).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
      await engine.close();
    },
  );

  it('sends only the changed fields of control.min and control.max, and stores the documents the reference does', async () => {
    // The updates of every bulkWrite, as sent (a proxy of the fake's collections records them).
    const sent: Array<Record<string, unknown>> = [];
    const fake = new FakeDb('metrics');
    const db = watchingBulkWrites(fake, (op) => {
      const update = (op as { updateOne?: { update: unknown } }).updateOne?.update;
      if (update !== undefined && !Array.isArray(update)) sent.push(update as Record<string, unknown>);
    });
    const { engine, coll } = await engineOn(db, 5, {});
    const reference = await new BucketEngine({ parameters: kParameters }).createCollection('weather', {
      timeseries: { timeField: 'ts', metaField: 'sensor' },
    });
    // Per call, one measurement of each series: values that move one side or the other or neither, a
    // field that appears, a name that is not a dotted path, -0 after 0, dates, strings, a document.
    const calls = [
      [
        { ts: at(0), sensor: 'a', v: 5, w: 0, s: 'm', when: at(100), o: { x: 1 } },
        { ts: at(0), sensor: 'b', v: 1 },
      ],
      [
        { ts: at(1), sensor: 'a', v: 7, w: -0, s: 'm', when: at(100), o: { x: 1 } },
        { ts: at(1), sensor: 'b', v: 1 },
      ],
      [
        { ts: at(2), sensor: 'a', v: 6, w: 0, s: 'a', when: at(50), o: { x: 0 } },
        { ts: at(2), sensor: 'b', v: 0, 'x.y': 1 },
      ],
      [
        { ts: at(3), sensor: 'a', v: 9, w: 0, s: 'z', when: at(200), o: { x: 2 } },
        { ts: at(3), sensor: 'b', v: 2, 'x.y': 3 },
      ],
    ];
    for (const call of calls) {
      await coll.insertMany(call, { ordered: false });
      await reference.insertMany(call, { ordered: false });
    }
    // The commits after the first of each bucket: only what moved, as dotted paths (b's last two
    // commits, which add the column 'x.y', go as a pipeline with both sides whole: not listed here).
    const paths = sent.map((u) =>
      Object.keys(u.$set as Record<string, unknown>).filter((k) => k.startsWith('control.m')),
    );
    expect(paths).toEqual([
      // Call 1, b then a: -0 after 0 moves neither side of w (equal, the first is kept).
      ['control.max.ts'],
      ['control.max.ts', 'control.max.v'],
      // Call 2, a: v between its minimum and maximum; s, when and o lower.
      ['control.min.s', 'control.min.when', 'control.min.o', 'control.max.ts'],
      // Call 3, a.
      ['control.max.ts', 'control.max.v', 'control.max.s', 'control.max.when', 'control.max.o'],
    ]);
    // Byte for byte the documents the embedded storage holds (their fields in the same order).
    const bytesOf = async (c: typeof coll) =>
      (await c.buckets.find().toArray())
        .map((b): Record<string, unknown> => ({ ...b, _id: null }))
        .sort((x, y) => (String(x.meta) < String(y.meta) ? -1 : 1))
        .map((b) => Buffer.from(serialize(b)).toString('hex'));
    expect(await bytesOf(coll)).toEqual(await bytesOf(reference));
    await engine.close();
  });

  it('with bulkWrite, an ordered call with each series contiguous is one bulkWrite', async () => {
    const { db, engine, coll } = await engineSetup(5, true);
    const docs = Array.from({ length: 8 }, (_, i) => ({ ts: at(i % 4), sensor: `s${i >> 2}`, mid: `m${i}` }));
    await coll.insertMany(docs, { ordered: true });
    expect(db.calls.filter((c) => c.startsWith('bulkWrite:'))).toHaveLength(1);
    expect(await coll.countDocuments()).toBe(8);
    await engine.close();
  });

  it("a call's new series are queried for buckets to reopen with one read, not a query each", async () => {
    const db = new FakeDb('metrics');
    const first = await engineOn(db, 5, {});
    const name = 'system.buckets.weather';
    const call = (t: number, sensors: ReadonlyArray<string>) =>
      sensors.map((sensor, i) => ({ ts: at(t), sensor, v: i }));
    // The reads of the buckets collection.
    const reads = () => db.calls.filter((c) => c === `aggregate:${name}` || c === `find:${name}`);
    const sensors = Array.from({ length: 20 }, (_, i) => `s${i}`);
    await first.coll.insertMany(call(0, sensors), { ordered: false });
    expect(reads()).toEqual([`find:${name}`]);
    // Each skipped query is counted as the failed query it stands for.
    expect((await first.coll.stats()).timeseries.numBucketQueriesFailed).toBe(20);
    // Series with open buckets ask nothing.
    db.calls.length = 0;
    await first.coll.insertMany(call(1, sensors), { ordered: false });
    expect(reads()).toEqual([]);
    await first.engine.close();

    // Another engine on the same database: the series with buckets are reopened from the same one read,
    // the new ones get new buckets, and the reopened buckets' columns are not read again.
    const second = await engineOn(db, 5, {});
    db.calls.length = 0;
    await second.coll.insertMany(call(2, [...sensors.slice(0, 5), 'n0', 'n1', 'n2']), { ordered: false });
    expect(reads()).toEqual([`find:${name}`]);
    const stats = (await second.coll.stats()).timeseries;
    expect(stats.numBucketsReopened).toBe(5);
    expect(stats.numBucketQueriesFailed).toBe(3);
    const stored = await storedMeasurements(second.storage, second.coll.bucketsNamespace, 'ts', 'sensor');
    expect(stored).toHaveLength(48);
    await second.engine.close();
  });

  it("with bulkWrite, a guard miss sends only that bucket's measurements to a new bucket", async () => {
    const { db, storage, engine, coll } = await engineSetup(5, true);
    await coll.insertMany([
      { ts: at(0), sensor: 'a', mid: 'a0' },
      { ts: at(0), sensor: 'b', mid: 'b0' },
    ]);
    // Someone else changes series a's bucket: the catalog's next commit to it no longer matches.
    const buckets = db.collection('system.buckets.weather');
    await buckets.updateMany({ meta: 'a' }, { $set: { 'control.min.v': 0 } });
    await buckets.deleteMany({ meta: 'a' });
    await coll.insertMany(
      [
        { ts: at(1), sensor: 'a', mid: 'a1' },
        { ts: at(1), sensor: 'b', mid: 'b1' },
      ],
      { ordered: false },
    );
    const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
    expect(stored.map((r) => r.mid).sort()).toEqual(['a1', 'b0', 'b1']);
    expect(db.calls.filter((c) => c.startsWith('bulkWrite:'))).toHaveLength(3);
    await engine.close();
  });

  it('retries an injected duplicate key on insert with a new bucket id', async () => {
    const { db, storage, coll } = await engineSetup();
    db.faults.push({
      op: 'insertOne',
      when: 'before',
      error: serverError(11000, 'DuplicateKey', 'E11000 duplicate key error'),
    });
    await coll.insertOne({ ts: at(0), sensor: 'a', mid: 'only' });
    expect(db.calls.filter((c) => c.startsWith('insertOne:'))).toHaveLength(2);
    const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
    expect(stored.map((r) => r.mid)).toEqual(['only']);
  });

  it("a write that finally fails rejects exactly its batch's measurements", async () => {
    const { db, storage, coll } = await engineSetup(1);
    await coll.insertMany([{ ts: at(0), sensor: 'a', mid: 'first' }]);
    db.faults.push(
      { op: 'updateOne', when: 'before', error: network() },
      { op: 'updateOne', when: 'before', error: network() },
    );
    const error: unknown = await coll
      .insertMany(
        [
          { ts: at(1), sensor: 'a', mid: 'lost1' },
          { ts: at(2), sensor: 'a', mid: 'lost2' },
          { ts: at(3), sensor: 'b', mid: 'kept' },
        ],
        { ordered: false },
      )
      .catch((e: unknown) => e);
    expect(BulkWriteError.isBulkWriteError(error)).toBe(true);
    const bulk = error as BulkWriteError;
    expect(bulk.insertedCount).toBe(1);
    expect(bulk.writeErrors.map((e) => [e.index, e.code, e.codeName])).toEqual([
      [0, 6, 'HostUnreachable'],
      [1, 6, 'HostUnreachable'],
    ]);
    await coll.insertOne({ ts: at(4), sensor: 'a', mid: 'after' });
    const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
    expect(stored.map((r) => r.mid).sort()).toEqual(['after', 'first', 'kept']);
  });
});

describe('MongoStorage: open buckets on the server (openBucketForm)', () => {
  /** A `Db` over `fake` that adds up the BSON bytes of every bulkWrite's operations. */
  function measuredDb(fake: FakeDb): { db: MongoDbLike; sent: { bytes: number } } {
    const sent = { bytes: 0 };
    const db = watchingBulkWrites(fake, (op) => {
      sent.bytes += serialize(op).length;
    });
    return { db, sent };
  }

  /** An engine over `MongoStorage` on a fresh fake (with `bulkWrite` or not), and its 'weather' collection. */
  async function engineOverFake(
    bulkWrite: boolean,
    options: MongoStorageOptions,
    parameters: Readonly<Record<string, number | boolean>>,
  ) {
    const fake = new FakeDb('metrics');
    fake.bulkWrite = bulkWrite;
    const storage = new MongoStorage(fake, { mode: 'buckets', retry: kInstantRetry, ...options });
    const engine = new BucketEngine({ storage, parameters: { ...kParameters, ...parameters } });
    const coll = await engine.createCollection('weather', { timeseries: kTimeseries });
    return { fake, storage, engine, coll };
  }

  // One measurement per series per call (a bulk loader), ten fields each.
  const row = (i: number, s: number) => ({
    ts: at(i * 10),
    sensor: `s${s}`,
    ...Object.fromEntries(Array.from({ length: 10 }, (_, f) => [`f${f}`, (i * 7 + f * 3 + s) % 23])),
  });

  /** `calls` calls of two series into MongoStorage (form `form`) and into the embedded reference. */
  async function load(
    form: OpenBucketForm,
    calls: number,
    maxCount: number,
    onCall?: (i: number, raw: () => Array<Record<string, unknown>>) => void,
  ) {
    const fake = new FakeDb('metrics');
    fake.bulkWrite = true;
    const raw = () => fake.rawDocuments('weather.buckets', kReadBack);
    const { db, sent } = measuredDb(fake);
    const parameters = { ...kParameters, timeseriesBucketMaxCount: maxCount };
    const engine = new BucketEngine({
      storage: new MongoStorage(db, { mode: 'buckets', retry: kInstantRetry, openBucketForm: form }),
      parameters,
    });
    const coll = await engine.createCollection('weather', { timeseries: kTimeseries });
    const referenceEngine = new BucketEngine({ parameters });
    const reference = await referenceEngine.createCollection('weather', { timeseries: kTimeseries });
    for (let i = 0; i < calls; i++) {
      const docs = [row(i, 0), row(i, 1)];
      await coll.insertMany(docs, { ordered: false });
      await reference.insertMany(docs, { ordered: false });
      onCall?.(i, raw);
    }
    const close = async () => {
      await engine.close();
      await referenceEngine.close();
    };
    return { coll, reference, sent, raw, close };
  }

  const kReadBack = { promoteValues: true, promoteBuffers: false, bsonRegExp: true } as const;
  const versionOf = (doc: Record<string, unknown>) => Number((doc.control as { version: unknown }).version);
  const countOf = (doc: Record<string, unknown>) => Number((doc.control as { count?: unknown }).count);
  /** A bucket by its series and first time (the ids differ between the two engines). */
  const keyOf = (doc: Record<string, unknown>) =>
    `${String(doc.meta)}@${(doc.control as { min: { ts: Date } }).min.ts.toISOString()}`;
  const withoutId = (doc: Record<string, unknown>) =>
    Buffer.from(serialize({ ...doc, _id: null })).toString('hex');

  it("'measured' keeps a bucket compressed until its column replacements cost more, then sends cells, and compresses it when it closes", async () => {
    let firstUncompressed: number | undefined;
    const measured = await load('measured', 150, 60, (i, raw) => {
      if (firstUncompressed === undefined && raw().some((d) => versionOf(d) === 1)) firstUncompressed = i;
    });
    // Not at the second commit: the first replacements of a small bucket cost less than cells.
    expect(firstUncompressed).toBeGreaterThan(2);
    expect(firstUncompressed).toBeLessThan(60);
    const stored = measured.raw();
    const expected = new Map(
      ((await measured.reference.buckets.find().toArray()) as Array<Record<string, unknown>>).map((d) => [
        keyOf(d),
        d,
      ]),
    );
    expect(stored).toHaveLength(6);
    for (const doc of stored) {
      const reference = expected.get(keyOf(doc)) as Record<string, unknown>;
      expect(reference).toBeDefined();
      if (countOf(reference) === 60) {
        // Closed: compressed again, byte for byte the document the embedded engine holds.
        expect(withoutId(doc)).toBe(withoutId(reference));
      } else {
        // Open (30 measurements): version 1, holding the reference's measurements in its order.
        expect(versionOf(doc)).toBe(1);
        expect(withoutId(doc)).toBe(withoutId(decompressBucket(reference)));
      }
    }
    const compressed = await load('compressed', 150, 60);
    expect(compressed.raw().every((d) => versionOf(d) === 2)).toBe(true);
    // Chosen by measurement: fewer bytes than column replacement all along (about 0.78 of them here,
    // in buckets of 60; the longer a bucket, the larger the gap).
    expect(measured.sent.bytes).toBeLessThan(compressed.sent.bytes * 0.85);
    await measured.close();
    await compressed.close();
  });

  it.each([true, false])(
    'a rewrite as version 1, a commit of cells and a compression whose replies were lost store each measurement once (bulkWrite: %s)',
    async (bulkWrite) => {
      const op = bulkWrite ? 'bulkWrite' : 'updateOne';
      const { fake, storage, engine, coll } = await engineOverFake(
        bulkWrite,
        { openBucketForm: 'uncompressed' },
        { timeseriesBucketMaxCount: 4 },
      );
      const versions: number[][] = [];
      for (let i = 0; i < 9; i++) {
        // Call 1 rewrites both buckets as version 1, calls 2 and 3 send cells, call 4 closes them
        // (compressed in one find and one write), and so on: every second call loses a reply.
        if (i % 2 === 1) fake.faults.push({ op, when: 'after', error: network() });
        await coll.insertMany([row(i, 0), row(i, 1)], { ordered: i % 3 === 0 });
        versions.push(fake.rawDocuments('weather.buckets', kReadBack).map(versionOf));
      }
      expect(fake.faults).toEqual([]);
      expect(versions[1]).toEqual([1, 1]);
      // After call 5 the first buckets (4 measurements each) are closed and compressed again.
      expect(versions[5]?.slice(0, 2)).toEqual([2, 2]);
      const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
      expect(stored).toHaveLength(18);
      const keys = stored.map((r) => `${String(r.sensor)}@${(r.ts as Date).toISOString()}`);
      expect(new Set(keys).size).toBe(18);
      await engine.close();
    },
  );

  it.each(['memory', 'fake'] as const)(
    'a commit does not extend a bucket another writer compressed again sorted, with the same count (%s)',
    async (kind) => {
      // A version-3 bucket (appended out of time order) rewritten by another writer with its rows sorted
      // (as a version-1 bucket is compressed when a writer reopens it): the count is the same, the bytes
      // are not, and the catalog's next commit extends its own bytes. It must not apply.
      const fake = new FakeDb('metrics');
      const storage =
        kind === 'memory'
          ? new MemoryStorage()
          : new MongoStorage(fake, { mode: 'buckets', retry: kInstantRetry, openBucketForm: 'compressed' });
      const engine = new BucketEngine({ storage, parameters: kParameters });
      const coll = await engine.createCollection('weather', { timeseries: kTimeseries });
      const seconds = [10, 30, 20, 50, 40, 70, 60, 90, 80, 110, 100];
      for (const s of seconds) await coll.insertMany([{ ts: at(s), sensor: 'a', v: s, w: -s }]);
      const [doc] = (await coll.buckets.find().toArray()) as Array<Record<string, unknown>>;
      expect(versionOf(doc as Record<string, unknown>)).toBe(3);
      const sorted = compressBucket(decompressBucket(doc as Record<string, unknown>), 'ts', {
        whenNotSmaller: 'compress',
      });
      if (sorted.kind !== 'compressed') throw new Error('not compressed');
      expect(versionOf(sorted.doc)).toBe(2);
      expect(countOf(sorted.doc)).toBe(seconds.length);
      expect(
        await storage.replaceOne(coll.bucketsNamespace, { _id: (doc as { _id: unknown })._id }, sorted.doc),
      ).toEqual({ kind: 'updated' });
      await coll.insertMany([{ ts: at(120), sensor: 'a', v: 120, w: -120 }]);
      const rows = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
      expect(
        rows
          .map((r) => [(r.ts as Date).getTime(), r.v, r.w])
          .sort((x, y) => (x[0] as number) - (y[0] as number)),
      ).toEqual([...seconds, 120].sort((x, y) => x - y).map((s) => [at(s).getTime(), s, -s]));
      // Each bucket says what it is: a version-2 bucket's rows are in time order.
      for (const bucket of (await coll.buckets.find().toArray()) as Array<Record<string, unknown>>) {
        const times = Object.values((decompressBucket(bucket).data as { ts: object }).ts) as Date[];
        const inOrder = times.every((time, i) => i === 0 || time >= (times[i - 1] as Date));
        if (versionOf(bucket) === 2) expect(inOrder).toBe(true);
      }
      await engine.close();
    },
  );

  it.each([true, false])(
    '5.x–7.x format: the buckets one call closes are compressed with one find and one write, and counted (bulkWrite: %s)',
    async (bulkWrite) => {
      const { fake, storage, engine, coll } = await engineOverFake(
        bulkWrite,
        {},
        { timeseriesBucketMaxCount: 3, timeseriesAlwaysUseCompressedBuckets: false },
      );
      const series = [0, 1, 2, 3];
      for (let i = 0; i < 3; i++)
        await coll.insertMany(
          series.map((s) => row(i, s)),
          { ordered: false },
        );
      // A fourth measurement per series: every bucket rolls over on its count and closes.
      const before = fake.calls.length;
      await coll.insertMany(
        series.map((s) => row(3, s)),
        { ordered: false },
      );
      const calls = fake.calls.slice(before).map((c) => c.split(':')[0]);
      // The writes of the call (one bulkWrite, or an insert per new bucket), then one read of the closed
      // buckets and their compressions (one bulkWrite, or an update each): no replaceOne, no read each.
      expect(calls.filter((c) => c === 'find')).toHaveLength(1);
      expect(calls).not.toContain('replaceOne');
      expect(calls.filter((c) => c === 'bulkWrite')).toHaveLength(bulkWrite ? 2 : 0);
      const versions = fake.rawDocuments('weather.buckets', kReadBack).map(versionOf);
      expect(versions.sort()).toEqual([1, 1, 1, 1, 2, 2, 2, 2]);
      const stats = (await coll.stats()).timeseries;
      expect([stats.numCompressedBuckets, stats.numUncompressedBuckets]).toEqual([4, 0]);
      expect(stats.numBytesCompressed).toBeLessThan(stats.numBytesUncompressed ?? 0);
      const stored = await storedMeasurements(storage, coll.bucketsNamespace, 'ts', 'sensor');
      expect(stored).toHaveLength(16);
      await engine.close();
    },
  );

  it("a bucket with a field name that cannot be a path stays compressed, and its documents are the reference's", async () => {
    // Cells are `data.<field>.<index>` paths: a dotted or $-prefixed name cannot be one, so such a
    // bucket keeps the compressed form (its commits resend columns, as a pipeline), whatever the option.
    const { fake, engine, coll } = await engineOverFake(
      true,
      { openBucketForm: 'uncompressed' },
      { timeseriesBucketMaxCount: 4 },
    );
    const referenceEngine = new BucketEngine({ parameters: { ...kParameters, timeseriesBucketMaxCount: 4 } });
    const reference = await referenceEngine.createCollection('weather', { timeseries: kTimeseries });
    for (let i = 0; i < 6; i++) {
      const docs = [
        { ts: at(i), sensor: 'dotted', 'a.b': i, v: i },
        { ts: at(i), sensor: 'dollar', $x: i, v: -i },
        { ts: at(i), sensor: 'plain', v: i },
      ];
      await coll.insertMany(docs, { ordered: false });
      await reference.insertMany(docs, { ordered: false });
    }
    const stored = fake.rawDocuments('weather.buckets', kReadBack);
    const bySeries = (meta: string) => stored.filter((d) => d.meta === meta).map(versionOf);
    // Two buckets per series (4 + 2 measurements): the first closed and compressed; the open one
    // version 1 only where every name can be a path.
    expect(bySeries('dotted')).toEqual([2, 2]);
    expect(bySeries('dollar')).toEqual([2, 2]);
    expect(bySeries('plain')).toEqual([2, 1]);
    // Matched by series and first time (both buckets of a series start in the same rounded minute).
    const first = (d: Record<string, unknown>) =>
      `${String(d.meta)}@${((decompressBucket(d).data as { ts: Record<string, Date> }).ts['0'] as Date).toISOString()}`;
    const expected = new Map(
      ((await reference.buckets.find().toArray()) as Array<Record<string, unknown>>).map((d) => [
        first(d),
        d,
      ]),
    );
    expect(expected.size).toBe(6);
    for (const doc of stored) {
      const ref = expected.get(first(doc)) as Record<string, unknown>;
      expect(withoutId(doc)).toBe(withoutId(versionOf(doc) === 1 ? decompressBucket(ref) : ref));
    }
    await engine.close();
    await referenceEngine.close();
  });

  it("'uncompressed' rewrites a bucket as version 1 at its second commit; 'compressed' never does", async () => {
    for (const [form, version] of [
      ['uncompressed', 1],
      ['compressed', 2],
      ['measured', 2],
    ] as const) {
      const run = await load(form, 2, 1000);
      expect(run.raw().map(versionOf)).toEqual([version, version]);
      await run.close();
    }
  });
});
