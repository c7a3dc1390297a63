/**
 * Bucket documents of the MongoDB 8.0+ write path (`timeseriesAlwaysUseCompressedBuckets`, the server's
 * `makeTimeseriesInsertCompressedBucketDocument` and `makeTimeseriesCompressedDiffUpdateOp`): a bucket is
 * inserted compressed by its first commit, and every later commit appends to its columns.
 *
 * Field order of an inserted bucket: `_id`, `control` (`version: 2`, `min`, `max`, `count`), `meta` (only
 * when the series has a meta value), `data` (one BinData subtype 7 per field, the time field first, then
 * the other fields in order of first appearance).
 *
 * @packageDocumentation
 */
import type { Binary } from 'bson';
import type { ObjectId } from 'bson';

import { kNotClosed, seriesGuard } from './bucket-document.js';
import type { BucketSeries } from './bucket-document.js';
import type { ColumnTails, DeferredColumns } from './column-tails.js';
import type { MinMaxSnapshot } from './min-max-snapshot.js';
import { isPathSafeFieldName } from '../util/safe-record.js';

/** `control.version` of a compressed bucket whose measurements are sorted by time. */
export const kCompressedSortedVersion = 2;
/** `control.version` of a compressed bucket with at least one measurement out of time order. */
export const kCompressedUnsortedVersion = 3;

/** What a compressed bucket's first commit needs to build its document. */
export interface CompressedBucketInput {
  /** The bucket id. */
  readonly id: ObjectId;
  /** Whether the series has a meta value. */
  readonly hasMeta: boolean;
  /** The normalised meta (ignored when `hasMeta` is false). */
  readonly normalizedMeta: unknown;
  /** `control.min`. */
  readonly min: Readonly<Record<string, unknown>>;
  /** `control.max`. */
  readonly max: Readonly<Record<string, unknown>>;
  /** Measurements in the bucket. */
  readonly count: number;
  /** The columns, in document order (time first). */
  readonly data: Record<string, Binary>;
}

/**
 * The whole version-2 document a compressed bucket's first commit inserts.
 *
 * @param input - id, meta, min/max, count and columns.
 * @returns the document.
 */
export function makeCompressedBucketDocument(input: CompressedBucketInput): Record<string, unknown> {
  return bucketDocument(input, input.min, input.max, input.data);
}

/**
 * A version-2 document of `input`'s id, meta and count, with these `control.min`, `control.max` and
 * `data`, and `first` under {@link kDeferredColumns} when given. Each shape is one literal: `MemoryStorage`
 * keeps a deferred first document itself (as the bucket's skeleton), and an object given its fields one
 * by one, or a symbol after them, holds them in a second array (about 25 bytes more per open bucket).
 */
function bucketDocument(
  input: Omit<CompressedBucketInput, 'min' | 'max' | 'data'>,
  min: Readonly<Record<string, unknown>> | null,
  max: Readonly<Record<string, unknown>> | null,
  data: Record<string, Binary>,
  first?: DeferredFirstCommit,
): Record<string, unknown> {
  // A JS integer count: js-bson writes it as the int32 the server writes.
  const control = { version: kCompressedSortedVersion, min, max, count: input.count };
  const _id = input.id;
  const meta = input.normalizedMeta;
  if (first === undefined) return input.hasMeta ? { _id, control, meta, data } : { _id, control, data };
  return input.hasMeta
    ? { _id, control, meta, data, [kDeferredColumns]: first }
    : { _id, control, data, [kDeferredColumns]: first };
}

/**
 * What a first commit's document carries for a storage that takes the columns when it needs them
 * ({@link DeferredColumns}): the columns' source, and `control.min`/`control.max` as the commit's
 * snapshot, which the storage keeps (and builds documents of only when the bucket is read).
 */
export interface DeferredFirstCommit {
  /** Where the columns are. */
  readonly columns: DeferredColumns;
  /** `control.min` and `control.max`, which the storage keeps (`MinMaxSnapshot.kept`: a view is copied). */
  readonly minMax: MinMaxSnapshot;
}

