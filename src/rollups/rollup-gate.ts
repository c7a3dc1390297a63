/**
 * A collection's rollup gate: commits pass it shared (from before `prepareCommit` until their rollup
 * fold is done), recomputations and backfills hold it exclusive. Exclusive holders thus see buckets and
 * rollups agree: every bucket write that happened has been folded, and none is half way.
 *
 * Writer-preferring: once an exclusive holder waits, new commits wait behind it. This cannot deadlock
 * with the catalog: a commit that waits here has not prepared its batch yet, so a direct write run under
 * the exclusive gate (which waits only for prepared batches) never waits for it.
 *
 * Lock order: the gate is taken before any stripe lock and before a bucket's prepared slot.
 *
 * @packageDocumentation
 */

/** A shared holder's token (proves the gate was entered; pass it to {@link RollupGate.leave}). */
export interface GateToken {
  /** Brand. */
  readonly gate: RollupGate;
}

/** The gate. */
export class RollupGate {
  #shared = 0;
  #exclusive: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  readonly #token: GateToken = Object.freeze({ gate: this });

  /**
   * Enter shared. Synchronous when no exclusive holder waits or runs (the common case: no promise).
   *
   * @returns the token, or a promise of it.
   */
  enter(): GateToken | Promise<GateToken> {
    if (this.#exclusive === undefined) {
      this.#shared++;
      return this.#token;
    }
    return this.#enterLater();
  }

  async #enterLater(): Promise<GateToken> {
    while (this.#exclusive !== undefined) await this.#exclusive;
    this.#shared++;
    return this.#token;
  }

  /**
   * Leave shared.
   *
   * @param _token - the token from {@link RollupGate.enter}.
   */
  leave(_token: GateToken): void {
    this.#shared--;
    if (this.#shared === 0) this.#drained?.();
  }

  /**
   * Run `fn` alone: after the shared holders left, with new ones waiting.
   *
   * @param fn - the exclusive work.
   * @returns what `fn` returns.
   */
  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    while (this.#exclusive !== undefined) await this.#exclusive;
    let release!: () => void;
    this.#exclusive = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      if (this.#shared > 0) {
        await new Promise<void>((resolve) => {
          this.#drained = resolve;
        });
        this.#drained = undefined;
      }
      return await fn();
    } finally {
      this.#exclusive = undefined;
      release();
    }
  }
}
