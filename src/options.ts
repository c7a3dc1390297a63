/**
 * Collection options and server parameters, resolved once into frozen configs.
 *
 * Everything here validates untrusted input (JavaScript callers pass anything) with MongoDB's rules,
 * error codes and message texts, in MongoDB's order:
 *
 * 1. IDL parsing of the command, field by field in the caller's key order (unknown field, wrong type,
 *    enum value, range, embedded NUL in timeField/metaField). A `null` or `undefined` value is an absent
 *    field, as for MongoDB's IDL parser.
 * 2. `create` command checks (`capped`/`size`/`max`, `temp`, `pipeline`, options not allowed with
 *    `timeseries`, dotted fields, `metaField` rules).
 * 3. Collection creation checks (`$`-prefixed fields), bucketing parameters
 *    (`checkBucketingParameters`), then `expireAfterSeconds` (`validateExpireAfterSeconds`).
 *
 * Sources (facts only): `src/mongo/db/timeseries/timeseries_options.cpp`, `timeseries.idl`,
 * `timeseries_global_options.h`, `src/mongo/db/commands/create_command.cpp`,
 * `src/mongo/db/catalog/create_collection.cpp`, `coll_mod.cpp`, `index_key_validate.cpp`,
 * `src/mongo/idl/idl_parser.{h,cpp}`. See `docs/mongodb-behaviour.md` §0, §2, §11.
 *
 * @packageDocumentation
 */

import { totalmem } from 'node:os';

import { TimeseriesError } from './errors.js';
import type { ErrorCodeName } from './errors.js';
import { systemClock } from './util/clock.js';
import type { Clock } from './util/clock.js';

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

/** A time-series collection's granularity: the expected interval between measurements of a series. */
export type Granularity = 'seconds' | 'minutes' | 'hours';

/**
 * Bucketing parameters implied by each granularity (`getBucketRoundingSecondsFromGranularity`,
 * `getMaxSpanSecondsFromGranularity`). `hours` spans 30 days.
 */
export const GRANULARITY_PRESETS: {
  readonly seconds: { readonly bucketRoundingSeconds: 60; readonly bucketMaxSpanSeconds: 3600 };
  readonly minutes: { readonly bucketRoundingSeconds: 3600; readonly bucketMaxSpanSeconds: 86400 };
  readonly hours: { readonly bucketRoundingSeconds: 86400; readonly bucketMaxSpanSeconds: 2592000 };
} = Object.freeze({
  seconds: Object.freeze({ bucketRoundingSeconds: 60, bucketMaxSpanSeconds: 3600 }),
  minutes: Object.freeze({ bucketRoundingSeconds: 3600, bucketMaxSpanSeconds: 86400 }),
  hours: Object.freeze({ bucketRoundingSeconds: 86400, bucketMaxSpanSeconds: 2592000 }),
} as const);

/** Largest accepted `bucketMaxSpanSeconds` / `bucketRoundingSeconds`: 365 days. */
export const MAX_BUCKETING_SECONDS = 31_536_000;

/** Default values of the server parameters (MongoDB's defaults). */
export const DEFAULT_SERVER_PARAMETERS: {
  readonly timeseriesBucketMaxCount: 1000;
  readonly timeseriesBucketMaxSize: 128000;
  readonly timeseriesBucketMinCount: 10;
  readonly timeseriesIdleBucketExpiryMemoryUsageThreshold: -1;
  readonly timeseriesIdleBucketExpiryMaxCountPerAttempt: 3;
  readonly timeseriesValidateCompressedBuckets: true;
  readonly timeseriesAlwaysUseCompressedBuckets: true;
} = Object.freeze({
  timeseriesBucketMaxCount: 1000,
  timeseriesBucketMaxSize: 128000,
  timeseriesBucketMinCount: 10,
  timeseriesIdleBucketExpiryMemoryUsageThreshold: -1,
  timeseriesIdleBucketExpiryMaxCountPerAttempt: 3,
  timeseriesValidateCompressedBuckets: true,
  timeseriesAlwaysUseCompressedBuckets: true,
} as const);

/** Percentage of system memory used for the idle-bucket threshold when the parameter is `<= 0` (8.0). */
const DEFAULT_MEMORY_THRESHOLD_PERCENT = 5;

// ---------------------------------------------------------------------------------------------------
// Public option types
// ---------------------------------------------------------------------------------------------------

/**
 * The `timeseries` option of `createCollection`.
 *
 * Either give a `granularity` (optionally with its preset `bucketMaxSpanSeconds`), or custom bucketing
 * with `bucketMaxSpanSeconds` and `bucketRoundingSeconds` both set and equal, or neither. An optional
 * field set to `undefined` is absent (as `null` is for MongoDB's command parser), here and in the other
 * option types of this module.
 */
export interface TimeseriesOptions {
  /** Top-level field holding each measurement's time (a BSON date). No `.`, not `$`-prefixed, no NUL. */
  readonly timeField: string;
  /**
   * Top-level field identifying the series; any BSON value. Not `_id`, not the `timeField`.
   *
   * @defaultValue none (all measurements form one series)
   */
  readonly metaField?: string | undefined;
  /**
   * Expected interval between measurements of a series; selects preset bucketing parameters
   * ({@link GRANULARITY_PRESETS}). Cannot be combined with `bucketRoundingSeconds`.
   *
   * @defaultValue `'seconds'` when no custom bucketing is given
   */
  readonly granularity?: Granularity | undefined;
  /**
   * Maximum time span of one bucket, in seconds, 1..31536000. With `granularity` it may only repeat the
   * preset; without, it must equal `bucketRoundingSeconds`.
   *
   * @defaultValue the granularity's preset (3600 for `'seconds'`)
   */
  readonly bucketMaxSpanSeconds?: number | undefined;
  /**
   * Buckets start at the first measurement's time rounded down to a multiple of this many seconds,
   * 1..31536000. Must equal `bucketMaxSpanSeconds`; not allowed with `granularity`.
   *
   * @defaultValue the granularity's preset (60 for `'seconds'`)
   */
  readonly bucketRoundingSeconds?: number | undefined;
}

