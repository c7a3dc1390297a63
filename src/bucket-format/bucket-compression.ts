/**
 * Compression of time-series buckets: version 1 (one object per field, keyed by row index) to version 2
 * (one BSONColumn per field, rows sorted by time), and back (docs/bsoncolumn.md §5, docs/mongodb-behaviour.md §1.3;
 * the server's `bucket_compression.cpp`).
 *
 * @packageDocumentation
 */
import { Binary, serialize } from 'bson';

import { TimeseriesError } from '../errors.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { BSONColumn } from './bson-column/bson-column.js';
import {
  bsonElementSize,
  bsonValueSize,
  indexNameLength,
  indexNamesLength,
  isPlainObject,
  utf8ByteLength,
} from '../util/bson-value.js';
import { isBsonValue } from '../util/bson-type.js';

/** Result of {@link compressBucket}. */
export type CompressBucketResult =
  | {
      /** The bucket was compressed. */
      readonly kind: 'compressed';
      /** The version-2 bucket document. */
      readonly doc: Record<string, unknown>;
      /** BSON size of the version-1 document. */
      readonly bytesBefore: number;
      /** BSON size of `doc`. */
      readonly bytesAfter: number;
    }
  | {
      /** Compression worked but did not make the bucket smaller; keep version 1. */
      readonly kind: 'notSmaller';
      /** BSON size of the version-1 document. */
      readonly bytesBefore: number;
      /** BSON size the version-2 document would have. */
      readonly bytesAfter: number;
    }
  | {
      /** The bucket cannot be compressed (malformed columns, a time that is not a Date...); keep version 1. */
      readonly kind: 'failed';
      /** Why. */
      readonly error: TimeseriesError;
    };

/** Options of {@link compressBucket}. */
export interface CompressBucketOptions {
  /**
   * Decode every column after encoding and compare it with the input, as the server does before it
   * replaces a bucket; a mismatch gives `failed`.
   *
   * @defaultValue `true`
   */
  readonly validate?: boolean;
  /**
   * What to do when the compressed document is not smaller: keep version 1 (`notSmaller`, the 5.x–7.x
   * close-time rule) or compress anyway (8.0: a reopened version-1 bucket is always compressed).
   *
   * @defaultValue `'keepUncompressed'`
   */
  readonly whenNotSmaller?: 'keepUncompressed' | 'compress';
  /**
   * `'sorted'`: rows sorted by time, the time column first (version 2, as the server compresses a
   * version-1 bucket); `'stored'`: rows and columns in their stored order, version 3 when the rows are
   * not in time order (the document an 8.0 bucket appended in that order is: `MongoStorage` compresses
   * so a bucket it kept as version 1 while open).
   *
   * @defaultValue `'sorted'`
   */
  readonly order?: 'sorted' | 'stored';
}

function fail(message: string, cause?: unknown): CompressBucketResult {
  return {
    kind: 'failed',
    error: new TimeseriesError(
      'TimeseriesBucketCompressionFailed',
      `Failed to compress bucket: ${message}`,
      cause === undefined ? {} : { cause },
    ),
  };
}

/**
 * BSON size of a bucket document whose `data` object's size is known (counted while its cells were
 * read or built): the other top-level fields are sized here.
 */
function sizeWithDataOf(doc: Readonly<Record<string, unknown>>, dataSize: number): number {
  let size = 5; // the document's length and EOO
  for (const key of Object.keys(doc))
    size += key === 'data' ? 2 + 4 + dataSize : bsonElementSize(key, doc[key]);
  return size;
}

/**
 * BSON size of the element `field: {"0": v0, "1": v1, ...}` of a version-1 `data`, given the bytes of its
 * cells (each: type byte, key, NUL, value).
 */
function columnElementSize(field: string, cellBytes: number): number {
  return 2 + utf8ByteLength(field) + 5 + cellBytes;
}

function columnBinary(values: ReadonlyArray<unknown>): Binary {
  return new Binary(BSONColumn.encode(values), Binary.SUBTYPE_COLUMN);
}

function sameBson(a: unknown, b: unknown): boolean {
  // Fast paths for the values that make up most columns: JS numbers (same BSON type iff same number,
  // -0 included), strings, booleans, null and dates serialize identically exactly when these hold.
  const type = typeof a;
  if (type === typeof b && (type === 'number' || type === 'string' || type === 'boolean'))
    return Object.is(a, b);
  if (a === null || b === null) return a === b;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  // Otherwise compare through BSON bytes: that is what "equal" means for stored values.
  const x = serialize({ v: a });
  const y = serialize({ v: b });
  return x.length === y.length && x.every((byte, i) => byte === y[i]);
}

