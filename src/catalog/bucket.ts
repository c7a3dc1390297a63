/**
 * An open bucket in the catalog (`bucket_catalog/bucket.h`) and the size estimate of a measurement
 * (`calculateBucketFieldsAndSizeChange`, docs/mongodb-behaviour.md §5.3, the rule for version-1 buckets).
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import type { MeasurementMap } from '../bucket-format/measurement-map.js';
import type { MinMax } from '../bucket-format/min-max.js';
import { checkSchema, cloneSchema, updateSchema } from '../bucket-format/schema.js';
import type { Schema, SchemaUpdateOptions, SchemaUpdateResult } from '../bucket-format/schema.js';
import { bsonValueSize, utf8ByteLength } from '../util/bson-value.js';
import { kDateKind } from '../util/bson-validation.js';
import { hasOwnField } from '../util/safe-record.js';
import { stripeNumber } from './bucket-identifiers.js';
import type { BucketId, BucketKey } from './bucket-identifiers.js';
import type { CollectionState } from './bucket-catalog-internal.js';
import type { FlatShape } from './flat-shape.js';
import type { PackedItem } from './packed-item.js';
import type { RolloverAction, RolloverReason } from './rollover.js';
import type { CommitInfo, WriteBatch } from './write-batch.js';

/** Whether a bucket may still receive measurements (`bucket_state_registry.h`, simplified). */
export type BucketState =
  /** Normal: open for inserts. */
  | 'normal'
  /** Cleared (a failed commit, a direct write or a drop): never written from memory again. */
  | 'cleared';

/** An open bucket: everything the catalog knows about one bucket document it may still append to. */
export interface Bucket {
  /** The bucket's id. */
  readonly id: BucketId;
  /** The bucket's series. */
  readonly key: BucketKey;
  /**
   * The series' stripe (`stripeNumber(key)`), kept with the bucket: a commit looks its stripe up three
   * times, and reading it here saves a visit to the key.
   */
  readonly stripe: number;
  /**
   * The length of the series' signature (`key.signature.length`), for the memory estimate: recomputed
   * after every commit, when the key is no longer in the cache.
   */
  readonly signatureLength: number;
  /**
   * The collection's catalog state. Kept with the bucket so that a batch in flight can still prepare,
   * finish or abort after a drop removed the collection from the catalog.
   */
  readonly collection: CollectionState;
  /** Whether the series has a meta value, and the normalised value. */
  readonly hasMeta: boolean;
  /** The normalised meta value (`undefined` when `hasMeta` is false). */
  readonly normalizedMeta: unknown;
  /** Rounded start, epoch ms (`control.min.<time>`). */
  readonly startMs: number;
  /** Per-path min/max of committed measurements (folded at prepareCommit). */
  readonly minMax: MinMax;
  /**
   * Per-path canonical types of staged measurements. Shared with other buckets of the collection while
   * `schemaShared` (never changed then: a measurement that adds a path gives the bucket its own copy).
   */
  schema: Schema;
  /** Whether `schema` is the collection's, shared (see {@link updateBucketSchema}). */
  schemaShared: boolean;
  /**
   * Estimated size in bytes of the bucket document: for a version-1 bucket the 5.x–7.x estimate of every
   * staged measurement; for a compressed bucket its columns' compressed bytes plus what new fields add
   * to `control`, plus the estimate of staged large values (MongoDB 8.0).
   */
  size: number;
  /**
   * The columns of a compressed bucket (MongoDB 8.0+ format), appended to by each commit; `undefined` for
   * a version-1 bucket. Owned by the batch holding the prepared slot while it commits.
   */
  readonly measurementMap: MeasurementMap | undefined;
  /** Whether a compressed bucket is still sorted by time (`control.version` 2, not 3). */
  sortedByTime: boolean;
  /** Measurements staged or committed. */
  numMeasurements: number;
  /** Measurements committed. */
  numCommittedMeasurements: number;
  /**
   * Column names of the stored document. Shared with other buckets of the collection while
   * `fieldNamesShared` (never changed then: see {@link addCommittedColumns}).
   */
  fieldNames: ReadonlySet<string>;
  /** Whether `fieldNames` is the collection's, shared. */
  fieldNamesShared: boolean;
  /**
   * Column names staged in batches but not committed yet; made when the first one is staged (most buckets
   * never have one after their first commit, and an empty set costs ~150 bytes per open bucket). Never
   * changed: replaced by a new set, so that new buckets staging the same names share one.
   */
  uncommittedFieldNames: ReadonlySet<string> | undefined;
  /**
   * Batches not yet prepared (staging, or claimed and still accepting measurements), at most one per opId
   * they are staged under (0: shared by unordered writers). An array, not a map by opId: a bucket has
   * none or one, and a map emptied by every commit re-allocates its table each time (V8 shrinks it; the
   * delete was the costliest line of prepareCommit with 1 000 series). Shared and empty until the first
   * batch (see {@link addOpenBatch}).
   */
  openBatches: WriteBatch[];
  /** The batch being committed, if any (at most one per bucket). */
  preparedBatch: WriteBatch | undefined;
  /** Pending action once the last batch finishes. */
  rolloverAction: RolloverAction;
  /** Why the bucket rolled over (`none` while it accepts measurements). */
  rolloverReason: RolloverReason;
  /** Whether the bucket exceeded the size limit and stayed open for large measurements. */
  keptOpenDueToLargeMeasurements: boolean;
  /** Whether inserts may still go to this bucket. */
  state: BucketState;
  /** Estimated bytes of catalog memory held by this bucket. */
  memoryUsage: number;
  /**
   * Estimated bytes of the large measurements staged into the bucket (see `kLargeMeasurementBytes` in
   * `memory-usage.ts`), counted in its memory usage.
   */
  largeMeasurementBytes: number;
  /**
   * Whether the bucket was opened because its series had no open bucket and its first batch has not been
   * created yet; that batch carries the flag to `numBucketsOpenedDueToMetadata`.
   */
  pendingOpenedDueToMetadata: boolean;
  /**
   * What the bucket's update commits report to their waiters, made by the first (frozen, shared by every
   * later one): a batch per measurement in a bulk load, and each made its own.
   */
  updateCommitInfo: CommitInfo | undefined;
  /**
   * A flat measurement shape a compressed bucket has accepted (see `flat-shape.ts`): a measurement of that
   * shape skips the size estimate and the schema walk. Shared between buckets. `undefined` until the
   * first measurement after the bucket's first is checked; `kNoFlatShape` when that one was not flat.
   */
  knownShape: FlatShape | undefined;
  /** Whether the bucket is in its stripe's idle list (see `idle-list.ts`). */
  idle: boolean;
  /** The bucket before it in the idle list (became idle earlier). */
  idlePrev: Bucket | undefined;
  /** The bucket after it in the idle list (became idle later). */
  idleNext: Bucket | undefined;
}