/** Options of `createCollection`. */
export interface CreateCollectionOptions {
  /** Makes the collection a time-series collection (required by tsbuckets). */
  readonly timeseries: TimeseriesOptions;
  /**
   * Delete buckets whose every measurement is older than this many seconds (TTL). Integer `>= 0`.
   *
   * @defaultValue none (no expiry)
   */
  readonly expireAfterSeconds?: number | undefined;
}

/**
 * Options of `collMod` on a time-series collection. Bucketing parameters may only grow: granularity
 * `seconds` → `minutes` → `hours`, or custom seconds (both given, equal) not smaller than the current ones.
 */
export interface CollModOptions {
  /**
   * New granularity; only `seconds → minutes`, `seconds → hours`, `minutes → hours`.
   *
   * @defaultValue unchanged
   */
  readonly granularity?: Granularity | undefined;
  /**
   * New custom span (with `bucketRoundingSeconds`, equal), or the preset of `granularity`.
   *
   * @defaultValue unchanged
   */
  readonly bucketMaxSpanSeconds?: number | undefined;
  /**
   * New custom rounding (with `bucketMaxSpanSeconds`, equal). Not allowed with `granularity`.
   *
   * @defaultValue unchanged
   */
  readonly bucketRoundingSeconds?: number | undefined;
  /**
   * New TTL in seconds, or `'off'` to disable expiry.
   *
   * @defaultValue unchanged
   */
  readonly expireAfterSeconds?: number | 'off' | undefined;
}

/** MongoDB server parameters that drive the bucket catalog (names and defaults are MongoDB's). */
export interface ServerParameters {
  /**
   * Maximum number of measurements in one bucket. `>= 1`.
   *
   * @defaultValue 1000
   */
  readonly timeseriesBucketMaxCount?: number | undefined;
  /**
   * Maximum size of one bucket in bytes. `>= 1`.
   *
   * @defaultValue 128000
   */
  readonly timeseriesBucketMaxSize?: number | undefined;
  /**
   * Buckets with fewer measurements than this may exceed `timeseriesBucketMaxSize` (large
   * measurements). `1` disables the exemption. `>= 1`.
   *
   * @defaultValue 10
   */
  readonly timeseriesBucketMinCount?: number | undefined;
  /**
   * Catalog memory above which idle buckets are archived or closed: `<= 0` means 5% of system memory,
   * `1..100` a percentage of system memory, `> 100` bytes.
   *
   * @defaultValue -1 (5% of system memory)
   */
  readonly timeseriesIdleBucketExpiryMemoryUsageThreshold?: number | undefined;
  /**
   * Maximum number of buckets expired per attempt. `>= 2`.
   *
   * @defaultValue 3
   */
  readonly timeseriesIdleBucketExpiryMaxCountPerAttempt?: number | undefined;
  /**
   * Whether a bucket compressed on close is decompressed again and compared with what was compressed
   * before it replaces the uncompressed document (a mismatch leaves the bucket uncompressed and counts
   * `numFailedDecompressBuckets`). `false` skips the check: about a tenth of TSBS ingest time.
   *
   * @defaultValue true
   */
  readonly timeseriesValidateCompressedBuckets?: boolean | undefined;
  /**
   * Which bucket format new buckets are written in. `true` (MongoDB 8.0+): a bucket is compressed
   * (`control.version` 2, or 3 once a commit appends a measurement older than its last one) from its first
   * commit, later commits append to its columns, and closing it writes nothing. `false` (MongoDB 5.x–7.x):
   * open buckets are stored uncompressed (`control.version` 1) and compressed when they close.
   *
   * @defaultValue true
   */
  readonly timeseriesAlwaysUseCompressedBuckets?: boolean | undefined;
}

// ---------------------------------------------------------------------------------------------------
// Resolved configs
// ---------------------------------------------------------------------------------------------------

/** A collection's `timeseries` options as MongoDB stores them (`listCollections` shows these). */
export interface StoredTimeseriesOptions {
  /** The time field. */
  readonly timeField: string;
  /** The meta field, when there is one. */
  readonly metaField?: string;
  /** The granularity; absent for custom bucketing. */
  readonly granularity?: Granularity;
  /** Custom rounding; absent when a granularity is set. */
  readonly bucketRoundingSeconds?: number;
  /** The span (always stored). */
  readonly bucketMaxSpanSeconds: number;
}

/** A collection's options as MongoDB's `listCollections` reports them. */
export interface StoredCollectionOptions {
  /** The `timeseries` options. */
  readonly timeseries: StoredTimeseriesOptions;
  /** TTL in seconds, when set. */
  readonly expireAfterSeconds?: number;
}

/**
 * Validated, frozen options of one time-series collection. Built only by
 * {@link resolveCollectionOptions} and {@link resolveCollMod}; nothing downstream reads raw options.
 *
 * Invariant: `granularity === undefined` exactly when the collection uses custom bucketing.
 */
export interface ResolvedCollectionOptions {
  /** The time field. */
  readonly timeField: string;
  /** The meta field, or `undefined`. */
  readonly metaField: string | undefined;
  /** The granularity, or `undefined` for custom bucketing. */
  readonly granularity: Granularity | undefined;
  /** Maximum span of a bucket, in seconds. */
  readonly bucketMaxSpanSeconds: number;
  /** Effective rounding of a bucket's start, in seconds: the preset when a granularity is set. */
  readonly bucketRoundingSeconds: number;
  /**
   * MongoDB's `timeseriesBucketingParametersHaveChanged`: set once a `collMod` changed the bucketing
   * parameters; disables fixed-bucket query optimisations.
   */
  readonly bucketingParametersHaveChanged: boolean;
  /** TTL in seconds, or `undefined`. */
  readonly expireAfterSeconds: number | undefined;
  /** The options as `listCollections` shows them (frozen). */
  readonly storedOptions: StoredCollectionOptions;
}

