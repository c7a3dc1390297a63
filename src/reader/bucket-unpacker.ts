/**
 * Unpacking one bucket document into measurements (the server's `BucketUnpacker`, `bucket_unpacker.cpp`).
 *
 * A bucket is opened once ({@link openBucket}): its format version and shape are checked and the selected
 * columns are found, but nothing is decoded yet. A column is decoded straight from its stored form the
 * first time it is needed ({@link columnValues}: v1 `{ "<row>": value }` objects read in row order, v2/v3
 * BSONColumn binaries through a {@link ColumnDecoder}), so a query that rejects every row of a bucket on
 * its filter columns never decodes the others (see row-filter.ts), and the version-1 document a
 * compressed bucket once was is never rebuilt.
 *
 * Rows are built a batch at a time ({@link fillRows}): one empty object per row, then each column written
 * into all rows in turn. Each measurement has the time field first, then the metaField (under the user's
 * name), then the other columns in the bucket's `data` order; a field missing from a measurement stays
 * missing.
 *
 * @packageDocumentation
 */
import { BSONColumn } from '../bucket-format/bson-column/bson-column.js';
import { TimeseriesError } from '../errors.js';
import type { StoredBucket } from '../storage/storage.js';
import { bsonNumberValue, cloneBsonValue, isPlainObject, ownValue } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';

/** An unpacked measurement. */
export type MeasurementDocument = Record<string, unknown>;

/**
 * Which top-level measurement fields to unpack (the stage's `include`/`exclude`). The metaField and the
 * time field are selected by the same rule as data fields: under `include` only when listed, under
 * `exclude` unless listed.
 */
export type FieldSelection =
  | { readonly kind: 'all' }
  | { readonly kind: 'include'; readonly fields: ReadonlySet<string> }
  | { readonly kind: 'exclude'; readonly fields: ReadonlySet<string> };

/**
 * Decodes one compressed column (BinData subtype 7 payload) into one entry per measurement, `undefined`
 * for a measurement without the field. The default is `BSONColumn.decode`.
 */
export interface ColumnDecoder {
  /**
   * @param bytes - the column's BSONColumn binary.
   * @returns the values, in row order.
   */
  decode(bytes: Uint8Array): ReadonlyArray<unknown>;
}

/** The default {@link ColumnDecoder}: the project's BSONColumn implementation. */
export const bsonColumnDecoder: ColumnDecoder = { decode: (bytes) => BSONColumn.decode(bytes) };

/** What the unpacker needs to know, resolved once per query. */
export interface UnpackSpec {
  /** The collection's time field. */
  readonly timeField: string;
  /** The collection's metaField, if any. */
  readonly metaField: string | undefined;
  /** The fields to unpack. */
  readonly selection: FieldSelection;
  /** Decoder of compressed (v2/v3) columns. */
  readonly columnDecoder: ColumnDecoder;
}

/**
 * An opened bucket: plain state read by {@link columnValues}, {@link timeValues} and {@link fillRows}.
 * Decoded columns are cached in it, so each is decoded at most once per opening.
 */
export interface OpenedBucket {
  /** The stored bucket (for error details; not mutated). */
  readonly bucket: StoredBucket;
  /** The format version. */
  readonly version: 1 | 2 | 3;
  /** Number of measurements. */
  readonly count: number;
  /** The collection's time field; whether it is emitted. */
  readonly timeField: string;
  readonly emitTime: boolean;
  /** The collection's metaField (`''` without one); whether the bucket has a meta, and whether it is emitted. */
  readonly metaField: string;
  readonly hasMeta: boolean;
  readonly emitMeta: boolean;
  /** The stored meta (shared: rows get copies). */
  readonly meta: unknown;
  /** Selected non-time columns, in `data` order: names and stored columns, index-aligned. */
  readonly names: ReadonlyArray<string>;
  readonly stored: ReadonlyArray<unknown>;
  /** The stored time column. */
  readonly storedTime: unknown;
  /** Version 1: the row keys (`"0"`, `"1"`, ...) in time-column order. */
  readonly rowKeys: ReadonlyArray<string> | undefined;
  /** Decoder of compressed columns. */
  readonly decoder: ColumnDecoder;
  /** Decoded columns by index into `names`, filled on first use. */
  readonly decoded: Array<ReadonlyArray<unknown> | undefined>;
  /** The decoded time column, filled on first use. */
  decodedTime: ReadonlyArray<unknown> | undefined;
}

/**
 * Whether a top-level field is selected.
 *
 * @param selection - the selection.
 * @param field - a field name.
 * @returns `true` when the field is unpacked.
 */