/** What distinguishes one new open bucket from another; everything else starts empty. */
export type BucketInit = Pick<
  Bucket,
  | 'id'
  | 'key'
  | 'collection'
  | 'hasMeta'
  | 'normalizedMeta'
  | 'startMs'
  | 'minMax'
  | 'schema'
  | 'size'
  | 'measurementMap'
> & {
  /** Whether the stored bucket is sorted by time (a reopened version-3 bucket is not). */
  readonly sortedByTime?: boolean;
  /** Whether `schema` is shared with other buckets (default: the bucket's own). */
  readonly schemaShared?: boolean;
  /** Measurements already in the stored document (a reopened bucket), 0 for a new one. */
  readonly committedMeasurements: number;
  /** Columns of the stored document (distinct names). */
  readonly fieldNames: ReadonlyArray<string>;
};

/**
 * A bucket open for inserts: no batches, no pending rollover.
 *
 * @param init - identity, window, min/max, schema, size and what is already stored.
 * @returns the bucket.
 */
export function makeOpenBucket(init: BucketInit): Bucket {
  // A new bucket has no columns: no set made to be dropped.
  const empty = init.fieldNames.length === 0;
  return {
    id: init.id,
    key: init.key,
    stripe: stripeNumber(init.key),
    signatureLength: init.key.signature.length,
    collection: init.collection,
    hasMeta: init.hasMeta,
    normalizedMeta: init.normalizedMeta,
    startMs: init.startMs,
    minMax: init.minMax,
    schema: init.schema,
    schemaShared: init.schemaShared ?? false,
    size: init.size,
    measurementMap: init.measurementMap,
    sortedByTime: init.sortedByTime ?? true,
    numMeasurements: init.committedMeasurements,
    numCommittedMeasurements: init.committedMeasurements,
    fieldNames: empty ? kNoFieldNames : new Set(init.fieldNames),
    fieldNamesShared: empty,
    uncommittedFieldNames: undefined,
    openBatches: kNoOpenBatches,
    preparedBatch: undefined,
    rolloverAction: 'none',
    rolloverReason: 'none',
    keptOpenDueToLargeMeasurements: false,
    state: 'normal',
    memoryUsage: 0,
    largeMeasurementBytes: 0,
    pendingOpenedDueToMetadata: false,
    updateCommitInfo: undefined,
    knownShape: undefined,
    idle: false,
    idlePrev: undefined,
    idleNext: undefined,
  };
}

