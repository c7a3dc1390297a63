/**
 * The public facade (SPEC §2): a `BucketEngine` owns a bucket catalog and a storage, and hands out
 * time-series collections.
 *
 * @packageDocumentation
 */
import { BucketCatalog } from '../catalog/bucket-catalog.js';
import type { BucketCatalogServerStatus } from '../catalog/bucket-catalog.js';
import { TimeseriesError } from '../errors.js';
import { resolveCollectionOptions, resolveServerParameters, sameCollectionOptions } from '../options.js';
import type { ServerParameters } from '../options.js';
import { MemoryStorage } from '../storage/memory-storage.js';
import type { Storage } from '../storage/storage.js';
import type { Clock } from '../util/clock.js';
import { systemClock } from '../util/clock.js';
import { ClosedBucketCompressor } from './closed-bucket-compression.js';
import { TimeseriesCollection } from './timeseries-collection.js';

/** Options of {@link BucketEngine}. */
export interface BucketEngineOptions {
  /**
   * Where bucket documents are stored.
   * @defaultValue `new MemoryStorage()`
   */
  readonly storage?: Storage;
  /** MongoDB server parameters (names and defaults as MongoDB's). */
  readonly parameters?: ServerParameters;
  /**
   * Current time in epoch milliseconds (TTL and idle expiry).
   * @defaultValue `Date.now`
   */
  readonly clock?: Clock;
  /**
   * Database name used in namespaces (`<dbName>.<collection>`).
   * @defaultValue `'tsbuckets'`
   */
  readonly dbName?: string;
  /**
   * `'onClose'`: when a bucket closes, its document is rewritten compressed (version 2, BSONColumn), as
   * MongoDB 5.2+ does; `'none'`: buckets stay version 1.
   * @defaultValue `'onClose'`
   */
  readonly compression?: 'onClose' | 'none';
  /**
   * `'enabled'`: late measurements reopen buckets from storage (MongoDB 6.3+); `'disabled'`: always open
   * new buckets.
   * @defaultValue `'enabled'`
   */
  readonly reopening?: 'enabled' | 'disabled';
}

/** `engine.serverStatus()`. */
export interface ServerStatus {
  /** Present once a collection has inserted (MongoDB omits it before). */
  readonly bucketCatalog?: BucketCatalogServerStatus;
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
  /** The bucket catalog (low-level protocol, SPEC §6). */
  readonly catalog: BucketCatalog;
  /** The storage holding bucket documents. */
  readonly storage: Storage;
  /** The engine's clock. */
  readonly clock: Clock;
  /** Database name used in namespaces. */
  readonly dbName: string;
  readonly #collections = new Map<string, TimeseriesCollection>();
  readonly #compressor: ClosedBucketCompressor | undefined;
  #closed = false;

  /**
   * @param options - storage, server parameters, clock.
   * @throws {@link TimeseriesError} for an invalid server parameter.
   */
  constructor(options: BucketEngineOptions = {}) {
    const parameters = resolveServerParameters(options.parameters ?? {});
    this.storage = options.storage ?? new MemoryStorage();
    this.clock = options.clock ?? systemClock;
    this.dbName = options.dbName ?? 'tsbuckets';
    const compressor =
      (options.compression ?? 'onClose') === 'onClose'
        ? new ClosedBucketCompressor(
            this.storage,
            () => this.catalog,
            (ns) => {
              const coll = this.#collections.get(ns.slice(this.dbName.length + 1));
              return coll === undefined
                ? undefined
                : { bucketsNs: coll.bucketsNamespace, timeField: coll.options.timeField };
            },
          )
        : undefined;
    this.catalog = new BucketCatalog({
      parameters: {
        timeseriesBucketMaxCount: parameters.timeseriesBucketMaxCount,
        timeseriesBucketMaxSize: parameters.timeseriesBucketMaxSize,
        timeseriesBucketMinCount: parameters.timeseriesBucketMinCount,
        timeseriesIdleBucketExpiryMemoryUsageThresholdBytes:
          parameters.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes,
        timeseriesIdleBucketExpiryMaxCountPerAttempt: parameters.timeseriesIdleBucketExpiryMaxCountPerAttempt,
      },
      reopening: options.reopening ?? 'enabled',
      ...(compressor === undefined
        ? {}
        : {
            onBucketClosed: (ns, oid) => {
              compressor.enqueue(ns, oid);
            },
          }),
    });
    this.#compressor = compressor;
  }

  #assertOpen = (): void => {
    if (this.#closed) throw new TimeseriesError('Interrupted', 'BucketEngine is closed');
  };

  /**
   * Create a time-series collection. Creating an existing collection with identical options is a no-op;
   * with different options it fails with `NamespaceExists`.
   *
   * @param name - collection name.
   * @param options - `{ timeseries: { timeField, metaField?, granularity?, bucketMaxSpanSeconds?,
   *   bucketRoundingSeconds? }, expireAfterSeconds? }`.
   * @returns the collection.
   * @throws {@link TimeseriesError} with MongoDB's code and message for invalid options.
   */
  async createCollection(name: string, options: unknown): Promise<TimeseriesCollection> {
    this.#assertOpen();
    const ns = `${this.dbName}.${name}`;
    const resolved = resolveCollectionOptions(ns, options, this.clock);
    const existing = this.#collections.get(name);
    if (existing !== undefined) {
      if (sameCollectionOptions(existing.options, resolved)) return existing;
      throw new TimeseriesError('NamespaceExists', `Collection ${ns} already exists.`);
    }
    const coll = new TimeseriesCollection(
      {
        catalog: this.catalog,
        storage: this.storage,
        assertOpen: this.#assertOpen,
        afterWrite: () => this.#compressor?.drain() ?? Promise.resolve(),
      },
      this.dbName,
      name,
      resolved,
    );
    this.#collections.set(name, coll);
    const stored = resolved.storedOptions;
    await this.storage.createNamespace(coll.bucketsNamespace, {
      timeseries: stored.timeseries as unknown as Record<string, unknown>,
      ...(stored.expireAfterSeconds === undefined ? {} : { expireAfterSeconds: stored.expireAfterSeconds }),
    });
    const { metaField, timeField } = resolved;
    if (metaField !== undefined) {
      // MongoDB 6.3+ creates this index with every collection that has a metaField; query-based reopening
      // and lookups by series and time use it.
      await this.storage.createIndex(coll.bucketsNamespace, {
        name: `${metaField}_1_${timeField}_1`,
        key: { meta: 1, [`control.min.${timeField}`]: 1, [`control.max.${timeField}`]: 1 },
        options: { originalSpec: { key: { [metaField]: 1, [timeField]: 1 } } },
      });
    }
    return coll;
  }

  /**
   * An existing collection.
   *
   * @param name - collection name.
   * @returns the collection, or `undefined`.
   */
  collection(name: string): TimeseriesCollection | undefined {
    return this.#collections.get(name);
  }

  /**
   * serverStatus: the `bucketCatalog` section (absent before the first insert).
   *
   * @returns the status, with MongoDB's names.
   */
  serverStatus(): ServerStatus {
    const bucketCatalog = this.catalog.serverStatus();
    return bucketCatalog === undefined ? {} : { bucketCatalog };
  }

  /** Stop accepting work and release the storage. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.storage.close();
  }
}
