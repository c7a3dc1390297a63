/**
 * `updateMany` on a time-series collection (docs/mongodb-behaviour.md §12.2, MongoDB 5.1+ without arbitrary updates):
 * a metaField-only query selects whole buckets and a metaField-only update rewrites their `meta`.
 *
 * Each matching bucket is a direct write (docs/mongodb-behaviour.md §8): announced to the catalog, then read, updated in
 * memory with MongoDB's update operators, normalised (object fields sorted, as a series is identified by
 * its normalised meta) and written back guarded on the meta it was computed from.
 *
 * Counts are bucket counts, as MongoDB reports them for these updates (they run on the buckets
 * collection): `matchedCount` buckets matched the query, `modifiedCount` of them got a different meta.
 *
 * @packageDocumentation
 */
import { update as applyUpdateOperators } from 'mingo/updater';

import { makeBucketMetadata } from '../catalog/bucket-metadata.js';
import { TimeseriesError } from '../errors.js';
import type { BucketFilter, StoredBucket } from '../storage/storage.js';
import type { QueryFilter } from '../util/bson-query.js';
import { isPlainObject } from '../util/bson-value.js';
import { copyBsonValue } from '../util/bson-validation.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { metaGuard } from '../bucket-format/bucket-document.js';
import { directWriteTarget, kMaxDirectWriteAttempts, withDirectWrite } from './direct-write.js';
import { applyNumericOperators } from './numeric-update-operators.js';
import type { WriteContext } from './direct-write.js';
import { translateQuery, translateUpdate, upsertRefusal } from './update-delete-translation.js';
import type { BucketMetaUpdate } from './update-delete-translation.js';

/** Result of `updateMany`. */
export interface UpdateResult {
  /** Always `true`. */
  readonly acknowledged: true;
  /** Buckets whose meta matched the query. */
  readonly matchedCount: number;
  /** Buckets whose meta the update changed. */
  readonly modifiedCount: number;
}

/** Options of `updateMany`. */
export interface UpdateManyOptions {
  /**
   * Must be `false`: time-series collections refuse upserts.
   * @defaultValue false
   */
  readonly upsert?: boolean;
}

/** What happened to one bucket. */
type BucketOutcome = 'notMatched' | 'unchanged' | 'modified';

/**
 * Apply a metaField-only update to every bucket whose meta matches a metaField-only query.
 *
 * @param ctx - the collection's catalog, storage and fields.
 * @param filter - query over measurements, on the metaField only.
 * @param update - update operators on the metaField only.
 * @param options - `upsert` (refused when `true`).
 * @returns the bucket counts.
 * @throws {@link TimeseriesError} with MongoDB's code and message for each refusal (see
 *   `update-delete-translation.ts`); `WriteConflict` when a bucket keeps changing under the update.
 * @example
 * ```ts
 * await updateMany(ctx, { 'sensor.id': 5 }, { $set: { 'sensor.site': 'north' } });
 * ```
 */
export async function updateMany(
  ctx: WriteContext,
  filter: QueryFilter,
  update: unknown,
  options: UpdateManyOptions = {},
): Promise<UpdateResult> {
  if (options.upsert === true) throw upsertRefusal();
  const metaUpdate = translateUpdate(update, ctx.metaField);
  const bucketFilter = translateQuery(filter, ctx.metaField as string);
  const candidates: StoredBucket[] = [];
  for await (const doc of ctx.storage.find(ctx.bucketsNs, bucketFilter, { projection: { _id: 1, meta: 1 } }))
    candidates.push(doc);
  let matchedCount = 0;
  let modifiedCount = 0;
  for (const candidate of candidates) {
    const outcome = await withDirectWrite(ctx.catalog, ctx.ns, directWriteTarget(candidate), () =>
      updateBucket(ctx, candidate, bucketFilter, metaUpdate),
    );
    if (outcome !== 'notMatched') matchedCount++;
    if (outcome === 'modified') modifiedCount++;
  }
  return { acknowledged: true, matchedCount, modifiedCount };
}

