/**
 * The columns of an open compressed bucket (the server's `bucket_catalog/measurement_map.h`): one
 * BSONColumn per field, each holding exactly one entry per measurement of the bucket (a measurement
 * without the field is a skip), and what changed in each column since the last commit.
 *
 * Ownership: the catalog keeps one map per open compressed bucket; the stored document is what the
 * successive {@link MeasurementMap.intermediate} diffs built (over `MemoryStorage`, the tails the storage
 * took, see {@link MeasurementMap}). Only the writer holding the bucket's prepared slot appends to it (one
 * prepared batch per bucket), so it needs no lock of its own.
 *
 * @packageDocumentation
 */
import { BSONColumnBuilder } from './bson-column/bsoncolumn-builder.js';
import { kDateKind } from '../util/bson-validation.js';
import { hasOwnField } from '../util/safe-record.js';
import type { Measurement } from './bucket-document.js';
import type { DiffSink } from './bson-column/bsoncolumn-builder.js';
import type { ColumnDiff, ColumnPreview, ColumnTails, DeferredColumns } from './column-tails.js';
import { invariant } from '../util/invariant.js';
import { foldSlot, kSlotDate, kSlotNumber, slotsOfRow } from './min-max-slots.js';
import type { MinMaxSlots } from './min-max-slots.js';

/**
 * How many measurements a deferred map keeps before its storage should take their tails (see
 * {@link MeasurementMap.shouldDrain}): enough that encoding them touches each column's encoder once per
 * run rather than once per measurement, few enough that what the bucket keeps stays small next to the
 * encoders. Measured on the bulk-loader benchmark (1 000 series) against 2, 4, 8 and 32: the fastest. 20
 * was 7% faster on that shape in a process of its own, but in the benchmark suite, where that shape runs
 * first, it made the next one (10 measurements per call to each of 100 series, whose runs are of 64)
 * 8-14% slower, also in a build of 16's code with only this constant changed: kept at 16.
 */
export const kDeferredDrainThreshold = 16;

/**
 * The threshold while a catalog holds at most {@link kFewBuckets} buckets: runs four times as long cost
 * each bucket a few kilobytes more while it waits (what a thousand buckets would feel, a few hundred do
 * not), and spread each run's fixed work (the encoders taken out and parked again, the tails cut and
 * spliced) over more values. 10 measurements per call to each of 100 series: about 8% faster than 16
 * (and than 32 or 128), one per call to each of 100 series 14%; 1 000 series were no faster, and held a
 * third more heap per measurement.
 */
export const kFewBucketsDrainThreshold = 64;

/** Up to this many buckets in a catalog, its maps keep runs of {@link kFewBucketsDrainThreshold}. */
export const kFewBuckets = 256;

/**
 * The drain threshold the deferred maps of one catalog share (see {@link kDeferredDrainThreshold}): while
 * `adaptive`, the catalog sets it from how many buckets it holds ({@link drainThresholdFor}). It changes
 * only how long the runs of encoding are, never the bytes.
 */
export interface DrainPolicy {
  /** Kept measurements that make a map ask to be drained. */
  threshold: number;
  /** Whether the catalog sets {@link DrainPolicy.threshold} as it allocates buckets (else it stays). */
  adaptive: boolean;
}

/**
 * The threshold for a catalog holding `buckets` buckets.
 *
 * @param buckets - the catalog's buckets (`numActiveBuckets`).
 * @returns {@link kFewBucketsDrainThreshold} up to {@link kFewBuckets} buckets, else
 *   {@link kDeferredDrainThreshold}.
 */
export function drainThresholdFor(buckets: number): number {
  return buckets <= kFewBuckets ? kFewBucketsDrainThreshold : kDeferredDrainThreshold;
}

/** The policy of a map made without one: the threshold for many buckets, fixed. */
const kFixedDrain: DrainPolicy = Object.freeze({ threshold: kDeferredDrainThreshold, adaptive: false });

/**
 * An upper bound of what one value (or one skip) can add to its column's finalized binary: at most one
 * Simple-8b block and the control byte it may open, or a literal of at most 9 bytes (a double, a date, an
 * int64) and the control byte that follows it. Values with larger literals add their size.
 */
const kValueBound = 10;
/** What a column new to the bucket adds besides its values: its terminating byte, and one to spare. */
const kNewColumnBound = 2;

/**
 * Upper bound of the bytes `value` adds to its column (see {@link kValueBound}); `Infinity` for values
 * whose encoding is not bounded this simply (objects and arrays, encoded interleaved; binaries, regular
 * expressions), which makes the catalog measure the bucket exactly.
 */
function valueBound(value: unknown): number {
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'bigint':
      return kValueBound;
    case 'string':
      // A literal: type, length, at most 3 UTF-8 bytes per UTF-16 unit, the terminating zero.
      return Math.max(kValueBound, 3 * value.length + 7);
    case 'object': {
      if (value === null || value instanceof Date) return kValueBound;
      switch ((value as { _bsontype?: unknown })._bsontype) {
        case 'Long':
        case 'Int32':
        case 'Double':
        case 'Timestamp':
        case 'MinKey':
        case 'MaxKey':
          return kValueBound;
        case 'ObjectId':
          return 1 + 12 + 1;
        case 'Decimal128':
          return 1 + 16 + 1;
        default:
          return Number.POSITIVE_INFINITY;
      }
    }
    default:
      return Number.POSITIVE_INFINITY;
  }
}

