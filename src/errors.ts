/**
 * Errors thrown by tsbuckets.
 *
 * Every error carries a brand (the `isTsBucketsErrorBrand` getter) so that errors thrown by one copy of
 * the package are recognised by another copy (`instanceof` fails across copies; see js-bson `BSONError`).
 *
 * @packageDocumentation
 */

/**
 * MongoDB error code names used by tsbuckets, with their numeric codes (`src/mongo/base/error_codes.yml`).
 */
export const ErrorCodes = {
  BadValue: 2,
  FailedToParse: 9,
  TypeMismatch: 14,
  Overflow: 15,
  ConflictingUpdateOperators: 40,
  EmptyFieldName: 56,
  InvalidOptions: 72,
  InvalidNamespace: 73,
  NamespaceExists: 48,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  CannotCreateIndex: 67,
  InvalidIdField: 103,
  WriteConflict: 112,
  DuplicateKey: 11000,
  BSONObjectTooLarge: 10334,
  IDLFailedToParse: 40414,
  IDLUnknownField: 40415,
  TimeseriesBucketCleared: 6057701,
  TimeseriesBucketCompressionFailed: 6002104,
  OIDGenerationCollision: 6130900,
  InvalidTimeseriesBucket: 5857900,
  /** `$_internalUnpackBucket`: an empty bucket document. */
  Location5346510: 5346510,
  /** `$_internalUnpackBucket`: `data` has no time column. */
  Location5346700: 5346700,
  /** `$_internalUnpackBucket`: `meta` present but the collection has no metaField. */
  Location5369601: 5369601,
  /** `$_internalUnpackBucket`: `control` missing. */
  Location5857902: 5857902,
  /** `$_internalUnpackBucket`: `control.version` missing. */
  Location5857903: 5857903,
  /** A pipeline stage with other than exactly one field. */
  Location40323: 40323,
  /** An unknown pipeline stage name. */
  Location40324: 40324,
  /** `$match` given something other than a document. */
  Location15959: 15959,
  /** A `$regex` pattern that does not compile. */
  Location51091: 51091,
  /** A negative `limit` or `skip`. */
  Location51024: 51024,
  /** An expression given the wrong number of arguments (`$gt` with one). */
  Location16020: 16020,
  /** `$bucket` without at least two boundaries. */
  Location40192: 40192,
  /** `$bucket` boundaries not in ascending order. */
  Location40194: 40194,
  /** A `timezone` no time zone has. */
  Location40485: 40485,
  /** A `timezone` that is not a string. */
  Location40517: 40517,
  /** `$group` given something other than a document. */
  Location15947: 15947,
  /** `$group` with an unknown accumulator. */
  Location15952: 15952,
  /** `$group` without `_id`. */
  Location15955: 15955,
  /** `$sort` given something other than a document. */
  Location15973: 15973,
  /** A `$sort` direction other than 1 or -1. */
  Location15975: 15975,
  /** `$sort` without a key. */
  Location15976: 15976,
  /** A `$group` output that is not an accumulator document. */
  Location40234: 40234,
  /** A `$group` output field name with a `.`. */
  Location40235: 40235,
  /** A `$group` output field name starting with `$`. */
  Location40236: 40236,
  /** A `$group` output with other than one accumulator. */
  Location40238: 40238,
  /** `$count` given something other than a string. */
  Location40156: 40156,
  /** `$count` given an empty string. */
  Location40157: 40157,
  /** `$count` given a `$`-prefixed name. */
  Location40158: 40158,
  /** `$count` given a dotted name. */
  Location40160: 40160,
  /** `$unwind` without a path. */
  Location28812: 28812,
  /** A `$unwind` path without the `$` prefix. */
  Location28818: 28818,
  /** An expression naming an undefined `$$` variable. */
  Location17276: 17276,
  CursorClosed: 43,
  /** A cursor killed under its iteration (its collection was dropped). */
  QueryPlanKilled: 175,
  Interrupted: 11601,
} as const;

/** The name of a MongoDB error code known to tsbuckets. */
export type ErrorCodeName = keyof typeof ErrorCodes;

/**
 * Base class of every error thrown by tsbuckets.
 *
 * Use {@link TsBucketsError.isTsBucketsError} rather than `instanceof` to recognise one: the check works
 * across duplicated copies of the package.
 */
export class TsBucketsError extends Error {
  /** The class name, also correct after minification. */
  override get name(): string {
    return 'TsBucketsError';
  }

  /** The brand checked by {@link TsBucketsError.isTsBucketsError}: always `true`. */
  get isTsBucketsErrorBrand(): true {
    return true;
  }

  /**
   * Whether `value` is an error thrown by (any copy of) tsbuckets.
   *
   * @param value - anything.
   * @returns `true` for a tsbuckets error.
   */
  static isTsBucketsError(value: unknown): value is TsBucketsError {
    return (
      value != null &&
      typeof value === 'object' &&
      (value as { isTsBucketsErrorBrand?: unknown }).isTsBucketsErrorBrand === true
    );
  }
}

