/**
 * Measurement filter → bucket filter (the server's `BucketSpec::createPredicatesOnBucketLevelField`
 * and `bucket_level_comparison_predicate_generator.cpp`).
 *
 * The bucket filter is *loose*: every bucket holding a matching measurement passes it, and buckets that
 * pass may still hold none. Predicates on the metaField alone are exact and are removed from the event
 * (per-measurement) filter; everything else stays in the event filter.
 *
 * | measurement predicate               | bucket predicate                                                   |
 * |-------------------------------------|--------------------------------------------------------------------|
 * | only metaField paths (any operator) | same, `<metaField>` renamed to `meta` (exact)                      |
 * | `$and`                              | `$and` of the translatable children                                |
 * | `$or`                               | `$or` when every child translates, else nothing                   |
 * | `f: {$in: [...]}`                   | `$or` of the `$eq` translations (no null, regex, object or array) |
 * | time `$eq/$gt/$gte/$lt/$lte` Date   | `control.min/max.<time>` bounds widened by the span, `_id` bounds |
 * | data `$eq/$gt/$gte/$lt/$lte` scalar | `control.min/max.f` `$_internalExpr*` OR the mixed-type guard     |
 * | anything else                       | nothing (left to the event filter)                                 |
 *
 * @packageDocumentation
 */
import { bucketIdBound } from '../bucket-format/bucket-oid.js';
import { roundTimestampBySeconds } from '../bucket-format/time-rounding.js';
import type { BucketFilter } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import type { QueryFilter } from '../util/bson-query.js';
import { defineField } from '../util/safe-record.js';

/** Whether `_id` range predicates may be added to time predicates. */
export type IdBounds =
  /** Every bucket `_id` timestamp is its start in seconds (no bucket before 1970 or after 2106). */
  | 'use'
  /** Some bucket may be outside the 32-bit `_id` range (wrapped timestamps): omit `_id` bounds. */
  | 'omit';

/** What the predicate generator needs, resolved once per query. */
export interface BucketPredicateSpec {
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField: string | undefined;
  /** `bucketMaxSpanSeconds` of the collection. */
  readonly bucketMaxSpanSeconds: number;
  /**
   * Whether every bucket starts at a multiple of the span (custom bucketing with rounding equal to the
   * span, never changed by collMod: MongoDB's `areTimeseriesBucketsFixed`). Then a bucket holding `v`
   * starts exactly at `roundDown(v, span)`, a tighter lower bound than `v − span`.
   */
  readonly fixedBuckets: boolean;
  /** Whether `_id` bounds may be used. */
  readonly idBounds: IdBounds;
}

/** The result of {@link createBucketPredicates}. */
export interface BucketPredicates {
  /** The loose filter over bucket documents (`{}` when nothing translates). */
  readonly bucketFilter: BucketFilter;
  /** The exact filter still to apply to each measurement, or `undefined` when the bucket filter is exact. */
  readonly eventFilter: QueryFilter | undefined;
}

/** Largest epoch ms whose seconds fit in an ObjectId timestamp. */
const MAX_32BIT_EPOCH_MS = 0xffffffff * 1000;

type TimeOp = '$eq' | '$gt' | '$gte' | '$lt' | '$lte';

const INTERNAL_EXPR: Readonly<Record<TimeOp, string>> = {
  $eq: '$_internalExprEq',
  $gt: '$_internalExprGt',
  $gte: '$_internalExprGte',
  $lt: '$_internalExprLt',
  $lte: '$_internalExprLte',
};

function single(key: string, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  defineField(out, key, value);
  return out;
}

function and(preds: ReadonlyArray<BucketFilter>): BucketFilter | undefined {
  if (preds.length === 0) return undefined;
  return preds.length === 1 ? preds[0] : { $and: preds };
}

function or(preds: ReadonlyArray<BucketFilter>): BucketFilter {
  return preds.length === 1 ? (preds[0] as BucketFilter) : { $or: preds };
}

/** The top-level conjuncts of a filter, with top-level `$and`s flattened. */
function conjunctsOf(filter: QueryFilter): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (value === undefined) continue;
    if (key === '$and' && Array.isArray(value)) {
      for (const child of value) if (isPlainObject(child)) out.push(...conjunctsOf(child));
      continue;
    }
    out.push(single(key, value));
  }
  return out;
}

function isMetaPath(path: string, metaField: string | undefined): boolean {
  return metaField !== undefined && (path === metaField || path.startsWith(`${metaField}.`));
}

