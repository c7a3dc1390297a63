/**
 * The columns of an open compressed bucket (the server's `bucket_catalog/measurement_map.h`): one
 * BSONColumn per field, each holding exactly one entry per measurement of the bucket (a measurement
 * without the field is a skip), and what changed in each column since the last commit.
 *
 * Ownership: the catalog keeps one map per open compressed bucket; the stored document is what the
 * successive {@link MeasurementMap.intermediate} diffs built. Only the writer holding the bucket's
 * prepared slot appends to it (one prepared batch per bucket), so it needs no lock of its own.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';

import { BSONColumn } from './bson-column/bson-column.js';
import { ownValue } from '../util/bson-value.js';
import { hasOwnField } from '../util/safe-record.js';
import type { Measurement } from './bucket-document.js';

/** What one column gained since the previous {@link MeasurementMap.intermediate}. */
export interface ColumnDiff {
  /** The field name. */
  readonly field: string;
  /**
   * Byte offset in the column's previous binary where `bytes` go: the stored column is cut at `offset`
   * and `bytes` appended (0 for a column new to the stored document).
   */
  readonly offset: number;
  /** The bytes from `offset` to the column's new end. */
  readonly bytes: Uint8Array;
  /** Whether the column is new to the stored document. */
  readonly created: boolean;
}

/**
 * One column's encoder: appends values and reports the tail bytes that changed since the last report.
 * It re-encodes the column's values and compares the result with the previous binary, so a commit costs
 * in proportion to the column (see #14 for the incremental builder that replaces it).
 */
class ColumnEncoder {
  readonly #values: unknown[];
  #binary: Uint8Array;

  constructor(values: unknown[], binary: Uint8Array) {
    this.#values = values;
    this.#binary = binary;
  }

  /** Entries in the column. */
  get count(): number {
    return this.#values.length;
  }

  /** Bytes of the column after the last report. */
  get size(): number {
    return this.#binary.length;
  }

  /** The last entry appended (`undefined` for a skip or an empty column). */
  last(): unknown {
    return this.#values[this.#values.length - 1];
  }

  append(value: unknown): void {
    // The caller may reuse its objects after the insert returns: keep copies of dates and documents.
    this.#values.push(value === undefined ? undefined : ownValue(value));
  }

  /** The bytes that changed since the last call: where the previous binary first differs, and the rest. */
  intermediate(): { readonly offset: number; readonly bytes: Uint8Array } {
    const next = BSONColumn.encode(this.#values);
    const previous = this.#binary;
    const n = Math.min(previous.length, next.length);
    let offset = 0;
    while (offset < n && previous[offset] === next[offset]) offset++;
    this.#binary = next;
    return { offset, bytes: next.subarray(offset) };
  }

  /** The column's binary as of the last report. */
  binary(): Uint8Array {
    return this.#binary;
  }
}

/** The per-field columns of one open compressed bucket. */
export class MeasurementMap {
  readonly #columns = new Map<string, ColumnEncoder>();
  /** Columns not yet reported by {@link intermediate} (new to the stored document). */
  readonly #created = new Set<string>();
  readonly #timeField: string;
  #count = 0;
  #compressedSize = 0;

  /**
   * An empty map whose first column is the time field.
   *
   * @param timeField - the collection's time field (its column comes first in the document).
   */
  constructor(timeField: string) {
    this.#timeField = timeField;
  }

  /**
   * The map of a stored compressed bucket, ready to append (`initBuilders`).
   *
   * @param timeField - the time field.
   * @param data - the stored `data` object: field → BinData subtype 7.
   * @returns the map, as if every stored entry had been appended and reported.
   * @throws TimeseriesError when a column is not a valid BSONColumn, or columns differ in length.
   */
  static fromBinaries(timeField: string, data: Readonly<Record<string, unknown>>): MeasurementMap {
    const map = new MeasurementMap(timeField);
    let count = -1;
    for (const field of Object.keys(data)) {
      const column = data[field];
      if (!isColumnBinary(column)) throw new TypeError(`data.${field} is not a BSONColumn`);
      const bytes = Uint8Array.from(column.buffer.subarray(0, column.position));
      const values = BSONColumn.decode(bytes);
      if (count >= 0 && values.length !== count) throw new TypeError('columns of different lengths');
      count = values.length;
      map.#columns.set(field, new ColumnEncoder(values, bytes));
      map.#compressedSize += bytes.length;
    }
    map.#count = Math.max(count, 0);
    return map;
  }

  /** Measurements in the map. */
  get count(): number {
    return this.#count;
  }

  /** Total bytes of the columns as of the last {@link intermediate}. */
  get compressedSize(): number {
    return this.#compressedSize;
  }

  /**
   * The time of the last measurement appended (`timeOfLastMeasurement`), epoch ms, or `undefined` when
   * the map is empty.
   */
  timeOfLastMeasurement(): number | undefined {
    const last = this.#columns.get(this.#timeField)?.last();
    return last instanceof Date ? last.getTime() : undefined;
  }

  /**
   * Append one measurement (`insertOne`): a field seen for the first time gets a column of skips for the
   * measurements before it; every column the measurement lacks gets a skip.
   *
   * @param measurement - the measurement.
   * @param metaField - not stored in `data`.
   */
  insertOne(measurement: Measurement, metaField: string | undefined): void {
    if (this.#count === 0 && !this.#columns.has(this.#timeField)) {
      this.#columns.set(this.#timeField, new ColumnEncoder([], kEmpty));
      this.#created.add(this.#timeField);
    }
    // for-in with an own-property check: no array of names per measurement.
    for (const field in measurement) {
      if (!hasOwnField(measurement, field) || field === metaField) continue;
      const value = measurement[field];
      if (value === undefined) continue;
      let column = this.#columns.get(field);
      if (column === undefined) {
        column = new ColumnEncoder(new Array<unknown>(this.#count).fill(undefined), kEmpty);
        this.#columns.set(field, column);
        this.#created.add(field);
      }
      column.append(value);
    }
    this.#count++;
    for (const column of this.#columns.values()) if (column.count < this.#count) column.append(undefined);
  }

  /**
   * What changed in each column since the last call, in column order, and the change of the total size.
   *
   * @returns the diffs (columns without change are left out) and `delta`, new total minus old total.
   */
  intermediate(): { readonly diffs: ReadonlyArray<ColumnDiff>; readonly delta: number } {
    const diffs: ColumnDiff[] = [];
    let total = 0;
    for (const [field, column] of this.#columns) {
      const before = column.size;
      const created = this.#created.has(field);
      const { offset, bytes } = column.intermediate();
      total += column.size;
      if (created || offset !== before || bytes.length > 0) diffs.push({ field, offset, bytes, created });
    }
    this.#created.clear();
    const delta = total - this.#compressedSize;
    this.#compressedSize = total;
    return { diffs, delta };
  }

  /**
   * The `data` object of the bucket as of the last {@link intermediate}: one BinData subtype 7 per
   * column, in column order (time first).
   *
   * @returns a fresh object with fresh binaries.
   */
  dataDocument(): Record<string, Binary> {
    const data: Record<string, Binary> = {};
    for (const [field, column] of this.#columns) {
      Object.defineProperty(data, field, {
        value: new Binary(Uint8Array.from(column.binary()), Binary.SUBTYPE_COLUMN),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return data;
  }
}

const kEmpty = new Uint8Array(0);

function isColumnBinary(value: unknown): value is Binary {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { _bsontype?: unknown })._bsontype === 'Binary' &&
    (value as Binary).sub_type === Binary.SUBTYPE_COLUMN
  );
}
