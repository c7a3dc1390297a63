/**
 * The write of one batch to a compressed bucket (MongoDB 8.0+, the server's
 * `makeTimeseriesInsertCompressedBucketDocument` and `makeTimeseriesCompressedDiffUpdateOp`): the batch's
 * measurements, sorted by time, are appended to the bucket's columns; the first commit inserts the whole
 * version-2 document, later commits send what each column gained. A commit whose earliest time is before
 * the bucket's last stored time makes the bucket version 3 (unsorted).
 *
 * Runs under the bucket's prepared slot (at most one per bucket), which owns the bucket's columns.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';
import type { ObjectId } from 'bson';

import {
  kCompressedUnsortedVersion,
  makeCompressedBucketDocument,
  makeDeferredBucketDocument,
} from '../bucket-format/compressed-bucket.js';
import type { CommitRows, CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import { kNoTails } from '../bucket-format/column-tails.js';
import type { ColumnDiff } from '../bucket-format/column-tails.js';
import {
  forgetSlotsSnapshot,
  snapshotMinMax,
  updateMinMax,
  updateMinMaxFromKept,
  viewMinMax,
} from '../bucket-format/min-max.js';
import type { MinMaxUpdateOptions } from '../bucket-format/min-max.js';
import { defineField } from '../util/safe-record.js';
import type { Bucket } from './bucket.js';
import type { BucketingOptions, InsertItem } from './bucket-catalog-internal.js';
import { PackedItem } from './packed-item.js';
import type { MeasurementMap } from '../bucket-format/measurement-map.js';
import { cloneBsonValue } from '../util/bson-value.js';
import type { ExecutionStatsController } from './execution-stats.js';
import type { WriteBatch } from './write-batch.js';

/** What a commit to a compressed bucket writes. */
export type CompressedWrite =
  /** First commit: insert the whole version-2 document. */
  | { readonly kind: 'insert'; readonly bucketId: ObjectId; readonly document: Record<string, unknown> }
  /** Later commit: splice each column's new bytes in, guarded on `control.count`. */
  | { readonly kind: 'update'; readonly bucketId: ObjectId; readonly commit: CompressedBucketCommit };

/**
 * Fold a prepared batch into its compressed bucket's min/max, append it to the bucket and describe the
 * write.
 *
 * @param bucket - the batch's bucket (compressed: it has a measurement map).
 * @param batch - the prepared batch.
 * @param options - the collection's time and meta fields.
 * @param stats - counts `numCompressedBucketsConvertedToUnsorted`.
 * @param skip - the min/max fold's options (the metaField left out).
 * @returns the insert or the update.
 */
