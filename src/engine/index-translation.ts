/**
 * Index specs of a time-series collection and their buckets-collection form (docs/mongodb-behaviour.md §12.3; the
 * server's `timeseries_index_schema_conversion_functions` and `translateIndexSpecFromLogicalToBuckets`).
 *
 * | user key                      | bucket key                                                    |
 * |-------------------------------|---------------------------------------------------------------|
 * | `<time>: 1` (any number ≥ 0)  | `control.min.<time>: 1, control.max.<time>: 1`                |
 * | `<time>: -1` (number < 0)     | `control.max.<time>: -1, control.min.<time>: -1`              |
 * | `<meta>` / `<meta>.x`: any    | `meta` / `meta.x`: same value (hashed, 2d, 2dsphere...)       |
 * | `<field>: 1` / `-1`           | like the time field, on `control.min/max.<field>`             |
 * | `<field>: '2dsphere'`         | `data.<field>: '2dsphere_bucket'`                             |
 *
 * Refusals (MongoDB's codes and messages): `unique: true` and text indexes (`InvalidOptions`); a
 * non-numeric time key, or a measurement key that is neither a number nor `'2dsphere'`
 * (`CannotCreateIndex`, with the translation's `BadValue` text); a wildcard (`$**`) outside the metaField,
 * and a bucket key pattern the server's `validateKeyPattern` refuses (a 0 or NaN value, an unknown index
 * type, an empty field name: `CannotCreateIndex`); `sparse` on a measurement field
 * (`InvalidOptions`). tsbuckets also refuses what it does not implement: partial filters on measurement
 * fields and TTL indexes (the collection's `expireAfterSeconds` is the supported TTL).
 *
 * Every bucket index keeps the user's spec as `originalSpec`, which `listIndexes` returns (MongoDB 6.0+).
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import type { ResolvedCollectionOptions } from '../options.js';
import { createBucketPredicates } from '../reader/bucket-predicates.js';
import type { StorageIndex } from '../storage/storage.js';
import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import type { QueryFilter } from '../util/bson-query.js';
import { bsonTypeName } from '../util/query-validation.js';
import { defineField, getOwnField } from '../util/safe-record.js';

/** An index key pattern over measurement fields: `1`/`-1`, or an index type such as `'2dsphere'`. */
export type IndexKeySpec = Readonly<Record<string, number | string>>;

/** Options of `createIndex`, as MongoDB's `createIndexes` takes them. */
export interface CreateIndexOptions {
  /**
   * Index name.
   * @defaultValue the driver's name: `<field>_<value>` pairs joined by `_`
   */
  readonly name?: string;
  /** Refused: time-series collections have no unique indexes. */
  readonly unique?: boolean;
  /** Allowed only when every key is the time field or on the metaField. */
  readonly sparse?: boolean;
  /** A metaField-only filter (renamed to `meta`). */
  readonly partialFilterExpression?: QueryFilter;
  /** Any other index option, stored unchanged (`hidden`, `collation`, `2dsphereIndexVersion`...). */
  readonly [option: string]: unknown;
}

/** An index as `listIndexes` reports it on a time-series collection: the user's spec. */
export interface TimeseriesIndexDescription {
  /** Index version (always 2). */
  readonly v: 2;
  /** Key pattern over measurement fields. */
  readonly key: IndexKeySpec;
  /** Index name. */
  readonly name: string;
  /** The other options given at creation. */
  readonly [option: string]: unknown;
}

/**
 * The name the MongoDB drivers give an index without one: `<field>_<value>` joined by `_`.
 *
 * @param key - the key pattern.
 * @returns e.g. `'sensor_1_ts_-1'`.
 */
export function defaultIndexName(key: IndexKeySpec): string {
  return Object.keys(key)
    .map((field) => `${field}_${String(key[field])}`)
    .join('_');
}