/**
 * The per-field columns of one open compressed bucket.
 *
 * Two ways to run, chosen when the map is made:
 * - **eager** (a storage that receives each commit's bytes, as MongoDB does): each measurement is
 *   encoded when appended, and every commit takes the columns' tails ({@link MeasurementMap.intermediateTails}).
 * - **deferred** (`MemoryStorage`, which holds the bucket's columns itself): appending keeps the
 *   measurement and an upper bound of what it adds; the storage takes the tails when it needs the bytes
 *   ({@link MeasurementMap.takeTails}: a read, or once as many measurements wait as the catalog's
 *   {@link DrainPolicy} says), and the measurements are then encoded one after another while their
 *   bucket's encoders are in the cache.
 *   A bulk load appends one measurement to each of thousands of buckets in turn: encoding at once paid a
 *   cache miss on every column's encoder per measurement. The bytes are the same either way.
 *
 * Only measurements the storage holds are ever encoded in deferred mode (the storage says how many when
 * it takes the tails; the catalog settles only committed ones), so a failed write leaves nothing to undo.
 */
export class MeasurementMap implements DeferredColumns {
  /**
   * Column index by field name, made when a lookup the measurement's field order does not answer finds
   * more than {@link kScannedNames} columns to scan (a map costs about 500 bytes of heap per open bucket).
   */
  #columns: Map<string, number> | undefined;
  /**
   * Per column, in column order: its name, its incremental encoder, and the index of the last measurement
   * that had the field (-1: none since the column was made). Parallel arrays rather than an object per
   * column: a bulk load touches thousands of buckets between two measurements of one, and the arrays are
   * a few contiguous cache lines. A measurement whose fields come in the order of the columns (the usual
   * case: an ingester builds every document alike) finds each column by position, without a map lookup.
   *
   * Deferred, a column is named when a measurement with the field is appended and gets its encoder when
   * that measurement is encoded: the encoders are a prefix of the names.
   */
  // A bucket opened from a row takes the row's names (frozen, shared by the rows of its layout) until it
  // adds a column ({@link MeasurementMap.#addName} copies them first).
  #names: string[] = [];
  // The shared empty arrays until a column gets an encoder ({@link MeasurementMap.#ownBuilders}), and
  // the encoders' again while they are parked: a bucket waiting for its first run (one of many new
  // series) or between runs holds no array of encoders.
  #builders: BSONColumnBuilder[] = kNoBuilders;
  #lastSeen: number[] = kNoEntries;
  /** Columns from this index on are not in the stored document yet (made since the last diffs). */
  #firstCreated = 0;
  /** Names from this index on were not reported by {@link MeasurementMap.takeNewColumns} yet. */
  #namesTaken = 0;
  readonly #timeField: string;
  #metaField: string | undefined;
  /** Measurements appended. */
  #count = 0;
  /** Measurements encoded (all of them when eager). */
  #encoded = 0;
  #compressedSize = 0;
  /** Time of the last measurement appended, epoch ms (`NaN` when empty). */
  #lastTimeMs = Number.NaN;
  readonly #deferred: boolean;
  /**
   * Deferred: the measurements `[#encoded, #count)`, three numbers each in `#kept`: where its packed
   * entries start and end, and its size bound. A measurement whose values are all numbers and dates (the
   * usual case) is kept packed, as (column, value) entries of two arrays (a date's column as its
   * complement, its value as epoch ms); any other is kept as it is, in `#rows` at the same index (made on
   * the first such measurement), with start and end -1. A packed measurement whose entries are in column
   * order (entry `i` is column `i`: the time, a date, then numbers; how an ingester's documents mostly
   * come) records no columns: its end is kept as its complement. Packed, what a bucket keeps lives in
   * arrays reused from one run to the next (small integers and unboxed doubles, on the heap), not in
   * objects that survive the young generation's collections.
   */
  #kept: number[] = [];
  /** Measurements in `#kept` (the array keeps its room from one run to the next: emptying it would not). */
  #keptCount = 0;
  /** {@link MeasurementMap.foldKeptInto}: the slots' names the column-to-slot table was made for. */
  #slotNames: ReadonlyArray<string> | undefined = undefined;
  /** Per column, its slot in `#slotNames` (-1: none); made again when columns are added. */
  #slotOf: number[] | undefined = undefined;
  /**
   * The bounds of the kept measurements summed: the finite ones, and how many have none, so that the
   * catalog's size check (every measurement it stages) reads the bound without a pass over them.
   */
  #keptBound = 0;
  #keptUnbounded = 0;
  #rows: Array<Measurement | undefined> | undefined;
  /** The shared empty array until an entry out of column order is kept ({@link MeasurementMap.#columnsToWrite}). */
  #packedColumns: number[] = kNoEntries;
  #packedValues: number[] = [];
  #packedLength = 0;
  /** Deferred: tails made (the catalog measured the bucket) and not yet taken by the storage. */
  #queued: ColumnTails[] | undefined;
  /**
   * Deferred, between two runs of encoding: the state of the first `#parkedCount` columns' encoders
   * (`BSONColumnBuilder.parkInto`, one after another in `#parked[0, #parkedLength)`) while `#builders` is
   * empty and the encoders themselves are back in the pool. An encoder is seven objects and a buffer
   * (about 900 bytes of heap); parked, a column of numbers is 40 to 50 numbers in one array. The array
   * stays for the next run.
   */
  #parked: number[] | undefined = undefined;
  #parkedCount = 0;
  #parkedLength = 0;
  /** Deferred: closed; only the queued tails are left. */
  #sealed = false;
  readonly #drain: DrainPolicy;

  /**
   * An empty map whose first column is the time field.
   *
   * @param timeField - the collection's time field (its column comes first in the document).
   * @param mode - `'deferred'` for a storage that takes the tails itself (see the class comment).
   * @param drain - deferred, when to ask the storage to take the tails (shared with the catalog's other
   *   maps); by default after {@link kDeferredDrainThreshold} measurements.
   */
  constructor(timeField: string, mode: 'eager' | 'deferred' = 'eager', drain: DrainPolicy = kFixedDrain) {
    this.#timeField = timeField;
    this.#deferred = mode === 'deferred';
    this.#drain = drain;
  }