/** Validated, frozen server parameters. Built only by {@link resolveServerParameters}. */
export interface ResolvedServerParameters {
  /** Maximum measurements per bucket. */
  readonly timeseriesBucketMaxCount: number;
  /** Maximum bucket size in bytes. */
  readonly timeseriesBucketMaxSize: number;
  /** Large-measurement exemption count. */
  readonly timeseriesBucketMinCount: number;
  /** The memory threshold parameter as given (`<= 0`, a percentage, or bytes). */
  readonly timeseriesIdleBucketExpiryMemoryUsageThreshold: number;
  /** The memory threshold in bytes, derived from the parameter and the system memory. */
  readonly timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: number;
  /** Maximum buckets expired per attempt. */
  readonly timeseriesIdleBucketExpiryMaxCountPerAttempt: number;
  /** Whether compressed buckets are checked by decompressing them. */
  readonly timeseriesValidateCompressedBuckets: boolean;
  /** Whether new buckets are written compressed from their first commit (MongoDB 8.0+). */
  readonly timeseriesAlwaysUseCompressedBuckets: boolean;
}

// ---------------------------------------------------------------------------------------------------
// Untrusted-value helpers (IDL parser emulation)
// ---------------------------------------------------------------------------------------------------

type Numeric = number | bigint;

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const TWO_POW_63 = 2 ** 63;

/** BSON types accepted by IDL's numeric types (`safeInt`, `safeInt64`), in MongoDB's listing order. */
const NUMERIC_TYPE_NAMES = ['long', 'int', 'decimal', 'double'] as const;

function fail(codeName: ErrorCodeName, message: string, field: string): never {
  throw new TimeseriesError(codeName, message, { field });
}

/** IDL treats `null` (and BSON `undefined`) as an absent optional field. */
function isAbsent(value: unknown): value is null | undefined {
  return value === null || value === undefined;
}

function bsonTypeOf(value: object): unknown {
  return (value as { _bsontype?: unknown })._bsontype;
}

/**
 * MongoDB's `typeName()` of the BSON type `value` serializes to (js-bson defaults: integers in int32
 * range become `int`, other numbers `double`, bigints `long`).
 */
