/**
 * A commit's `control.min` and `control.max`, captured cheaply and built as documents only when someone
 * needs them (the server has no counterpart: it writes the documents into each commit's update).
 *
 * A bucket whose measurements are flat (every summarised field a scalar, the usual time series) is
 * captured as its field names and one value per field and side: a commit copies the values of the side
 * that changed into one array, and `MemoryStorage` keeps that until a reader asks for the bucket, so the
 * documents of the commits nobody reads are never built. Other buckets are captured as the documents
 * themselves. A storage that sends the documents (`MongoStorage`) reads {@link MinMaxSnapshot.min} and
 * {@link MinMaxSnapshot.max}, which are built once per snapshot.
 *
 * Ownership: a snapshot never changes once made; the documents it builds are shared by whoever reads
 * them, who must not change them in place.
 *
 * @packageDocumentation
 */
import { defineField } from '../util/safe-record.js';

/** `control.min` and `control.max` as of one commit. */
export class MinMaxSnapshot {
  /**
   * Field names of a flat capture, in stored order (shared by consecutive snapshots of a bucket while its
   * fields stay the same); `undefined` for a capture of documents.
   */
  readonly names: ReadonlyArray<string> | undefined;
  /** Per field of `names`, the minimum (`undefined`: the field has none), shared while it is unchanged. */
  readonly minValues: ReadonlyArray<unknown> | undefined;
  /** Per field of `names`, the maximum. */
  readonly maxValues: ReadonlyArray<unknown> | undefined;
  #min: Readonly<Record<string, unknown>> | undefined;
  #max: Readonly<Record<string, unknown>> | undefined;

  private constructor(
    names: ReadonlyArray<string> | undefined,
    minValues: ReadonlyArray<unknown> | undefined,
    maxValues: ReadonlyArray<unknown> | undefined,
    min: Readonly<Record<string, unknown>> | undefined,
    max: Readonly<Record<string, unknown>> | undefined,
  ) {
    this.names = names;
    this.minValues = minValues;
    this.maxValues = maxValues;
    this.#min = min;
    this.#max = max;
  }

  /**
   * A snapshot of flat documents: field `names[i]` has minimum `minValues[i]` and maximum `maxValues[i]`
   * (an `undefined` value leaves the field out of that side). The arrays are the snapshot's from now on.
   *
   * @param names - field names in stored order.
   * @param minValues - one scalar (or `undefined`) per name.
   * @param maxValues - one scalar (or `undefined`) per name.
   * @returns the snapshot.
   */
  static ofFields(
    names: ReadonlyArray<string>,
    minValues: ReadonlyArray<unknown>,
    maxValues: ReadonlyArray<unknown>,
  ): MinMaxSnapshot {
    return new MinMaxSnapshot(names, minValues, maxValues, undefined, undefined);
  }

  /**
   * A snapshot of whole documents (nested measurements, or a stored bucket's control fields).
   *
   * @param min - `control.min` (the snapshot's from now on).
   * @param max - `control.max`.
   * @returns the snapshot.
   */
  static ofDocuments(
    min: Readonly<Record<string, unknown>>,
    max: Readonly<Record<string, unknown>>,
  ): MinMaxSnapshot {
    return new MinMaxSnapshot(undefined, undefined, undefined, min, max);
  }

  /** `control.min`: fields in stored order; built on first use, then the same object. */
  get min(): Readonly<Record<string, unknown>> {
    // Only a flat capture leaves the document unset.
    return (this.#min ??= documentOf(
      this.names as ReadonlyArray<string>,
      this.minValues as ReadonlyArray<unknown>,
    ));
  }

  /** `control.max`: fields in stored order; built on first use, then the same object. */
  get max(): Readonly<Record<string, unknown>> {
    return (this.#max ??= documentOf(
      this.names as ReadonlyArray<string>,
      this.maxValues as ReadonlyArray<unknown>,
    ));
  }
}

/** The document of one side of a flat capture: each named field that has a value, in order. */
function documentOf(names: ReadonlyArray<string>, values: ReadonlyArray<unknown>): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (let i = 0; i < names.length; i++) {
    const value = values[i];
    if (value !== undefined) defineField(doc, names[i] as string, value);
  }
  return doc;
}