  /**
   * The map of a stored compressed bucket, ready to append (`initBuilders`): each column's encoder
   * resumes from its binary (`BSONColumnBuilder.fromBinary` decodes only the column's open tail).
   *
   * @param timeField - the time field.
   * @param data - the stored `data` object: field → BinData subtype 7.
   * @param count - the measurements in the bucket (`control.count`).
   * @param lastTimeMs - the time of the last stored measurement (for a sorted bucket, `control.max`'s).
   * @param mode - as for the constructor.
   * @param drain - as for the constructor.
   * @returns the map, as if every stored entry had been appended and reported.
   * @throws TimeseriesError when a column is not a valid BSONColumn.
   */
  static fromBinaries(
    timeField: string,
    data: Readonly<Record<string, unknown>>,
    count: number,
    lastTimeMs: number,
    mode: 'eager' | 'deferred' = 'eager',
    drain: DrainPolicy = kFixedDrain,
  ): MeasurementMap {
    const map = new MeasurementMap(timeField, mode, drain);
    for (const field of Object.keys(data)) {
      const column = data[field] as { _bsontype?: unknown; sub_type?: unknown } | undefined;
      if (column?._bsontype !== 'Binary' || column.sub_type !== kColumnSubtype) {
        throw new TypeError(`data.${field} is not a BSONColumn`);
      }
      const { buffer, position } = column as unknown as { buffer: Uint8Array; position: number };
      const bytes = buffer.subarray(0, position);
      map.#addName(field);
      map.#ownBuilders();
      map.#builders.push(BSONColumnBuilder.fromBinary(bytes));
      map.#lastSeen.push(count - 1);
      map.#compressedSize += bytes.length;
    }
    map.#firstCreated = map.#names.length;
    map.#namesTaken = map.#names.length;
    map.#count = count;
    map.#encoded = count;
    map.#lastTimeMs = lastTimeMs;
    return map;
  }

  /** Measurements in the map. */
  get count(): number {
    return this.#count;
  }

  /**
   * Columns with an encoder (all of them when eager; deferred, those of the measurements encoded), parked
   * or not.
   */
  get encodedColumns(): number {
    return this.#builders.length + this.#parkedCount;
  }

  /**
   * Columns whose encoder is parked (see `#parked`), in an array of {@link MeasurementMap.parkedArrayLength}
   * numbers.
   */
  get parkedColumns(): number {
    return this.#parkedCount;
  }

  /** Length of the array the parked encoders are recorded in (0 when none was). */
  get parkedArrayLength(): number {
    return this.#parked?.length ?? 0;
  }

  /** Measurements kept, not yet encoded (deferred). */
  get keptCount(): number {
    return this.#keptCount;
  }