/**
 * Where a first commit's document carries its {@link DeferredFirstCommit}: a symbol, so that it is never a
 * field of the document, and the storage removes it when it stores the document.
 */
export const kDeferredColumns: unique symbol = Symbol('tsbuckets.deferredColumns');

/**
 * A first commit's document for a storage that takes deferred columns: the fields of
 * {@link makeCompressedBucketDocument}'s, in its order, but `control.min` and `control.max` `null` and
 * `data` empty; the values are in `first`, which the document carries ({@link kDeferredColumns}). Nobody
 * but that storage reads it: building the two documents of a bucket's first commit, only for the storage
 * to keep its snapshot instead, was most of what a new bucket kept alive through a long insert call.
 *
 * @param input - id, meta and count.
 * @param first - the columns and the min/max.
 * @returns the document.
 */
export function makeDeferredBucketDocument(
  input: Omit<CompressedBucketInput, 'min' | 'max' | 'data'>,
  first: DeferredFirstCommit,
): Record<string, unknown> {
  return bucketDocument(input, null, null, {}, first);
}

/**
 * The deferred columns and min/max a first commit's document carries, if any.
 *
 * @param doc - a bucket document to insert.
 * @returns what it carries, or `undefined`.
 */
export function deferredFirstCommitOf(doc: object): DeferredFirstCommit | undefined {
  return (doc as { [kDeferredColumns]?: DeferredFirstCommit })[kDeferredColumns];
}

/**
 * A later commit to a compressed bucket, as a storage receives it: the new count (and version 3 when the
 * commit made the bucket unsorted), the new `control.min`/`control.max`, and per column the bytes to
 * splice in.
 */
export interface CompressedBucketCommit {
  /** Discriminates it from a version-1 commit. */
  readonly format: 'compressed';
  /** The bucket's `_id`. */
  readonly bucketId: ObjectId;
  /**
   * The bucket's series: the stored bucket must still be of it (a bucket whose meta another writer
   * changed is not appended to). Not checked when absent (a commit built by hand).
   */
  readonly series?: BucketSeries;
  /** `bucketId` as lowercase hex: made once per bucket, so a storage keyed by it hashes no new string. */
  readonly bucketIdHex: string;
  /** Measurements the stored bucket must hold (`control.count`) for the commit to apply. */
  readonly numPreviouslyCommittedMeasurements: number;
  /** `control.count` after the commit. */
  readonly count: number;
  /** `3` when this commit makes the bucket unsorted, else `undefined` (the version is unchanged). */
  readonly version: typeof kCompressedUnsortedVersion | undefined;
  /**
   * The `control.version` the stored bucket must have (2 sorted, 3 unsorted): a bucket rewritten with its
   * rows sorted by time (compressed again from version 1, when a writer reopens or closes it) holds the
   * same count in other bytes, which the commit's columns do not extend. Not checked when absent (a
   * commit built by hand).
   */
  readonly storedVersion?: 2 | 3 | undefined;
  /**
   * `control.min` and `control.max` after the commit (whole), built when read: a storage that keeps the
   * snapshot until its bucket is read builds no document per commit.
   */
  readonly minMax: MinMaxSnapshot;
  /**
   * Each column's new tail (every column of the bucket): existing ones spliced at their offset, new ones
   * appended to `data` whole. `columnDiffsOf` gives them one diff per column.
   */
  readonly tails: ColumnTails;
  /**
   * Set for a storage that takes deferred columns (`MemoryStorage`): `tails` is then empty and the
   * storage takes the bytes from here when it needs them ({@link DeferredColumns.takeTails}, up to its
   * `control.count`).
   */
  readonly deferred?: DeferredColumns | undefined;
  /**
   * The commit's measurements as rows, for a storage that may write them as version-1 cells instead
   * (`MongoStorage` keeps some open buckets uncompressed on the server). Set by the catalog unless the
   * columns are deferred; a commit built by hand may leave it out.
   */
  readonly rows?: CommitRows | undefined;
}

