/**
 * Compression of closed buckets (docs/mongodb-behaviour.md §1.3, docs/bsoncolumn.md §5; MongoDB 5.2–7.x "compression on
 * close"): when the catalog closes a bucket, the writer that closed it rewrites the stored version-1
 * document as version 2 before its insert call returns — unless compression fails or would not make the
 * document smaller, in which case it stays version 1.
 *
 * The rewrite is a direct write guarded on the document as read (`control.version: 1`, the measurement
 * count the bucket was closed with, its meta): if anything changed the document meanwhile, it is left
 * alone. A storage that compresses many buckets at once (`kCompressClosedBuckets`, `MongoStorage`) is
 * handed them per collection; any other is driven one bucket at a time through the `Storage` interface
 * ({@link compressOneByOne}). In the 8.0 format closing writes nothing, unless the storage keeps open
 * buckets as version 1 on its backend: then it is handed the ones it holds so (`which: 'held'`).
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { compressBucket } from '../bucket-format/bucket-compression.js';
import { bucketStateGuard } from '../bucket-format/bucket-document.js';
import type {
  ClosedBucketOutcome,
  ClosedBucketsOptions,
  CompressClosedBuckets,
  Storage,
} from '../storage/storage.js';

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
 * Closed buckets queued for compression, handed to `compress` per collection by writers before their
 * insert call returns; each outcome is counted by `record`, when given.
 */
export class ClosedBucketCompressor {
  readonly #queue: ClosedBucket[] = [];
  readonly #compress: CompressClosedBuckets;
  readonly #target: (ns: string) => CompressionTarget | undefined;
  readonly #options: Pick<ClosedBucketsOptions, 'validate' | 'which'>;
  readonly #record: ((ns: string, outcome: ClosedBucketOutcome) => void) | undefined;

  /**
   * @param compress - the storage's `kCompressClosedBuckets` method, or {@link compressOneByOne}.
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

  /**
   * Compress every queued bucket. Never throws: it runs after the writes of an insert call were
   * acknowledged by storage, so whatever fails here (a storage read or write, the compression itself)
   * leaves the bucket as version 1, counted as a failed compression (`numUncompressedBuckets`,
   * `numFailedDecompressBuckets`), rather than turning a stored insert into a rejected one (a retrying
   * client would store its measurements twice).
   */
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

const kFailed: ClosedBucketOutcome = Object.freeze({ kind: 'failed' });

/**
 * Closed buckets compressed one at a time through the `Storage` interface, for a storage without
 * `kCompressClosedBuckets`: each version-1 bucket read, compressed, and replaced guarded on the document
 * as read. Such a storage holds no bucket as version 1 for the catalog (`which: 'held'` finds none).
 * Never rejects: a bucket whose read or compression fails is `failed`.
 *
 * @param storage - where buckets are stored.
 * @returns the compression, as a storage's `kCompressClosedBuckets` method would do it.
 */
export function compressOneByOne(storage: Storage): CompressClosedBuckets {
  return async (ns, ids, options) => {
    if (options.which === 'held') return [];
    const outcomes: ClosedBucketOutcome[] = [];
    for (const id of ids) {
      try {
        let doc: Record<string, unknown> | undefined;
        for await (const found of storage.find(ns, { _id: id, 'control.version': 1 }, { limit: 1 })) {
          doc = found;
        }
        if (doc === undefined) continue;
        const result = compressBucket(doc, options.timeField, { validate: options.validate });
        if (result.kind !== 'compressed') {
          outcomes.push(result.kind === 'failed' ? kFailed : result);
          continue;
        }
        const replaced = await storage
          // Exactly the document read: a direct write (delete, meta update) in between wins.
          .replaceOne(ns, bucketStateGuard(doc, options.timeField), result.doc)
          .catch(() => ({ kind: 'notMatched' as const }));
        if (replaced.kind === 'updated') {
          outcomes.push({
            kind: 'compressed',
            bytesBefore: result.bytesBefore,
            bytesAfter: result.bytesAfter,
          });
        }
      } catch {
        outcomes.push(kFailed);
      }
    }
    return outcomes;
  };
}
