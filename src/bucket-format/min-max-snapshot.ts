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
 * them, who must not change them in place. Two exceptions, each with one owner: a *view*
 * ({@link MinMaxSnapshot.viewOfSlots}) reads the catalog's live slots, so it holds the commit's values
 * only until the write carrying it resolves (the bucket's next fold waits for that), and builds its
 * documents anew each time; a storage that keeps it keeps {@link MinMaxSnapshot.kept} of it, whose
 * values that storage alone may overwrite with a later commit's, as long as no document was built.
 *
 * @packageDocumentation
 */
import { cloneBsonValue } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';
import { slotValue } from './min-max-slots.js';

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
  /** A capture of typed slots: per field of `names` its slot type (shared while the slots live). */
  readonly kinds: Uint8Array | undefined;
  /** A capture of typed slots: per field `i`, the minimum at `2i` and the maximum at `2i + 1` (owned). */
  readonly numbers: ReadonlyArray<number> | undefined;
  #min: Readonly<Record<string, unknown>> | undefined;
  #max: Readonly<Record<string, unknown>> | undefined;
  /** A view of live slots ({@link MinMaxSnapshot.viewOfSlots}), or a copy a storage keeps ({@link MinMaxSnapshot.kept}). */
  #role: 'view' | 'kept' | undefined = undefined;

  private constructor(
    names: ReadonlyArray<string> | undefined,
    minValues: ReadonlyArray<unknown> | undefined,
    maxValues: ReadonlyArray<unknown> | undefined,
    kinds: Uint8Array | undefined,
    numbers: ReadonlyArray<number> | undefined,
    min: Readonly<Record<string, unknown>> | undefined,
    max: Readonly<Record<string, unknown>> | undefined,
  ) {
    this.names = names;
    this.minValues = minValues;
    this.maxValues = maxValues;
    this.kinds = kinds;
    this.numbers = numbers;
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
    return new MinMaxSnapshot(names, minValues, maxValues, undefined, undefined, undefined, undefined);
  }

  /**
   * A snapshot of typed slots (see `min-max-slots.ts`): field `names[i]` has type `kinds[i]`, minimum
   * `numbers[2i]` and maximum `numbers[2i + 1]`.
   *
   * @param names - field names in stored order.
   * @param kinds - each field's slot type (not changed afterwards by anyone).
   * @param numbers - the slots' values (the snapshot's from now on).
   * @returns the snapshot.
   */
  static ofSlots(
    names: ReadonlyArray<string>,
    kinds: Uint8Array,
    numbers: ReadonlyArray<number>,
  ): MinMaxSnapshot {
    return new MinMaxSnapshot(names, undefined, undefined, kinds, numbers, undefined, undefined);
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
    return new MinMaxSnapshot(undefined, undefined, undefined, undefined, undefined, min, max);
  }

  /**
   * A snapshot viewing a bucket's live typed slots rather than copying them: for a storage that copies
   * what it keeps ({@link MinMaxSnapshot.kept}) before the write resolves. The catalog makes one per
   * bucket and hands it with every commit, so a commit of one measurement allocates nothing for its
   * min/max.
   *
   * @param names - field names in stored order.
   * @param kinds - each field's slot type.
   * @param numbers - the live slots (read, never changed, by the snapshot).
   * @returns the view.
   */
  static viewOfSlots(
    names: ReadonlyArray<string>,
    kinds: Uint8Array,
    numbers: ReadonlyArray<number>,
  ): MinMaxSnapshot {
    const view = new MinMaxSnapshot(names, undefined, undefined, kinds, numbers, undefined, undefined);
    view.#role = 'view';
    return view;
  }

  /**
   * What a storage keeps of a commit's snapshot: `next` itself, unless it is a view; then its values
   * copied, into `previous` when that is what this method returned for the bucket's previous commit, of
   * the same fields, and none of its documents was built (a bucket committed to many times between two
   * reads allocates nothing), else into a new snapshot.
   *
   * @param next - the commit's snapshot.
   * @param previous - what the storage kept for the bucket until now.
   * @returns the snapshot to keep.
   */
  static kept(next: MinMaxSnapshot, previous: MinMaxSnapshot | undefined): MinMaxSnapshot {
    // A snapshot of the package's other copy (an engine loaded by `import` over a storage loaded by
    // `require`): its private fields are not this class's; kept as the documents it builds.
    if (!(#role in next)) {
      const foreign: Pick<MinMaxSnapshot, 'min' | 'max'> = next;
      return MinMaxSnapshot.ofDocuments(foreign.min, foreign.max);
    }
    if (next.#role !== 'view') return next;
    const values = next.numbers as ReadonlyArray<number>;
    if (
      previous !== undefined &&
      previous.#role === 'kept' &&
      previous.#min === undefined &&
      previous.#max === undefined &&
      previous.names === next.names &&
      previous.kinds === next.kinds &&
      previous.numbers?.length === values.length
    ) {
      const into = previous.numbers as number[];
      for (let i = 0; i < values.length; i++) into[i] = values[i] as number;
      return previous;
    }
    const copy = MinMaxSnapshot.ofSlots(
      next.names as ReadonlyArray<string>,
      next.kinds as Uint8Array,
      values.slice(),
    );
    copy.#role = 'kept';
    return copy;
  }

  /** `control.min`: fields in stored order; built on first use, then the same object (a view builds anew). */
  get min(): Readonly<Record<string, unknown>> {
    if (this.#role === 'view') return this.#build(this.minValues, 0);
    return (this.#min ??= this.#build(this.minValues, 0));
  }

  /** `control.max`: fields in stored order; built on first use, then the same object (a view builds anew). */
  get max(): Readonly<Record<string, unknown>> {
    if (this.#role === 'view') return this.#build(this.maxValues, 1);
    return (this.#max ??= this.#build(this.maxValues, 1));
  }

  /**
   * `control.min` as a new document every call, nothing cached (a reader's own: a snapshot a storage
   * keeps then stays one that later commits can overwrite, see {@link MinMaxSnapshot.kept}).
   *
   * @returns the document.
   */
  newMin(): Record<string, unknown> {
    return this.names === undefined ? cloneDocument(this.#min) : this.#build(this.minValues, 0);
  }

  /**
   * `control.max` as a new document every call (see {@link MinMaxSnapshot.newMin}).
   *
   * @returns the document.
   */
  newMax(): Record<string, unknown> {
    return this.names === undefined ? cloneDocument(this.#max) : this.#build(this.maxValues, 1);
  }

  /** One side of a flat or slots capture (a capture of documents has both built): each field that has a value. */
  #build(values: ReadonlyArray<unknown> | undefined, side: number): Record<string, unknown> {
    const names = this.names as ReadonlyArray<string>;
    const doc: Record<string, unknown> = {};
    const { kinds, numbers } = this;
    for (let i = 0; i < names.length; i++) {
      const value =
        kinds === undefined || numbers === undefined
          ? values?.[i]
          : slotValue(kinds[i] as number, numbers[2 * i + side] as number);
      if (value !== undefined) defineField(doc, names[i] as string, value);
    }
    return doc;
  }
}

/** A copy of a captured document sharing nothing mutable with it. */
function cloneDocument(doc: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  return cloneBsonValue(doc) as Record<string, unknown>;
}