export function isFieldSelected(selection: FieldSelection, field: string): boolean {
  switch (selection.kind) {
    case 'all':
      return true;
    case 'include':
      return selection.fields.has(field);
    case 'exclude':
      return !selection.fields.has(field);
    default: {
      const never: never = selection;
      return never;
    }
  }
}

function bucketIdOf(bucket: StoredBucket): string | undefined {
  const id = bucket._id as { toHexString?: () => string } | undefined;
  return typeof id?.toHexString === 'function' ? id.toHexString() : undefined;
}

function badBucket(bucket: StoredBucket, message: string): TimeseriesError {
  const bucketId = bucketIdOf(bucket);
  return new TimeseriesError('BadValue', message, bucketId === undefined ? {} : { bucketId });
}

/**
 * The format version of a bucket, validated as the unpacker does.
 *
 * @param bucket - a stored bucket document.
 * @returns 1, 2 or 3.
 * @throws {@link TimeseriesError} 5346510 (empty bucket), 5857902 (no `control`), 5857903 (no
 * `control.version`), 5857900 (another version).
 */
export function bucketVersion(bucket: StoredBucket): 1 | 2 | 3 {
  const bucketId = bucketIdOf(bucket);
  const details = bucketId === undefined ? {} : { bucketId };
  if (Object.keys(bucket).length === 0) {
    throw new TimeseriesError('Location5346510', 'An empty bucket cannot be unpacked', details);
  }
  const control = getOwnField(bucket, 'control');
  if (!isPlainObject(control)) {
    throw new TimeseriesError(
      'Location5857902',
      "The $_internalUnpackBucket stage requires 'control' object to be present",
      details,
    );
  }
  const version = bsonNumberValue(getOwnField(control, 'version'));
  if (version === undefined) {
    throw new TimeseriesError(
      'Location5857903',
      "The $_internalUnpackBucket stage requires 'control.version' field to be present",
      details,
    );
  }
  if (version !== 1 && version !== 2 && version !== 3) {
    throw new TimeseriesError('InvalidTimeseriesBucket', `Invalid bucket version: ${version}`, details);
  }
  return version;
}

/**
 * The number of measurements of a bucket without unpacking it (`control.count` for compressed buckets,
 * else the size of the time column).
 *
 * @param bucket - a stored bucket document.
 * @param timeField - the collection's time field.
 * @param decoder - decoder for compressed buckets without a usable `control.count`.
 * @returns the count.
 * @throws {@link TimeseriesError} for a malformed bucket (see {@link openBucket}).
 */
export function bucketMeasurementCount(
  bucket: StoredBucket,
  timeField: string,
  decoder: ColumnDecoder,
): number {
  const version = bucketVersion(bucket);
  const data = getOwnField(bucket, 'data');
  if (!isPlainObject(data)) throw badBucket(bucket, "bucket 'data' must be an object");
  if (Object.keys(data).length === 0) return 0;
  const time = getOwnField(data, timeField);
  if (time === undefined) throw missingTime(bucket);
  if (version === 1) {
    if (!isPlainObject(time)) throw badBucket(bucket, `bucket column 'data.${timeField}' must be an object`);
    return Object.keys(time).length;
  }
  const count = bsonNumberValue(getOwnField(getOwnField(bucket, 'control') as object, 'count'));
  return count ?? decodeColumn(bucket, timeField, time, decoder).length;
}

function missingTime(bucket: StoredBucket): TimeseriesError {
  const bucketId = bucketIdOf(bucket);
  return new TimeseriesError(
    'Location5346700',
    'The $_internalUnpackBucket stage requires the data region to have a timeField object',
    bucketId === undefined ? {} : { bucketId },
  );
}

/** Binary columns as js-bson represents them (recognised by `_bsontype`). */
interface BinaryLike {
  readonly _bsontype?: unknown;
  readonly sub_type?: unknown;
  readonly buffer?: Uint8Array;
  readonly position?: number;
}

function checkCompressedColumn(bucket: StoredBucket, name: string, column: unknown): void {
  const bin = column as BinaryLike | null;
  if (bin === null || typeof bin !== 'object' || bin._bsontype !== 'Binary' || bin.sub_type !== 7) {
    throw badBucket(bucket, `compressed bucket column 'data.${name}' must be BinData subtype 7`);
  }
}

function decodeColumn(
  bucket: StoredBucket,
  name: string,
  column: unknown,
  decoder: ColumnDecoder,
): ReadonlyArray<unknown> {
  checkCompressedColumn(bucket, name, column);
  const bin = column as BinaryLike;
  return decoder.decode((bin.buffer as Uint8Array).subarray(0, bin.position));
}