/**
 * Compress a version-1 bucket document into version 2 (or 3, see {@link CompressBucketOptions.order}).
 *
 * The rows are sorted by time (a stable sort: rows with equal times keep their order). The result has
 * `_id`, then `control` with `version` replaced in place by 2 and `count` (an int32, a JS number)
 * appended last, then the other top-level fields (`meta`) unchanged, then `data` with the time column
 * first and the other columns in their original order, each a `Binary` of subtype 7 with exactly
 * `count` entries (a row without the field is a missing entry).
 *
 * @param doc - a version-1 bucket: `{ _id, control: { version: 1, min, max, ... }, meta?, data: { <field>: { "0": v, ... } } }`.
 * @param timeField - the collection's time field.
 * @param options - validation.
 * @returns `compressed` with the new document and sizes, `notSmaller` when version 2 would not be
 *   smaller, or `failed` when the bucket cannot be compressed.
 * @example
 * ```ts
 * const r = compressBucket(bucket, 'time');
 * if (r.kind === 'compressed') await buckets.replaceOne({ _id: bucket._id }, r.doc);
 * ```
 */
export function compressBucket(
  doc: Readonly<Record<string, unknown>>,
  timeField: string,
  options: CompressBucketOptions = {},
): CompressBucketResult {
  const control = getOwnField(doc, 'control');
  const data = getOwnField(doc, 'data');
  if (!isPlainObject(control)) return fail('control is not an object');
  if (Number(getOwnField(control, 'version')) !== 1) return fail('control.version is not 1');
  if (!isPlainObject(data)) return fail('data is not an object');
  const timeColumn = getOwnField(data, timeField);
  if (!isPlainObject(timeColumn)) return fail(`data.${timeField} is not an object`);

  // The time column defines the rows: exactly the keys "0".."n-1", every value a Date. Rows are read by
  // numeric index (a plain object's integer keys are its elements) and keys are counted with
  // Object.values, so no key string is built per cell (Object.keys was the costliest line here); n own
  // indices among n keys prove there is no other key ("01", "x").
  const timeValues = Object.values(timeColumn);
  const n = timeValues.length;
  const times: number[] = new Array<number>(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    if (!hasOwnField(timeColumn, i)) return fail(`data.${timeField} has unordered or missing row keys`);
    const t = timeColumn[i];
    if (!(t instanceof Date)) return fail(`data.${timeField}.${i} is not a Date`);
    times[i] = t.getTime();
    if (i > 0 && (times[i] as number) < (times[i - 1] as number)) sorted = false;
  }
  // The names "0".."n-1" of a full column, counted once per bucket instead of once per cell.
  const rowNamesBytes = indexNamesLength(n);
  // Buckets filled in time order (the usual case) skip the sort and the permutation of every column.
  const keepOrder = options.order === 'stored';
  const order =
    sorted || keepOrder
      ? undefined
      : Array.from({ length: n }, (_, i) => i).sort((a, b) => (times[a] ?? 0) - (times[b] ?? 0));
  const permute = (byRow: unknown[]): unknown[] =>
    order === undefined ? byRow : order.map((row) => byRow[row]);

  // Other columns, aligned by row index; the version-1 size of `data` is summed on the way (the same walk
  // as sizing the document afterwards would make).
  const columns: Array<[string, unknown[]]> = [];
  let dataSize = 5 + columnElementSize(timeField, 10 * n + rowNamesBytes);
  for (const field of Object.keys(data)) {
    if (field === timeField) {
      // In stored order the time column keeps its place (its values are put in below).
      if (keepOrder) columns.push([field, timeValues]);
      continue;
    }
    const column = data[field];
    if (!isPlainObject(column)) return fail(`data.${field} is not an object`);
    // Every own value: the cells in row order, then the values of any other key.
    const values = Object.values(column);
    let full = values.length === n;
    for (let row = 0; full && row < n; row++) full = hasOwnField(column, row);
    let byRow: unknown[];
    let valueBytes = 0;
    if (full) {
      // Every row has the field and there is no other key: the values are the cells, in row order.
      byRow = values;
      valueBytes = 2 * n + rowNamesBytes;
      for (let row = 0; row < n; row++) {
        const v = byRow[row];
        // A stored undefined is written as null by BSON; keep it a value, not a missing entry. (Sized
        // as the document was: an undefined field is not counted.)
        if (v === undefined) {
          byRow[row] = null;
          valueBytes -= 2 + indexNameLength(row);
        } else valueBytes += bsonValueSize(v);
      }
    } else {
      byRow = new Array<unknown>(n).fill(undefined);
      let cells = 0;
      for (let row = 0; row < n; row++) {
        if (!hasOwnField(column, row)) continue;
        const v = column[row];
        byRow[row] = v === undefined ? null : v;
        if (v !== undefined) valueBytes += 2 + indexNameLength(row) + bsonValueSize(v);
        cells++;
      }
      if (cells !== values.length)
        return fail(`data.${field} has unordered keys or more entries than the time column`);
    }
    dataSize += columnElementSize(field, valueBytes);
    columns.push([field, permute(byRow)]);
  }

  const sortedTimes = permute(timeValues);
  let newData: Record<string, unknown>;
  try {
    newData = {};
    if (!keepOrder) defineField(newData, timeField, columnBinary(sortedTimes));
    for (const [field, values] of columns) defineField(newData, field, columnBinary(values));
    if (options.validate ?? true) {
      const check = (field: string, values: ReadonlyArray<unknown>): void => {
        const binary = newData[field] as Binary;
        const decoded = BSONColumn.decode(binary.buffer.subarray(0, binary.position), { maxCount: n });
        if (
          decoded.length !== n ||
          !decoded.every(
            (v, i) =>
              sameBson(v ?? null, values[i] ?? null) && (v === undefined) === (values[i] === undefined),
          )
        ) {
          throw new TimeseriesError(
            'TimeseriesBucketCompressionFailed',
            `column ${field} does not round-trip`,
          );
        }
      };
      if (!keepOrder) check(timeField, sortedTimes);
      for (const [field, values] of columns) check(field, values);
    }
  } catch (cause) {
    return fail(cause instanceof Error ? cause.message : 'encoding error', cause);
  }

  const newControl = {};
  const version = keepOrder && !sorted ? 3 : 2;
  for (const key of Object.keys(control))
    defineField(newControl, key, key === 'version' ? version : control[key]);
  defineField(newControl, 'count', n);

  const out = {};
  if (hasOwnField(doc, '_id')) defineField(out, '_id', doc['_id']);
  defineField(out, 'control', newControl);
  for (const key of Object.keys(doc)) {
    if (key !== '_id' && key !== 'control' && key !== 'data') defineField(out, key, doc[key]);
  }
  defineField(out, 'data', newData);

  const bytesBefore = sizeWithDataOf(doc, dataSize);
  const bytesAfter = bsonValueSize(out);
  if (bytesAfter >= bytesBefore && options.whenNotSmaller !== 'compress')
    return { kind: 'notSmaller', bytesBefore, bytesAfter };
  return { kind: 'compressed', doc: out, bytesBefore, bytesAfter };
}

