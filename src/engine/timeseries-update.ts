/**
 * `updateMany` on a time-series collection (docs/mongodb-behaviour.md §12.2, MongoDB 5.1+ without arbitrary updates):
 * a metaField-only query selects whole buckets and a metaField-only update rewrites their `meta`.
 *
 * Each matching bucket is a direct write (docs/mongodb-behaviour.md §8): announced to the catalog, then read, updated in
 * memory with MongoDB's update operators, normalised (object fields sorted, as a series is identified by
 * its normalised meta) and written back guarded on the meta it was computed from.
 *
 * Counts are measurement counts, as MongoDB reports them (its update of the buckets collection counts each
 * bucket by the measurements it holds, `numMeasurementsForBucketCounter`): `matchedCount` measurements are
 * in buckets that matched the query, `modifiedCount` in the buckets whose meta changed.
 *
 * The query also serves the positional `$` operator (`{$set: {'tag.$': 0}}` sets the first array element
 * the query matched) and `arrayFilters` the `$[<identifier>]` operator, as MongoDB applies them to the
 * bucket's `meta`.
 *
 * @packageDocumentation
 */
import { update as applyUpdateOperators } from 'mingo/updater';

import { makeBucketMetadata } from '../catalog/bucket-metadata.js';
import { TimeseriesError } from '../errors.js';
import type { BucketFilter, StoredBucket } from '../storage/storage.js';
import { BsonQuery } from '../util/bson-query.js';
import type { QueryFilter } from '../util/bson-query.js';
import { isPlainObject } from '../util/bson-value.js';
import { copyBsonValue } from '../util/bson-validation.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { metaGuard } from '../bucket-format/bucket-document.js';
import { bsonColumnDecoder, bucketMeasurementCount } from '../reader/bucket-unpacker.js';
import { directWriteTarget, kMaxDirectWriteAttempts, withDirectWrite } from './direct-write.js';
import { applyNumericOperators } from './numeric-update-operators.js';
import type { WriteContext } from './direct-write.js';
import { translateQuery, translateUpdate, upsertRefusal } from './update-delete-translation.js';
import type { BucketMetaUpdate } from './update-delete-translation.js';

/** Result of `updateMany`, shaped as the driver's `UpdateResult`. */
export interface UpdateResult {
  /** Always `true`. */
  readonly acknowledged: true;
  /** Measurements in the buckets whose meta matched the query. */
  readonly matchedCount: number;
  /** Measurements in the buckets whose meta the update changed. */
  readonly modifiedCount: number;
  /** Always 0: time-series collections refuse upserts. */
  readonly upsertedCount: 0;
  /** Always `null`: time-series collections refuse upserts. */
  readonly upsertedId: null;
}

/** Options of `updateMany`. */
export interface UpdateManyOptions {
  /**
   * Must be `false`: time-series collections refuse upserts.
   * @defaultValue false
   */
  readonly upsert?: boolean;
  /**
   * Filters choosing the array elements a `$[<identifier>]` path updates, one per identifier (`[{ i: {
   * $gte: 7 } }]` for `'tag.$[i]'`), as MongoDB's `arrayFilters`.
   */
  readonly arrayFilters?: ReadonlyArray<Readonly<Record<string, unknown>>>;
}

/** What happened to one bucket: whether it matched and changed, and how many measurements it holds. */
interface BucketOutcome {
  readonly kind: 'notMatched' | 'unchanged' | 'modified';
  readonly measurements: number;
}

/** A bucket that no longer matched when it was read for the update. */
const kNotMatched: BucketOutcome = { kind: 'notMatched', measurements: 0 };

