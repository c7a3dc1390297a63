/**
 * Binary diffs of a BSONColumn (the server's `BSONColumnBuilder::BinaryDiff`): what changed in a column
 * binary since the previous `intermediate()` call. MongoDB 8 replicates a commit to an open compressed
 * bucket as one such diff per column, `{o: offset, d: BinData}` in the `b` (binary) section of a `$v: 2`
 * update diff.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../../errors.js';

/** The changed tail of a column binary: apply it by truncating the previous binary at `offset` and appending `bytes`. */
export interface BinaryDiff {
  /** Where the changed tail starts in the previous binary (0 the first time: the whole binary). */
  readonly offset: number;
  /** The new bytes from `offset` to the end of the binary, its final EOO byte included. */
  readonly bytes: Uint8Array;
}

/**
 * Apply a {@link BinaryDiff} to the binary it was computed against: `base[0, offset)` followed by
 * `diff.bytes`. Diffs from successive `intermediate()` calls are applied in order.
 *
 * @param base - the column binary as of the previous `intermediate()` call (empty before the first).
 * @param diff - the diff.
 * @returns a new array holding the updated binary; `base` is not modified.
 * @throws TimeseriesError (`BadValue`) when `diff.offset` lies past the end of `base`.
 * @example
 * ```ts
 * const builder = new BSONColumnBuilder();
 * builder.append(1);
 * let column = applyBinaryDiff(new Uint8Array(0), builder.intermediate());
 * builder.append(2);
 * column = applyBinaryDiff(column, builder.intermediate()); // same bytes as BSONColumn.encode([1, 2])
 * ```
 */
export function applyBinaryDiff(base: Uint8Array, diff: BinaryDiff): Uint8Array {
  const { offset, bytes } = diff;
  if (!Number.isInteger(offset) || offset < 0 || offset > base.length) {
    throw new TimeseriesError(
      'BadValue',
      `binary diff offset ${String(offset)} is outside the ${String(base.length)}-byte column it applies to`,
    );
  }
  const out = new Uint8Array(offset + bytes.length);
  out.set(base.subarray(0, offset));
  out.set(bytes, offset);
  return out;
}
