/**
 * The public facade (README, Use): a `BucketEngine` owns a bucket catalog and a storage, and hands out
 * time-series collections.
 *
 * @packageDocumentation
 */
import { BucketCatalog } from '../catalog/bucket-catalog.js';
import { BucketMetadataCache } from '../catalog/bucket-metadata.js';
import type { BucketCatalogServerStatus } from '../catalog/bucket-catalog.js';
import { TimeseriesError } from '../errors.js';
import { Deferred } from '../util/deferred.js';
import {
  resolveCollectionOptions,
  sameCollectionOptions,
  withBucketingParametersChanged,
} from '../options.js';
import type { CreateCollectionOptions, ResolvedCollectionOptions } from '../options.js';
import type { Storage } from '../storage/storage.js';
import { closedBucketsCompressor, takesDeferredColumns } from '../storage/storage.js';
import type { Clock } from '../util/clock.js';
import type { MeasurementDocument } from '../reader/reader.js';
import { checkCollectionName, checkNewCollectionName } from './argument-checks.js';
import { CallGate } from './call-gate.js';
import { ClosedBucketCompressor, compressOneByOne } from './closed-bucket-compression.js';
import type { CompressionTarget } from './closed-bucket-compression.js';
import { resolveEngineOptions } from './engine-options.js';
import type { BucketEngineOptions } from './engine-options.js';
import { bucketsNamespaceOf, TimeseriesCollection } from './timeseries-collection.js';
import { deleteExpiredBuckets, expiredBucketsFilter, TTLMonitor } from './ttl-monitor.js';

/** Result of {@link BucketEngine.runTTLMonitor}. */
export interface TTLPassResult {
  /** Bucket documents deleted by the pass. */
  readonly deletedBuckets: number;
}

export type { BucketEngineOptions } from './engine-options.js';

/** `engine.serverStatus()`. */
export interface ServerStatus {
  /**
   * The bucket catalog's section. Always present: before the first insert every number is 0 (MongoDB
   * omits the section until a collection has statistics; an in-process engine has nothing to hide).
   */
  readonly bucketCatalog: BucketCatalogServerStatus;
}

/**
 * MongoDB's time-series engine in process: a bucket catalog writing bucket documents to a storage.
 *
 * @example
 * ```ts
 * const engine = new BucketEngine();
 * const coll = await engine.createCollection('weather', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
 * await coll.insertMany([{ ts: new Date(), sensor: 'a', temp: 21.5 }]);
 * console.log(engine.serverStatus().bucketCatalog);
 * await engine.close();
 * ```
 */
export class BucketEngine {
  /** The bucket catalog (low-level protocol, docs/mongodb-behaviour.md §7). */
  readonly catalog: BucketCatalog;
  /** The storage holding bucket documents. */
  readonly storage: Storage;
  /** The engine's clock. */
  readonly clock: Clock;
  /** Database name used in namespaces. */
  readonly dbName: string;
  readonly #collections = new Map<string, TimeseriesCollection<object>>();
  /** Series identities of scalar metas, shared by the collections (normalisation is per value, not per ns). */
  readonly #metadataCache = new BucketMetadataCache();
  /** Where closed buckets go to be compressed, when closing one writes anything. */
  readonly #closedBuckets: ClosedBucketCompressor | undefined;
  readonly #ttlMonitor: TTLMonitor | undefined;
  /** Calls on the engine and its collections; `close()` closes it (see call-gate.ts). */
  readonly #gate = new CallGate();
  /** Collections being dropped, by name: a create of the same name waits for the drop. */
  readonly #drops = new Map<string, Promise<void>>();
  #closing: Promise<void> | undefined;