/**
 * Whether every field path of a filter is on the metaField. Operators whose operands are expressions or
 * code (`$expr`, `$where`, `$text`, `$jsonSchema`, ...) make it not meta-only.
 */
function isMetaOnly(filter: Readonly<Record<string, unknown>>, metaField: string | undefined): boolean {
  const keys = Object.keys(filter);
  if (keys.length === 0) return false;
  for (const key of keys) {
    const value = filter[key];
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value) || value.length === 0) return false;
      for (const child of value) if (!isPlainObject(child) || !isMetaOnly(child, metaField)) return false;
    } else if (key === '$comment') {
      continue;
    } else if (key.startsWith('$') || !isMetaPath(key, metaField)) {
      return false;
    }
  }
  return true;
}

/** Rename `<metaField>[.x]` paths to `meta[.x]` (values, including nested `$elemMatch`, are relative). */
function renameMeta(filter: Readonly<Record<string, unknown>>, metaField: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' || key === '$or' || key === '$nor') {
      defineField(
        out,
        key,
        (value as ReadonlyArray<Readonly<Record<string, unknown>>>).map((c) => renameMeta(c, metaField)),
      );
    } else if (key.startsWith('$')) {
      defineField(out, key, value);
    } else {
      defineField(out, `meta${key.slice(metaField.length)}`, value);
    }
  }
  return out;
}

function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (!isPlainObject(v)) return false;
  const first = Object.keys(v)[0];
  return first?.startsWith('$') === true;
}

function tagOf(v: unknown): unknown {
  return typeof v === 'object' && v !== null ? (v as { _bsontype?: unknown })._bsontype : undefined;
}

/**
 * Whether a comparison operand may be mapped onto `control.min/max` (`checkComparisonPredicateErrors`):
 * not an object or array (min/max are field-order insensitive), not null (`$eq: null` matches missing),
 * not a regex, not MinKey/MaxKey or undefined.
 */
function isTranslatableOperand(v: unknown): boolean {
  if (v === undefined || v === null || Array.isArray(v) || isPlainObject(v) || v instanceof RegExp)
    return false;
  const tag = tagOf(v);
  return tag !== 'BSONRegExp' && tag !== 'MinKey' && tag !== 'MaxKey' && tag !== 'DBRef';
}

/**
 * `{$expr: {$ne: [{$type: "$control.min.p"}, {$type: "$control.max.p"}]}}` for every prefix `p` of the
 * path: a bucket whose min and max differ in type at some prefix holds mixed types there, so its min/max
 * say nothing about the values in between and it must be kept.
 */
function typeGuards(path: string): BucketFilter[] {
  const parts = path.split('.');
  const guards: BucketFilter[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('.');
    guards.push({ $expr: { $ne: [{ $type: `$control.min.${p}` }, { $type: `$control.max.${p}` }] } });
  }
  return guards;
}

function dataComparison(path: string, op: TimeOp, v: unknown): BucketFilter | undefined {
  if (!isTranslatableOperand(v)) return undefined;
  const min = `control.min.${path}`;
  const max = `control.max.${path}`;
  let cmp: BucketFilter;
  switch (op) {
    case '$eq':
      cmp = { $and: [single(min, { $_internalExprLte: v }), single(max, { $_internalExprGte: v })] };
      break;
    case '$gt':
    case '$gte':
      cmp = single(max, single(INTERNAL_EXPR[op], v));
      break;
    case '$lt':
    case '$lte':
      cmp = single(min, single(INTERNAL_EXPR[op], v));
      break;
    default: {
      const never: never = op;
      return never;
    }
  }
  return { $or: [cmp, ...typeGuards(path)] };
}

/** The largest magnitude of a JS Date's time value (ECMA-262: ±8.64e15 ms). */
const kMaxDateMs = 8.64e15;