/**
 * Open a bucket for unpacking: check its format and find the selected columns. Compressed columns are
 * checked to be BinData subtype 7 here and decoded only when first read.
 *
 * @param bucket - a stored bucket document (not mutated; version-1 cells are copied when read).
 * @param spec - time field, metaField, field selection and column decoder.
 * @returns the opened bucket.
 * @throws {@link TimeseriesError} with MongoDB's codes: 5346510 empty bucket, 5857902 no `control`,
 * 5857903 no `control.version`, 5857900 version not 1/2/3, 5346700 no time column, 5369601 `meta`
 * without a metaField; `BadValue` for a column of the wrong shape or a time column shorter than
 * `control.count`.
 */
export function openBucket(bucket: StoredBucket, spec: UnpackSpec): OpenedBucket {
  const version = bucketVersion(bucket);
  const hasMeta = hasOwnField(bucket, 'meta') && bucket.meta !== undefined;
  if (hasMeta && spec.metaField === undefined) {
    const bucketId = bucketIdOf(bucket);
    throw new TimeseriesError(
      'Location5369601',
      "The $_internalUnpackBucket stage expects 'meta' field to be missing if metaField parameter is not provided",
      bucketId === undefined ? {} : { bucketId },
    );
  }
  const metaField = spec.metaField ?? '';
  const data = getOwnField(bucket, 'data');
  if (!isPlainObject(data)) throw badBucket(bucket, "bucket 'data' must be an object");
  const timeField = spec.timeField;
  const names: string[] = [];
  const stored: unknown[] = [];
  let count = 0;
  let storedTime: unknown = undefined;
  let rowKeys: ReadonlyArray<string> | undefined;
  let decodedTime: ReadonlyArray<unknown> | undefined;
  // An empty data region holds no measurements.
  let empty = true;
  for (const _name in data) {
    empty = false;
    break;
  }
  if (!empty) {
    storedTime = getOwnField(data, timeField);
    if (storedTime === undefined) throw missingTime(bucket);
    for (const name of Object.keys(data)) {
      if (name === timeField || !isFieldSelected(spec.selection, name)) continue;
      const column = data[name];
      if (version === 1) {
        if (!isPlainObject(column)) throw badBucket(bucket, `bucket column 'data.${name}' must be an object`);
      } else {
        checkCompressedColumn(bucket, name, column);
      }
      names.push(name);
      stored.push(column);
    }
    if (version === 1) {
      if (!isPlainObject(storedTime))
        throw badBucket(bucket, `bucket column 'data.${timeField}' must be an object`);
      rowKeys = Object.keys(storedTime);
      count = rowKeys.length;
    } else {
      checkCompressedColumn(bucket, timeField, storedTime);
      const declared = bsonNumberValue(getOwnField(bucket.control as object, 'count'));
      if (declared === undefined) {
        // Without control.count (written by some 5.x-7.x servers) the time column is the count.
        decodedTime = decodeColumn(bucket, timeField, storedTime, spec.columnDecoder);
        count = decodedTime.length;
      } else {
        count = declared;
      }
    }
  }
  return {
    bucket,
    version,
    count,
    timeField,
    emitTime: isFieldSelected(spec.selection, timeField),
    metaField,
    hasMeta,
    emitMeta: hasMeta && isFieldSelected(spec.selection, metaField),
    meta: hasMeta ? bucket.meta : undefined,
    names,
    stored,
    storedTime,
    rowKeys,
    decoder: spec.columnDecoder,
    decoded: new Array<ReadonlyArray<unknown> | undefined>(names.length).fill(undefined),
    decodedTime,
  };
}

/**
 * A version-1 column read in row order: one entry per row, `undefined` where the row has no value. The
 * cells are the stored values themselves, so each is copied (a caller changing a result, a Date's
 * `setHours` or a nested document, must not change storage).
 */
function rowOrderedCells(
  column: Readonly<Record<string, unknown>>,
  rowKeys: ReadonlyArray<string>,
): unknown[] {
  const out = new Array<unknown>(rowKeys.length);
  for (let r = 0; r < rowKeys.length; r++) {
    const key = rowKeys[r] as string;
    out[r] = hasOwnField(column, key) ? ownValue(column[key]) : undefined;
  }
  return out;
}

/**
 * The values of a selected column, decoded on first use: one entry per row (at least `count`; entries
 * past `count` are ignored), `undefined` where a row has no value. The values are fresh: each belongs to
 * one row.
 *
 * @param opened - from {@link openBucket}.
 * @param index - index into `opened.names`.
 * @returns the column's values in row order.
 * @throws {@link TimeseriesError} `BadValue` when a compressed column does not decode.
 */