/**
 * Apply a metaField-only update to every bucket whose meta matches a metaField-only query.
 *
 * @param ctx - the collection's catalog, storage and fields.
 * @param filter - query over measurements, on the metaField only.
 * @param update - update operators on the metaField only.
 * @param options - `upsert` (refused when `true`), `arrayFilters`.
 * @returns the measurement counts.
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
  const { update: positionalUpdate, arrayFilters } = positional(metaUpdate, options.arrayFilters ?? []);
  const candidates: StoredBucket[] = [];
  for await (const doc of ctx.storage.find(ctx.bucketsNs, bucketFilter, { projection: { _id: 1, meta: 1 } }))
    candidates.push(doc);
  let matchedCount = 0;
  let modifiedCount = 0;
  for (const candidate of candidates) {
    const outcome = await withDirectWrite(ctx.catalog, ctx.ns, directWriteTarget(candidate), () =>
      updateBucket(ctx, candidate, bucketFilter, positionalUpdate, arrayFilters),
    );
    if (outcome.kind !== 'notMatched') matchedCount += outcome.measurements;
    if (outcome.kind === 'modified') modifiedCount += outcome.measurements;
  }
  return { acknowledged: true, matchedCount, modifiedCount, upsertedCount: 0, upsertedId: null };
}

async function updateBucket(
  ctx: WriteContext,
  candidate: StoredBucket,
  bucketFilter: BucketFilter,
  metaUpdate: BucketMetaUpdate,
  arrayFilters: ReadonlyArray<Readonly<Record<string, unknown>>>,
): Promise<BucketOutcome> {
  for (let attempt = 0; attempt < kMaxDirectWriteAttempts; attempt++) {
    let doc: StoredBucket | undefined;
    for await (const found of ctx.storage.find(
      ctx.bucketsNs,
      { ...bucketFilter, _id: candidate._id },
      { limit: 1 },
    ))
      doc = found;
    if (doc === undefined) return kNotMatched;
    const measurements = bucketMeasurementCount(doc, ctx.timeField, bsonColumnDecoder);
    const next = updatedMeta(doc, metaUpdate, { query: bucketFilter, arrayFilters });
    const before = makeBucketMetadata(hasOwnField(doc, 'meta') ? doc.meta : undefined).key;
    const after = makeBucketMetadata(next.kind === 'present' ? next.meta : undefined).key;
    if (before === after) return { kind: 'unchanged', measurements };
    const write = next.kind === 'present' ? { $set: { meta: next.meta } } : { $unset: { meta: '' } };
    const result = await ctx.storage.updateOne(ctx.bucketsNs, { _id: doc._id, ...metaGuard(doc) }, write);
    if (result.kind === 'updated') return { kind: 'modified', measurements };
  }
  throw new TimeseriesError(
    'WriteConflict',
    `Time-series bucket ${String(candidate._id)} kept changing during the update`,
  );
}

/** An update and its array filters with every identifier renamed `f0`, `f1`... (see {@link positional}). */
interface PositionalUpdate {
  readonly update: BucketMetaUpdate;
  readonly arrayFilters: ReadonlyArray<Readonly<Record<string, unknown>>>;
}

/** An array filter identifier: an alphanumeric string starting with a lowercase letter. */
const kIdentifier = /^[a-z][a-zA-Z0-9]*$/u;

/**
 * The update's array filters checked as the server parses them, and its `$[<identifier>]` paths matched to
 * them; then every identifier renamed `f<i>` in both. The renaming keeps the user's names away from the
 * plain object mingo files the filters under (`constructor` there is `Object`'s, and a `__proto__.x`
 * key wrote onto `Object.prototype`); the server's own checks refuse the other hostile names.
 *
 * @throws {@link TimeseriesError} `BadValue` for an identifier the server refuses or a path without its
 *   filter; `FailedToParse` for a filter without one identifier, two filters of one identifier, or a
 *   filter no path uses.
 */
function positional(
  metaUpdate: BucketMetaUpdate,
  arrayFilters: ReadonlyArray<Readonly<Record<string, unknown>>>,
): PositionalUpdate {
  const renamed = new Map<string, string>();
  for (const filter of arrayFilters) {
    const identifiers = new Set<string>();
    identifiersOf(filter, identifiers);
    const [identifier, other] = [...identifiers];
    if (identifier === undefined) {
      throw new TimeseriesError(
        'FailedToParse',
        'Cannot use an expression without a top-level field name in arrayFilters',
      );
    }
    if (other !== undefined) {
      throw new TimeseriesError(
        'FailedToParse',
        `Error parsing array filter :: caused by :: Expected a single top-level field name, found '${identifier}' and '${other}'`,
      );
    }
    if (!kIdentifier.test(identifier)) {
      throw new TimeseriesError(
        'BadValue',
        `Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${identifier}'`,
      );
    }
    if (renamed.has(identifier)) {
      throw new TimeseriesError(
        'FailedToParse',
        `Found multiple array filters with the same top-level field name ${identifier}`,
      );
    }
    renamed.set(identifier, `f${renamed.size}`);
  }
  const used = new Set<string>();
  const update: Record<string, Record<string, unknown>> = {};
  for (const operator of Object.keys(metaUpdate)) {
    const fields = metaUpdate[operator] as Readonly<Record<string, unknown>>;
    const out: Record<string, unknown> = {};
    for (const path of Object.keys(fields)) {
      const segments = path.split('.').map((segment) => {
        const identifier = /^\$\[(.+)\]$/u.exec(segment)?.[1];
        if (identifier === undefined) return segment;
        const name = renamed.get(identifier);
        if (name === undefined) {
          throw new TimeseriesError(
            'BadValue',
            `No array filter found for identifier '${identifier}' in path '${path}'`,
          );
        }
        used.add(identifier);
        return `$[${name}]`;
      });
      defineField(out, segments.join('.'), fields[path]);
    }
    defineField(update, operator, out);
  }
  for (const identifier of renamed.keys()) {
    if (!used.has(identifier)) {
      throw new TimeseriesError(
        'FailedToParse',
        `The array filter for identifier '${identifier}' was not used in the update`,
      );
    }
  }
  return { update, arrayFilters: arrayFilters.map((filter) => renameIdentifiers(filter, renamed)) };
}

