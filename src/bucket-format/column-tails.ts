/**
 * What one commit to an open compressed bucket appends to its columns, packed: every column's new tail
 * in one byte array, and per column where its tail goes. The server's counterpart is the list of
 * `BSONColumnBuilder::BinaryDiff`s of `makeTimeseriesCompressedDiffUpdateOp`, one per column.
 *
 * Packed because a bulk load commits one measurement per bucket at a time: per column an object and a
 * byte array of a dozen bytes were most of such a commit's garbage, and the storage copies the tails
 * out in one pass over two arrays. {@link columnDiffsOf} unpacks them for code that wants one diff per
 * column (a storage that sends them over the wire).
 *
 * @packageDocumentation
 */
/** What one column gained since the previous commit. */
export interface ColumnDiff {
  /** The field name. */
  readonly field: string;
  /**
   * Byte offset in the column's previous binary where `bytes` go: the stored column is cut at `offset`
   * and `bytes` appended (0 for a column new to the stored document).
   */
  readonly offset: number;
  /** The bytes from `offset` to the column's new end (owned by the receiver, never changed). */
  readonly bytes: Uint8Array;
  /** Whether the column is new to the stored document. */
  readonly created: boolean;
}

/**
 * The column tails of one commit: column `i` is `fields[i]`, for `i` below `count`. The numbers and bytes
 * live in arrays shared by many commits (cut from slabs, as Node's pooled `Buffer`s are), at `layoutStart`
 * and `bytesStart`: a commit allocates no array of its own. Nothing ever writes a slab's part again once
 * a commit holds it.
 */
export interface ColumnTails {
  /**
   * The bucket's field names in column order. May be longer than `count` (the bucket's list, which only
   * grows, is shared rather than copied): only the first `count` belong to this commit.
   */
  readonly fields: ReadonlyArray<string>;
  /** Columns in this commit (every column of the bucket: each measurement appends to each). */
  readonly count: number;
  /** Columns `[firstCreated, count)` are new to the stored document (`count` when none is). */
  readonly firstCreated: number;
  /**
   * Two numbers per column from `layoutStart` on: `layout[layoutStart + 2i]` is where column `i`'s tail
   * goes in its stored binary (the stored column is cut there, 0 for a new column), and
   * `layout[layoutStart + 2i + 1]` where its tail ends in `bytes` (it starts where the previous column's
   * ends, column 0's at `bytesStart`).
   */
  readonly layout: Int32Array;
  /** Index of column 0's numbers in `layout`. */
  readonly layoutStart: number;
  /** Every column's tail, in column order, from `bytesStart` on. */
  readonly bytes: Uint8Array;
  /** Index of column 0's tail in `bytes`. */
  readonly bytesStart: number;
}

/**
 * One diff per column: for storages that write each column on its own.
 *
 * @param tails - the packed tails.
 * @returns the diffs, in column order; their `bytes` view `tails.bytes`.
 */
export function columnDiffsOf(tails: ColumnTails): ColumnDiff[] {
  const { fields, count, firstCreated, layout, layoutStart, bytes } = tails;
  const diffs: ColumnDiff[] = [];
  let start = tails.bytesStart;
  for (let i = 0; i < count; i++) {
    const end = layout[layoutStart + 2 * i + 1] as number;
    diffs.push({
      field: fields[i] as string,
      offset: layout[layoutStart + 2 * i] as number,
      bytes: bytes.subarray(start, end),
      created: i >= firstCreated,
    });
    start = end;
  }
  return diffs;
}

/**
 * Columns whose bytes a storage takes when it needs them (an open compressed bucket whose encoding is put
 * off, see `MeasurementMap`): a commit then carries the source instead of its tails, and the storage
 * applies what it takes, in order, as it would apply each commit's tails.
 */
export interface DeferredColumns {
  /**
   * Encode the first `count` measurements if they are not yet, and hand over every tail not taken before,
   * oldest first.
   *
   * @param count - the measurements the storage holds (`control.count`).
   * @param apply - called with each tail set, in order; it must copy what it keeps before returning.
   */
  takeTails(count: number, apply: (tails: ColumnTails) => void): void;
  /**
   * Whether the storage should take the tails now, having applied a commit: enough measurements wait to
   * be encoded (or tails were left behind). The source holds exactly the measurements the storage holds
   * then (one commit of a bucket is in flight at a time).
   */
  shouldDrain(): boolean;
  /**
   * The whole columns of the first `count` measurements while none is encoded yet, without starting to
   * encode (nothing is kept for it; see `MeasurementMap.previewColumns`); `undefined` once encoding has
   * started, when the storage takes the tails instead.
   *
   * @param count - the measurements the storage holds (`control.count`).
   */
  previewColumns(count: number): ColumnPreview | undefined;
}

/** Whole columns of a bucket, in column order: column `i` is `bytes[ends[i - 1] ?? 0, ends[i])`. */
export interface ColumnPreview {
  /** Column names; at least the first `ends.length` are this preview's columns. */
  readonly names: ReadonlyArray<string>;
  /** Where each column's binary ends in `bytes`. */
  readonly ends: ReadonlyArray<number>;
  /**
   * Every column's binary, back to back: a scratch shared by every preview, valid until the next one
   * (the caller copies what it keeps, into memory of the kind its owner needs).
   */
  readonly bytes: Uint8Array;
}

/** The tails of a commit that carries none (its source has them, {@link DeferredColumns}). */
export const kNoTails: ColumnTails = Object.freeze({
  fields: Object.freeze([]),
  count: 0,
  firstCreated: 0,
  layout: new Int32Array(0),
  layoutStart: 0,
  bytes: new Uint8Array(0),
  bytesStart: 0,
});