/** A MongoDB-like rendering of a small BSON value for messages (`{ ts: "hashed" }`). */
function render(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[ ${value.map(render).join(', ')} ]`;
  if (isPlainObject(value)) {
    const keys = Object.keys(value);
    if (keys.length === 0) return '{}';
    return `{ ${keys.map((k) => `${k}: ${render(value[k])}`).join(', ')} }`;
  }
  return String(value);
}

function cannotCreate(message: string): TimeseriesError {
  return new TimeseriesError('CannotCreateIndex', `BadValue: ${message}`);
}

/**
 * Translate a key pattern over measurements to the bucket key pattern (`createBucketsSpecFromTimeseriesSpec`).
 *
 * @param options - the collection's options (time field, metaField).
 * @param key - the user's key pattern (unknown input).
 * @returns the bucket key pattern.
 * @throws {@link TimeseriesError} `CannotCreateIndex` for an empty pattern, a non-numeric time key, or a
 *   measurement key that is neither a number nor `'2dsphere'`; `InvalidOptions` for a text index;
 *   `TypeMismatch` when `key` is not an object.
 */
export function bucketKeyPattern(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField'>,
  key: unknown,
): Record<string, number | string> {
  if (!isPlainObject(key)) throw new TimeseriesError('TypeMismatch', "The field 'key' must be an object");
  const fields = Object.keys(key);
  if (fields.some((field) => key[field] === 'text')) {
    throw new TimeseriesError('InvalidOptions', 'Text indexes are not supported on time-series collections');
  }
  if (fields.length === 0) throw cannotCreate('Empty object is not a valid index spec');
  const { timeField, metaField } = options;
  const out: Record<string, number | string> = {};
  for (const field of fields) {
    const value = key[field];
    const spec = `Invalid index spec for time-series collection: ${render(key)}.`;
    if (metaField !== undefined && (field === metaField || field.startsWith(`${metaField}.`))) {
      defineField(out, `meta${field.slice(metaField.length)}`, value);
      continue;
    }
    if (field === '$**' || field.endsWith('.$**')) {
      throw new TimeseriesError(
        'CannotCreateIndex',
        `${spec} Wildcard indexes on a time-series collection may only cover the metaField: ${field}`,
      );
    }
    if (field !== timeField && value === '2dsphere') {
      defineField(out, `data.${field}`, '2dsphere_bucket');
      continue;
    }
    // Any numeric type (a js-bson Int32 or Double from relaxed-false EJSON), as the server reads one.
    const n = bsonNumberValue(value);
    if (n === undefined) {
      throw cannotCreate(
        field === timeField
          ? `${spec} Indexes on the time field must be ascending or descending (numbers only): ${field}: ${render(value)}`
          : `${spec} Indexes on measurement fields must be ascending or descending (numbers only), or '2dsphere': ${field}: ${render(value)}`,
      );
    }
    const [first, second] = n >= 0 ? ['min', 'max'] : ['max', 'min'];
    defineField(out, `control.${first}.${field}`, value);
    defineField(out, `control.${second}.${field}`, value);
  }
  validateKeyPattern(out);
  return out;
}

/** The index types the server knows (`IndexNames`). */
const kIndexPlugins: ReadonlySet<string> = new Set(['2d', '2dsphere', '2dsphere_bucket', 'text', 'hashed']);

/**
 * The server's checks of the bucket index it is asked to build (`validateKeyPattern`, index version 2),
 * with its messages: every value a non-zero number or the name of one known index type, and no empty
 * field name or path component.
 *
 * @throws {@link TimeseriesError} `CannotCreateIndex`.
 */
function validateKeyPattern(key: Readonly<Record<string, unknown>>): void {
  const fields = Object.keys(key);
  const plugin = fields
    .map((field) => key[field])
    .find((value): value is string => typeof value === 'string');
  if (plugin !== undefined && !kIndexPlugins.has(plugin)) {
    throw new TimeseriesError('CannotCreateIndex', `Unknown index plugin '${plugin}'`);
  }
  for (const field of fields) {
    const value = key[field];
    const n = bsonNumberValue(value);
    if (n !== undefined) {
      if (Number.isNaN(n))
        throw new TimeseriesError('CannotCreateIndex', 'Values in the index key pattern cannot be NaN.');
      if (n === 0)
        throw new TimeseriesError('CannotCreateIndex', 'Values in the index key pattern cannot be 0.');
    } else if (typeof value !== 'string') {
      throw new TimeseriesError(
        'CannotCreateIndex',
        `Values in v:2 index key pattern cannot be of type ${bsonTypeName(value)}. Only numbers > 0, numbers < 0, and strings are allowed.`,
      );
    } else if (value !== plugin) {
      throw new TimeseriesError(
        'CannotCreateIndex',
        "Can't use more than one index plugin for a single index.",
      );
    }
    if (field === '') throw new TimeseriesError('CannotCreateIndex', 'Index keys cannot be an empty field.');
    // A BSON field name is a C string.
    if (field.includes('\0'))
      throw new TimeseriesError('CannotCreateIndex', 'Index keys cannot contain a NUL byte.');
    if (field.split('.').includes('')) {
      throw new TimeseriesError('CannotCreateIndex', 'Index keys cannot contain an empty field.');
    }
  }
}

/**
 * Translate a `createIndex` request to the bucket index the storage creates.
 *
 * @param options - the collection's options.
 * @param key - the user's key pattern.
 * @param indexOptions - the user's index options.
 * @returns name, bucket key and options (with `originalSpec`).
 * @throws {@link TimeseriesError} with MongoDB's codes (see the module table).
 * @example
 * ```ts
 * translateIndexToBuckets(options, { sensor: 1, ts: -1 }, {});
 * // { name: 'sensor_1_ts_-1', key: { meta: 1, 'control.max.ts': -1, 'control.min.ts': -1 }, options: { originalSpec: ... } }
 * ```
 */
export function translateIndexToBuckets(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField' | 'bucketMaxSpanSeconds'>,
  key: unknown,
  indexOptions: CreateIndexOptions = {},
): StorageIndex {
  const bucketOptions: Record<string, unknown> = {};
  for (const option of Object.keys(indexOptions)) {
    const value = indexOptions[option];
    switch (option) {
      case 'name':
        break;
      case 'unique':
        if (value === true) {
          throw new TimeseriesError(
            'InvalidOptions',
            'Unique indexes are not supported on time-series collections',
          );
        }
        defineField(bucketOptions, option, value);
        break;
      case 'sparse':
        if (value === true) checkSparse(options, key);
        defineField(bucketOptions, option, value);
        break;
      case 'expireAfterSeconds':
        throw new TimeseriesError(
          'InvalidOptions',
          "TTL indexes on time-series collections are not supported by tsbuckets: use the collection's expireAfterSeconds",
        );
      case 'partialFilterExpression':
        defineField(bucketOptions, option, translatePartialFilter(options, value, indexOptions));
        break;
      default:
        defineField(bucketOptions, option, value);
    }
  }
  const bucketKey = bucketKeyPattern(options, key);
  const name = indexOptions.name ?? defaultIndexName(key as IndexKeySpec);
  checkIndexName(name);
  const originalSpec: Record<string, unknown> = { key, name };
  for (const option of Object.keys(indexOptions)) {
    if (option !== 'name') defineField(originalSpec, option, indexOptions[option]);
  }
  bucketOptions.originalSpec = originalSpec;
  return { name, key: bucketKey, options: bucketOptions };
}

/**
 * An index name the server accepts: not empty (`CannotCreateIndex`), not `'*'`, which `dropIndexes` reads
 * as every index (`BadValue`); and, as every BSON string of a field name, without a NUL byte.
 *
 * @throws {@link TimeseriesError} as above.
 */
function checkIndexName(name: unknown): void {
  if (typeof name !== 'string')
    throw new TimeseriesError('TypeMismatch', "The field 'name' must be a string");
  if (name === '') throw new TimeseriesError('CannotCreateIndex', 'index name cannot be empty');
  if (name === '*') throw new TimeseriesError('BadValue', "The index name '*' is not valid.");
  if (name.includes('\0')) throw new TimeseriesError('BadValue', 'The index name cannot contain a NUL byte');
}

function checkSparse(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField'>,
  key: unknown,
): void {
  if (!isPlainObject(key)) return;
  const { timeField, metaField } = options;
  for (const field of Object.keys(key)) {
    if (field === timeField) continue;
    if (metaField !== undefined && (field === metaField || field.startsWith(`${metaField}.`))) continue;
    throw new TimeseriesError(
      'InvalidOptions',
      'Sparse indexes are not supported on time-series measurements',
    );
  }
}

function translatePartialFilter(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField' | 'bucketMaxSpanSeconds'>,
  filter: unknown,
  indexOptions: CreateIndexOptions,
): QueryFilter {
  if (indexOptions.collation !== undefined) {
    throw new TimeseriesError(
      'IndexOptionsConflict',
      'On a time-series collection, partialFilterExpression and collation arguments are incompatible',
    );
  }
  if (!isPlainObject(filter)) {
    throw new TimeseriesError('TypeMismatch', "The field 'partialFilterExpression' must be an object");
  }
  const { bucketFilter, eventFilter } = createBucketPredicates(filter, {
    timeField: options.timeField,
    metaField: options.metaField,
    bucketMaxSpanSeconds: options.bucketMaxSpanSeconds,
    // A partial index filter holds for buckets whatever their alignment.
    fixedBuckets: false,
    idBounds: 'omit',
  });
  if (eventFilter !== undefined) {
    throw new TimeseriesError(
      'InvalidOptions',
      'Partial indexes on time-series collections are supported by tsbuckets only with a metaField-only partialFilterExpression',
    );
  }
  return bucketFilter;
}

/**
 * The user's view of a bucket index (`createTimeseriesIndexFromBucketsIndex`): its `originalSpec` when it
 * has one, else the key mapped back; `undefined` for a bucket index with no time-series form.
 *
 * @param options - the collection's options.
 * @param index - an index of the buckets collection.
 * @returns the description `listIndexes` shows, or `undefined`.
 */
export function translateIndexFromBuckets(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField'>,
  index: StorageIndex,
): TimeseriesIndexDescription | undefined {
  const original = index.options === undefined ? undefined : getOwnField(index.options, 'originalSpec');
  if (isPlainObject(original) && isPlainObject(original.key)) {
    const { key, name: _name, ...rest } = original;
    return { v: 2, key: key as IndexKeySpec, name: index.name, ...rest };
  }
  const key = timeseriesKeyPattern(options, index.key);
  if (key === undefined) return undefined;
  const rest: Record<string, unknown> = {};
  for (const option of Object.keys(index.options ?? {})) {
    defineField(rest, option, getOwnField(index.options ?? {}, option));
  }
  return { v: 2, key, name: index.name, ...rest };
}

/** The reverse mapping of a bucket key pattern (`createTimeseriesIndexSpecFromBucketsIndexSpec`). */
function timeseriesKeyPattern(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField'>,
  bucketKey: Readonly<Record<string, unknown>>,
): IndexKeySpec | undefined {
  const { timeField, metaField } = options;
  const out: Record<string, number | string> = {};
  const fields = Object.keys(bucketKey);
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    const value = bucketKey[field];
    if (field === `control.min.${timeField}` || field === `control.max.${timeField}`) {
      if (typeof value !== 'number') return undefined;
      if (field === `control.min.${timeField}`) defineField(out, timeField, value);
      continue;
    }
    if (metaField !== undefined && (field === 'meta' || field.startsWith('meta.'))) {
      defineField(out, `${metaField}${field.slice('meta'.length)}`, value);
      continue;
    }
    if (field.startsWith('data.') && value === '2dsphere_bucket') {
      defineField(out, field.slice('data.'.length), '2dsphere');
      continue;
    }
    const next = fields[i + 1];
    const nextValue = next === undefined ? undefined : bucketKey[next];
    if (typeof value !== 'number' || next === undefined || nextValue !== value) return undefined;
    const ascending = value >= 0;
    const [first, second] = ascending ? ['control.min.', 'control.max.'] : ['control.max.', 'control.min.'];
    if (!field.startsWith(first) || !next.startsWith(second)) return undefined;
    const name = field.slice(first.length);
    if (next.slice(second.length) !== name) return undefined;
    defineField(out, name, value);
    i++;
  }
  return out;
}

/**
 * Whether some index supports query-based reopening (`collectionHasIndexSupportingReopeningQuery`): a
 * non-partial index whose key starts with `meta` (when there is a metaField) then `control.min.<time>`.
 *
 * @param options - the collection's options.
 * @param indexes - the buckets collection's indexes.
 * @returns `'present'` when such an index exists.
 */
export function reopeningIndexStatus(
  options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField'>,
  indexes: ReadonlyArray<StorageIndex>,
): 'present' | 'absent' {
  const prefix = [...(options.metaField === undefined ? [] : ['meta']), `control.min.${options.timeField}`];
  for (const index of indexes) {
    if (index.options !== undefined && getOwnField(index.options, 'partialFilterExpression') !== undefined)
      continue;
    const fields = Object.keys(index.key);
    if (prefix.every((field, i) => fields[i] === field)) return 'present';
  }
  return 'absent';
}

/**
 * Whether two bucket key patterns are the same (fields, order and values).
 *
 * @param a - a key pattern.
 * @param b - another.
 * @returns `true` when equal.
 */
export function sameKeyPattern(
  a: Readonly<Record<string, unknown>>,
  b: Readonly<Record<string, unknown>>,
): boolean {
  return render(a) === render(b);
}

/**
 * A message rendering of an index spec (for conflict errors).
 *
 * @param spec - an index spec or key pattern.
 * @returns MongoDB-like text.
 */
export function renderIndexSpec(spec: unknown): string {
  return render(spec);
}