/**
 * Number of decimal digits MongoDB counts for the key of measurement `n` (`numDigits`): 0 for 0.
 *
 * @param n - the measurement index.
 * @returns the digit count.
 */
export function numDigits(n: number): number {
  let digits = 0;
  while (n > 0) {
    digits++;
    n = Math.floor(n / 10);
  }
  return digits;
}

/** Result of {@link calculateBucketFieldsAndSizeChange}. */
export interface BucketSizeChange {
  /** Estimated bytes the measurement adds to the bucket document. */
  readonly sizeToBeAdded: number;
  /**
   * The part of `sizeToBeAdded` that a compressed bucket replaces by the measured compressed bytes once
   * the measurement is committed (0 for a version-1 bucket, whose estimate stays).
   */
  readonly uncommittedEstimate: number;
  /** Field names new to the bucket (neither committed nor pending in another batch). */
  readonly newFieldNames: ReadonlyArray<string>;
}

/**
 * Estimate the bytes a measurement adds to a version-1 bucket (docs/mongodb-behaviour.md §5.3): for each top-level field
 * except the metaField, a field new to the bucket adds an empty column (`12 + len(name)`) and its first
 * appearance in `control.min` and `control.max` (`2 × element size`); every field adds its element
 * re-keyed by the measurement index (`element size − name size + digits(n) + 1`).
 *
 * @param bucket - the bucket (its committed and pending field names and measurement count).
 * @param measurement - the measurement.
 * @param metaField - excluded from the estimate.
 * @returns the estimate and the new field names.
 */
export function calculateBucketFieldsAndSizeChange(
  bucket: Pick<Bucket, 'fieldNames' | 'uncommittedFieldNames' | 'numMeasurements'> &
    Partial<Pick<Bucket, 'measurementMap'>>,
  measurement: Measurement,
  metaField: string | undefined,
): BucketSizeChange {
  const digits = numDigits(bucket.numMeasurements);
  // MongoDB 8.0 sizes a compressed bucket by its compressed columns: a staged value counts only when its
  // re-keyed element is larger than `timeseriesLargeMeasurementThreshold` (32 bytes), and only until it
  // is committed; new fields still add what they add to `control`.
  const compressed = bucket.measurementMap !== undefined;
  let estimate = 0;
  let size = 0;
  let newFieldNames: string[] | undefined;
  // for-in with an own-property check, not Object.keys: no array of names per call (this runs
  // for every measurement).
  for (const field in measurement) {
    if (!hasOwnField(measurement, field)) continue;
    if (field === metaField) continue;
    const value = measurement[field];
    if (value === undefined) continue;
    // element size − name size (with its NUL) = type byte + value; the name's own length cancels out, so
    // it is only computed for a field new to the bucket.
    const valueSize = bsonValueSize(value);
    if (!bucket.fieldNames.has(field) && bucket.uncommittedFieldNames?.has(field) !== true) {
      (newFieldNames ??= []).push(field);
      size += newFieldSize(utf8ByteLength(field), valueSize);
    }
    const element = 1 + valueSize + digits + 1;
    if (!compressed) size += element;
    else if (element > kLargeMeasurementThreshold) estimate += element;
  }
  // A compressed bucket's usual measurement (small values, no new field) changes nothing: no object.
  if (size === 0 && estimate === 0 && newFieldNames === undefined) return kNoChange;
  return {
    sizeToBeAdded: size + estimate,
    uncommittedEstimate: estimate,
    newFieldNames: newFieldNames ?? kNoFields,
  };
}

const kNoFields: ReadonlyArray<string> = Object.freeze([]);

/**
 * What a field new to a bucket adds to its size: an empty column (`12 + len(name)`) and its first element
 * in `control.min` and `control.max` (`2 × element size`, the element being type, name, NUL and value).
 */
function newFieldSize(nameSize: number, valueSize: number): number {
  return 12 + nameSize + 2 * (2 + nameSize + valueSize);
}