/** Structured details attached to a {@link TimeseriesError}. */
export interface TimeseriesErrorDetails {
  /** The option or document field the error is about, when there is one. */
  readonly field?: string;
  /** The bucket the error is about, as a hex ObjectId, when there is one. */
  readonly bucketId?: string;
  /** The underlying error, if any. */
  readonly cause?: unknown;
}

/**
 * An error MongoDB would report for the same request: it carries MongoDB's numeric `code` and
 * `codeName` and, where MongoDB has one, MongoDB's message text.
 *
 * @example
 * ```ts
 * try { await coll.insertOne({ ts: 'not a date' }); }
 * catch (e) { if (TimeseriesError.isTimeseriesError(e)) console.log(e.code, e.codeName); }
 * ```
 */
export class TimeseriesError extends TsBucketsError {
  /** MongoDB's numeric error code. */
  readonly code: number;
  /** MongoDB's error code name, e.g. `'BadValue'`. */
  readonly codeName: string;
  /** The option or field the error is about, if any. */
  readonly field: string | undefined;
  /** The bucket the error is about (hex ObjectId), if any. */
  readonly bucketId: string | undefined;

  /**
   * @param codeName - MongoDB's code name; the numeric code is looked up in {@link ErrorCodes}.
   * @param message - MongoDB's message text where it has one.
   * @param details - field, bucket id and cause.
   */
  constructor(codeName: ErrorCodeName, message: string, details: TimeseriesErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = ErrorCodes[codeName];
    this.codeName = codeName;
    this.field = details.field;
    this.bucketId = details.bucketId;
  }

  override get name(): string {
    return 'TimeseriesError';
  }

  /**
   * Whether `value` is a {@link TimeseriesError} from any copy of tsbuckets.
   *
   * @param value - anything.
   * @returns `true` when `value` is a branded error with a numeric `code` and a `codeName`.
   */
  static isTimeseriesError(value: unknown): value is TimeseriesError {
    return (
      TsBucketsError.isTsBucketsError(value) &&
      typeof (value as { code?: unknown }).code === 'number' &&
      typeof (value as { codeName?: unknown }).codeName === 'string'
    );
  }
}

/** One failed measurement of an `insertMany`, as MongoDB reports it. */
export interface WriteError {
  /** Index of the measurement in the caller's array. */
  readonly index: number;
  /** MongoDB's numeric code. */
  readonly code: number;
  /** MongoDB's code name. */
  readonly codeName: string;
  /** The message. */
  readonly errmsg: string;
}

/**
 * Thrown by `insertMany`/`insertOne` when at least one measurement failed. Everything counted in
 * `insertedCount` is stored; every failed measurement is listed in `writeErrors`. A
 * {@link TimeseriesError} (as the driver's `MongoBulkWriteError` is a `MongoServerError`) whose `code` and
 * `codeName` are those of the first write error.
 */
export class BulkWriteError extends TimeseriesError {
  /** Failed measurements, in index order. */
  readonly writeErrors: ReadonlyArray<WriteError>;
  /** Number of measurements inserted (acknowledged and stored). */
  readonly insertedCount: number;

  /**
   * @param writeErrors - failed measurements (at least one), in index order.
   * @param insertedCount - measurements stored.
   */
  constructor(writeErrors: ReadonlyArray<WriteError>, insertedCount: number) {
    const first = writeErrors[0];
    if (first === undefined) throw new InternalInvariantError(1001, 'BulkWriteError without write errors');
    super(
      first.codeName as ErrorCodeName,
      `${writeErrors.length} write error(s), ${insertedCount} inserted; first at index ${first.index}: ${first.errmsg}`,
    );
    // As reported, also when the first error is not one tsbuckets raises itself (a server's code).
    (this as { code: number }).code = first.code;
    this.writeErrors = Object.freeze([...writeErrors]);
    this.insertedCount = insertedCount;
  }

  override get name(): string {
    return 'BulkWriteError';
  }

  /**
   * Whether `value` is a {@link BulkWriteError} from any copy of tsbuckets.
   *
   * @param value - anything.
   * @returns `true` for a bulk write error.
   */
  static isBulkWriteError(value: unknown): value is BulkWriteError {
    return (
      TsBucketsError.isTsBucketsError(value) &&
      Array.isArray((value as { writeErrors?: unknown }).writeErrors)
    );
  }
}

/**
 * A broken internal invariant: a bug in tsbuckets, never a user error. Each call site has a unique code.
 */
export class InternalInvariantError extends TsBucketsError {
  /** Unique code of the failed invariant. */
  readonly invariantCode: number;

  /**
   * @param invariantCode - unique code of the call site.
   * @param message - what was expected.
   */
  constructor(invariantCode: number, message: string) {
    super(`Invariant ${invariantCode} failed: ${message}`);
    this.invariantCode = invariantCode;
  }

  override get name(): string {
    return 'InternalInvariantError';
  }
}
