/**
 * Bucket `_id` generation (docs/mongodb-behaviour.md §1.2, `generateBucketOID`).
 *
 * Bytes 0–3: the rounded bucket start in seconds since the epoch, as a 32-bit big-endian value (negative
 * or post-2106 seconds wrap modulo 2^32). Bytes 4–11: the 8 big-endian bytes of a process-wide 64-bit
 * counter, seeded at random and incremented by one for every bucket id.
 *
 * @packageDocumentation
 */
import { randomBytes } from 'node:crypto';

import { ObjectId } from 'bson';

/**
 * A source of bucket ids. One per process by default ({@link defaultBucketIdGenerator}); tests may make
 * their own with a fixed seed.
 */
export class BucketIdGenerator {
  /** High and low 32 bits of the 64-bit counter, kept as two numbers to avoid BigInt per id. */
  #hi: number;
  #lo: number;

  /**
   * @param seed - 8 bytes for the counter's initial value; random when omitted.
   */
  constructor(seed: Uint8Array = randomBytes(8)) {
    const view = new DataView(seed.buffer, seed.byteOffset, 8);
    this.#hi = view.getUint32(0);
    this.#lo = view.getUint32(4);
  }

  /** Re-seed the counter at random (after an id collision, as the server does). */
  reseed(): void {
    const view = new DataView(randomBytes(8).buffer);
    this.#hi = view.getUint32(0);
    this.#lo = view.getUint32(4);
  }

  /**
   * The next bucket id for a bucket starting at `roundedStartMs`.
   *
   * @param roundedStartMs - the rounded bucket start (`control.min.<time>`), epoch ms.
   * @returns a new ObjectId whose timestamp is the start in seconds.
   */
  next(roundedStartMs: number): ObjectId {
    // One scratch array for every id: js-bson's ObjectId copies the bytes it is made from (a fresh
    // array and a DataView per id were most of the 490 ns an id took).
    const bytes = idScratch;
    putUint32(bytes, 0, bucketIdSeconds(roundedStartMs));
    putUint32(bytes, 4, this.#hi);
    putUint32(bytes, 8, this.#lo);
    this.#lo = (this.#lo + 1) >>> 0;
    if (this.#lo === 0) this.#hi = (this.#hi + 1) >>> 0;
    return new ObjectId(bytes);
  }
}

/** The bytes {@link BucketIdGenerator.next} makes each id from. */
const idScratch = new Uint8Array(12);

/** Write `value` (unsigned 32-bit) big-endian at `at`. */
function putUint32(bytes: Uint8Array, at: number, value: number): void {
  bytes[at] = value >>> 24;
  bytes[at + 1] = (value >>> 16) & 0xff;
  bytes[at + 2] = (value >>> 8) & 0xff;
  bytes[at + 3] = value & 0xff;
}

/**
 * The 32-bit timestamp of a bucket `_id` for a start time: seconds since the epoch (floored), modulo 2^32.
 *
 * @param roundedStartMs - epoch ms.
 * @returns an unsigned 32-bit number.
 */
export function bucketIdSeconds(roundedStartMs: number): number {
  return Math.floor(roundedStartMs / 1000) >>> 0;
}

/**
 * An ObjectId with timestamp `seconds` and the remaining 8 bytes all `0x00` (`'min'`) or all `0xff`
 * (`'max'`): the bounds used by `_id` predicates on buckets (docs/mongodb-behaviour.md §10.3).
 *
 * @param seconds - the timestamp, an unsigned 32-bit number.
 * @param fill - `'min'` or `'max'`.
 * @returns the bound ObjectId.
 */
export function bucketIdBound(seconds: number, fill: 'min' | 'max'): ObjectId {
  const bytes = new Uint8Array(12).fill(fill === 'min' ? 0 : 0xff);
  new DataView(bytes.buffer).setUint32(0, seconds >>> 0);
  return new ObjectId(bytes);
}

/** The process-wide generator used by every catalog unless one is injected. */
export const defaultBucketIdGenerator: BucketIdGenerator = new BucketIdGenerator();