function timeComparison(spec: BucketPredicateSpec, op: TimeOp, v: unknown): BucketFilter | undefined {
  // The time field always holds dates: a non-Date operand never matches, and is left to the event filter.
  if (!(v instanceof Date) || Number.isNaN(v.getTime())) return undefined;
  const t = v.getTime();
  const span = spec.bucketMaxSpanSeconds * 1000;
  const min = `control.min.${spec.timeField}`;
  const max = `control.max.${spec.timeField}`;
  const beforeMs = spec.fixedBuckets ? roundTimestampBySeconds(t, spec.bucketMaxSpanSeconds) : t - span;
  const afterMs = t + span;
  // A bound past the range of a JS Date (a "no bound" sentinel such as the largest Date, widened by the
  // span) would be an Invalid Date that matches nothing; no stored time lies beyond it, so it is left out.
  const before = Math.abs(beforeMs) <= kMaxDateMs ? new Date(beforeMs) : undefined;
  const after = Math.abs(afterMs) <= kMaxDateMs ? new Date(afterMs) : undefined;
  const bound = (path: string, expr: string, date: Date | undefined): BucketFilter[] =>
    date === undefined ? [] : [single(path, { [expr]: date })];
  const preds: BucketFilter[] = [];
  // A bucket with start m holds times in [m, m + span), and control.max is its real maximum.
  switch (op) {
    case '$eq':
      preds.push(
        single(min, { $_internalExprLte: v }),
        ...bound(min, '$_internalExprGte', before),
        single(max, { $_internalExprGte: v }),
        ...bound(max, '$_internalExprLte', after),
      );
      break;
    case '$gt':
      // With fixed buckets `before` is the start of the bucket holding v itself: inclusive.
      preds.push(
        single(max, { $_internalExprGt: v }),
        ...bound(min, spec.fixedBuckets ? '$_internalExprGte' : '$_internalExprGt', before),
      );
      break;
    case '$gte':
      preds.push(single(max, { $_internalExprGte: v }), ...bound(min, '$_internalExprGte', before));
      break;
    case '$lt':
      preds.push(single(min, { $_internalExprLt: v }), ...bound(max, '$_internalExprLt', after));
      break;
    case '$lte':
      preds.push(single(min, { $_internalExprLte: v }), ...bound(max, '$_internalExprLte', after));
      break;
    default: {
      const never: never = op;
      return never;
    }
  }
  if (spec.idBounds === 'use' && t >= 0 && t <= MAX_32BIT_EPOCH_MS) preds.push(...idPredicates(op, t, span));
  return and(preds);
}

/**
 * `_id` bounds (`constructObjectIdValue`): the `_id` timestamp is the bucket start in seconds. Upper
 * bounds round `v` up to the second (an ObjectId truncates milliseconds); lower bounds use `v − span`,
 * or the epoch when that is negative.
 */
function idPredicates(op: TimeOp, t: number, span: number): BucketFilter[] {
  const upSeconds = Math.ceil(t / 1000);
  const lowSeconds = t - span >= 0 ? Math.floor((t - span) / 1000) : 0;
  const lowFill = t - span >= 0 ? undefined : ('min' as const);
  switch (op) {
    case '$eq':
      return [
        { _id: { $lte: bucketIdBound(upSeconds, 'max') } },
        { _id: { $gte: bucketIdBound(lowSeconds, 'min') } },
      ];
    case '$gt':
      return [{ _id: { $gt: bucketIdBound(lowSeconds, lowFill ?? 'max') } }];
    case '$gte':
      return [{ _id: { $gte: bucketIdBound(lowSeconds, 'min') } }];
    case '$lt':
      return [{ _id: { $lt: bucketIdBound(upSeconds, 'min') } }];
    case '$lte':
      return [{ _id: { $lte: bucketIdBound(upSeconds, 'max') } }];
    default: {
      const never: never = op;
      return never;
    }
  }
}

function comparison(
  spec: BucketPredicateSpec,
  path: string,
  op: TimeOp,
  v: unknown,
): BucketFilter | undefined {
  return path === spec.timeField ? timeComparison(spec, op, v) : dataComparison(path, op, v);
}

/** Translate `path: value` (a field predicate not on the metaField). */
function translateField(spec: BucketPredicateSpec, path: string, value: unknown): BucketFilter | undefined {
  if (!isOperatorObject(value)) return comparison(spec, path, '$eq', value);
  const preds: BucketFilter[] = [];
  for (const op of Object.keys(value)) {
    const operand = value[op];
    switch (op) {
      case '$eq':
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        const p = comparison(spec, path, op, operand);
        if (p !== undefined) preds.push(p);
        break;
      }
      case '$in': {
        if (!Array.isArray(operand) || operand.length === 0) break;
        const alternatives: BucketFilter[] = [];
        for (const item of operand) {
          const p = comparison(spec, path, '$eq', item);
          if (p === undefined) {
            alternatives.length = 0;
            break;
          }
          alternatives.push(p);
        }
        if (alternatives.length > 0) preds.push(or(alternatives));
        break;
      }
      default:
        // Not translatable; the conjunction stays loose without it.
        break;
    }
  }
  return and(preds);
}

