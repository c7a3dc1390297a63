/**
 * A streaming cursor over documents: `toArray()` and async iteration.
 *
 * The reader produces documents a bucket at a time, so a cursor pulls *batches* from its source and hands
 * their documents out one by one: iterating costs one already-settled promise per document instead of a
 * trip through a chain of async generators (which dominated a full scan before), and `toArray()` takes
 * whole batches. A cursor over single documents (the raw buckets view) is the same with batches of one.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';

/** Produces the batches of one iteration; a batch may be empty. */
export type BatchSource<T> = () => AsyncIterable<ReadonlyArray<T>>;

/**
 * Runs each pull of a batch from the source (the reads a MongoDB `getMore` does): it may refuse the pull
 * by throwing, or count it as a call in flight. A collection's guard refuses once the collection was
 * dropped (`NamespaceNotFound`) or its engine closed (`Interrupted`), as the server kills the cursors of
 * a dropped collection; it runs once per batch, never per document.
 *
 * @typeParam R - what the pull returns.
 */
export type BatchGuard = <R>(pull: () => Promise<R>) => Promise<R>;

async function* oneByOne<T>(source: AsyncIterable<T>): AsyncGenerator<ReadonlyArray<T>> {
  for await (const doc of source) yield [doc];
}

const kDone: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * Hands out the documents of a batch source one at a time. `return()` (a `break` out of `for await`)
 * closes the source, so a storage cursor behind it stops reading.
 */
class BatchIterator<T> implements AsyncIterator<T, undefined> {
  readonly #source: AsyncIterator<ReadonlyArray<T>>;
  readonly #guard: BatchGuard | undefined;
  #batch: ReadonlyArray<T> = [];
  #next = 0;
  #finished = false;

  constructor(source: AsyncIterator<ReadonlyArray<T>>, guard: BatchGuard | undefined) {
    this.#source = source;
    this.#guard = guard;
  }

  /**
   * The next batch from the source, through the guard. A refused pull closes the source (its storage
   * cursor stops reading) and rejects with the guard's error; the iterator is finished.
   */
  async #pull(): Promise<IteratorResult<ReadonlyArray<T>>> {
    const guard = this.#guard;
    if (guard === undefined) return await this.#source.next();
    try {
      return await guard(() => this.#source.next());
    } catch (error) {
      if (!this.#finished) {
        this.#finished = true;
        await this.#source.return?.();
      }
      throw error;
    }
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#next < this.#batch.length)
      return Promise.resolve({ done: false, value: this.#batch[this.#next++] as T });
    return this.#refill();
  }

  async #refill(): Promise<IteratorResult<T, undefined>> {
    // The batch is dropped before waiting, so the documents already handed out are not kept alive.
    this.#batch = [];
    this.#next = 0;
    while (!this.#finished) {
      const result = await this.#pull();
      if (result.done === true) {
        this.#finished = true;
        break;
      }
      if (result.value.length > 0) {
        this.#batch = result.value;
        this.#next = 1;
        return { done: false, value: result.value[0] as T };
      }
    }
    return kDone;
  }

  async return(): Promise<IteratorResult<T, undefined>> {
    this.#batch = [];
    this.#next = 0;
    if (!this.#finished) {
      this.#finished = true;
      await this.#source.return?.();
    }
    return kDone;
  }

  /** The rest of the current batch, then every later batch: for `toArray()`. */
  async drainInto(out: T[]): Promise<void> {
    for (let i = this.#next; i < this.#batch.length; i++) out.push(this.#batch[i] as T);
    this.#batch = [];
    this.#next = 0;
    while (!this.#finished) {
      const result = await this.#pull();
      if (result.done === true) {
        this.#finished = true;
        return;
      }
      for (const doc of result.value) out.push(doc);
    }
  }
}

/**
 * A cursor over the results of `find`/`aggregate` (and over raw bucket documents). Iterate it once, with
 * `for await` or `toArray()`.
 *
 * @typeParam T - the document type.
 * @example
 * ```ts
 * for await (const doc of coll.find({ sensor: 'a' })) console.log(doc);
 * ```
 */
export class Cursor<T> implements AsyncIterable<T> {
  readonly #batches: BatchSource<T>;
  readonly #guard: BatchGuard | undefined;
  #consumed = false;

  /**
   * @param source - produces the documents when the cursor is first iterated: one by one, or in
   *   batches when `shape` is `'batches'` (the reader: one batch per bucket).
   * @param shape - what `source` yields.
   * @param guard - runs each pull of a batch (see {@link BatchGuard}); its error rejects the iteration.
   * @defaultValue shape `'documents'`; guard none (every pull runs)
   */
  constructor(source: () => AsyncIterable<T>, shape?: 'documents', guard?: BatchGuard);
  constructor(source: BatchSource<T>, shape: 'batches', guard?: BatchGuard);
  constructor(
    source: (() => AsyncIterable<T>) | BatchSource<T>,
    shape: 'documents' | 'batches' = 'documents',
    guard?: BatchGuard,
  ) {
    this.#guard = guard;
    switch (shape) {
      case 'documents':
        this.#batches = () => oneByOne((source as () => AsyncIterable<T>)());
        break;
      case 'batches':
        this.#batches = source as BatchSource<T>;
        break;
      default: {
        const never: never = shape;
        throw new TimeseriesError('BadValue', `unknown cursor source shape ${String(never)}`);
      }
    }
  }

  #open(): BatchIterator<T> {
    if (this.#consumed)
      throw new TimeseriesError('CursorClosed', 'Cursor is closed: it was already iterated');
    this.#consumed = true;
    return new BatchIterator(this.#batches()[Symbol.asyncIterator](), this.#guard);
  }

  /**
   * Iterate the documents.
   *
   * @returns an async iterator; its `next()` rejects with the guard's error once the guard refuses.
   * @throws a `TimeseriesError` (`CursorClosed`) if the cursor was already iterated.
   */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.#open();
  }

  /**
   * All remaining documents.
   *
   * @returns the documents, in cursor order.
   * @throws a `TimeseriesError` (`CursorClosed`) if the cursor was already iterated; the guard's error
   *   when it refuses a pull.
   */
  async toArray(): Promise<T[]> {
    const out: T[] = [];
    await this.#open().drainInto(out);
    return out;
  }
}
