/**
 * Sizes of the stored buckets of a collection, compressed and uncompressed, for the command's summaries
 * ("bytes per measurement").
 *
 * A collection holds both forms at once: buckets closed by the catalog are compressed (version 2), open
 * ones are not (version 1). Each bucket is measured in both forms: a version-1 bucket is compressed as the
 * catalog would compress it on close (without storing it), a compressed bucket is decompressed. A bucket
 * that compression would not make smaller counts its version-1 size for both, as the catalog keeps it so.
 *
 * @packageDocumentation
 */
import { calculateObjectSize } from 'bson';

import { compressBucket, decompressBucketSized } from '../bucket-format/bucket-compression.js';
import { bsonColumnDecoder, bucketMeasurementCount } from '../reader/bucket-unpacker.js';
import type { StoredBucket } from '../storage/storage.js';

/** Totals over a collection's buckets. */
export interface BucketSizes {
  /** Bucket documents. */
  readonly buckets: number;
  /** Measurements in them. */
  readonly measurements: number;
  /** BSON bytes with every bucket compressed (version 2). */
  readonly compressedBytes: number;
  /** BSON bytes with every bucket uncompressed (version 1). */
  readonly uncompressedBytes: number;
  /** BSON bytes as stored now. */
  readonly storedBytes: number;
}

/** Sizes of no bucket. */
export const kNoBuckets: BucketSizes = Object.freeze({
  buckets: 0,
  measurements: 0,
  compressedBytes: 0,
  uncompressedBytes: 0,
  storedBytes: 0,
});

/**
 * Measure buckets.
 *
 * @param buckets - the stored bucket documents.
 * @param timeField - the collection's time field.
 * @returns the totals.
 * @throws TimeseriesError for a malformed bucket.
 */
export async function measureBuckets(
  buckets: AsyncIterable<StoredBucket>,
  timeField: string,
): Promise<BucketSizes> {
  let count = 0;
  let measurements = 0;
  let compressedBytes = 0;
  let uncompressedBytes = 0;
  let storedBytes = 0;
  for await (const bucket of buckets) {
    count++;
    measurements += bucketMeasurementCount(bucket, timeField, bsonColumnDecoder);
    const stored = calculateObjectSize(bucket);
    storedBytes += stored;
    const uncompressed = decompressBucketSized(bucket);
    if (uncompressed !== undefined) {
      compressedBytes += stored;
      uncompressedBytes += uncompressed.size;
      continue;
    }
    uncompressedBytes += stored;
    const compressed = compressBucket(bucket, timeField, { validate: false });
    compressedBytes += compressed.kind === 'compressed' ? compressed.bytesAfter : stored;
  }
  return { buckets: count, measurements, compressedBytes, uncompressedBytes, storedBytes };
}