/** The first components of a filter's field names, in its `$and`/`$or`/`$nor` clauses too. */
function identifiersOf(filter: Readonly<Record<string, unknown>>, out: Set<string>): void {
  for (const key of Object.keys(filter)) {
    if (!key.startsWith('$')) out.add(key.split('.')[0] as string);
    else if (Array.isArray(filter[key])) {
      for (const clause of filter[key] as unknown[]) {
        if (isPlainObject(clause)) identifiersOf(clause, out);
      }
    }
  }
}

/** A filter with the first component of each field name renamed (in its logical clauses too). */
function renameIdentifiers(
  filter: Readonly<Record<string, unknown>>,
  renamed: ReadonlyMap<string, string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key.startsWith('$')) {
      const clauses = Array.isArray(value)
        ? value.map((clause: unknown) =>
            isPlainObject(clause) ? renameIdentifiers(clause, renamed) : clause,
          )
        : value;
      defineField(out, key, clauses);
      continue;
    }
    const [first, ...rest] = key.split('.');
    defineField(out, [renamed.get(first as string) ?? first, ...rest].join('.'), value);
  }
  return out;
}

/** The meta a bucket has after an update: a normalised value, or none. */
type UpdatedMeta = { readonly kind: 'present'; readonly meta: unknown } | { readonly kind: 'absent' };

/** What positional operators resolve against: the translated query (`$`) and the `arrayFilters` (`$[id]`). */
export interface PositionalContext {
  /** The bucket filter the bucket matched (on `meta` paths). */
  readonly query: BucketFilter;
  /** The update's `arrayFilters`. */
  readonly arrayFilters: ReadonlyArray<Readonly<Record<string, unknown>>>;
}

/**
 * Apply a translated update to a bucket's meta.
 *
 * @param doc - the bucket (its `meta`).
 * @param metaUpdate - the update on `meta` paths.
 * @param positional - the query and `arrayFilters` positional paths resolve against.
 * @returns the normalised new meta, or `absent` when the update removed it.
 * @throws {@link TimeseriesError} `BadValue` when an operator cannot be applied to the value;
 *   `TypeMismatch` for `$inc`/`$mul` on or with a value that is not a number; `ConflictingUpdateOperators`
 *   when two paths of the update overlap.
 */
