/**
 * The values of a call's flat measurements, one row after another in one typed array: what the
 * validation walk writes instead of a copy of each measurement when its fields are numbers and dates
 * (see `packOrCopy` in `bson-validation.ts`). A copy is an object with one boxed double per number field
 * (about 300 bytes for a row of ten readings) that lives until its call commits; a row is eight bytes per
 * field in an array the garbage collector neither scans nor copies.
 *
 * @packageDocumentation
 */

/** Rows of one call, appended in order; a row is never moved within the array (only the array grows). */
export class PackedRows {
  /** The values; each row starts at the offset its measurement was given. */
  values: Float64Array;
  /** Values written. */
  length = 0;

  /**
   * @param measurements - how many measurements the call has: room for rows of a dozen fields each is
   *   made at once (growing a typed array allocates a new one and copies it).
   */
  constructor(measurements: number) {
    this.values = new Float64Array(Math.max(kMinValues, kValuesPerRow * measurements));
  }

  /**
   * Room for `n` more values.
   *
   * @param n - values about to be written from {@link PackedRows.length}.
   * @returns the array to write them to (a larger copy when the current one is full).
   */
  reserve(n: number): Float64Array {
    if (this.length + n > this.values.length) {
      const grown = new Float64Array(Math.max(2 * this.values.length, this.length + n));
      grown.set(this.values.subarray(0, this.length));
      this.values = grown;
    }
    return this.values;
  }
}

/** The fields a row is expected to have when sizing a call's rows: a TSBS row has 11 besides its meta. */
const kValuesPerRow = 12;
/** The fewest values a call's rows have room for. */
const kMinValues = 64;