function bsonTypeName(value: unknown): string {
  switch (typeof value) {
    case 'number':
      return Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX ? 'int' : 'double';
    case 'bigint':
      return 'long';
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'undefined':
      return 'undefined';
    case 'function':
      return 'javascript';
    case 'symbol':
      return 'symbol';
    case 'object':
      break;
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  if (value instanceof RegExp) return 'regex';
  if (ArrayBuffer.isView(value)) return 'binData';
  switch (bsonTypeOf(value)) {
    case 'ObjectId':
      return 'objectId';
    case 'Int32':
      return 'int';
    case 'Long':
      return 'long';
    case 'Double':
      return 'double';
    case 'Decimal128':
      return 'decimal';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'Code':
      return 'javascript';
    case 'BSONSymbol':
      return 'symbol';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    default:
      return 'object';
  }
}

/** Whether `value` is a plain document (BSON type `object`). */
function isDocument(value: unknown): value is object {
  return typeof value === 'object' && value !== null && bsonTypeName(value) === 'object';
}

/** The numeric value of a JS number/bigint or a js-bson `Int32`/`Long`/`Double`/`Decimal128`. */
function numericValue(value: unknown): Numeric | undefined {
  if (typeof value === 'number' || typeof value === 'bigint') return value;
  if (typeof value !== 'object' || value === null) return undefined;
  switch (bsonTypeOf(value)) {
    case 'Int32':
    case 'Double':
      return Number((value as { valueOf(): unknown }).valueOf());
    case 'Long':
      return BigInt((value as { toString(): string }).toString());
    case 'Decimal128':
      return Number((value as { toString(): string }).toString());
    default:
      return undefined;
  }
}

/** MongoDB's `BSONElement::safeNumberInt`: NaN → 0, clamp to int32, truncate. */
function safeNumberInt(n: Numeric): number {
  if (typeof n === 'bigint') {
    return n < BigInt(INT32_MIN) ? INT32_MIN : n > BigInt(INT32_MAX) ? INT32_MAX : Number(n);
  }
  if (Number.isNaN(n)) return 0;
  if (n <= INT32_MIN) return INT32_MIN;
  if (n >= INT32_MAX) return INT32_MAX;
  return Math.trunc(n);
}

/** MongoDB's `BSONElement::safeNumberLong`: NaN → 0, clamp to int64, truncate. */
function safeNumberLong(n: Numeric): bigint {
  if (typeof n === 'bigint') return n < INT64_MIN ? INT64_MIN : n > INT64_MAX ? INT64_MAX : n;
  if (Number.isNaN(n)) return 0n;
  if (n >= TWO_POW_63) return INT64_MAX;
  if (n < -TWO_POW_63) return INT64_MIN;
  return BigInt(Math.trunc(n));
}

function wrongType(path: string, value: unknown, expected: string | readonly string[], field: string): never {
  const actual = bsonTypeName(value);
  const message =
    typeof expected === 'string'
      ? `BSON field '${path}' is the wrong type '${actual}', expected type '${expected}'`
      : // MongoDB's IDL really closes the list with `']` (idl_parser.cpp).
        `BSON field '${path}' is the wrong type '${actual}', expected types '[${expected.join(', ')}']`;
  return fail('TypeMismatch', message, field);
}

function unknownField(path: string, field: string): never {
  return fail('IDLUnknownField', `BSON field '${path}' is an unknown field.`, field);
}

/** Own enumerable string keys, in insertion order; never consults the prototype. */
function ownEntries(source: object): Array<readonly [string, unknown]> {
  return Object.keys(source).map((key) => [key, (source as Record<string, unknown>)[key]] as const);
}

/** Parse an IDL `safeInt` field with validator `{gte: 1, lte: 31536000}`. */
function parseBucketingSeconds(path: string, value: unknown, field: string): number {
  const n = numericValue(value);
  if (n === undefined) return wrongType(path, value, NUMERIC_TYPE_NAMES, field);
  const seconds = safeNumberInt(n);
  if (seconds < 1)
    fail('BadValue', `BSON field '${path}' value must be >= 1, actual value '${seconds}'`, field);
  if (seconds > MAX_BUCKETING_SECONDS) {
    fail(
      'BadValue',
      `BSON field '${path}' value must be <= ${MAX_BUCKETING_SECONDS}, actual value '${seconds}'`,
      field,
    );
  }
  return seconds;
}

function parseGranularity(path: string, value: unknown, field: string): Granularity {
  if (typeof value !== 'string') return wrongType(path, value, 'string', field);
  switch (value) {
    case 'seconds':
    case 'minutes':
    case 'hours':
      return value;
    default:
      return fail(
        'BadValue',
        `Enumeration value '${value}' for field '${path}' is not a valid value.`,
        field,
      );
  }
}

/** Parse `timeField`/`metaField`: a string without embedded NUL (`validateTimeAndMetaField`). */
function parseFieldName(path: string, value: unknown, field: string): string {
  if (typeof value !== 'string') return wrongType(path, value, 'string', field);
  if (value.includes('\0')) {
    fail('BadValue', "The 'timeField' or the 'metaField' cannot contain embedded null bytes", field);
  }
  return value;
}

/** The value of an IDL `safeInt64` field: type check only (range is checked later). */
function parseSafeInt64(path: string, value: unknown, field: string): bigint {
  const n = numericValue(value);
  if (n === undefined) return wrongType(path, value, NUMERIC_TYPE_NAMES, field);
  return safeNumberLong(n);
}

/**
 * `validateExpireAfterSeconds` for clustered collections: `>= 0`, and the span in milliseconds must not
 * overflow nor exceed the current time since the epoch (bucket `_id`s hold 32-bit seconds).
 */
function validateExpireAfterSeconds(seconds: bigint, nowMillis: number, field: string): number {
  if (seconds < 0n)
    fail('InvalidOptions', "TTL index 'expireAfterSeconds' option cannot be less than 0", field);
  if (seconds > INT64_MAX / 1000n || seconds * 1000n > BigInt(Math.trunc(nowMillis))) {
    fail(
      'InvalidOptions',
      "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number",
      field,
    );
  }
  return Number(seconds);
}

// ---------------------------------------------------------------------------------------------------
// createCollection
// ---------------------------------------------------------------------------------------------------

interface ParsedTimeseries {
  timeField: string | undefined;
  metaField: string | undefined;
  granularity: Granularity | undefined;
  bucketMaxSpanSeconds: number | undefined;
  bucketRoundingSeconds: number | undefined;
}

/** `create` options MongoDB rejects alongside `timeseries` (`'timeseries' is not allowed with ...`). */
const INCOMPATIBLE_CREATE_OPTIONS: ReadonlySet<string> = new Set([
  'capped',
  'autoIndexId',
  'idIndex',
  'size',
  'max',
  'flags',
  'validator',
  'validationLevel',
  'validationAction',
  'viewOn',
  'pipeline',
  'clusteredIndex',
  'changeStreamPreAndPostImages',
  'encryptedFields',
  'recordIdsReplicated',
]);

/**
 * Options MongoDB accepts with `timeseries` (`kAllowedCollectionCreationOptions` and generic command
 * arguments) that tsbuckets does not implement: refused rather than silently ignored.
 */
const UNSUPPORTED_CREATE_OPTIONS: ReadonlySet<string> = new Set([
  'storageEngine',
  'indexOptionDefaults',
  'collation',
  'writeConcern',
  'comment',
  'maxTimeMS',
]);

function parseTimeseriesOptions(value: object): ParsedTimeseries {
  const parsed: ParsedTimeseries = {
    timeField: undefined,
    metaField: undefined,
    granularity: undefined,
    bucketMaxSpanSeconds: undefined,
    bucketRoundingSeconds: undefined,
  };
  for (const [key, field] of ownEntries(value)) {
    const path = `create.timeseries.${key}`;
    const name = `timeseries.${key}`;
    switch (key) {
      case 'timeField':
        if (!isAbsent(field)) parsed.timeField = parseFieldName(path, field, name);
        break;
      case 'metaField':
        if (!isAbsent(field)) parsed.metaField = parseFieldName(path, field, name);
        break;
      case 'granularity':
        if (!isAbsent(field)) parsed.granularity = parseGranularity(path, field, name);
        break;
      case 'bucketMaxSpanSeconds':
        if (!isAbsent(field)) parsed.bucketMaxSpanSeconds = parseBucketingSeconds(path, field, name);
        break;
      case 'bucketRoundingSeconds':
        if (!isAbsent(field)) parsed.bucketRoundingSeconds = parseBucketingSeconds(path, field, name);
        break;
      default:
        unknownField(path, name);
    }
  }
  return parsed;
}

/** The `capped` option is IDL `safeBool`: a bool or a number. */
function parseCapped(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  const n = numericValue(value);
  if (n === undefined) return wrongType('create.capped', value, ['bool', ...NUMERIC_TYPE_NAMES], 'capped');
  return typeof n === 'bigint' ? n !== 0n : n !== 0;
}

/** MongoDB's `checkBucketingParameters` with `kSetToDefault`; returns the stored parameters. */
function checkBucketingParameters(p: ParsedTimeseries): {
  granularity: Granularity | undefined;
  bucketMaxSpanSeconds: number;
  bucketRoundingSeconds: number | undefined;
} {
  const { granularity, bucketMaxSpanSeconds: span, bucketRoundingSeconds: rounding } = p;
  if (granularity !== undefined) {
    const preset = GRANULARITY_PRESETS[granularity];
    if (span !== undefined && span !== preset.bucketMaxSpanSeconds) {
      fail(
        'InvalidOptions',
        `Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default of ${preset.bucketMaxSpanSeconds} for the provided granularity`,
        'timeseries.bucketMaxSpanSeconds',
      );
    }
    if (rounding !== undefined) {
      fail(
        'InvalidOptions',
        "Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter",
        'timeseries.bucketRoundingSeconds',
      );
    }
    return {
      granularity,
      bucketMaxSpanSeconds: preset.bucketMaxSpanSeconds,
      bucketRoundingSeconds: undefined,
    };
  }
  if (span !== undefined || rounding !== undefined) {
    if (span === undefined || rounding === undefined || span !== rounding) {
      fail(
        'InvalidOptions',
        "Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'",
        'timeseries.bucketRoundingSeconds',
      );
    }
    return { granularity: undefined, bucketMaxSpanSeconds: span, bucketRoundingSeconds: rounding };
  }
  return {
    granularity: 'seconds',
    bucketMaxSpanSeconds: GRANULARITY_PRESETS.seconds.bucketMaxSpanSeconds,
    bucketRoundingSeconds: undefined,
  };
}

interface ResolvedFields {
  readonly timeField: string;
  readonly metaField: string | undefined;
  readonly granularity: Granularity | undefined;
  readonly bucketMaxSpanSeconds: number;
  /** Only for custom bucketing (ignored when a granularity is set). */
  readonly customRoundingSeconds: number | undefined;
  readonly bucketingParametersHaveChanged: boolean;
  readonly expireAfterSeconds: number | undefined;
}

function freezeResolved(f: ResolvedFields): ResolvedCollectionOptions {
  const bucketRoundingSeconds =
    f.granularity !== undefined
      ? GRANULARITY_PRESETS[f.granularity].bucketRoundingSeconds
      : (f.customRoundingSeconds ?? GRANULARITY_PRESETS.seconds.bucketRoundingSeconds);
  // Field order as MongoDB's IDL serializes TimeseriesOptions.
  const timeseries: StoredTimeseriesOptions = Object.freeze({
    timeField: f.timeField,
    ...(f.metaField !== undefined && { metaField: f.metaField }),
    ...(f.granularity !== undefined ? { granularity: f.granularity } : { bucketRoundingSeconds }),
    bucketMaxSpanSeconds: f.bucketMaxSpanSeconds,
  });
  const storedOptions: StoredCollectionOptions = Object.freeze({
    timeseries,
    ...(f.expireAfterSeconds !== undefined && { expireAfterSeconds: f.expireAfterSeconds }),
  });
  return Object.freeze({
    timeField: f.timeField,
    metaField: f.metaField,
    granularity: f.granularity,
    bucketMaxSpanSeconds: f.bucketMaxSpanSeconds,
    bucketRoundingSeconds,
    bucketingParametersHaveChanged: f.bucketingParametersHaveChanged,
    expireAfterSeconds: f.expireAfterSeconds,
    storedOptions,
  });
}

/**
 * Validate `createCollection` options exactly as MongoDB's `create` command does and resolve them.
 *
 * Defaults: no granularity and no custom bucketing → `granularity: 'seconds'`, span 3600, rounding 60.
 *
 * @example
 * ```ts
 * const o = resolveCollectionOptions('db.weather', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
 * o.storedOptions; // { timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'seconds', bucketMaxSpanSeconds: 3600 } }
 * ```
 *
 * @param ns - the collection's namespace, used in MongoDB's messages (`'<ns>: ...'`).
 * @param options - untrusted options (`CreateCollectionOptions` shape expected).
 * @param clock - current time, for the `expireAfterSeconds` upper bound (it must not exceed the time
 *   since the epoch). Defaults to the system clock.
 * @returns frozen resolved options; `bucketingParametersHaveChanged` is `false`.
 * @throws {@link TimeseriesError} with MongoDB's code and message, `field` naming the option:
 *   `TypeMismatch` (wrong BSON type), `IDLUnknownField` (unknown option), `IDLFailedToParse` (missing
 *   `timeField`/`timeseries`), `BadValue` (bad enum, range, NUL or `$` in a field name),
 *   `InvalidOptions` (incompatible options, dotted fields, metaField rules, bucketing rules, TTL range).
 */
export function resolveCollectionOptions(
  ns: string,
  options: unknown,
  clock: Clock = systemClock,
): ResolvedCollectionOptions {
  if (!isDocument(options)) {
    fail(
      'TypeMismatch',
      `Collection options must be an object, but got type '${bsonTypeName(options)}'`,
      'options',
    );
  }

  // 1. IDL parse of the create command, in the caller's key order.
  let timeseries: ParsedTimeseries | undefined;
  let expireAfterSeconds: bigint | undefined;
  const present = new Map<string, unknown>();
  for (const [key, value] of ownEntries(options)) {
    if (isAbsent(value)) continue;
    switch (key) {
      case 'timeseries':
        if (!isDocument(value)) wrongType('create.timeseries', value, 'object', 'timeseries');
        timeseries = parseTimeseriesOptions(value);
        break;
      case 'expireAfterSeconds':
        expireAfterSeconds = parseSafeInt64('create.expireAfterSeconds', value, key);
        break;
      case 'capped':
        present.set(key, parseCapped(value));
        break;
      case 'temp':
        present.set(key, value);
        break;
      default:
        if (!INCOMPATIBLE_CREATE_OPTIONS.has(key) && !UNSUPPORTED_CREATE_OPTIONS.has(key)) {
          unknownField(`create.${key}`, key);
        }
        present.set(key, value);
    }
  }
  if (timeseries === undefined) {
    fail('IDLFailedToParse', "BSON field 'create.timeseries' is missing but a required field", 'timeseries');
  }
  const { timeField, metaField } = timeseries;
  if (timeField === undefined) {
    fail(
      'IDLFailedToParse',
      "BSON field 'create.timeseries.timeField' is missing but a required field",
      'timeseries.timeField',
    );
  }

  // 2. create command checks.
  if (!present.has('clusteredIndex')) {
    if (present.get('capped') === true && !present.has('size')) {
      fail('InvalidOptions', "the 'size' field is required when 'capped' is true", 'capped');
    }
    if ((present.has('size') || present.has('max')) && present.get('capped') !== true) {
      fail(
        'InvalidOptions',
        "the 'capped' field needs to be true when either the 'size' or 'max' fields are present",
        present.has('size') ? 'size' : 'max',
      );
    }
  }
  if (present.has('temp')) fail('InvalidOptions', "the 'temp' field is an invalid option", 'temp');
  if (present.has('pipeline') && !present.has('viewOn')) {
    fail('InvalidOptions', "'pipeline' requires 'viewOn' to also be specified", 'pipeline');
  }
  for (const [key, value] of present) {
    if (key === 'capped' && value === false) continue;
    if (INCOMPATIBLE_CREATE_OPTIONS.has(key)) {
      fail('InvalidOptions', `${ns}: 'timeseries' is not allowed with '${key}'`, key);
    }
  }
  for (const key of present.keys()) {
    if (UNSUPPORTED_CREATE_OPTIONS.has(key)) {
      fail('InvalidOptions', `${ns}: option '${key}' is not supported by tsbuckets`, key);
    }
  }
  const mustBeTopLevel = (name: string): string =>
    `${ns}: '${name}' must be a top-level field and not contain a '.'`;
  if (timeField.includes('.')) fail('InvalidOptions', mustBeTopLevel('timeField'), 'timeseries.timeField');
  if (metaField !== undefined) {
    if (metaField === '_id') fail('InvalidOptions', `'metaField' cannot be "_id"`, 'timeseries.metaField');
    if (metaField === timeField) {
      fail('InvalidOptions', "'metaField' cannot be the same as 'timeField'", 'timeseries.metaField');
    }
    if (metaField.includes('.')) fail('InvalidOptions', mustBeTopLevel('metaField'), 'timeseries.metaField');
  }

  // 3. Collection creation checks.
  if (timeField.startsWith('$') || (metaField?.startsWith('$') ?? false)) {
    fail(
      'BadValue',
      "The 'timeField' or 'metaField' cannot start with '$'",
      timeField.startsWith('$') ? 'timeseries.timeField' : 'timeseries.metaField',
    );
  }
  const bucketing = checkBucketingParameters(timeseries);
  const ttl =
    expireAfterSeconds === undefined
      ? undefined
      : validateExpireAfterSeconds(expireAfterSeconds, clock(), 'expireAfterSeconds');

  return freezeResolved({
    timeField,
    metaField,
    granularity: bucketing.granularity,
    bucketMaxSpanSeconds: bucketing.bucketMaxSpanSeconds,
    customRoundingSeconds: bucketing.bucketRoundingSeconds,
    bucketingParametersHaveChanged: false,
    expireAfterSeconds: ttl,
  });
}

/**
 * Whether two collections' options are the same for `createCollection` idempotence (MongoDB's
 * `optionsAreEqual` plus the TTL): same time and meta fields, same granularity (unspecified equals
 * `'seconds'`), same span and effective rounding, same `expireAfterSeconds`.
 *
 * @param a - resolved options.
 * @param b - resolved options.
 * @returns `true` when re-creating `a` as `b` is a no-op.
 */
export function sameCollectionOptions(a: ResolvedCollectionOptions, b: ResolvedCollectionOptions): boolean {
  return (
    a.timeField === b.timeField &&
    a.metaField === b.metaField &&
    (a.granularity ?? 'seconds') === (b.granularity ?? 'seconds') &&
    a.bucketMaxSpanSeconds === b.bucketMaxSpanSeconds &&
    a.bucketRoundingSeconds === b.bucketRoundingSeconds &&
    a.expireAfterSeconds === b.expireAfterSeconds
  );
}

/**
 * The same options with {@link ResolvedCollectionOptions.bucketingParametersHaveChanged} set: for a
 * collection whose storage says a `collMod` changed its bucketing before (or cannot say whether one did).
 *
 * @param options - resolved options.
 * @returns the options, flagged.
 */
export function withBucketingParametersChanged(
  options: ResolvedCollectionOptions,
): ResolvedCollectionOptions {
  if (options.bucketingParametersHaveChanged) return options;
  return Object.freeze({ ...options, bucketingParametersHaveChanged: true });
}

/**
 * MongoDB's `areTimeseriesBucketsFixed`: every bucket starts at a multiple of its span (custom bucketing
 * with span == rounding) and the parameters never changed, so bucket bounds can be computed exactly.
 *
 * @param options - resolved options.
 * @returns `true` for fixed buckets.
 */
export function areTimeseriesBucketsFixed(options: ResolvedCollectionOptions): boolean {
  return (
    !options.bucketingParametersHaveChanged &&
    options.granularity === undefined &&
    options.bucketMaxSpanSeconds === options.bucketRoundingSeconds
  );
}

// ---------------------------------------------------------------------------------------------------
// collMod
// ---------------------------------------------------------------------------------------------------

const INVALID_GRANULARITY_TRANSITION =
  "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.";

/**
 * Granularity transitions allowed by `collMod` (`isTimeseriesGranularityValidAndUnchanged`):
 *
 * | from \ to | seconds | minutes | hours |
 * |-----------|---------|---------|-------|
 * | seconds   | no-op   | yes     | yes   |
 * | minutes   | no      | no-op   | yes   |
 * | hours     | no      | no      | no-op |
 */
function isValidGranularityIncrease(from: Granularity, to: Granularity): boolean {
  switch (from) {
    case 'seconds':
      return true;
    case 'minutes':
      return to === 'hours';
    case 'hours':
      return false;
    default: {
      const never: never = from;
      return never;
    }
  }
}

interface ParsedCollMod {
  granularity: Granularity | undefined;
  bucketMaxSpanSeconds: number | undefined;
  bucketRoundingSeconds: number | undefined;
  expireAfterSeconds: bigint | string | undefined;
}

function parseCollMod(mod: object): ParsedCollMod {
  const parsed: ParsedCollMod = {
    granularity: undefined,
    bucketMaxSpanSeconds: undefined,
    bucketRoundingSeconds: undefined,
    expireAfterSeconds: undefined,
  };
  for (const [key, value] of ownEntries(mod)) {
    if (key === 'expireAfterSeconds') {
      if (isAbsent(value)) continue;
      parsed.expireAfterSeconds =
        typeof value === 'string'
          ? value
          : numericValue(value) === undefined
            ? wrongType('collMod.expireAfterSeconds', value, ['string', ...NUMERIC_TYPE_NAMES], key)
            : parseSafeInt64('collMod.expireAfterSeconds', value, key);
      continue;
    }
    const path = `collMod.timeseries.${key}`;
    switch (key) {
      case 'granularity':
        if (!isAbsent(value)) parsed.granularity = parseGranularity(path, value, key);
        break;
      case 'bucketMaxSpanSeconds':
        if (!isAbsent(value)) parsed.bucketMaxSpanSeconds = parseBucketingSeconds(path, value, key);
        break;
      case 'bucketRoundingSeconds':
        if (!isAbsent(value)) parsed.bucketRoundingSeconds = parseBucketingSeconds(path, value, key);
        break;
      default:
        unknownField(`collMod.${key}`, key);
    }
  }
  return parsed;
}

/**
 * The new bucketing parameters after a `collMod` (MongoDB's `isTimeseriesGranularityValidAndUnchanged`
 * and `applyTimeseriesOptionsModifications`), or `undefined` when they do not change.
 */
function applyBucketingModification(
  current: ResolvedCollectionOptions,
  mod: ParsedCollMod,
): { granularity: Granularity | undefined; span: number; rounding: number | undefined } | undefined {
  const { granularity: target, bucketMaxSpanSeconds: span, bucketRoundingSeconds: rounding } = mod;
  if (target === undefined && span === undefined && rounding === undefined) return undefined;

  let targetSpan: number;
  let targetRounding: number;
  if (target !== undefined) {
    const preset = GRANULARITY_PRESETS[target];
    if (span !== undefined && span !== preset.bucketMaxSpanSeconds) {
      fail(
        'InvalidOptions',
        "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for the provided granularity",
        'bucketMaxSpanSeconds',
      );
    }
    if (rounding !== undefined) {
      fail(
        'InvalidOptions',
        "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter",
        'bucketRoundingSeconds',
      );
    }
    if (current.granularity !== undefined) {
      if (current.granularity === target) return undefined;
      if (!isValidGranularityIncrease(current.granularity, target)) {
        fail('InvalidOptions', INVALID_GRANULARITY_TRANSITION, 'granularity');
      }
      return { granularity: target, span: preset.bucketMaxSpanSeconds, rounding: undefined };
    }
    targetSpan = preset.bucketMaxSpanSeconds;
    targetRounding = preset.bucketRoundingSeconds;
  } else {
    if (span === undefined || rounding === undefined) {
      fail(
        'InvalidOptions',
        "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        span === undefined ? 'bucketMaxSpanSeconds' : 'bucketRoundingSeconds',
      );
    }
    if (span !== rounding) {
      fail(
        'InvalidOptions',
        "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'",
        'bucketRoundingSeconds',
      );
    }
    targetSpan = span;
    targetRounding = rounding;
  }

  if (current.bucketMaxSpanSeconds === targetSpan && current.bucketRoundingSeconds === targetRounding) {
    return undefined;
  }
  if (current.bucketMaxSpanSeconds > targetSpan) {
    fail(
      'InvalidOptions',
      "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition",
      'bucketMaxSpanSeconds',
    );
  }
  if (current.bucketRoundingSeconds > targetRounding) {
    fail(
      'InvalidOptions',
      "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition",
      'bucketRoundingSeconds',
    );
  }
  return target !== undefined
    ? { granularity: target, span: targetSpan, rounding: undefined }
    : { granularity: undefined, span: targetSpan, rounding: targetRounding };
}

/**
 * Apply a `collMod` to a collection's resolved options, with MongoDB's validation and messages.
 *
 * Bucketing transitions (a change sets `bucketingParametersHaveChanged`):
 *
 * | current      | mod                              | result                                            |
 * |--------------|----------------------------------|---------------------------------------------------|
 * | granularity  | same granularity                 | unchanged                                         |
 * | granularity  | larger granularity               | new preset                                        |
 * | granularity  | smaller granularity              | InvalidOptions (invalid transition)               |
 * | any          | granularity + other span         | InvalidOptions                                    |
 * | any          | granularity + rounding           | InvalidOptions                                    |
 * | any          | only one of span/rounding        | InvalidOptions (set alongside each other)         |
 * | any          | span != rounding                 | InvalidOptions (needs to be equal)                |
 * | any          | seconds, none smaller            | custom bucketing (granularity cleared)            |
 * | custom       | granularity, none smaller        | preset (stored rounding cleared)                  |
 * | any          | a value smaller than current     | InvalidOptions (equal or greater to transition)   |
 *
 * `expireAfterSeconds` is checked first: a number must pass the TTL range check, `'off'` removes the TTL.
 *
 * @param current - the collection's resolved options.
 * @param mod - untrusted `collMod` options (`CollModOptions` shape expected); `null`/`undefined` is empty.
 * @param clock - current time for the TTL upper bound. Defaults to the system clock.
 * @returns the new frozen options, or `current` itself when nothing changes.
 * @throws {@link TimeseriesError} with MongoDB's code and message, `field` naming the option.
 */
export function resolveCollMod(
  current: ResolvedCollectionOptions,
  mod: unknown,
  clock: Clock = systemClock,
): ResolvedCollectionOptions {
  if (isAbsent(mod)) return current;
  if (!isDocument(mod)) {
    fail('TypeMismatch', `collMod options must be an object, but got type '${bsonTypeName(mod)}'`, 'options');
  }
  const parsed = parseCollMod(mod);

  let expireAfterSeconds = current.expireAfterSeconds;
  const ttl = parsed.expireAfterSeconds;
  if (typeof ttl === 'string') {
    if (ttl !== 'off') {
      fail(
        'InvalidOptions',
        `Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: '${ttl}'. Accepted value is 'off'`,
        'expireAfterSeconds',
      );
    }
    expireAfterSeconds = undefined;
  } else if (ttl !== undefined) {
    expireAfterSeconds = validateExpireAfterSeconds(ttl, clock(), 'expireAfterSeconds');
  }

  const bucketing = applyBucketingModification(current, parsed);
  if (bucketing === undefined && expireAfterSeconds === current.expireAfterSeconds) return current;
  return freezeResolved({
    timeField: current.timeField,
    metaField: current.metaField,
    granularity: bucketing === undefined ? current.granularity : bucketing.granularity,
    bucketMaxSpanSeconds: bucketing === undefined ? current.bucketMaxSpanSeconds : bucketing.span,
    customRoundingSeconds: bucketing === undefined ? current.bucketRoundingSeconds : bucketing.rounding,
    bucketingParametersHaveChanged: current.bucketingParametersHaveChanged || bucketing !== undefined,
    expireAfterSeconds,
  });
}

// ---------------------------------------------------------------------------------------------------
// Server parameters
// ---------------------------------------------------------------------------------------------------

type BooleanServerParameterName =
  'timeseriesValidateCompressedBuckets' | 'timeseriesAlwaysUseCompressedBuckets';
type ServerParameterName = Exclude<keyof typeof DEFAULT_SERVER_PARAMETERS, BooleanServerParameterName>;

/** Lower bound of each parameter (`validator: { gte }` in `timeseries.idl`); `undefined` = unbounded. */
const SERVER_PARAMETER_MINIMUM: Readonly<Record<ServerParameterName, number | undefined>> = {
  timeseriesBucketMaxCount: 1,
  timeseriesBucketMaxSize: 1,
  timeseriesBucketMinCount: 1,
  timeseriesIdleBucketExpiryMemoryUsageThreshold: undefined,
  timeseriesIdleBucketExpiryMaxCountPerAttempt: 2,
};

function isServerParameterName(name: string): name is ServerParameterName {
  return Object.prototype.hasOwnProperty.call(SERVER_PARAMETER_MINIMUM, name);
}

function parseBooleanServerParameter(name: BooleanServerParameterName, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    fail(
      'TypeMismatch',
      `Invalid value for parameter ${name}: expected a boolean, got type '${bsonTypeName(value)}'`,
      name,
    );
  }
  return value;
}