  /**
   * How many measurements the arrays of the kept measurements have room for once they have held a run of
   * at least {@link kDeferredDrainThreshold} (they keep that room for the bucket's life, reused rather
   * than grown again for every run; {@link MeasurementMap.settle} lets go of more than two runs); 0
   * before.
   */
  get runRoom(): number {
    const room = Math.floor(this.#kept.length / 3);
    return room >= kDeferredDrainThreshold ? room : 0;
  }

  /** Whether the map defers encoding (see the class comment). */
  get deferred(): boolean {
    return this.#deferred;
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
   * measurements before it; every column the measurement lacks gets a skip. Deferred, the measurement is
   * kept (it must not change afterwards) and encoded when the storage or the catalog asks.
   *
   * @param measurement - the measurement; its time field holds a `Date`.
   * @param metaField - not stored in `data`.
   */
  insertOne(measurement: Measurement, metaField: string | undefined): void {
    invariant(!this.#sealed, 2401, 'append to a closed measurement map');
    this.#metaField = metaField;
    this.#lastTimeMs = (measurement[this.#timeField] as Date).getTime();
    if (!this.#deferred) {
      this.#encode(measurement);
      this.#count = this.#encoded;
      return;
    }
    const index = this.#count;
    let bound = this.#rowStartBound();
    let names = this.#names;
    let guess = 0;
    let seen = 0;
    const start = this.#packedLength;
    let end = start;
    let packed = true;
    let values = this.#packedValues;
    // Whether the entries so far are in column order (see #kept): then no column is written for them.
    let inOrder = true;
    for (const field in measurement) {
      if (!hasOwnField(measurement, field) || field === metaField) continue;
      const value = measurement[field];
      if (value === undefined) continue;
      let at = names[guess] === field ? guess++ : this.#placeColumn(field);
      if (at < 0) {
        at = ~at;
        // A new column (in names of the map's own: a shared list was copied to add it).
        names = this.#names;
        // Its skips for the measurements before it.
        bound += kNewColumnBound + kValueBound * index;
      }
      if (packed) {
        if (typeof value === 'number') {
          if (inOrder && (at !== end - start || at === 0)) {
            this.#writeColumns(start, end);
            inOrder = false;
          }
          if (!inOrder) this.#columnsToWrite()[end] = at;
          if (end >= values.length) values = this.#valuesRoom(end + 1);
          values[end++] = value;
          bound += kValueBound;
        } else if (value instanceof Date) {
          if (inOrder && (at !== end - start || at !== 0)) {
            this.#writeColumns(start, end);
            inOrder = false;
          }
          if (!inOrder) this.#columnsToWrite()[end] = ~at;
          if (end >= values.length) values = this.#valuesRoom(end + 1);
          values[end++] = value.getTime();
          bound += kValueBound;
        } else {
          packed = false;
          bound += valueBound(value);
        }
      } else bound += valueBound(value);
      seen++;
    }
    // A skip in every column the measurement lacks.
    bound += kValueBound * (names.length - seen);
    if (packed) {
      this.#packedLength = end;
      this.#keep(start, inOrder ? ~end : end, bound);
    } else {
      const k = this.#keptCount;
      const rows = (this.#rows ??= new Array<Measurement | undefined>(k).fill(undefined));
      rows[k] = measurement;
      this.#keep(-1, -1, bound);
    }
  }

  /** The bound a measurement's entries start from: the first one creates the time column. */
  #rowStartBound(): number {
    if (this.#names.length > 0) return 0;
    this.#addName(this.#timeField);
    return kNewColumnBound;
  }

  /** The column of `field`, found by name, or added (then returned as its complement). */
  #placeColumn(field: string): number {
    const found = this.#columnOf(field);
    return found ?? ~this.#addName(field);
  }

  /**
   * Record the measurement just appended as kept: its packed entries `[start, keptEnd)` (see #kept), or -1
   * and -1 for one kept as it is, and its size bound.
   */
  #keep(start: number, keptEnd: number, bound: number): void {
    const kept = this.#kept;
    const k = this.#keptCount++;
    kept[3 * k] = start;
    kept[3 * k + 1] = keptEnd;
    kept[3 * k + 2] = bound;
    if (bound === Number.POSITIVE_INFINITY) this.#keptUnbounded++;
    else this.#keptBound += bound;
    this.#count++;
  }

  /**
   * {@link MeasurementMap.insertOne} of a deferred map's measurement given as a row of numbers (see
   * `PackedRows`): the fields `names` (in the measurement's order) of kinds `kinds` (1 a number, 2 a date),
   * but the one at `metaAt`, have their values in `values` from `at` (a date as its time), in that order.
   *
   * @param names - the measurement's field names.
   * @param kinds - their values' kinds.
   * @param metaAt - the metaField's position among `names` (-1: none); not in the row.
   * @param fields - the names of the row's values: `names` but the metaField (frozen: a map with no
   *   column yet takes it as its columns when it starts with the time field).
   * @param values - the rows.
   * @param at - where this measurement's row starts.
   * @param timeMs - its time, epoch ms.
   */
  insertRow(
    names: ReadonlyArray<string>,
    kinds: ReadonlyArray<number>,
    metaAt: number,
    fields: ReadonlyArray<string>,
    values: Float64Array,
    at: number,
    timeMs: number,
  ): void {
    invariant(!this.#sealed && this.#deferred, 2407, 'a row appended to a closed or eager map');
    this.#lastTimeMs = timeMs;
    const index = this.#count;
    // A first row whose values start with the time: its names are the map's columns, each new (what
    // #rowStartBound and a #placeColumn per field would make, without a list of the map's own).
    const fresh = this.#names.length === 0 && fields[0] === this.#timeField && Object.isFrozen(fields);
    let bound: number;
    if (fresh) {
      this.#names = fields as string[];
      bound = kNewColumnBound;
    } else bound = this.#rowStartBound();
    let columns = this.#names;
    // The map's names are the row's (a bucket opened from a row of this layout, no column added since):
    // the row's k-th value is column k, and the names need not be read. Reading them at one site for
    // every map made it see both shared (frozen) lists and own ones, which TurboFan leaves to an inline
    // cache call per value.
    let same = columns === fields;
    let guess = 0;
    let seen = 0;
    const start = this.#packedLength;
    let end = start;
    const packedValues = this.#valuesRoom(start + fields.length);
    // Whether the entries so far are in column order (see #kept): the time first, then numbers.
    let inOrder = true;
    let v = at;
    for (let i = 0; i < names.length; i++) {
      if (i === metaAt) continue;
      const field = names[i] as string;
      let column = same || columns[guess] === field ? guess++ : this.#placeColumn(field);
      if (column < 0) {
        column = ~column;
        // A new column (in names of the map's own: a shared list was copied to add it).
        columns = this.#names;
        same = false;
        // Its skips for the measurements before it.
        bound += kNewColumnBound + kValueBound * index;
      } else if (fresh && column > 0) bound += kNewColumnBound + kValueBound * index;
      const date = kinds[i] === kDateKind;
      if (inOrder && (column !== end - start || (column === 0) !== date)) {
        this.#writeColumns(start, end);
        inOrder = false;
      }
      if (!inOrder) this.#columnsToWrite()[end] = date ? ~column : column;
      packedValues[end++] = values[v++] as number;
      bound += kValueBound;
      seen++;
    }
    // A skip in every column the measurement lacks.
    bound += kValueBound * (columns.length - seen);
    this.#packedLength = end;
    this.#keep(start, inOrder ? ~end : end, bound);
  }

  /** The entries `[start, end)` were in column order and the next is not: write their columns. */
  #writeColumns(start: number, end: number): void {
    const columns = this.#columnsToWrite();
    for (let e = start; e < end; e++) columns[e] = inOrderColumn(start, e);
  }

  /**
   * The packed values, at least `n` long: their only growth (pushes of a double, so that the array holds
   * unboxed doubles from its first element), so that the per-value stores are in-bounds stores into one
   * kind of array (stores that also grew the array, into an array that started as small integers, were
   * two inline cache handlers for one site, a call per value).
   */
  #valuesRoom(n: number): number[] {
    const values = this.#packedValues;
    while (values.length < n) values.push(0.5);
    return values;
  }

  /** `#packedColumns`, made an array of the map's own first if it is the shared empty one. */
  #columnsToWrite(): number[] {
    if (this.#packedColumns === kNoEntries) this.#packedColumns = [];
    return this.#packedColumns;
  }

  /** Give the map arrays of its own for its encoders, if it has the shared empty ones. */
  #ownBuilders(): void {
    if (this.#builders === kNoBuilders) this.#builders = [];
    if (this.#lastSeen === kNoEntries) this.#lastSeen = [];
  }

  /** Give the encoders back to the pool and forget which measurement each column saw last. */
  #dropBuilders(): void {
    giveBack(this.#builders);
    this.#builders = kNoBuilders;
    this.#lastSeen = kNoEntries;
  }

  /**
   * Fold the measurement {@link MeasurementMap.insertOne} kept last into typed min/max slots, from the
   * values it packed: what `foldIntoSlots` does with the measurement, without walking its fields again
   * (the prepare of a compressed bucket folds and keeps each measurement).
   *
   * As `foldIntoSlots`, a refused measurement may have been folded partly; the caller then folds the
   * measurement itself, which changes nothing the partial fold did.
   *
   * @param slots - the bucket's min/max slots.
   * @param minChanged - the bit to return when a minimum changed.
   * @param maxChanged - the bit to return when a maximum changed.
   * @returns the changed sides' bits, or -1 when it cannot: the measurement was not packed (an eager map,
   *   a value other than a number or a date), or a value has no slot of its kind.
   */
  foldKeptInto(slots: MinMaxSlots, minChanged: number, maxChanged: number): number {
    const k = this.#keptCount - 1;
    const start = k < 0 ? -1 : (this.#kept[3 * k] as number);
    if (start < 0) return -1;
    const kept = this.#kept[3 * k + 1] as number;
    // In column order (see #kept): no columns recorded.
    const inOrder = kept < 0;
    const end = inOrder ? ~kept : kept;
    const names = this.#names;
    let slotOf = this.#slotOf;
    if (slotOf === undefined || this.#slotNames !== slots.names || slotOf.length !== names.length) {
      slotOf = names.map((name) => slots.names.indexOf(name));
      this.#slotOf = slotOf;
      this.#slotNames = slots.names;
    }
    const { kinds, values } = slots;
    const columns = this.#packedColumns;
    const packedValues = this.#packedValues;
    let changed = 0;
    for (let e = start; e < end; e++) {
      const column = inOrder ? inOrderColumn(start, e) : (columns[e] as number);
      const i = slotOf[column < 0 ? ~column : column] as number;
      const x = packedValues[e] as number;
      // A date packs as its (never NaN) time; a NaN number has no slot, as in foldIntoSlots.
      if (i < 0 || kinds[i] !== (column < 0 ? kSlotDate : kSlotNumber) || x !== x) return -1;
      changed |= foldSlot(values, i, x, minChanged, maxChanged);
    }
    return changed;
  }

  /**
   * The typed min/max slots of a bucket whose only measurement is the one this map kept, folded over the
   * catalog's seed of the time field (see `min-max.ts`): from the values the map packed, when it packed
   * them in column order (the time, then numbers) and the slots can hold them.
   *
   * @param timeField - the seed's field, which must be the map's first column.
   * @param seedMin - the seed's minimum, epoch ms.
   * @param seedMax - its maximum.
   * @returns the slots, or `undefined` when the map holds more measurements, did not pack this one in
   *   column order, or packed a value no slot holds (`NaN`).
   */
  firstSlots(timeField: string, seedMin: number, seedMax: number): MinMaxSlots | undefined {
    const names = this.#names;
    if (this.#count !== 1 || this.#keptCount !== 1 || names[0] !== timeField) return undefined;
    if (this.#inOrderWidth(0) !== names.length) return undefined;
    return slotsOfRow(names, this.#packedValues, this.#kept[0] as number, seedMin, seedMax);
  }

  /**
   * Encode a packed measurement into the columns' encoders: entries `[start, keptEnd)`, or `[start,
   * ~keptEnd)` in column order when `keptEnd` is negative (see #kept).
   */
  #encodePacked(start: number, keptEnd: number): void {
    const inOrder = keptEnd < 0;
    const end = inOrder ? ~keptEnd : keptEnd;
    const index = this.#startRow();
    const builders = this.#builders;
    const lastSeen = this.#lastSeen;
    const columns = this.#packedColumns;
    const values = this.#packedValues;
    for (let e = start; e < end; e++) {
      const column = inOrder ? inOrderColumn(start, e) : (columns[e] as number);
      const at = column < 0 ? ~column : column;
      if (at >= builders.length) this.#addBuilder(at);
      const value = values[e] as number;
      if (column < 0) (builders[at] as BSONColumnBuilder).appendDateMs(value);
      else (builders[at] as BSONColumnBuilder).append(value);
      lastSeen[at] = index;
    }
    this.#endRow(index);
  }

  /**
   * Encode the first `n` kept measurements column by column, when each of them has every column with an
   * encoder and all the same columns, in column order (packed: the time, then numbers; how an ingester's
   * documents mostly come): each encoder then takes its values one after another while it is in the cache,
   * and no skip is needed. The bytes are those of encoding them one measurement at a time.
   *
   * @returns `false`, having encoded nothing, when the measurements are not all alike so.
   */
  #encodeByColumn(n: number): boolean {
    const kept = this.#kept;
    const width = this.#inOrderWidth(0);
    if (width < this.#builders.length) return false;
    for (let i = 1; i < n; i++) if (this.#inOrderWidth(i) !== width) return false;
    const index = this.#startRow();
    while (this.#builders.length < width) this.#addBuilder(this.#builders.length);
    const builders = this.#builders;
    const values = this.#packedValues;
    if (columnScratch.length < n) columnScratch = new Float64Array(n);
    const column = columnScratch;
    for (let c = 0; c < width; c++) {
      for (let i = 0; i < n; i++) column[i] = values[(kept[3 * i] as number) + c] as number;
      if (c === 0) (builders[0] as BSONColumnBuilder).appendDatesMs(column, n);
      else (builders[c] as BSONColumnBuilder).appendNumbers(column, n);
    }
    this.#lastSeen.fill(index + n - 1);
    this.#encoded = index + n;
    return true;
  }

  /** The columns of kept measurement `i` when it was packed in column order (see #kept), else -1. */
  #inOrderWidth(i: number): number {
    const start = this.#kept[3 * i] as number;
    const keptEnd = this.#kept[3 * i + 1] as number;
    return start >= 0 && keptEnd < 0 ? ~keptEnd - start : -1;
  }

  /** Encode kept measurement `i` (packed or as it is) into the columns' encoders. */
  #encodeKept(i: number): void {
    const start = this.#kept[3 * i] as number;
    if (start >= 0) this.#encodePacked(start, this.#kept[3 * i + 1] as number);
    else this.#encode(this.#rows?.[i] as Measurement);
  }

  /** Encode one measurement into the columns' encoders. */
  #encode(measurement: Measurement): void {
    const index = this.#startRow();
    let names = this.#names;
    const builders = this.#builders;
    const lastSeen = this.#lastSeen;
    const metaField = this.#metaField;
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
        at = this.#columnOf(field) ?? this.#addName(field);
        names = this.#names;
      }
      if (at >= builders.length) this.#addBuilder(at);
      // The builder encodes the value now: the caller may reuse its objects afterwards.
      (builders[at] as BSONColumnBuilder).append(value);
      lastSeen[at] = index;
    }
    this.#endRow(index);
  }

  /** Where a measurement's encoding starts: the time column (first) has its encoder; returns its index. */
  #startRow(): number {
    if (this.#builders.length === 0) {
      if (this.#names.length === 0) this.#addName(this.#timeField);
      this.#addBuilder(0);
    }
    return this.#encoded;
  }

  /** Close measurement `index`: a skip in every column it did not have. */
  #endRow(index: number): void {
    const builders = this.#builders;
    const lastSeen = this.#lastSeen;
    this.#encoded = index + 1;
    for (let i = 0; i < lastSeen.length; i++) {
      if (lastSeen[i] !== index) {
        (builders[i] as BSONColumnBuilder).skip();
        lastSeen[i] = index;
      }
    }
  }

  /** Name a new column; returns its index. */
  #addName(field: string): number {
    const at = this.#names.length;
    this.#columns?.set(field, at);
    // The names of the row that opened the bucket are shared: the map's own copy takes the new one.
    if (Object.isFrozen(this.#names)) this.#names = [...this.#names, field];
    else this.#names.push(field);
    return at;
  }

  /**
   * The index of column `field`, if there is one: a scan of the names while they are few, a name index
   * (made on first need) beyond.
   */
  #columnOf(field: string): number | undefined {
    let columns = this.#columns;
    if (columns === undefined) {
      const names = this.#names;
      if (names.length <= kScannedNames) {
        const at = names.indexOf(field);
        return at < 0 ? undefined : at;
      }
      columns = new Map();
      for (let i = 0; i < names.length; i++) columns.set(names[i] as string, i);
      this.#columns = columns;
    }
    return columns.get(field);
  }

  /** Give column `at` (the first without one) its encoder, with a skip for each measurement before. */
  #addBuilder(at: number): void {
    invariant(at === this.#builders.length, 2402, 'column encoders out of order');
    const builder = idleBuilders.pop() ?? resetBuilder(parkedBuilders.pop()) ?? new BSONColumnBuilder();
    for (let i = 0; i < this.#encoded; i++) builder.skip();
    this.#ownBuilders();
    this.#builders.push(builder);
    this.#lastSeen.push(-1);
  }

  /**
   * The columns named since the last call (a deferred commit's new columns), or `undefined` when none is.
   *
   * @returns the names, in column order.
   */
  takeNewColumns(): ReadonlyArray<string> | undefined {
    const names = this.#names;
    if (this.#namesTaken === names.length) return undefined;
    // Every name of a shared (frozen) list: the list itself.
    const created = this.#namesTaken === 0 && Object.isFrozen(names) ? names : names.slice(this.#namesTaken);
    this.#namesTaken = names.length;
    return created;
  }

  /** {@inheritDoc DeferredColumns.shouldDrain} */
  shouldDrain(): boolean {
    return this.#keptCount >= this.#drain.threshold || this.#queued !== undefined;
  }

  /**
   * The columns' size after the first `count` measurements: exact up to the measurements encoded, plus
   * the bound of each one still kept (eager maps are always exact). When `count` is below the measurements
   * encoded (the storage took a commit the catalog has not finished), the encoded size is given: an upper
   * bound still.
   *
   * @param count - measurements counted (the bucket's committed ones).
   * @returns the size or its upper bound (`Infinity` when a kept value has none).
   */
  sizeBound(count: number): number {
    let bound = this.#keptBound;
    let unbounded = this.#keptUnbounded;
    // The kept measurements after the first `count` (a batch being written) are not counted.
    const kept = this.#kept;
    for (let i = Math.max(0, count - this.#encoded); i < this.#keptCount; i++) {
      const b = kept[3 * i + 2] as number;
      if (b === Number.POSITIVE_INFINITY) unbounded--;
      else bound -= b;
    }
    return this.#compressedSize + (unbounded > 0 ? Number.POSITIVE_INFINITY : bound);
  }

  /**
   * Encode the first `count` measurements (deferred), leaving their tails for the storage: afterwards
   * {@link MeasurementMap.sizeBound} is exact for `count`.
   *
   * @param count - measurements the storage holds (at most {@link MeasurementMap.count}).
   */
  settle(count: number): void {
    const from = this.#encoded;
    if (count <= from) return;
    invariant(!this.#sealed && count <= this.#count, 2403, 'settle beyond the measurements appended');
    this.#unpark();
    const kept = this.#kept;
    const rows = this.#rows;
    const n = count - from;
    const byColumn = this.#encodeByColumn(n);
    for (let i = 0; i < n; i++) {
      if (!byColumn) this.#encodeKept(i);
      const bound = kept[3 * i + 2] as number;
      if (bound === Number.POSITIVE_INFINITY) this.#keptUnbounded--;
      else this.#keptBound -= bound;
    }
    if (n === this.#keptCount) {
      this.#keptCount = 0;
      this.#rows = undefined;
      this.#packedLength = 0;
      // The room of a large batch is not kept for the bucket's life: a usual run fits in much less.
      const runs = this.#drain.threshold / kDeferredDrainThreshold;
      if (kept.length > 6 * this.#drain.threshold) this.#kept = [];
      if (this.#packedColumns.length > runs * kKeptEntriesRoom) {
        this.#packedColumns = kNoEntries;
        this.#packedValues = [];
      }
    } else {
      kept.copyWithin(0, 3 * n, 3 * this.#keptCount);
      this.#keptCount -= n;
      rows?.splice(0, n);
      this.#compactPacked();
    }
    const tails = this.intermediateTails();
    if (this.#queued === undefined) this.#queued = [tails];
    else this.#queued.push(tails);
    this.#park();
  }

  /** Record the encoders into `#parked` and give them back to the pool, when every one can be. */
  #park(): void {
    const builders = this.#builders;
    const n = builders.length;
    if (n === 0) return;
    let length = 0;
    for (let i = 0; i < n; i++) {
      const builder = builders[i] as BSONColumnBuilder;
      if (!builder.parkable) return;
      length += builder.parkedLength;
    }
    // The bucket's own array: reused while the record fits in it and is not much smaller, else made to
    // measure. A record may grow with its open Simple-8b blocks (a TSBS bucket's from about 420 numbers at
    // its first park to 560 by its fourth): one that outgrew its array is given a quarter more room,
    // which its later parks fill (made to measure each time, two parks in three of a bulk load made a
    // new array; half again as much room held 10 B more per measurement at the end of a bulk load).
    let record = this.#parked;
    if (record === undefined || record.length < length || record.length > 2 * length) {
      const room = record !== undefined && record.length < length ? length + (length >> 2) : length;
      // Padded rather than sized with `new Array`: a slice of the scratch keeps its unboxed doubles.
      while (parkScratch.length < room) parkScratch.push(0);
      record = parkScratch.slice(0, room);
      this.#parked = record;
    }
    let at = 0;
    for (let i = 0; i < n; i++) at = (builders[i] as BSONColumnBuilder).parkInto(record, at);
    invariant(at === length, 2406, 'parked encoders miscounted');
    this.#parkedLength = at;
    this.#parkedCount = n;
    // Not reset: unparking overwrites every field (the next bucket's run takes them first).
    for (let i = 0; i < n && parkedBuilders.length < kMaxParkedBuilders; i++) {
      parkedBuilders.push(builders[i] as BSONColumnBuilder);
    }
    this.#builders = kNoBuilders;
  }

  /** Take encoders from the pool and give them the parked state back (nothing when none is parked). */
  #unpark(): void {
    const n = this.#parkedCount;
    if (n === 0) return;
    const record = this.#parked as number[];
    this.#ownBuilders();
    const builders = this.#builders;
    let at = 0;
    for (let i = 0; i < n; i++) {
      const builder = parkedBuilders.pop() ?? idleBuilders.pop() ?? new BSONColumnBuilder();
      at = builder.unparkFrom(record, at);
      builders.push(builder);
    }
    invariant(at === this.#parkedLength, 2405, 'parked encoders misread');
    this.#parkedCount = 0;
  }

  /** Move the packed entries of the measurements still kept to the front. */
  #compactPacked(): void {
    const kept = this.#kept;
    let from = -1;
    const end = 3 * this.#keptCount;
    for (let i = 0; i < end && from < 0; i += 3) from = kept[i] as number;
    if (from <= 0) {
      if (from < 0) this.#packedLength = 0;
      return;
    }
    this.#packedColumns.copyWithin(0, from, this.#packedLength);
    this.#packedValues.copyWithin(0, from, this.#packedLength);
    this.#packedLength -= from;
    for (let i = 0; i < end; i += 3) {
      if ((kept[i] as number) >= 0) {
        kept[i] = (kept[i] as number) - from;
        const keptEnd = kept[i + 1] as number;
        // An end in column order is kept as its complement (see #kept).
        kept[i + 1] = keptEnd < 0 ? ~(~keptEnd - from) : keptEnd - from;
      }
    }
  }

  /**
   * The columns of the first `count` measurements while none is encoded yet: encoded by encoders made for
   * this call and dropped after it, the map left as it was. A read of a bucket that keeps its few
   * measurements (fewer than a run) then leaves no encoder behind: an encoder holds about a kilobyte for
   * the bucket's life, and reading back an ingest of many series gave every bucket one per column. The
   * bytes are those the encoders give the storage when it takes the tails (the diffs of any split of a
   * column's values make the same binary).
   *
   * @param count - the measurements the storage holds.
   * @returns the columns, or `undefined` when encoding has started (the storage takes the tails then).
   */
  previewColumns(count: number): ColumnPreview | undefined {
    if (!this.#deferred || this.#sealed || this.#encoded > 0 || count <= 0 || count > this.#keptCount) {
      return undefined;
    }
    const compressedSize = this.#compressedSize;
    try {
      if (!this.#encodeByColumn(count)) for (let i = 0; i < count; i++) this.#encodeKept(i);
      // The columns into the scratch array, handed out as they are: the caller copies them once, into
      // memory of its own kind (a new ArrayBuffer per read was most of a small bucket's preview).
      const sink = scratchSink;
      sink.length = 0;
      const ends: number[] = [];
      for (const builder of this.#builders) {
        builder.intermediateInto(sink);
        ends.push(sink.length);
      }
      return { names: this.#names, ends, bytes: sink.buf.subarray(0, sink.length) };
    } finally {
      this.#dropBuilders();
      this.#encoded = 0;
      this.#compressedSize = compressedSize;
    }
  }

  /**
   * {@inheritDoc DeferredColumns.takeTails}
   */
  takeTails(count: number, apply: (tails: ColumnTails) => void): void {
    this.settle(count);
    const queued = this.#queued;
    if (queued === undefined) return;
    this.#queued = undefined;
    for (const tails of queued) apply(tails);
  }

  /**
   * Close a deferred map: encode the first `count` measurements for the storage to take, and let go of
   * the encoders and of the measurements after them (a failed write's). The tails left are copied out of
   * the shared slabs, which they would otherwise keep alive.
   *
   * @param count - the bucket's committed measurements.
   */
  seal(count: number): void {
    if (!this.#deferred || this.#sealed) return;
    this.settle(Math.min(count, this.#count));
    this.#sealed = true;
    this.#queued = this.#queued?.map(ownTails);
    this.#columns = undefined;
    this.#dropBuilders();
    this.#parked = undefined;
    this.#parkedCount = 0;
    this.#parkedLength = 0;
    this.#kept = [];
    this.#keptCount = 0;
    this.#keptBound = 0;
    this.#keptUnbounded = 0;
    this.#rows = undefined;
    this.#packedColumns = kNoEntries;
    this.#packedValues = [];
    this.#packedLength = 0;
  }

  /**
   * What changed in each column since the last call, in column order, and the change of the total size.
   *
   * @returns the diffs (every column changes: each measurement appends to each) and `delta`, new total
   *   minus old total.
   */
  intermediate(): { readonly diffs: ReadonlyArray<ColumnDiff>; readonly delta: number } {
    this.#unpark();
    const n = this.#builders.length;
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
    this.#unpark();
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

/** A copy of `tails` in arrays of its own. */
function ownTails(tails: ColumnTails): ColumnTails {
  const { count, layout, layoutStart, bytesStart } = tails;
  const end = count === 0 ? bytesStart : (layout[layoutStart + 2 * count - 1] as number);
  const own = new Int32Array(2 * count);
  for (let i = 0; i < count; i++) {
    own[2 * i] = layout[layoutStart + 2 * i] as number;
    own[2 * i + 1] = (layout[layoutStart + 2 * i + 1] as number) - bytesStart;
  }
  return {
    fields: tails.fields,
    count,
    firstCreated: tails.firstCreated,
    layout: own,
    layoutStart: 0,
    bytes: tails.bytes.slice(bytesStart, end),
    bytesStart: 0,
  };
}

/**
 * Where {@link MeasurementMap.intermediate} and {@link MeasurementMap.previewColumns} collect the columns
 * before copying them out (reused).
 */
const scratchSink: DiffSink = { buf: new Uint8Array(4096), length: 0 };

/**
 * The slabs commits' tails are cut from, as Node's pooled `Buffer`s are: an array or two per commit made
 * garbage collection a large part of a one-measurement commit. The builders append their tails to the
 * byte slab ({@link BSONColumnBuilder.intermediateInto}). A slab's part is never written again once cut:
 * a full slab is replaced, not reused, and one grown in the middle of a commit is a copy (the previous
 * array stays as it was), so tails never change; a commit only keeps its slabs alive until the storage
 * has copied the tails.
 */
const kByteSlabSize = 64 * 1024;
/** Room a commit usually needs: with less left, the next commit starts a new slab. */
const kByteSlabReserve = 8 * 1024;
const kLayoutSlabSize = 8 * 1024;
const byteSink: DiffSink = { buf: new Uint8Array(kByteSlabSize), length: 0 };
let layoutSlab = new Int32Array(kLayoutSlabSize);
let layoutSlabUsed = 0;

/**
 * Column builders given back by maps done with them (a read's preview, a sealed bucket), reset, for new
 * columns to take: a builder is several objects, and at one or two measurements per bucket making them
 * was a good part of what a bucket allocated. Bounded (about a hundred buckets' worth).
 */
const idleBuilders: BSONColumnBuilder[] = [];
const kMaxIdleBuilders = 1024;
/**
 * Builders of parked maps, as they were (not reset: {@link BSONColumnBuilder.unparkFrom} overwrites them),
 * for maps that unpark. Buckets mostly park and unpark one after another (a storage taking the tails of
 * each bucket of a bulk load in turn), so two or three buckets' worth is enough: each builder here keeps its
 * buffer.
 */
const parkedBuilders: BSONColumnBuilder[] = [];
const kMaxParkedBuilders = 32;
/**
 * What {@link MeasurementMap} slices a bucket's array of parked encoders from (grown as needed). Its first
 * element is not an integer, so that the array, and every slice of it, holds unboxed doubles from the
 * start (an array of small integers changes its storage at its first double).
 */
const parkScratch: number[] = [0.5];

/**
 * `builder` reset, when there is one: a new column takes a parked map's builder when no reset one is idle
 * (a bulk load's buckets start encoding one after another, each right after the previous one parked: new
 * builders for them were 11 000 per 1 000 TSBS series, a tenth of what the load allocated).
 */
function resetBuilder(builder: BSONColumnBuilder | undefined): BSONColumnBuilder | undefined {
  builder?.reset();
  return builder;
}

/** Reset `builders` into {@link idleBuilders} (as many as it has room for) and empty the list. */
function giveBack(builders: BSONColumnBuilder[]): void {
  if (builders.length === 0) return;
  for (const builder of builders) {
    if (idleBuilders.length >= kMaxIdleBuilders) break;
    builder.reset();
    idleBuilders.push(builder);
  }
  builders.length = 0;
}

/**
 * The column of packed entry `e` of a measurement kept in column order from entry `start` (see the map's
 * `#kept`): entry `i` is column `i`, the first the time column, a date (its column as its complement).
 */
function inOrderColumn(start: number, e: number): number {
  return e === start ? ~0 : e - start;
}

/**
 * One column's values of a run being encoded by {@link MeasurementMap}'s column-by-column path: handed
 * to the encoder unboxed. Shared by every map (a run is encoded at once), grown to the longest run.
 */
let columnScratch = new Float64Array(4 * kDeferredDrainThreshold);

/**
 * Packed entries a deferred map keeps room for between runs of {@link kDeferredDrainThreshold} (16
 * measurements of 32 fields; proportionally more for longer runs).
 */
const kKeptEntriesRoom = 512;

/** Up to this many columns a name is looked up by a scan, not a map. */
const kScannedNames = 16;

/** The arrays a map shares until it needs its own (frozen: a write to one by mistake throws). */
const kNoBuilders: BSONColumnBuilder[] = Object.freeze([]) as unknown as BSONColumnBuilder[];
const kNoEntries: number[] = Object.freeze([]) as unknown as number[];

/** BinData subtype 7: a BSONColumn. */
const kColumnSubtype = 7;
