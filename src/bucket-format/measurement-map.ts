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
import { BSONColumnBuilder } from './bson-column/bsoncolumn-builder.js';
import { hasOwnField } from '../util/safe-record.js';
import type { Measurement } from './bucket-document.js';
import type { DiffSink } from './bson-column/bsoncolumn-builder.js';
import type { ColumnDiff, ColumnTails } from './column-tails.js';

/** The per-field columns of one open compressed bucket. */
export class MeasurementMap {
  /** Column index by field name. */
  readonly #columns = new Map<string, number>();
  /**
   * Per column, in column order: its name, its incremental encoder, and the index of the last measurement
   * that had the field (-1: none since the column was made). Parallel arrays rather than an object per
   * column: a bulk load touches thousands of buckets between two measurements of one, and the arrays are
   * a few contiguous cache lines. A measurement whose fields come in the order of the columns (the usual
   * case: an ingester builds every document alike) finds each column by position, without a map lookup.
   */
  readonly #names: string[] = [];
  readonly #builders: BSONColumnBuilder[] = [];
  readonly #lastSeen: number[] = [];
  /** Columns from this index on are not in the stored document yet (made since the last diffs). */
  #firstCreated = 0;
  readonly #timeField: string;
  #count = 0;
  #compressedSize = 0;
  /** Time of the last measurement appended, epoch ms (`NaN` when empty). */
  #lastTimeMs = Number.NaN;

  /**
   * An empty map whose first column is the time field.
   *
   * @param timeField - the collection's time field (its column comes first in the document).
   */
  constructor(timeField: string) {
    this.#timeField = timeField;
  }

  /**
   * The map of a stored compressed bucket, ready to append (`initBuilders`): each column's encoder
   * resumes from its binary (`BSONColumnBuilder.fromBinary` decodes only the column's open tail).
   *
   * @param timeField - the time field.
   * @param data - the stored `data` object: field → BinData subtype 7.
   * @param count - the measurements in the bucket (`control.count`).
   * @param lastTimeMs - the time of the last stored measurement (for a sorted bucket, `control.max`'s).
   * @returns the map, as if every stored entry had been appended and reported.
   * @throws TimeseriesError when a column is not a valid BSONColumn.
   */
  static fromBinaries(
    timeField: string,
    data: Readonly<Record<string, unknown>>,
    count: number,
    lastTimeMs: number,
  ): MeasurementMap {
    const map = new MeasurementMap(timeField);
    for (const field of Object.keys(data)) {
      const column = data[field] as { _bsontype?: unknown; sub_type?: unknown } | undefined;
      if (column?._bsontype !== 'Binary' || column.sub_type !== kColumnSubtype) {
        throw new TypeError(`data.${field} is not a BSONColumn`);
      }
      const { buffer, position } = column as unknown as { buffer: Uint8Array; position: number };
      const bytes = buffer.subarray(0, position);
      map.#add(field, BSONColumnBuilder.fromBinary(bytes), count - 1);
      map.#compressedSize += bytes.length;
    }
    map.#firstCreated = map.#names.length;
    map.#count = count;
    map.#lastTimeMs = lastTimeMs;
    return map;
  }

  /** Measurements in the map. */
  get count(): number {
    return this.#count;
  }

  /** Total bytes of the columns as of the last {@link MeasurementMap.intermediate}. */
  get compressedSize(): number {
    return this.#compressedSize;
  }

  /**
   * The time of the last measurement appended (`timeOfLastMeasurement`), epoch ms; `NaN` when empty.
   *
   * @returns the time.
   */
  timeOfLastMeasurement(): number {
    return this.#lastTimeMs;
  }

  /**
   * Append one measurement (`insertOne`): a field seen for the first time gets a column of skips for the
   * measurements before it; every column the measurement lacks gets a skip.
   *
   * @param measurement - the measurement; its time field holds a `Date`.
   * @param metaField - not stored in `data`.
   */
  insertOne(measurement: Measurement, metaField: string | undefined): void {
    const index = this.#count;
    if (index === 0 && !this.#columns.has(this.#timeField)) {
      this.#add(this.#timeField, new BSONColumnBuilder(), -1);
    }
    const names = this.#names;
    const builders = this.#builders;
    const lastSeen = this.#lastSeen;
    // Where the next field is expected if the measurement follows the column order (the time column comes
    // first in the bucket, wherever it is in the measurement, so order is checked among the others).
    let guess = 0;
    // for-in with an own-property check: no array of names per measurement.
    for (const field in measurement) {
      if (!hasOwnField(measurement, field) || field === metaField) continue;
      const value = measurement[field];
      if (value === undefined) continue;
      let at = names[guess] === field ? guess++ : -1;
      if (at < 0) {
        const found = this.#columns.get(field);
        if (found === undefined) {
          const builder = new BSONColumnBuilder();
          for (let i = 0; i < index; i++) builder.skip();
          at = names.length;
          this.#add(field, builder, -1);
        } else at = found;
      }
      // The builder encodes the value now: the caller may reuse its objects afterwards.
      (builders[at] as BSONColumnBuilder).append(value);
      lastSeen[at] = index;
    }
    this.#count = index + 1;
    for (let i = 0; i < lastSeen.length; i++) {
      if (lastSeen[i] !== index) {
        (builders[i] as BSONColumnBuilder).skip();
        lastSeen[i] = index;
      }
    }
    this.#lastTimeMs = (measurement[this.#timeField] as Date).getTime();
  }