export function columnValues(opened: OpenedBucket, index: number): ReadonlyArray<unknown> {
  const cached = opened.decoded[index];
  if (cached !== undefined) return cached;
  const stored = opened.stored[index];
  const values =
    opened.rowKeys === undefined
      ? decodeColumn(opened.bucket, opened.names[index] as string, stored, opened.decoder)
      : rowOrderedCells(stored as Readonly<Record<string, unknown>>, opened.rowKeys);
  opened.decoded[index] = values;
  return values;
}

/**
 * The values of the time column, decoded on first use (see {@link columnValues}).
 *
 * @param opened - from {@link openBucket}.
 * @returns the times in row order.
 * @throws {@link TimeseriesError} `BadValue` when the column does not decode or is shorter than
 * `control.count`.
 */
export function timeValues(opened: OpenedBucket): ReadonlyArray<unknown> {
  if (opened.decodedTime !== undefined) return opened.decodedTime;
  const { bucket, timeField, storedTime, rowKeys } = opened;
  let values: ReadonlyArray<unknown>;
  if (rowKeys === undefined) {
    values = decodeColumn(bucket, timeField, storedTime, opened.decoder);
    if (values.length < opened.count)
      throw badBucket(bucket, `time column has ${values.length} entries, control.count is ${opened.count}`);
  } else {
    values = rowOrderedCells(storedTime as Readonly<Record<string, unknown>>, rowKeys);
  }
  opened.decodedTime = values;
  return values;
}

/**
 * Write one column into rows `out[base]...`: `rows` lists the bucket rows they stand for (every row when
 * `undefined`); a row whose value is `undefined` gets no field. The `__proto__` test is made once per
 * column, not per value.
 */
function writeColumn(
  out: MeasurementDocument[],
  base: number,
  rows: ReadonlyArray<number> | undefined,
  name: string,
  values: ReadonlyArray<unknown>,
): void {
  const n = out.length - base;
  if (name === '__proto__') {
    for (let k = 0; k < n; k++) {
      const value = values[rows === undefined ? k : (rows[k] as number)];
      if (value !== undefined) defineField(out[base + k] as MeasurementDocument, name, value);
    }
    return;
  }
  if (rows === undefined) {
    for (let k = 0; k < n; k++) {
      const value = values[k];
      if (value !== undefined) (out[base + k] as MeasurementDocument)[name] = value;
    }
    return;
  }
  for (let k = 0; k < n; k++) {
    const value = values[rows[k] as number];
    if (value !== undefined) (out[base + k] as MeasurementDocument)[name] = value;
  }
}

/**
 * Build measurements of an opened bucket and append them to `out`: the selected fields, time field first,
 * then the metaField, then the other columns in `data` order. Rows are filled column by column, each
 * column read once.
 *
 * @param opened - from {@link openBucket}.
 * @param rows - the rows to build, ascending (every row when `undefined`).
 * @param out - receives one fresh document per row.
 * @throws {@link TimeseriesError} `BadValue` when a column does not decode.
 */
export function fillRows(
  opened: OpenedBucket,
  rows: ReadonlyArray<number> | undefined,
  out: MeasurementDocument[],
): void {
  const base = out.length;
  const n = rows === undefined ? opened.count : rows.length;
  if (n === 0) return;
  for (let k = 0; k < n; k++) out.push({});
  if (opened.emitTime) writeColumn(out, base, rows, opened.timeField, timeValues(opened));
  if (opened.emitMeta) writeMeta(out, base, opened.metaField, opened.meta);
  for (let c = 0; c < opened.names.length; c++)
    writeColumn(out, base, rows, opened.names[c] as string, columnValues(opened, c));
}

/**
 * Give each row its own copy of the bucket's meta (the stored value is shared by every row), the cheapest
 * way chosen once per bucket: a scalar is shared, a document of scalars (the usual meta) is spread,
 * anything else is copied deeply.
 */
function writeMeta(out: MeasurementDocument[], base: number, metaField: string, meta: unknown): void {
  const n = out.length;
  if (typeof meta !== 'object' || meta === null) {
    for (let k = base; k < n; k++) defineField(out[k] as MeasurementDocument, metaField, meta);
    return;
  }
  let flat = isPlainObject(meta);
  if (flat) {
    for (const key in meta as Record<string, unknown>) {
      const value = (meta as Record<string, unknown>)[key];
      if (typeof value === 'object' && value !== null) flat = false;
    }
  }
  if (flat) {
    for (let k = base; k < n; k++)
      defineField(out[k] as MeasurementDocument, metaField, { ...(meta as Record<string, unknown>) });
    return;
  }
  for (let k = base; k < n; k++) defineField(out[k] as MeasurementDocument, metaField, cloneBsonValue(meta));
}
