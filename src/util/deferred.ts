/**
 * A promise with its settle functions exposed: the shared result of a write batch that one writer commits
 * and others wait on.
 *
 * @packageDocumentation
 */

/** The settled state of a {@link Deferred}. */
export type DeferredState = 'pending' | 'fulfilled' | 'rejected';

/**
 * A result that is settled from outside, with a promise made only for those who wait before it settles.
 *
 * Most write batches are committed by the writer that staged them and read right after: no waiter, no
 * promise. Creating the promise (and its settle functions) lazily saves that work on every commit.
 */
export class Deferred<T> {
  #state: DeferredState = 'pending';
  #value: T | undefined = undefined;
  #error: unknown = undefined;
  #promise: Promise<T> | undefined = undefined;
  #resolve: ((value: T) => void) | undefined = undefined;
  #reject: ((error: unknown) => void) | undefined = undefined;

  /**
   * A promise of the result: settled already if the deferred is; a rejection is marked handled so an
   * unobserved failure does not crash the process.
   */
  get promise(): Promise<T> {
    if (this.#promise === undefined) {
      switch (this.#state) {
        case 'fulfilled':
          this.#promise = Promise.resolve(this.#value as T);
          break;
        case 'rejected':
          // The reason is whatever the batch failed with (storage errors are not always Error instances).
          // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
          this.#promise = Promise.reject(this.#error);
          break;
        case 'pending':
          this.#promise = new Promise<T>((resolve, reject) => {
            this.#resolve = resolve;
            this.#reject = reject;
          });
          break;
      }
      this.#promise.catch(() => undefined);
    }
    return this.#promise;
  }

  /** Whether the deferred has been settled. */
  get state(): DeferredState {
    return this.#state;
  }

  /** The value once fulfilled, else `undefined`. */
  get value(): T | undefined {
    return this.#value;
  }

  /** The rejection reason once rejected, else `undefined`. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Fulfil (no effect once settled).
   *
   * @param value - the result.
   */
  resolve(value: T): void {
    if (this.#state !== 'pending') return;
    this.#state = 'fulfilled';
    this.#value = value;
    this.#resolve?.(value);
  }

  /**
   * Reject (no effect once settled).
   *
   * @param error - the failure.
   */
  reject(error: unknown): void {
    if (this.#state !== 'pending') return;
    this.#state = 'rejected';
    this.#error = error;
    this.#reject?.(error);
  }
}