/**
 * {@link calculateBucketFieldsAndSizeChange} of a new compressed bucket's first measurement when the call
 * holds it as a row of numbers and dates (a packed item): the same change, read from the row instead of
 * from a measurement built for it. Every field is new; each value's element is at most 10 bytes, below
 * the large-measurement threshold, so nothing is estimated.
 *
 * @param item - the measurement, held as a row.
 * @returns the size change.
 */
export function firstRowSizeChange(item: PackedItem): BucketSizeChange {
  const { names, kinds } = item.layout;
  const { metaAt, fields } = item.plan;
  const values = item.rows.values;
  let size = 0;
  for (let i = 0, v = item.row; i < names.length; i++) {
    if (i === metaAt) continue;
    const value = values[v++] as number;
    const valueSize = kinds[i] === kDateKind ? 8 : bsonValueSize(value);
    size += newFieldSize(utf8ByteLength(names[i] as string), valueSize);
  }
  // Every field is new: the row's names, shared by the rows of the layout.
  return { sizeToBeAdded: size, uncommittedEstimate: 0, newFieldNames: fields };
}

/** The size change of a measurement that adds no field and nothing to estimate (shared). */
export const kNoChange: BucketSizeChange = Object.freeze({
  sizeToBeAdded: 0,
  uncommittedEstimate: 0,
  newFieldNames: kNoFields,
});

/** MongoDB 8.0's `timeseriesLargeMeasurementThreshold`: smaller staged values are not estimated. */
const kLargeMeasurementThreshold = 32;

/**
 * The bucket's unprepared batch staged under `opId`, if any.
 *
 * @param bucket - the bucket.
 * @param opId - 0 for the batch shared by unordered writers, else a writer's id.
 * @returns the batch, or `undefined`.
 */
export function openBatchFor(bucket: Bucket, opId: number): WriteBatch | undefined {
  // Indexed, not for-of: the list is often the shared frozen empty one, and V8 then iterated every list
  // the generic way (an iterator and a result object per step).
  const batches = bucket.openBatches;
  for (let i = 0; i < batches.length; i++) {
    const batch = batches[i] as WriteBatch;
    if (batch.opId === opId) return batch;
  }
  return undefined;
}

/** The field names of a bucket with no column yet: shared, so never changed (see addCommittedColumns). */
const kNoFieldNames: ReadonlySet<string> = new Set();

/**
 * Record `measurement`'s paths in the bucket's schema ({@link updateSchema}): a shared schema is only
 * checked, and copied for the bucket when the measurement adds a path.
 *
 * @param bucket - the bucket.
 * @param measurement - the measurement.
 * @param options - `skipField`: the metaField.
 * @returns whether the measurement's types are compatible with the bucket's.
 */
export function updateBucketSchema(
  bucket: Bucket,
  measurement: Measurement,
  options: SchemaUpdateOptions,
): SchemaUpdateResult {
  if (bucket.schemaShared) {
    const check = checkSchema(bucket.schema, measurement, options);
    if (check !== 'record') return check === 'unchanged' ? 'compatible' : 'incompatible';
    bucket.schema = cloneSchema(bucket.schema);
    bucket.schemaShared = false;
  }
  return updateSchema(bucket.schema, measurement, options);
}

/** The batches of a bucket that never had one: shared (frozen: adding goes through addOpenBatch). */
const kNoOpenBatches: WriteBatch[] = Object.freeze([]) as unknown as WriteBatch[];

/**
 * Add `batch` to the bucket's unprepared batches. A bucket's first makes its array, with room for one: a
 * bucket rarely has more, and an array grown by a push keeps room for seventeen (150 bytes of heap per
 * open bucket).
 *
 * @param bucket - the bucket.
 * @param batch - a new batch of the bucket.
 */
export function addOpenBatch(bucket: Bucket, batch: WriteBatch): void {
  if (bucket.openBatches === kNoOpenBatches) bucket.openBatches = [batch];
  else bucket.openBatches.push(batch);
}

/**
 * Remove `batch` from the bucket's unprepared batches (no effect if it is not there).
 *
 * @param bucket - the bucket.
 * @param batch - the batch being prepared or failed.
 */
export function removeOpenBatch(bucket: Bucket, batch: WriteBatch): void {
  const batches = bucket.openBatches;
  const at = batches.indexOf(batch);
  if (at < 0) return;
  // Shift and pop rather than splice: splice makes an array of what it removes, and this runs per commit.
  for (let i = at + 1; i < batches.length; i++) batches[i - 1] = batches[i] as WriteBatch;
  batches.pop();
}
