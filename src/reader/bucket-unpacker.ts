/**
 * Unpacking one bucket document into measurements (INTERNALS §10.2, the server's `BucketUnpacker`).
 *
 * A bucket is opened once ({@link openBucket}): its format version is checked, its columns are resolved
 * (v1: the `{ "<row>": value }` objects; v2/v3: BSONColumn binaries decoded through a
 * {@link ColumnDecoder}) and only the selected columns are kept. Rows are then produced one at a time
 * ({@link unpackRow}), so a scan holds at most one bucket's columns. Each measurement has the time field
 * first, then the metaField (under the user's name), then the other columns in the bucket's `data` order;
 * a field missing from a measurement stays missing.
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
 * An opened bucket: plain state read by {@link unpackRow}.
 *
 * Layout `'rows'` (v1) keeps each column as its `{ "<row>": value }` object and the row keys of the time
 * column; layout `'arrays'` (v2/v3) keeps decoded arrays indexed by row. The layout is chosen once per
 * bucket so the per-row loop has no version test.
 */
export type OpenedBucket =
  | {
      readonly layout: 'rows';
      /** Number of measurements. */
      readonly count: number;
      /** Row keys (`"0"`, `"1"`, ...) in time-column order. */
      readonly rowKeys: ReadonlyArray<string>;
      /** The time column, or `undefined` when the time field is not selected. */
      readonly time: Readonly<Record<string, unknown>> | undefined;
      /** Selected non-time columns, in `data` order: names and row objects, index-aligned. */
      readonly names: ReadonlyArray<string>;
      readonly columns: ReadonlyArray<Readonly<Record<string, unknown>>>;
      /** Whether the metaField is emitted, and its value. */
      readonly emitMeta: boolean;
      readonly meta: unknown;
      /** A fresh copy of the meta for each row (the stored value is shared by every row). */
      readonly copyMeta: () => unknown;
      readonly metaField: string;
      readonly timeField: string;
    }
  | {
      readonly layout: 'arrays';
      readonly count: number;
      readonly time: ReadonlyArray<unknown> | undefined;
      readonly names: ReadonlyArray<string>;
      readonly columns: ReadonlyArray<ReadonlyArray<unknown>>;
      readonly emitMeta: boolean;
      readonly meta: unknown;
      /** A fresh copy of the meta for each row (the stored value is shared by every row). */
      readonly copyMeta: () => unknown;
      readonly metaField: string;
      readonly timeField: string;
    };

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

function decodeColumn(
  bucket: StoredBucket,
  name: string,
  column: unknown,
  decoder: ColumnDecoder,
): ReadonlyArray<unknown> {
  const bin = column as {
    _bsontype?: unknown;
    sub_type?: unknown;
    buffer?: Uint8Array;
    position?: number;
  } | null;
  if (bin === null || typeof bin !== 'object' || bin._bsontype !== 'Binary' || bin.sub_type !== 7) {
    throw badBucket(bucket, `compressed bucket column 'data.${name}' must be BinData subtype 7`);
  }
  const bytes = (bin.buffer as Uint8Array).subarray(0, bin.position);
  return decoder.decode(bytes);
}