export function prepareCompressedWrite(
  bucket: Bucket,
  batch: WriteBatch,
  options: Pick<BucketingOptions, 'timeField' | 'metaField'>,
  stats: ExecutionStatsController,
  skip: MinMaxUpdateOptions,
): CompressedWrite {
  const map = bucket.measurementMap;
  if (map === undefined) throw new TypeError('prepareCompressedWrite on a version-1 bucket');
  const { metaField } = options;
  const items = sortedByTime(batch.items);
  const n = batch.numPreviouslyCommittedMeasurements;
  const storedVersion = bucket.sortedByTime ? 2 : 3;
  let unsorted = false;
  if (n > 0 && bucket.sortedByTime) {
    const last = map.timeOfLastMeasurement();
    // Strictly earlier: an equal time keeps the bucket sorted.
    if ((items[0] as InsertItem).timeMs < last) {
      unsorted = true;
      bucket.sortedByTime = false;
      stats.inc('numCompressedBucketsConvertedToUnsorted');
    }
  }
  if (items === batch.items) {
    // Each measurement folded from the values the map has just packed: no second walk of its fields.
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as InsertItem;
      keep(map, item, metaField);
      updateMinMaxFromKept(bucket.minMax, map, item, skip);
    }
  } else {
    // Sorted by time: folded in staging order first (the order decides which of 0 and -0 is kept).
    for (const item of batch.items) updateMinMax(bucket.minMax, item.measurement, skip);
    for (const item of items) keep(map, item, metaField);
  }
  // Deferred (a storage that takes the columns itself): no bytes now, and the bucket's size counts the
  // columns through the map (MeasurementMap.sizeBound), not per batch.
  const deferred = map.deferred;
  // A snapshot, not documents: a storage that keeps it until the bucket is read builds them only then. A
  // storage taking deferred columns copies what it keeps (MinMaxSnapshot.kept): a later commit hands it a
  // view of the slots, no copy. A first commit hands over a copy, which the storage keeps as it is: a view
  // would stay with the bucket (about 95 bytes per open bucket that is never committed to again).
  const minMax = deferred && n > 0 ? viewMinMax(bucket.minMax) : snapshotMinMax(bucket.minMax);
  const bucketId = bucket.id.oid;
  const sizeBefore = map.compressedSize;
  if (n === 0) {
    const input = {
      id: bucketId,
      hasMeta: bucket.hasMeta,
      // Each document gets its own copy: the normalised value is shared by the series' buckets. A copy,
      // not a second normalisation: the value is normalised already (its fields sorted).
      normalizedMeta: cloneBsonValue(bucket.normalizedMeta),
      count: map.count,
    };
    forgetSlotsSnapshot(bucket.minMax);
    if (deferred) {
      batch.createdColumns = map.takeNewColumns() ?? batch.createdColumns;
      return {
        kind: 'insert',
        bucketId,
        document: makeDeferredBucketDocument(input, { columns: map, minMax }),
      };
    }
    const { diffs } = map.intermediate();
    batch.compressedSizeDelta = map.compressedSize - sizeBefore;
    const created: string[] = [];
    for (const diff of diffs) if (diff.created) created.push(diff.field);
    batch.createdColumns = created;
    const document = makeCompressedBucketDocument({
      ...input,
      min: minMax.min,
      max: minMax.max,
      data: columnsOf(diffs),
    });
    return { kind: 'insert', bucketId, document };
  }
  let tails = kNoTails;
  if (deferred) batch.createdColumns = map.takeNewColumns() ?? batch.createdColumns;
  else {
    tails = map.intermediateTails();
    batch.compressedSizeDelta = map.compressedSize - sizeBefore;
    // Most commits create no column: no array for them.
    if (tails.firstCreated < tails.count) {
      batch.createdColumns = tails.fields.slice(tails.firstCreated, tails.count);
    }
  }
  const commit: CompressedBucketCommit = {
    format: 'compressed',
    bucketId,
    series: bucket,
    bucketIdHex: bucket.id.hex,
    numPreviouslyCommittedMeasurements: n,
    count: n + items.length,
    version: unsorted ? kCompressedUnsortedVersion : undefined,
    storedVersion,
    minMax,
    tails,
    deferred: deferred ? map : undefined,
    rows: deferred ? undefined : commitRows(items, options),
  };
  return { kind: 'update', bucketId, commit };
}

/** The rows of a commit to a storage that does not take deferred columns (it may write them as cells). */
function commitRows(
  items: ReadonlyArray<InsertItem>,
  options: Pick<BucketingOptions, 'timeField' | 'metaField'>,
): CommitRows {
  const measurements = new Array<Readonly<Record<string, unknown>>>(items.length);
  for (let i = 0; i < items.length; i++) measurements[i] = (items[i] as InsertItem).measurement;
  return { measurements, timeField: options.timeField, metaField: options.metaField };
}

/** The columns of a first commit: each diff is a whole column (offset 0), in column order. */
function columnsOf(diffs: ReadonlyArray<ColumnDiff>): Record<string, Binary> {
  const data: Record<string, Binary> = {};
  // The diff's bytes are a fresh array: the document takes them without a copy.
  for (const diff of diffs) defineField(data, diff.field, new Binary(diff.bytes, Binary.SUBTYPE_COLUMN));
  return data;
}

/**
 * Append a staged measurement to the bucket's map: one staged as a row of its call from the row (no
 * measurement built), when the map keeps measurements for later (deferred).
 */
function keep(map: MeasurementMap, item: InsertItem, metaField: string | undefined): void {
  if (item instanceof PackedItem && map.deferred) {
    map.insertRow(
      item.layout.names,
      item.layout.kinds,
      item.plan.metaAt,
      item.plan.fields,
      item.rows.values,
      item.row,
      item.timeMs,
    );
  } else map.insertOne(item.measurement, metaField);
}

/** The items in time order (stable); the array itself when it is in order already (the usual case). */
function sortedByTime(items: ReadonlyArray<InsertItem>): ReadonlyArray<InsertItem> {
  for (let i = 1; i < items.length; i++) {
    if ((items[i] as InsertItem).timeMs < (items[i - 1] as InsertItem).timeMs) {
      return [...items].sort((a, b) => a.timeMs - b.timeMs);
    }
  }
  return items;
}
