/**
 * A stripe's idle buckets in the order they became idle (least recently idle first), as a list threaded
 * through the buckets themselves: marking a bucket idle after each commit and taking it out when a batch
 * is staged cost a few pointer writes, with no hashing and no map table to grow, shrink or rehash. The
 * links are the bucket's `idle`, `idlePrev` and `idleNext` fields (a bucket belongs to one stripe).
 *
 * @packageDocumentation
 */
import type { Bucket } from './bucket.js';

/** Idle buckets, least recently idle first. */
export class IdleList {
  #head: Bucket | undefined = undefined;
  #tail: Bucket | undefined = undefined;
  #size = 0;

  /** Number of idle buckets. */
  get size(): number {
    return this.#size;
  }

  /** The least recently idle bucket, if any. */
  first(): Bucket | undefined {
    return this.#head;
  }

  /**
   * Record that `bucket` became idle now: it goes to the end (moved there if it was idle already).
   *
   * @param bucket - a bucket of this list's stripe.
   */
  push(bucket: Bucket): void {
    if (bucket.idle) this.delete(bucket);
    bucket.idle = true;
    bucket.idlePrev = this.#tail;
    bucket.idleNext = undefined;
    if (this.#tail === undefined) this.#head = bucket;
    else this.#tail.idleNext = bucket;
    this.#tail = bucket;
    this.#size++;
  }

  /**
   * Take `bucket` out of the list (no effect if it is not idle).
   *
   * @param bucket - a bucket of this list's stripe.
   */
  delete(bucket: Bucket): void {
    if (!bucket.idle) return;
    const { idlePrev: prev, idleNext: next } = bucket;
    if (prev === undefined) this.#head = next;
    else prev.idleNext = next;
    if (next === undefined) this.#tail = prev;
    else next.idlePrev = prev;
    bucket.idle = false;
    bucket.idlePrev = undefined;
    bucket.idleNext = undefined;
    this.#size--;
  }
}