/**
 * The version-1 equivalent of a bucket: for version 2 or 3, every `data` column decoded into an object
 * keyed by row index ("0", "1", ...; missing entries have no key), `control.version` set to 1 in place
 * and `control.count` removed. A version-1 bucket is returned unchanged.
 *
 * Rows keep their stored order (sorted by time for version 2, arbitrary for version 3).
 *
 * @param doc - a bucket document.
 * @returns a version-1 bucket document.
 * @throws TimeseriesError (`InvalidTimeseriesBucket`) when the document is not a bucket, or (`BadValue`)
 *   when a column is malformed.
 */
export function decompressBucket(doc: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return decompressBucketSized(doc)?.doc ?? doc;
}

/**
 * {@link decompressBucket} for a compressed bucket, with the version-1 document's BSON size counted while
 * it is built (reopening needs the size; measuring the built document again would visit every cell
 * twice).
 *
 * @param doc - a bucket document.
 * @returns the version-1 document and its BSON size, or `undefined` for a version-1 bucket.
 * @throws what {@link decompressBucket} throws.
 */
export function decompressBucketSized(
  doc: Readonly<Record<string, unknown>>,
): { readonly doc: Record<string, unknown>; readonly size: number } | undefined {
  const control = getOwnField(doc, 'control');
  const data = getOwnField(doc, 'data');
  if (!isPlainObject(control) || !isPlainObject(data)) {
    throw new TimeseriesError('InvalidTimeseriesBucket', 'bucket document without control or data object');
  }
  const version = Number(getOwnField(control, 'version'));
  if (version === 1) return undefined;
  if (version !== 2 && version !== 3) {
    throw new TimeseriesError('InvalidTimeseriesBucket', `unsupported bucket version ${String(version)}`);
  }
  const countValue = getOwnField(control, 'count');
  const count = countValue === undefined ? Infinity : Number(countValue);
  const newData = {};
  let dataSize = 5;
  for (const field of Object.keys(data)) {
    const column = data[field];
    if (!isBsonValue(column, 'Binary') || column.sub_type !== Binary.SUBTYPE_COLUMN) {
      throw new TimeseriesError('InvalidTimeseriesBucket', `data.${field} is not a BSONColumn binary`, {
        field,
      });
    }
    const values = BSONColumn.decode(column.buffer.subarray(0, column.position), { maxCount: count });
    const rows: Record<number, unknown> = {};
    let cellBytes = 0;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v === undefined) continue;
      // A row index is never `__proto__`: a plain numeric store is safe, and keeps the cells as elements.
      rows[i] = v;
      cellBytes += 2 + indexNameLength(i) + bsonValueSize(v);
    }
    defineField(newData, field, rows);
    dataSize += columnElementSize(field, cellBytes);
  }
  const newControl = {};
  for (const key of Object.keys(control)) {
    if (key !== 'count') defineField(newControl, key, key === 'version' ? 1 : control[key]);
  }
  const out = {};
  for (const key of Object.keys(doc)) {
    defineField(out, key, key === 'control' ? newControl : key === 'data' ? newData : doc[key]);
  }
  return { doc: out, size: sizeWithDataOf(out, dataSize) };
}