  /**
   * @param options - storage, server parameters, clock, TTL monitor.
   * @throws {@link TimeseriesError} `IDLUnknownField` for an unknown option, and the errors of
   *   `resolveEngineOptions` for an invalid server parameter or option value.
   */
  constructor(options: BucketEngineOptions = {}) {
    const resolved = resolveEngineOptions(options);
    const { parameters, ttlMonitorSleepSecs: sleepSecs } = resolved;
    this.storage = resolved.storage;
    this.clock = resolved.clock;
    this.dbName = resolved.dbName;
    const target = (ns: string): CompressionTarget | undefined => {
      const coll = this.#collections.get(ns.slice(this.dbName.length + 1));
      return coll === undefined
        ? undefined
        : { bucketsNs: coll.bucketsNamespace, timeField: coll.options.timeField };
    };
    // In the 8.0+ format buckets are compressed from their first commit: closing one writes nothing,
    // unless the storage keeps open buckets uncompressed on its backend (then it compresses them). In
    // the 5.x–7.x format a closed bucket is compressed: by the storage, many at once, when it can.
    const validate = parameters.timeseriesValidateCompressedBuckets;
    const storageCompression = closedBucketsCompressor(this.storage);
    let closed: ClosedBucketCompressor | undefined;
    if (parameters.timeseriesAlwaysUseCompressedBuckets) {
      if (storageCompression !== undefined) {
        closed = new ClosedBucketCompressor(storageCompression, target, { validate, which: 'held' });
      }
    } else if (resolved.compression === 'onClose') {
      closed = new ClosedBucketCompressor(
        storageCompression ?? compressOneByOne(this.storage),
        target,
        { validate, which: 'all' },
        (ns, outcome) => {
          if (outcome.kind === 'failed') this.catalog.recordCompression(ns, 'failed', 0, 0);
          else this.catalog.recordCompression(ns, outcome.kind, outcome.bytesBefore, outcome.bytesAfter);
        },
      );
    }
    this.catalog = new BucketCatalog({
      parameters: {
        timeseriesBucketMaxCount: parameters.timeseriesBucketMaxCount,
        timeseriesBucketMaxSize: parameters.timeseriesBucketMaxSize,
        timeseriesBucketMinCount: parameters.timeseriesBucketMinCount,
        timeseriesIdleBucketExpiryMemoryUsageThresholdBytes:
          parameters.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes,
        timeseriesIdleBucketExpiryMaxCountPerAttempt: parameters.timeseriesIdleBucketExpiryMaxCountPerAttempt,
        timeseriesAlwaysUseCompressedBuckets: parameters.timeseriesAlwaysUseCompressedBuckets,
        timeseriesValidateCompressedBuckets: parameters.timeseriesValidateCompressedBuckets,
      },
      reopening: resolved.reopening,
      deferredColumns: takesDeferredColumns(this.storage),
      ...(closed === undefined
        ? {}
        : {
            onBucketClosed: (ns, oid) => {
              closed.enqueue(ns, oid);
            },
          }),
    });
    this.#closedBuckets = closed;
    this.#ttlMonitor =
      resolved.ttlMonitor === 'enabled'
        ? new TTLMonitor(sleepSecs * 1000, () => this.runTTLMonitor())
        : undefined;
  }

  /**
   * Create a time-series collection. Creating an existing collection with identical options is a no-op;
   * with different options it fails with `NamespaceExists`.
   *
   * @typeParam TSchema - the measurements' type (as the driver's `db.collection<TSchema>()`); it types
   *   `insertOne`/`insertMany` and is the default document type of `find`.
   * @param name - collection name.
   * @param options - `{ timeseries: { timeField, metaField?, granularity?, bucketMaxSpanSeconds?,
   *   bucketRoundingSeconds? }, expireAfterSeconds? }`; also checked at run time (unknown fields are
   *   `IDLUnknownField`, as in MongoDB).
   * @returns the collection.
   * @throws {@link TimeseriesError} with MongoDB's code and message for invalid options.
   */
  createCollection<TSchema extends object = MeasurementDocument>(
    name: string,
    options: CreateCollectionOptions,
  ): Promise<TimeseriesCollection<TSchema>> {
    return this.#gate.run(() => this.#createCollection<TSchema>(name, options));
  }