/**
 * Open a bucket for unpacking.
 *
 * @param bucket - a stored bucket document (not mutated; values are shared with the output).
 * @param spec - time field, metaField, field selection and column decoder.
 * @returns the opened bucket.
 * @throws {@link TimeseriesError} with MongoDB's codes: 5346510 empty bucket, 5857902 no `control`,
 * 5857903 no `control.version`, 5857900 version not 1/2/3, 5346700 no time column, 5369601 `meta`
 * without a metaField; `BadValue` for a column of the wrong shape.
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
  const emitMeta = hasMeta && isFieldSelected(spec.selection, metaField);
  const meta = hasMeta ? bucket.meta : undefined;
  const copyMeta = metaCopier(meta);
  const data = getOwnField(bucket, 'data');
  if (!isPlainObject(data)) throw badBucket(bucket, "bucket 'data' must be an object");
  const fieldNames = Object.keys(data);
  const timeField = spec.timeField;
  const emitTime = isFieldSelected(spec.selection, timeField);
  if (fieldNames.length === 0) {
    // An empty data region holds no measurements.
    return {
      layout: 'arrays',
      count: 0,
      time: undefined,
      names: [],
      columns: [],
      emitMeta,
      meta,
      copyMeta,
      metaField,
      timeField,
    };
  }
  const timeColumn = getOwnField(data, timeField);
  if (timeColumn === undefined) throw missingTime(bucket);
  const names: string[] = [];
  if (version === 1) {
    if (!isPlainObject(timeColumn))
      throw badBucket(bucket, `bucket column 'data.${timeField}' must be an object`);
    const columns: Array<Readonly<Record<string, unknown>>> = [];
    for (const name of fieldNames) {
      if (name === timeField || !isFieldSelected(spec.selection, name)) continue;
      const column = data[name];
      if (!isPlainObject(column)) throw badBucket(bucket, `bucket column 'data.${name}' must be an object`);
      names.push(name);
      columns.push(column);
    }
    const rowKeys = Object.keys(timeColumn);
    return {
      layout: 'rows',
      count: rowKeys.length,
      rowKeys,
      time: emitTime ? timeColumn : undefined,
      names,
      columns,
      emitMeta,
      meta,
      copyMeta,
      metaField,
      timeField,
    };
  }
  const decoder = spec.columnDecoder;
  const time = decodeColumn(bucket, timeField, timeColumn, decoder);
  const declared = bsonNumberValue(getOwnField(bucket.control as object, 'count'));
  const count = declared ?? time.length;
  if (time.length < count)
    throw badBucket(bucket, `time column has ${time.length} entries, control.count is ${count}`);
  const columns: Array<ReadonlyArray<unknown>> = [];
  for (const name of fieldNames) {
    if (name === timeField || !isFieldSelected(spec.selection, name)) continue;
    names.push(name);
    columns.push(decodeColumn(bucket, name, data[name], decoder));
  }
  return {
    layout: 'arrays',
    count,
    time: emitTime ? time : undefined,
    names,
    columns,
    emitMeta,
    meta,
    copyMeta,
    metaField,
    timeField,
  };
}

/**
 * Build measurement `row` of an opened bucket.
 *
 * @param opened - from {@link openBucket}.
 * @param row - 0-based row index, `< opened.count`.
 * @returns a fresh document: time field, metaField, then the other selected columns present in the row.
 */
export function unpackRow(opened: OpenedBucket, row: number): MeasurementDocument {
  const out: MeasurementDocument = {};
  // The two layouts get separate loops so that the per-column test is one property lookup.
  if (opened.layout === 'rows') {
    const key = opened.rowKeys[row] as string;
    // A version-1 bucket's cells are the stored values themselves: the caller gets copies, so changing a
    // result (a Date's setHours, a nested document) cannot change storage.
    if (opened.time !== undefined) defineField(out, opened.timeField, ownValue(opened.time[key]));
    if (opened.emitMeta) defineField(out, opened.metaField, opened.copyMeta());
    const { names, columns } = opened;
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c] as Readonly<Record<string, unknown>>;
      if (Object.prototype.hasOwnProperty.call(column, key))
        defineField(out, names[c] as string, ownValue(column[key]));
    }
    return out;
  }
  // Decoded columns are fresh for each opening and each value appears in one row; the meta is shared by
  // every row and is the stored one.
  if (opened.time !== undefined) defineField(out, opened.timeField, opened.time[row]);
  if (opened.emitMeta) defineField(out, opened.metaField, opened.copyMeta());
  const { names, columns } = opened;
  for (let c = 0; c < columns.length; c++) {
    const value = (columns[c] as ReadonlyArray<unknown>)[row];
    if (value !== undefined) defineField(out, names[c] as string, value);
  }
  return out;
}

/**
 * How to copy a bucket's meta for each row, chosen once per bucket: a scalar is shared, a document of
 * scalars (the usual meta) is spread, anything else is copied deeply.
 */
function metaCopier(meta: unknown): () => unknown {
  if (typeof meta !== 'object' || meta === null) return () => meta;
  if (isPlainObject(meta)) {
    let flat = true;
    for (const key in meta) {
      const value = meta[key];
      if (typeof value === 'object' && value !== null) flat = false;
    }
    if (flat) return () => ({ ...meta });
  }
  return () => cloneBsonValue(meta);
}