function parseServerParameter(name: ServerParameterName, value: unknown): number {
  const n = numericValue(value);
  if (n === undefined) {
    fail(
      'TypeMismatch',
      `Invalid value for parameter ${name}: expected a number, got type '${bsonTypeName(value)}'`,
      name,
    );
  }
  if (typeof n === 'number' && !Number.isFinite(n)) {
    fail('BadValue', `Invalid value for parameter ${name}: ${n} is not a finite number`, name);
  }
  // MongoDB stores these as integers; a fractional value is truncated as BSON coercion does.
  const v = typeof n === 'bigint' ? Number(n) : Math.trunc(n);
  const minimum = SERVER_PARAMETER_MINIMUM[name];
  if (minimum !== undefined && v < minimum) {
    fail(
      'BadValue',
      `Invalid value for parameter ${name}: ${v} is not greater than or equal to ${minimum}`,
      name,
    );
  }
  return v;
}

/**
 * The idle-bucket memory threshold in bytes (8.0 `getTimeseriesIdleBucketExpiryMemoryUsageThresholdBytes`):
 * `<= 0` → 5% of system memory; `1..100` → that percentage; `> 100` → bytes. Percentages use MongoDB's
 * arithmetic: whole mebibytes of system memory × percent × 10485.
 */
function memoryThresholdBytes(parameter: number, totalMemoryBytes: number): number {
  if (parameter > 100) return parameter;
  const percent = parameter <= 0 ? DEFAULT_MEMORY_THRESHOLD_PERCENT : parameter;
  const systemMemMB = Math.floor(totalMemoryBytes / (1024 * 1024));
  return systemMemMB * percent * 10485;
}