/** The measurements of a {@link CompressedBucketCommit}, and the collection's fields that place them. */
export interface CommitRows {
  /** The measurements, in the order the commit appends them (each with the metaField, if it has one). */
  readonly measurements: ReadonlyArray<Readonly<Record<string, unknown>>>;
  /** The time field: its column's indices count a version-1 bucket's measurements. */
  readonly timeField: string;
  /** The metaField, left out of `data`. */
  readonly metaField: string | undefined;
}

/**
 * The bytes of a BinData value (its payload, not a copy).
 *
 * @param binary - a js-bson `Binary`.
 * @returns the payload.
 */
export function binaryBytes(binary: Readonly<Pick<Binary, 'buffer' | 'position'>>): Uint8Array {
  return binary.buffer.subarray(0, binary.position);
}

/**
 * The guard of a compressed commit: the bucket's `_id`, `control.count` equal to the measurements the
 * catalog committed, its `control.version` (sorted or not), not marked closed, and its series' meta, so a
 * bucket changed by another writer is not appended to.
 *
 * @param commit - the commit.
 * @returns a MongoDB filter.
 */
export function compressedCommitGuard(commit: CompressedBucketCommit): Readonly<Record<string, unknown>> {
  const guard: Record<string, unknown> = {
    _id: commit.bucketId,
    'control.count': commit.numPreviouslyCommittedMeasurements,
    'control.closed': kNotClosed,
  };
  if (commit.storedVersion !== undefined) guard['control.version'] = commit.storedVersion;
  return commit.series === undefined ? guard : { ...guard, ...seriesGuard(commit.series) };
}

/**
 * The MongoDB update of a compressed commit sent as column replacement: `$set` of `control.count` (and
 * `control.version`), `control.min` and `control.max` (whole, or as the paths `minMax` gives), and each
 * changed column whole; a `$setField` pipeline when a column name cannot be written as a dotted path.
 *
 * @param commit - the commit.
 * @param columns - each changed column's whole new binary, by field.
 * @param minMax - the `$set` paths and values of `control.min` and `control.max` (their changed fields),
 *   when the caller knows the stored ones; both documents whole when absent.
 * @returns the update document or pipeline.
 */
export function compressedCommitReplacementUpdate(
  commit: CompressedBucketCommit,
  columns: ReadonlyMap<string, Binary>,
  minMax?: ReadonlyArray<readonly [string, unknown]>,
): Readonly<Record<string, unknown>> | ReadonlyArray<Readonly<Record<string, unknown>>> {
  const control: Record<string, unknown> = {};
  if (minMax === undefined) {
    control['control.min'] = commit.minMax.min;
    control['control.max'] = commit.minMax.max;
  } else for (const [path, value] of minMax) control[path] = value;
  control['control.count'] = commit.count;
  if (commit.version !== undefined) control['control.version'] = commit.version;
  let safe = true;
  for (const field of columns.keys()) if (!isPathSafeFieldName(field)) safe = false;
  if (safe) {
    const $set: Record<string, unknown> = { ...control };
    for (const [field, binary] of columns) $set[`data.${field}`] = binary;
    return { $set };
  }
  // In a pipeline every value is an expression: control values are wrapped in `$literal`.
  const literal: Record<string, unknown> = {};
  for (const [path, value] of Object.entries(control)) literal[path] = { $literal: value };
  const stages: Array<Readonly<Record<string, unknown>>> = [{ $set: literal }];
  for (const [field, binary] of columns) {
    stages.push({
      $replaceWith: {
        $setField: {
          field: 'data',
          input: '$$ROOT',
          value: {
            $setField: {
              field: { $literal: field },
              input: '$data',
              value: { $literal: binary },
            },
          },
        },
      },
    });
  }
  return stages;
}