  #add(field: string, builder: BSONColumnBuilder, lastSeen: number): void {
    this.#columns.set(field, this.#names.length);
    this.#names.push(field);
    this.#builders.push(builder);
    this.#lastSeen.push(lastSeen);
  }

  /**
   * What changed in each column since the last call, in column order, and the change of the total size.
   *
   * @returns the diffs (every column changes: each measurement appends to each) and `delta`, new total
   *   minus old total.
   */
  intermediate(): { readonly diffs: ReadonlyArray<ColumnDiff>; readonly delta: number } {
    const n = this.#names.length;
    // Every column's tail into one scratch array, then one copy of it that the diffs view: a first commit's
    // document keeps one buffer rather than one per column (an open bucket each, 100 000 of them in a
    // large ingest, each an ArrayBuffer the garbage collector tracks).
    const sink = scratchSink;
    sink.length = 0;
    const offsets: number[] = [];
    const ends: number[] = [];
    for (let i = 0; i < n; i++) {
      offsets.push((this.#builders[i] as BSONColumnBuilder).intermediateInto(sink));
      ends.push(sink.length);
    }
    const all = sink.buf.slice(0, sink.length);
    const diffs: ColumnDiff[] = [];
    let total = 0;
    let start = 0;
    for (let i = 0; i < n; i++) {
      const offset = offsets[i] as number;
      const end = ends[i] as number;
      total += offset + end - start;
      const bytes = all.subarray(start, end);
      diffs.push({ field: this.#names[i] as string, offset, bytes, created: i >= this.#firstCreated });
      start = end;
    }
    this.#firstCreated = n;
    const delta = total - this.#compressedSize;
    this.#compressedSize = total;
    return { diffs, delta };
  }

  /**
   * What changed in each column since the last call, packed (a later commit's form): the same diffs as
   * {@link MeasurementMap.intermediate}, their bytes copied into one array. {@link MeasurementMap.compressedSize}
   * is the new total afterwards.
   *
   * @returns the tails; `fields` is the map's own list of names (it only grows).
   */
  intermediateTails(): ColumnTails {
    const builders = this.#builders;
    const n = builders.length;
    // A fresh slab when this one is nearly full, rather than growing it by a copy in the middle of a commit.
    if (byteSink.length > kByteSlabSize - kByteSlabReserve) {
      byteSink.buf = new Uint8Array(kByteSlabSize);
      byteSink.length = 0;
    }
    if (layoutSlabUsed + 2 * n > layoutSlab.length) {
      layoutSlab = new Int32Array(Math.max(kLayoutSlabSize, 2 * n));
      layoutSlabUsed = 0;
    }
    const bytesStart = byteSink.length;
    const layout = layoutSlab;
    const layoutStart = layoutSlabUsed;
    let size = 0;
    let end = bytesStart;
    for (let i = 0; i < n; i++) {
      // Each builder appends its tail to the slab itself: no diff object, no second copy.
      const offset = (builders[i] as BSONColumnBuilder).intermediateInto(byteSink);
      size += offset + byteSink.length - end;
      end = byteSink.length;
      layout[layoutStart + 2 * i] = offset;
      layout[layoutStart + 2 * i + 1] = end;
    }
    // Columns are only appended, so the ones created since the last call are the last ones.
    const firstCreated = this.#firstCreated;
    this.#firstCreated = n;
    layoutSlabUsed += 2 * n;
    this.#compressedSize = size;
    // The slab as it is now: a tail that made it grow moved the commit's earlier tails along.
    const bytes = byteSink.buf;
    return { fields: this.#names, count: n, firstCreated, layout, layoutStart, bytes, bytesStart };
  }
}

/**
 * The slabs commits' tails are cut from, as Node's pooled `Buffer`s are: an array or two per commit made
 * garbage collection a large part of a one-measurement commit. The builders append their tails to the
 * byte slab ({@link BSONColumnBuilder.intermediateInto}). A slab's part is never written again once cut:
 * a full slab is replaced, not reused, and one grown in the middle of a commit is a copy (the previous
 * array stays as it was), so tails never change; a commit only keeps its slabs alive until the storage
 * has copied the tails.
 */
/** Where {@link MeasurementMap.intermediate} collects the tails before copying them out (reused). */
const scratchSink: DiffSink = { buf: new Uint8Array(4096), length: 0 };

const kByteSlabSize = 64 * 1024;
/** Room a commit usually needs: with less left, the next commit starts a new slab. */
const kByteSlabReserve = 8 * 1024;
const kLayoutSlabSize = 8 * 1024;
const byteSink: DiffSink = { buf: new Uint8Array(kByteSlabSize), length: 0 };
let layoutSlab = new Int32Array(kLayoutSlabSize);
let layoutSlabUsed = 0;

/** BinData subtype 7: a BSONColumn. */
const kColumnSubtype = 7;
