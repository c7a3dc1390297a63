/**
 * A promise with its settle functions exposed: the shared result of a write batch that one writer commits
 * and others wait on.
 *
 * @packageDocumentation
 */

/** The settled state of a {@link Deferred}. */
export type DeferredState = 'pending' | 'fulfilled' | 'rejected';

/** A promise that is settled from outside. */
export class Deferred<T> {
  /** The promise; a rejection is marked handled so an unobserved failure does not crash the process. */
  readonly promise: Promise<T>;
  #resolve!: (value: T) => void;
  #reject!: (error: unknown) => void;
  #state: DeferredState = 'pending';
  #error: unknown = undefined;

  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Waiters attach their own handlers; this one only prevents an unhandled-rejection crash when nobody
    // else waits (e.g. every caller of a shared batch already gave up).
    this.promise.catch(() => undefined);
  }

  /** Whether the deferred has been settled. */
  get state(): DeferredState {
    return this.#state;
  }

  /** The rejection reason once rejected, else `undefined`. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Fulfil the promise (no effect once settled).
   *
   * @param value - the result.
   */
  resolve(value: T): void {
    if (this.#state !== 'pending') return;
    this.#state = 'fulfilled';
    this.#resolve(value);
  }

  /**
   * Reject the promise (no effect once settled).
   *
   * @param error - the failure.
   */
  reject(error: unknown): void {
    if (this.#state !== 'pending') return;
    this.#state = 'rejected';
    this.#error = error;
    this.#reject(error);
  }
}