/**
 * Validate server parameters and resolve them, with defaults, into a frozen config.
 *
 * @example
 * ```ts
 * const p = resolveServerParameters({ timeseriesBucketMaxCount: 500 });
 * p.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes; // 5% of os.totalmem()
 * ```
 *
 * @param params - untrusted parameters (`ServerParameters` shape expected); `null`/`undefined` = defaults.
 * @param totalMemoryBytes - system memory for the threshold rule. Defaults to `os.totalmem()`.
 * @returns the frozen resolved parameters.
 * @throws {@link TimeseriesError} `InvalidOptions` for an unknown parameter, `TypeMismatch` for a
 *   non-number (a non-boolean for `timeseriesValidateCompressedBuckets` and
 *   `timeseriesAlwaysUseCompressedBuckets`), `BadValue` for a value below the parameter's minimum or not finite; `field` names it.
 */
export function resolveServerParameters(
  params: unknown,
  totalMemoryBytes: number = totalmem(),
): ResolvedServerParameters {
  const values: Record<ServerParameterName, number> = {
    timeseriesBucketMaxCount: DEFAULT_SERVER_PARAMETERS.timeseriesBucketMaxCount,
    timeseriesBucketMaxSize: DEFAULT_SERVER_PARAMETERS.timeseriesBucketMaxSize,
    timeseriesBucketMinCount: DEFAULT_SERVER_PARAMETERS.timeseriesBucketMinCount,
    timeseriesIdleBucketExpiryMemoryUsageThreshold:
      DEFAULT_SERVER_PARAMETERS.timeseriesIdleBucketExpiryMemoryUsageThreshold,
    timeseriesIdleBucketExpiryMaxCountPerAttempt:
      DEFAULT_SERVER_PARAMETERS.timeseriesIdleBucketExpiryMaxCountPerAttempt,
  };
  const booleans: Record<BooleanServerParameterName, boolean> = {
    timeseriesValidateCompressedBuckets: DEFAULT_SERVER_PARAMETERS.timeseriesValidateCompressedBuckets,
    timeseriesAlwaysUseCompressedBuckets: DEFAULT_SERVER_PARAMETERS.timeseriesAlwaysUseCompressedBuckets,
  };
  if (!isAbsent(params)) {
    if (!isDocument(params)) {
      fail(
        'TypeMismatch',
        `Server parameters must be an object, but got type '${bsonTypeName(params)}'`,
        'parameters',
      );
    }
    for (const [name, value] of ownEntries(params)) {
      if (name === 'timeseriesValidateCompressedBuckets' || name === 'timeseriesAlwaysUseCompressedBuckets') {
        if (!isAbsent(value)) booleans[name] = parseBooleanServerParameter(name, value);
        continue;
      }
      if (!isServerParameterName(name)) {
        fail(
          'InvalidOptions',
          `attempted to set unrecognized parameter [${name}], use help:true to see options`,
          name,
        );
      }
      if (!isAbsent(value)) values[name] = parseServerParameter(name, value);
    }
  }
  return Object.freeze({
    timeseriesBucketMaxCount: values.timeseriesBucketMaxCount,
    timeseriesBucketMaxSize: values.timeseriesBucketMaxSize,
    timeseriesBucketMinCount: values.timeseriesBucketMinCount,
    timeseriesIdleBucketExpiryMemoryUsageThreshold: values.timeseriesIdleBucketExpiryMemoryUsageThreshold,
    timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: memoryThresholdBytes(
      values.timeseriesIdleBucketExpiryMemoryUsageThreshold,
      totalMemoryBytes,
    ),
    timeseriesIdleBucketExpiryMaxCountPerAttempt: values.timeseriesIdleBucketExpiryMaxCountPerAttempt,
    timeseriesValidateCompressedBuckets: booleans.timeseriesValidateCompressedBuckets,
    timeseriesAlwaysUseCompressedBuckets: booleans.timeseriesAlwaysUseCompressedBuckets,
  });
}