  async #createCollection<TSchema extends object>(
    name: string,
    options: CreateCollectionOptions,
  ): Promise<TimeseriesCollection<TSchema>> {
    checkCollectionName(name);
    // A collection of this name being dropped is gone first: the new one starts empty.
    await this.#drops.get(name);
    const ns = `${this.dbName}.${name}`;
    checkNewCollectionName(bucketsNamespaceOf(this.dbName, name), ns, name);
    let resolved = resolveCollectionOptions(ns, options, this.clock);
    const existing = this.#collections.get(name);
    if (existing !== undefined) {
      if (sameCollectionOptions(existing.options, resolved)) return existing;
      throw new TimeseriesError('NamespaceExists', `Collection ${ns} already exists.`);
    }
    const kept = await this.#withKeptOptions(ns, name, resolved);
    resolved = kept.options;
    // Another create of the name may have registered it while the storage was read.
    const registered = this.#collections.get(name);
    if (registered !== undefined) {
      if (sameCollectionOptions(registered.options, resolved)) return registered;
      throw new TimeseriesError('NamespaceExists', `Collection ${ns} already exists.`);
    }
    const created = new Deferred<void>();
    const coll = new TimeseriesCollection<TSchema>(
      {
        catalog: this.catalog,
        created: created.promise,
        storage: this.storage,
        gate: this.#gate,
        metadata: this.#metadataCache,
        afterWrite: () => this.#closedBuckets?.drain() ?? Promise.resolve(),
        clock: this.clock,
        onDrop: (dropped, done) => {
          if (this.#collections.get(dropped) === coll) this.#collections.delete(dropped);
          const waits = (this.#drops.get(dropped) ?? Promise.resolve()).then(() => done);
          this.#drops.set(dropped, waits);
          void waits.then(() => {
            if (this.#drops.get(dropped) === waits) this.#drops.delete(dropped);
          });
        },
      },
      this.dbName,
      name,
      resolved,
    );
    // Registered before the storage calls, so that a concurrent create of the same name sees it; taken
    // back if they fail, so that a retry creates the namespace and index instead of finding a half-made
    // collection.
    this.#collections.set(name, coll);
    try {
      const stored = resolved.storedOptions;
      await this.storage.createNamespace(coll.bucketsNamespace, {
        timeseries: stored.timeseries as unknown as Record<string, unknown>,
        ...(stored.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: stored.expireAfterSeconds }),
      });
      const { metaField, timeField } = resolved;
      if (metaField !== undefined && !kept.existed) {
        // MongoDB 6.3+ creates this index with every collection that has a metaField; query-based
        // reopening and lookups by series and time use it. Not again for a collection the storage holds
        // already (an engine started again): creating it is a no-op there, and an index its user dropped
        // stays dropped.
        await this.storage.createIndex(coll.bucketsNamespace, {
          name: `${metaField}_1_${timeField}_1`,
          key: { meta: 1, [`control.min.${timeField}`]: 1, [`control.max.${timeField}`]: 1 },
          options: { originalSpec: { key: { [metaField]: 1, [timeField]: 1 } } },
        });
      }
    } catch (error) {
      if (this.#collections.get(name) === coll) this.#collections.delete(name);
      throw error;
    } finally {
      created.resolve();
    }
    return coll;
  }

  /**
   * `resolved` checked against the options the storage keeps for the collection (this engine, or another
   * before it, created it in that storage): other options are `NamespaceExists`, as the server refuses
   * them; and flagged when a `collMod` changed its bucketing before, or when the storage keeps no options
   * and so cannot say (fixed-bucket bounds would then miss measurements of a bucket opened before). With
   * whether the storage holds the collection already (`false` when it cannot say).
   */
  async #withKeptOptions(
    ns: string,
    name: string,
    resolved: ResolvedCollectionOptions,
  ): Promise<{ readonly options: ResolvedCollectionOptions; readonly existed: boolean }> {
    if (this.storage.namespaceOptions === undefined) {
      return { options: withBucketingParametersChanged(resolved), existed: false };
    }
    const kept = await this.storage.namespaceOptions(bucketsNamespaceOf(this.dbName, name));
    if (kept === undefined) return { options: resolved, existed: false };
    const { timeseries, expireAfterSeconds } = kept;
    const stored = resolveCollectionOptions(
      ns,
      { timeseries, ...(expireAfterSeconds === undefined ? {} : { expireAfterSeconds }) },
      this.clock,
    );
    if (!sameCollectionOptions(stored, resolved)) {
      throw new TimeseriesError('NamespaceExists', `Collection ${ns} already exists.`);
    }
    const options =
      kept.bucketingParametersHaveChanged === true ? withBucketingParametersChanged(resolved) : resolved;
    return { options, existed: true };
  }

  /**
   * An existing collection.
   *
   * @typeParam TSchema - the measurements' type, as in {@link BucketEngine.createCollection}.
   * @param name - collection name.
   * @returns the collection, or `undefined`.
   */
  collection<TSchema extends object = MeasurementDocument>(
    name: string,
  ): TimeseriesCollection<TSchema> | undefined {
    checkCollectionName(name);
    return this.#collections.get(name);
  }

  /**
   * serverStatus: the `bucketCatalog` section, always present (zeros before the first insert).
   *
   * @returns the status, with MongoDB's names.
   */
  serverStatus(): ServerStatus {
    return { bucketCatalog: this.catalog.serverStatus() };
  }

  /**
   * One TTL pass now (docs/mongodb-behaviour.md §13): in every collection with `expireAfterSeconds`, delete the buckets
   * whose start (the `_id` time, the rounded `control.min.<time>`) is older than `now −
   * expireAfterSeconds − bucketMaxSpanSeconds` by the engine's clock. Buckets outside the 32-bit `_id`
   * range are judged by their real start. Each deletion clears the bucket in the catalog first.
   *
   * @returns the number of buckets deleted.
   * @example
   * ```ts
   * const { deletedBuckets } = await engine.runTTLMonitor();
   * ```
   */
  runTTLMonitor(): Promise<TTLPassResult> {
    return this.#gate.run(() => this.#runTTLMonitor());
  }

  async #runTTLMonitor(): Promise<TTLPassResult> {
    const now = this.clock();
    let deletedBuckets = 0;
    for (const coll of this.#collections.values()) {
      const { expireAfterSeconds, timeField, bucketMaxSpanSeconds } = coll.options;
      if (expireAfterSeconds === undefined) continue;
      const target = {
        ns: coll.namespace,
        bucketsNs: coll.bucketsNamespace,
        timeField,
        expireAfterSeconds,
        bucketMaxSpanSeconds,
      };
      deletedBuckets += await coll.withRollupsRecomputed(expiredBucketsFilter(target, now), () =>
        deleteExpiredBuckets(this.catalog, this.storage, target, now),
      );
    }
    return { deletedBuckets };
  }

  /**
   * Stop accepting work (later calls on the engine and its collections are refused with `Interrupted`),
   * wait for the calls in flight, stop the TTL monitor (waiting for a pass in progress) and release the
   * storage. Once it resolves nothing more is written. Closing again returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#closeAfterCalls();
    return this.#closing;
  }

  async #closeAfterCalls(): Promise<void> {
    await this.#gate.close(() => new TimeseriesError('Interrupted', 'BucketEngine is closed'));
    await this.#ttlMonitor?.stop();
    await this.storage.close();
  }
}
