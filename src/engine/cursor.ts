/**
 * A streaming cursor over documents (SPEC §2): `toArray()` and async iteration, pulling from its source
 * one document at a time.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';

/**
 * A cursor over the results of `find`/`aggregate`. Iterate it once, with `for await` or `toArray()`.
 *
 * @typeParam T - the document type.
 * @example
 * ```ts
 * for await (const doc of coll.find({ sensor: 'a' })) console.log(doc);
 * ```
 */
export class Cursor<T> implements AsyncIterable<T> {
  readonly #source: () => AsyncIterable<T>;
  #consumed = false;

  /**
   * @param source - produces the documents when the cursor is first iterated.
   */
  constructor(source: () => AsyncIterable<T>) {
    this.#source = source;
  }

  /**
   * Iterate the documents.
   *
   * @returns an async iterator.
   * @throws a `TimeseriesError` (`CursorClosed`) if the cursor was already iterated.
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    if (this.#consumed)
      throw new TimeseriesError('CursorClosed', 'Cursor is closed: it was already iterated');
    this.#consumed = true;
    return this.#source()[Symbol.asyncIterator]();
  }

  /**
   * All remaining documents.
   *
   * @returns the documents, in cursor order.
   */
  async toArray(): Promise<T[]> {
    const out: T[] = [];
    for await (const doc of this) out.push(doc);
    return out;
  }
}
