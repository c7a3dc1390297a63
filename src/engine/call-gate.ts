/**
 * The lifecycle of a handle (an engine, a collection): calls pass through its gate while it is open;
 * closing it refuses every later call and waits for the calls in flight, so that once a `drop()` or a
 * `close()` resolves nothing started through the handle can still write. MongoDB's counterpart is the
 * collection lock a drop takes in exclusive mode: it waits for the operations holding the lock and the
 * operations after it find the namespace gone.
 *
 * States:
 *
 * | state     | `run(call)`                         | `close()`                                   |
 * |-----------|-------------------------------------|---------------------------------------------|
 * | `open`    | runs it, counted in flight           | -> `closing`, resolves when none in flight  |
 * | `closing` | refused with the close's error       | the same promise                            |
 * | `closed`  | refused with the close's error       | the same (resolved) promise                 |
 *
 * @packageDocumentation
 */
import { Deferred } from '../util/deferred.js';

/** Where a {@link CallGate} is in its life (see the table in this file's header). */
export type CallGateState = 'open' | 'closing' | 'closed';

/**
 * Counts the calls in flight through a handle and closes it once: later calls are refused, the close
 * waits for the ones in flight.
 */
export class CallGate {
  #state: CallGateState = 'open';
  #inFlight = 0;
  #refusal: (() => Error) | undefined;
  #drained: Deferred<void> | undefined;
  #closed: Promise<void> | undefined;

  /** Where the gate is in its life. */
  get state(): CallGateState {
    return this.#state;
  }

  /**
   * Throw the close's error if the gate is no longer open (a synchronous call's check).
   *
   * @throws the error given to {@link CallGate.close}.
   */
  assertOpen(): void {
    if (this.#refusal !== undefined) throw this.#refusal();
  }

  /**
   * Run an asynchronous call through the gate.
   *
   * @param call - the call's work.
   * @returns what `call` returns.
   * @throws the error given to {@link CallGate.close} when the gate is closing or closed.
   */
  async run<T>(call: () => Promise<T>): Promise<T> {
    this.assertOpen();
    this.#inFlight++;
    try {
      return await call();
    } finally {
      this.#inFlight--;
      if (this.#inFlight === 0) this.#drained?.resolve();
    }
  }

  /**
   * Close the gate: refuse every later call with `refusal()` and wait for the calls in flight. Closing
   * again returns the first close's promise.
   *
   * @param refusal - the error each later call gets (built per call, so each has its own stack).
   * @returns a promise resolved once no call is in flight.
   */
  close(refusal: () => Error): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    this.#refusal = refusal;
    this.#state = 'closing';
    const drained = new Deferred<void>();
    this.#drained = drained;
    if (this.#inFlight === 0) drained.resolve();
    this.#closed = drained.promise.then(() => {
      this.#state = 'closed';
    });
    return this.#closed;
  }
}