async function updateBucket(
  ctx: WriteContext,
  candidate: StoredBucket,
  bucketFilter: BucketFilter,
  metaUpdate: BucketMetaUpdate,
): Promise<BucketOutcome> {
  for (let attempt = 0; attempt < kMaxDirectWriteAttempts; attempt++) {
    let doc: StoredBucket | undefined;
    for await (const found of ctx.storage.find(
      ctx.bucketsNs,
      { ...bucketFilter, _id: candidate._id },
      { projection: { _id: 1, meta: 1 }, limit: 1 },
    ))
      doc = found;
    if (doc === undefined) return 'notMatched';
    const next = updatedMeta(doc, metaUpdate);
    const before = makeBucketMetadata(hasOwnField(doc, 'meta') ? doc.meta : undefined).key;
    const after = makeBucketMetadata(next.kind === 'present' ? next.meta : undefined).key;
    if (before === after) return 'unchanged';
    const write = next.kind === 'present' ? { $set: { meta: next.meta } } : { $unset: { meta: '' } };
    const result = await ctx.storage.updateOne(ctx.bucketsNs, { _id: doc._id, ...metaGuard(doc) }, write);
    if (result.kind === 'updated') return 'modified';
  }
  throw new TimeseriesError(
    'WriteConflict',
    `Time-series bucket ${String(candidate._id)} kept changing during the update`,
  );
}

/** The meta a bucket has after an update: a normalised value, or none. */
type UpdatedMeta = { readonly kind: 'present'; readonly meta: unknown } | { readonly kind: 'absent' };

/**
 * Apply a translated update to a bucket's meta.
 *
 * @param doc - the bucket (its `meta`).
 * @param metaUpdate - the update on `meta` paths.
 * @returns the normalised new meta, or `absent` when the update removed it.
 * @throws {@link TimeseriesError} `BadValue` when an operator cannot be applied to the value;
 *   `TypeMismatch` for `$inc`/`$mul` on or with a value that is not a number; `ConflictingUpdateOperators`
 *   when two paths of the update overlap.
 */
export function updatedMeta(doc: StoredBucket, metaUpdate: BucketMetaUpdate): UpdatedMeta {
  // The stored document is shared with the storage: the update works on a copy of its containers.
  const scratch: Record<string, unknown> = {};
  if (hasOwnField(doc, 'meta')) defineField(scratch, 'meta', copyContainers(getOwnField(doc, 'meta')));
  try {
    // $inc, $mul, $min and $max compute on BSON values, which mingo does not know: applied first, here.
    const rest = applyNumericOperators(scratch, metaUpdate, doc._id) ?? metaUpdate;
    if (Object.keys(rest).length > 0) applyRest(scratch, rest);
  } catch (error) {
    if (TimeseriesError.isTimeseriesError(error)) throw error;
    throw new TimeseriesError(
      'BadValue',
      `Cannot apply the update to the metaField: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  if (!hasOwnField(scratch, 'meta')) return { kind: 'absent' };
  // The new meta must be something BSON holds (depth, types, size), as an inserted one.
  const meta = copyBsonValue(getOwnField(scratch, 'meta'));
  return { kind: 'present', meta: makeBucketMetadata(meta).normalizedMeta };
}

/** The update operators mingo applies (all but the numeric ones, unless their paths were left to it). */
function applyRest(scratch: Record<string, unknown>, update: BucketMetaUpdate): void {
  applyUpdateOperators(
    scratch,
    update as Parameters<typeof applyUpdateOperators>[1],
    undefined,
    undefined,
    // No clone: mingo's clones assign fields, turning an own `__proto__` key into a prototype. The
    // scratch is already a copy, and its result is copied (and validated) below before it is kept.
    { cloneMode: 'none' },
  );
}

/** Copy plain objects and arrays; leave other values (BSON classes, dates) shared. */
function copyContainers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyContainers);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) defineField(out, key, copyContainers(value[key]));
  return out;
}