/** Translate one filter object (a conjunction) into a loose bucket predicate. */
function translateConjunction(
  spec: BucketPredicateSpec,
  filter: Readonly<Record<string, unknown>>,
): BucketFilter | undefined {
  const preds: BucketFilter[] = [];
  for (const conjunct of conjunctsOf(filter)) {
    const p = translateConjunct(spec, conjunct);
    if (p !== undefined) preds.push(p);
  }
  return and(preds);
}

function translateConjunct(
  spec: BucketPredicateSpec,
  conjunct: Record<string, unknown>,
): BucketFilter | undefined {
  if (isMetaOnly(conjunct, spec.metaField)) return renameMeta(conjunct, spec.metaField as string);
  const key = Object.keys(conjunct)[0] as string;
  const value = conjunct[key];
  if (key === '$or') {
    if (!Array.isArray(value) || value.length === 0) return undefined;
    const alternatives: BucketFilter[] = [];
    for (const child of value) {
      if (!isPlainObject(child)) return undefined;
      const p = translateConjunction(spec, child);
      // One untranslatable alternative may match any bucket.
      if (p === undefined) return undefined;
      alternatives.push(p);
    }
    return or(alternatives);
  }
  if (key.startsWith('$')) return undefined;
  return translateField(spec, key, value);
}

/**
 * Split a measurement filter into a loose bucket filter and the exact event filter.
 *
 * @param filter - the user's filter over measurements.
 * @param spec - time field, metaField, span and `_id` bound policy.
 * @returns the bucket filter and the event filter (without the metaField-only conjuncts).
 * @example
 * ```ts
 * createBucketPredicates({ sensor: 'a', temp: { $gt: 20 } }, spec);
 * // bucketFilter: { $and: [{ meta: 'a' }, { $or: [{ 'control.max.temp': { $_internalExprGt: 20 } }, ...] }] }
 * // eventFilter:  { temp: { $gt: 20 } }
 * ```
 */
export function createBucketPredicates(filter: QueryFilter, spec: BucketPredicateSpec): BucketPredicates {
  const bucketPreds: BucketFilter[] = [];
  const eventConjuncts: Array<Record<string, unknown>> = [];
  for (const conjunct of conjunctsOf(filter)) {
    if (isMetaOnly(conjunct, spec.metaField)) {
      bucketPreds.push(renameMeta(conjunct, spec.metaField as string));
      continue;
    }
    eventConjuncts.push(conjunct);
    const p = translateConjunct(spec, conjunct);
    if (p !== undefined) bucketPreds.push(p);
  }
  const bucketFilter = and(bucketPreds) ?? {};
  let eventFilter: QueryFilter | undefined;
  if (eventConjuncts.length === 1) eventFilter = eventConjuncts[0];
  else if (eventConjuncts.length > 1) eventFilter = mergeConjuncts(eventConjuncts);
  return { bucketFilter, eventFilter };
}

/** One filter object from conjuncts: distinct keys side by side, repeated keys under `$and`. */
function mergeConjuncts(conjuncts: ReadonlyArray<Record<string, unknown>>): QueryFilter {
  const out: Record<string, unknown> = {};
  const repeated: Array<Record<string, unknown>> = [];
  for (const c of conjuncts) {
    const key = Object.keys(c)[0] as string;
    if (Object.prototype.hasOwnProperty.call(out, key)) repeated.push(c);
    else defineField(out, key, c[key]);
  }
  if (repeated.length > 0) {
    if (Object.prototype.hasOwnProperty.call(out, '$and')) return { $and: [...conjuncts] };
    out.$and = repeated;
  }
  return out;
}

/**
 * Whether a filter has a predicate on the time field anywhere (used to decide whether `_id` bounds
 * matter for a query).
 *
 * @param filter - a measurement filter.
 * @param timeField - the time field.
 * @returns `true` when some path is the time field.
 */
export function mentionsField(filter: unknown, timeField: string): boolean {
  if (Array.isArray(filter)) return filter.some((f) => mentionsField(f, timeField));
  if (!isPlainObject(filter)) return false;
  for (const key of Object.keys(filter)) {
    if (key === timeField) return true;
    if ((key === '$and' || key === '$or' || key === '$nor') && mentionsField(filter[key], timeField))
      return true;
  }
  return false;
}
