/**
 * Compression of closed buckets (docs/mongodb-behaviour.md §1.3, docs/bsoncolumn.md §5; MongoDB 5.2–7.x "compression on
 * close"): when the catalog closes a bucket, the writer that closed it rewrites the stored version-1
 * document as version 2 before its insert call returns — unless compression fails or would not make the
 * document smaller, in which case it stays version 1.
 *
 * The rewrite is a direct write guarded on `control.version: 1` and the measurement count the bucket was
 * closed with: if anything changed the document meanwhile, it is left alone.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import type { BucketCatalog } from '../catalog/bucket-catalog.js';
import { compressBucket } from '../bucket-format/bucket-compression.js';
import type {
  ClosedBucketOutcome,
  ClosedBucketsOptions,
  CompressClosedBuckets,
  Storage,
} from '../storage/storage.js';
import { bucketStateGuard } from '../bucket-format/bucket-document.js';

/** A bucket closed by the catalog, waiting to be compressed. */
export interface ClosedBucket {
  /** Namespace of the time-series collection. */
  readonly ns: string;
  /** The bucket's `_id`. */
  readonly oid: ObjectId;
}

/** Where a collection's buckets are and how to read them. */
export interface CompressionTarget {
  /** Namespace of the buckets collection. */
  readonly bucketsNs: string;
  /** The time field. */
  readonly timeField: string;
}

/**
 * Closed buckets queued for compression, drained by writers before their insert call returns.
 */
export class ClosedBucketCompressor {
  readonly #queue: ClosedBucket[] = [];
  readonly #storage: Storage;
  readonly #catalog: () => BucketCatalog;
  readonly #target: (ns: string) => CompressionTarget | undefined;
  readonly #validate: boolean;

  /**
   * @param storage - where buckets are stored.
   * @param catalog - the catalog whose statistics record the outcomes.
   * @param target - the buckets namespace and time field of a collection (undefined once dropped).
   * @param validate - decompress each compressed bucket and compare it before writing it
   *   (`timeseriesValidateCompressedBuckets`).
   */
  constructor(
    storage: Storage,
    catalog: () => BucketCatalog,
    target: (ns: string) => CompressionTarget | undefined,
    validate: boolean,
  ) {
    this.#storage = storage;
    this.#catalog = catalog;
    this.#target = target;
    this.#validate = validate;
  }

  /**
   * Queue a closed bucket (the catalog's close hook).
   *
   * @param ns - namespace of the collection.
   * @param oid - the bucket's `_id`.
   */
  enqueue(ns: string, oid: ObjectId): void {
    this.#queue.push({ ns, oid });
  }

  /**
   * Compress every queued bucket. Never throws: it runs after the writes of an insert call were
   * acknowledged by storage, so whatever fails here (a storage read or write, the compression itself)
   * leaves the bucket as version 1, counted as a failed compression (`numUncompressedBuckets`,
   * `numFailedDecompressBuckets`), rather than turning a stored insert into a rejected one (a retrying
   * client would store its measurements twice).
   */
  async drain(): Promise<void> {
    for (let next = this.#queue.shift(); next !== undefined; next = this.#queue.shift()) {
      try {
        await this.#compress(next);
      } catch {
        this.#catalog().recordCompression(next.ns, 'failed', 0, 0);
      }
    }
  }

  async #compress({ ns, oid }: ClosedBucket): Promise<void> {
    const target = this.#target(ns);
    if (target === undefined) return;
    let doc: Record<string, unknown> | undefined;
    for await (const found of this.#storage.find(
      target.bucketsNs,
      { _id: oid, 'control.version': 1 },
      { limit: 1 },
    )) {
      doc = found;
    }
    if (doc === undefined) return;
    const result = compressBucket(doc, target.timeField, { validate: this.#validate });
    const catalog = this.#catalog();
    switch (result.kind) {
      case 'compressed': {
        const replaced = await this.#storage
          .replaceOne(
            target.bucketsNs,
            // Exactly the document read: a direct write (delete, meta update) in between wins.
            bucketStateGuard(doc, target.timeField),
            result.doc,
          )
          .catch(() => ({ kind: 'notMatched' as const }));
        if (replaced.kind === 'updated')
          catalog.recordCompression(ns, 'compressed', result.bytesBefore, result.bytesAfter);
        return;
      }
      case 'notSmaller':
        catalog.recordCompression(ns, 'notSmaller', result.bytesBefore, result.bytesAfter);
        return;
      case 'failed':
        catalog.recordCompression(ns, 'failed', 0, 0);
        return;
      default: {
        const never: never = result;
        throw new TypeError(`unknown compression result ${String(never)}`);
      }
    }
  }
}

/**
 * Closed buckets handed to a storage that compresses them itself, many at once
 * (`kCompressClosedBuckets`, `MongoStorage`: one read and one write for all those an insert call closed),
 * per collection, before the insert call that closed them returns. In the 8.0 format the storage
 * compresses those it keeps as version 1 while open (`which: 'held'`); in the 5.x–7.x format, every one
 * (`'all'`), and its outcomes are counted as {@link ClosedBucketCompressor} counts them.
 */
export class ClosedBucketHandoff {
  readonly #queue: ClosedBucket[] = [];
  readonly #compress: CompressClosedBuckets;
  readonly #target: (ns: string) => CompressionTarget | undefined;
  readonly #options: Pick<ClosedBucketsOptions, 'validate' | 'which'>;
  readonly #record: ((ns: string, outcome: ClosedBucketOutcome) => void) | undefined;

  /**
   * @param compress - the storage's `kCompressClosedBuckets` method.
   * @param target - the buckets namespace and time field of a collection (undefined once dropped).
   * @param options - `validate` (`timeseriesValidateCompressedBuckets`) and which buckets to compress.
   * @param record - counts each outcome in the collection's statistics (5.x–7.x format).
   */
  constructor(
    compress: CompressClosedBuckets,
    target: (ns: string) => CompressionTarget | undefined,
    options: Pick<ClosedBucketsOptions, 'validate' | 'which'>,
    record?: (ns: string, outcome: ClosedBucketOutcome) => void,
  ) {
    this.#compress = compress;
    this.#target = target;
    this.#options = options;
    this.#record = record;
  }

  /**
   * Queue a closed bucket (the catalog's close hook).
   *
   * @param ns - namespace of the collection.
   * @param oid - the bucket's `_id`.
   */
  enqueue(ns: string, oid: ObjectId): void {
    this.#queue.push({ ns, oid });
  }

  /** Hand every queued bucket to the storage. Never throws (the storage's method never rejects). */
  async drain(): Promise<void> {
    if (this.#queue.length === 0) return;
    const byNs = new Map<string, ObjectId[]>();
    for (const { ns, oid } of this.#queue.splice(0)) {
      const ids = byNs.get(ns);
      if (ids === undefined) byNs.set(ns, [oid]);
      else ids.push(oid);
    }
    for (const [ns, ids] of byNs) {
      const target = this.#target(ns);
      if (target === undefined) continue;
      const outcomes = await this.#compress(target.bucketsNs, ids, {
        ...this.#options,
        timeField: target.timeField,
      });
      if (this.#record !== undefined) for (const outcome of outcomes) this.#record(ns, outcome);
    }
  }
}