export function updatedMeta(
  doc: StoredBucket,
  metaUpdate: BucketMetaUpdate,
  positional: PositionalContext = { query: {}, arrayFilters: [] },
): UpdatedMeta {
  // The stored document is shared with the storage: the update works on a copy of its containers.
  const scratch: Record<string, unknown> = {};
  if (hasOwnField(doc, 'meta')) defineField(scratch, 'meta', copyContainers(getOwnField(doc, 'meta')));
  try {
    // $inc, $mul, $min and $max compute on BSON values, which mingo does not know: applied first, here.
    const rest = applyNumericOperators(scratch, metaUpdate, doc._id) ?? metaUpdate;
    // Without an upsert nothing is inserted, so `$setOnInsert` sets nothing.
    const { $setOnInsert: _onInsert, ...others } = rest;
    if (Object.keys(others).length > 0) applyRest(scratch, others, positional);
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

/**
 * The update with each positional `$` replaced by the index it stands for: the first element of the array
 * before it that the query's conditions on that array select (the server's rule). mingo resolves `$` only
 * on a top-level array, and the bucket's arrays are inside `meta`.
 *
 * @throws {@link TimeseriesError} `BadValue` with the server's message when no element matches.
 */
function resolvePositional(
  scratch: Record<string, unknown>,
  update: BucketMetaUpdate,
  query: BucketFilter,
): BucketMetaUpdate {
  if (!Object.values(update).some((fields) => Object.keys(fields).some((p) => p.split('.').includes('$')))) {
    return update;
  }
  const out: Record<string, Record<string, unknown>> = {};
  for (const operator of Object.keys(update)) {
    const fields = update[operator] as Readonly<Record<string, unknown>>;
    const resolved: Record<string, unknown> = {};
    for (const path of Object.keys(fields)) {
      const parts = path.split('.');
      const at = parts.indexOf('$');
      if (at < 0) {
        defineField(resolved, path, fields[path]);
        continue;
      }
      const arrayPath = parts.slice(0, at).join('.');
      const index = firstMatchingIndex(scratch, arrayPath, query);
      if (index < 0) {
        throw new TimeseriesError(
          'BadValue',
          'The positional operator did not find the match needed from the query.',
        );
      }
      parts[at] = String(index);
      defineField(resolved, parts.join('.'), fields[path]);
    }
    defineField(out, operator, resolved);
  }
  return out;
}

/**
 * The index of the first element of the array at `arrayPath` in `doc` that the query's conditions on
 * that path (or below it) select, each element tried as if it were the whole array; -1 when none does.
 */
function firstMatchingIndex(doc: Record<string, unknown>, arrayPath: string, query: BucketFilter): number {
  const conditions: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    if (key === arrayPath || key.startsWith(`${arrayPath}.`)) defineField(conditions, key, query[key]);
  }
  if (Object.keys(conditions).length === 0) return -1;
  const parts = arrayPath.split('.');
  const array = parts.reduce<unknown>(
    (node, part) => (isPlainObject(node) ? getOwnField(node, part) : undefined),
    doc,
  );
  if (!Array.isArray(array)) return -1;
  const test = new BsonQuery(conditions);
  for (let i = 0; i < array.length; i++) {
    // The document with only element i in the array.
    const probe: Record<string, unknown> = {};
    let node = probe;
    for (let k = 0; k < parts.length - 1; k++) {
      const next: Record<string, unknown> = {};
      defineField(node, parts[k] as string, next);
      node = next;
    }
    defineField(node, parts[parts.length - 1] as string, [array[i]]);
    if (test.test(probe)) return i;
  }
  return -1;
}

/** The update operators mingo applies (all but the numeric ones, unless their paths were left to it). */
function applyRest(
  scratch: Record<string, unknown>,
  update: BucketMetaUpdate,
  positional: PositionalContext,
): void {
  const resolved = resolvePositional(scratch, update, positional.query);
  ownPrototypeNamedFields(scratch, resolved);
  applyUpdateOperators(
    scratch,
    resolved as Parameters<typeof applyUpdateOperators>[1],
    positional.arrayFilters as Parameters<typeof applyUpdateOperators>[2],
    undefined,
    // No clone: mingo's clones assign fields, turning an own `__proto__` key into a prototype. The
    // scratch is already a copy, and its result is copied (and validated) below before it is kept.
    { cloneMode: 'none' },
  );
}

/** The operators that create the fields on their path (the others leave a missing path as it is). */
const kCreatingOperators: ReadonlySet<string> = new Set([
  '$set',
  '$push',
  '$addToSet',
  '$currentDate',
  '$bit',
]);

/**
 * Give `scratch` an own, empty field for each missing component of an updated path that names a member of
 * `Object.prototype` (`constructor`, `toString`...), where the operator creates its path: mingo walks
 * paths by plain reads, so `$set: {'meta.constructor.x': 1}` met `Object` and did nothing, and
 * `$push: {'meta.toString': 1}` met a function. An own object (an array for the field `$push` or
 * `$addToSet` appends to) is what the server creates there.
 */
function ownPrototypeNamedFields(scratch: Record<string, unknown>, update: BucketMetaUpdate): void {
  for (const operator of Object.keys(update)) {
    if (!kCreatingOperators.has(operator)) continue;
    const appends = operator === '$push' || operator === '$addToSet';
    for (const path of Object.keys(update[operator] as object)) {
      const parts = path.split('.');
      let node: unknown = scratch;
      for (let i = 0; i < parts.length && isPlainObject(node); i++) {
        const part = parts[i] as string;
        const last = i === parts.length - 1;
        if (!hasOwnField(node, part) && part in Object.prototype) {
          // A field mingo assigns is created own by the assignment.
          if (last && !appends) break;
          defineField(node, part, last ? [] : {});
        }
        node = getOwnField(node, part);
      }
    }
  }
}

/** Copy plain objects and arrays; leave other values (BSON classes, dates) shared. */
function copyContainers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyContainers);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) defineField(out, key, copyContainers(value[key]));
  return out;
}
