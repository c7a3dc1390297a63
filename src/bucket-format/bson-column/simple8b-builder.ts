/**
 * The Simple-8b encoder with MongoDB's selector choice and RLE rules (BSONCOLUMN.md §2.7), so that the
 * blocks are byte-identical to the server's.
 *
 * @packageDocumentation
 */
import {
  ExtensionType,
  kDataBits,
  kLayoutsByType,
  kMinDataBits,
  kMissing,
  kRleMultiplier,
  kRleSelector,
  kTrailingZeroBits,
  kTrailingZeroMax,
  kTrailingZeroMultiplier,
} from './simple8b.js';
import { unzigzag } from './simple8b-type-util.js';
import { wrapUint64 } from '../../util/int64.js';

/** Receives the blocks written by a {@link Simple8bBuilder}. */
export interface Simple8bSink {
  /**
   * One block, in stream order.
   *
   * @param word - the 64-bit block.
   * @param entries - entries it holds (RLE blocks: 120..1920).
   * @param deltaSum - sum of the unzigzagged non-missing values in the block, when the builder's
   *   `trackSum` is set (0 otherwise); doubles need it to know the last value written.
   */
  writeBlock(word: bigint, entries: number, deltaSum: bigint): void;
}

/** Largest number of pending values: 60 one-bit slots, plus the value being tested. */
const kMaxPending = 64;
const kTypes = 4;
const k2Pow64 = 1n << 64n;
const kMax64 = k2Pow64 - 1n;
const kMax128 = (1n << 128n) - 1n;
const kMask32 = 0xffffffffn;

/**
 * Number of significant bits of a non-negative bigint (0 for 0).
 *
 * @param v - value.
 * @returns bit length.
 */
export function bitLength(v: bigint): number {
  let n = 0;
  while (v > kMask32) {
    v >>= 32n;
    n += 32;
  }
  return n + 32 - Math.clz32(Number(v));
}

/**
 * Number of trailing zero bits of a positive bigint.
 *
 * @param v - value, > 0.
 * @returns trailing zeros.
 */
export function trailingZeros(v: bigint): number {
  let n = 0;
  let low = Number(v & kMask32);
  while (low === 0) {
    v >>= 32n;
    n += 32;
    low = Number(v & kMask32);
  }
  return n + 31 - Math.clz32(low & -low);
}

/**
 * Simple-8b builder for one stream. Values are unsigned (already zigzagged) bigints; missing values are
 * appended with {@link Simple8bBuilder.skip}.
 *
 * State: pending values not yet in a block, per extension type the largest width among them and whether
 * the type can still hold them, the type that last held them all, and the RLE state.
 */
export class Simple8bBuilder {
  /** Where blocks go; replaceable (the double re-scaling trial writes to a sink that only records). */
  sink: Simple8bSink;
  /** `true` for 128-bit streams. */
  readonly wide: boolean;
  /** When set, blocks report the sum of their deltas to the sink (doubles need it). */
  trackSum = false;
  /** The last slot value written in any block of this stream: what the decoder's RLE repeats. */
  lastWritten = 0n;
  /** Blocks written so far. */
  blocksWritten = 0;

  readonly #pending: bigint[] = new Array<bigint>(kMaxPending).fill(0n);
  // Per pending value and extension type, the width it needs: index `p * 4 + type`.
  readonly #bits = new Uint8Array(kMaxPending * kTypes);
  readonly #maxBits = new Uint8Array(kTypes);
  readonly #possible = new Uint8Array(kTypes);
  readonly #scratchBits = new Uint8Array(kTypes);
  #count = 0;
  #lastValidType = 0;
  #rleCount = 0;
  #lastForRle = 0n;

  /**
   * @param sink - receives the blocks.
   * @param wide - `true` for a 128-bit stream.
   */
  constructor(sink: Simple8bSink, wide: boolean) {
    this.sink = sink;
    this.wide = wide;
    this.#resetWidths();
  }

  /**
   * Make this builder empty again, for reuse instead of allocating a new one (the encoder restarts a
   * stream after every block of doubles whose scale drops, and tries re-scalings on a scratch builder).
   *
   * @param sink - receives the blocks.
   * @param from - `trackSum`, and the stream position to continue from.
   * @returns this builder.
   */
  reset(
    sink: Simple8bSink,
    from: { readonly trackSum: boolean; readonly lastWritten: bigint; readonly blocksWritten: number },
  ): this {
    this.sink = sink;
    this.trackSum = from.trackSum;
    this.lastWritten = from.lastWritten;
    this.blocksWritten = from.blocksWritten;
    this.#count = 0;
    this.#lastValidType = 0;
    this.#rleCount = 0;
    this.#lastForRle = 0n;
    this.#resetWidths();
    return this;
  }

  /** Number of pending values (not counting RLE repeats). */
  get pendingCount(): number {
    return this.#count;
  }

  /** Number of RLE repeats not yet written. */
  get rleCount(): number {
    return this.#rleCount;
  }

  /** The value RLE repeats. */
  get lastForRle(): bigint {
    return this.#lastForRle;
  }

  /**
   * Pending value `i` ({@link kMissing} for a skip).
   *
   * @param i - 0-based index.
   * @returns the value.
   */
  pendingAt(i: number): bigint {
    return this.#pending[i] ?? 0n;
  }

  /**
   * Append one value.
   *
   * @param value - unsigned zigzagged value.
   * @returns `false` when it cannot be stored in Simple-8b (the caller writes a literal).
   */
  append(value: bigint): boolean {
    return this.#appendValue(value, true);
  }

  /** Append a missing value. */
  skip(): void {
    this.#appendValue(kMissing, true);
  }

  /** Write everything pending, RLE included. */
  flush(): void {
    if (this.#rleCount > 0) this.#endRle();
    while (this.#count > 0) this.#writeBlock(this.#lastValidType);
    // As the server does: RLE may only start on 0 after a flush. lastWritten keeps the decoder's view.
    this.#lastForRle = 0n;
    this.#lastValidType = 0;
  }

  /** After a literal the decoder's previous Simple-8b value is 0 again. */
  resetAfterLiteral(): void {
    this.lastWritten = 0n;
    this.#lastForRle = 0n;
  }

  #appendValue(value: bigint, tryRle: boolean): boolean {
    // RLE may start only where the decoder would repeat the same value (see BSONCOLUMN.md §2.7 pitfall).
    if (
      tryRle &&
      (this.#count === 0 || this.#rleCount > 0) &&
      value === this.#lastForRle &&
      this.#lastForRle === this.lastWritten
    ) {
      this.#rleCount++;
      return true;
    }
    if (this.#rleCount > 0) this.#endRle();
    if (value === kMissing) this.#scratchBits.fill(0);
    else if (!this.#computeBits(value)) return false;
    const bits = this.#scratchBits;
    if (!this.#fits(bits)) {
      do this.#writeBlock(this.#lastValidType);
      while (!this.#fits(bits));
      if (tryRle && this.#count === 0 && value === this.#lastForRle) {
        this.#rleCount = 1;
        return true;
      }
    }
    this.#push(value, bits);
    return true;
  }

  /** Fill #scratchBits with the width `value` needs per extension type; `false` if it fits none. */
  #computeBits(value: bigint): boolean {
    if (value === (this.wide ? kMax128 : kMax64)) return false;
    const plus1 = bitLength(value + 1n);
    const tz = value === 0n ? 0 : trailingZeros(value);
    const bits = this.#scratchBits;
    bits[ExtensionType.base] = this.wide && value >= k2Pow64 ? bitLength(value) : plus1;
    bits[ExtensionType.seven] = tz === 15 ? bitLength((value >> 15n) + 1n) : plus1 - Math.min(tz, 15);
    bits[ExtensionType.eightSmall] =
      tz === 60 ? bitLength((value >> 60n) + 1n) : plus1 - 4 * Math.floor(Math.min(tz, 60) / 4);
    bits[ExtensionType.eightLarge] =
      this.wide && tz === 124
        ? bitLength((value >> 124n) + 1n)
        : plus1 - 4 * Math.floor(Math.min(tz, 124) / 4);
    if ((bits[0] ?? 0) <= (kDataBits[0] ?? 0)) return true;
    for (let t = 1; t < kTypes; t++)
      if ((bits[t] ?? 0) + (kTrailingZeroBits[t] ?? 0) <= (kDataBits[t] ?? 0)) return true;
    return false;
  }

  #fits(bits: Uint8Array): boolean {
    const n = this.#count + 1;
    for (let t = 0; t < kTypes; t++) {
      if (this.#possible[t] === 0) continue;
      const width = Math.max(this.#maxBits[t] ?? 0, bits[t] ?? 0) + (kTrailingZeroBits[t] ?? 0);
      if (width * n <= (kDataBits[t] ?? 0)) {
        this.#lastValidType = t;
        return true;
      }
      this.#possible[t] = 0;
    }
    return false;
  }

  #push(value: bigint, bits: Uint8Array): void {
    const p = this.#count++;
    this.#pending[p] = value;
    for (let t = 0; t < kTypes; t++) {
      const b = bits[t] ?? 0;
      this.#bits[p * kTypes + t] = b;
      if (b > (this.#maxBits[t] ?? 0)) this.#maxBits[t] = b;
    }
  }

  #resetWidths(): void {
    this.#maxBits.set(kMinDataBits);
    this.#possible.fill(1);
  }

  /** Write one block of `type` holding as many pending values as its largest fitting layout allows. */
  #writeBlock(type: number): void {
    const layouts = kLayoutsByType[type] ?? [];
    let li = 0;
    while ((layouts[li] ?? 0) > this.#count) li += 4;
    const entries = layouts[li] ?? 0;
    const selector = layouts[li + 1] ?? 0;
    const nibble = layouts[li + 2] ?? 0;
    const tzBits = kTrailingZeroBits[type] ?? 0;
    const width = (layouts[li + 3] ?? 0) + tzBits;
    const allOnes = (1n << BigInt(width)) - 1n;
    let offset = selector === 7 || selector === 8 ? 8 : 4;
    let word = BigInt(selector | (nibble << 4));
    let sum = 0n;
    for (let i = 0; i < entries; i++, offset += width) {
      const v = this.#pending[i] ?? 0n;
      let slot: bigint;
      if (v === kMissing) {
        slot = allOnes;
      } else {
        if (this.trackSum) sum += unzigzag(v);
        if (type === ExtensionType.base || v === 0n) {
          slot = v;
        } else {
          const mult = kTrailingZeroMultiplier[type] ?? 0;
          const count = Math.floor(Math.min(trailingZeros(v), kTrailingZeroMax[type] ?? 0) / mult);
          slot = ((v >> BigInt(count * mult)) << BigInt(tzBits)) | BigInt(count);
        }
      }
      word |= slot << BigInt(offset);
    }
    const last = this.#pending[entries - 1] ?? 0n;
    // Drop the written values from the front; at most 60 remain, so copying is cheap.
    this.#pending.copyWithin(0, entries, this.#count);
    this.#bits.copyWithin(0, entries * kTypes, this.#count * kTypes);
    this.#count -= entries;
    this.#resetWidths();
    for (let p = 0; p < this.#count; p++) {
      for (let t = 0; t < kTypes; t++) {
        const b = this.#bits[p * kTypes + t] ?? 0;
        if (b > (this.#maxBits[t] ?? 0)) this.#maxBits[t] = b;
      }
    }
    this.lastWritten = last;
    this.#lastForRle = last;
    this.blocksWritten++;
    this.sink.writeBlock(wrapUint64(word), entries, sum);
  }

  #endRle(): void {
    let groups = Math.floor(this.#rleCount / kRleMultiplier);
    const repeated = this.#lastForRle;
    while (groups > 0) {
      const k = Math.min(groups, 16);
      groups -= k;
      const sum =
        this.trackSum && repeated !== kMissing ? BigInt(k * kRleMultiplier) * unzigzag(repeated) : 0n;
      this.blocksWritten++;
      this.sink.writeBlock(BigInt(((k - 1) << 4) | kRleSelector), k * kRleMultiplier, sum);
    }
    let remainder = this.#rleCount % kRleMultiplier;
    this.#rleCount = 0;
    // The remainder goes in as ordinary values that never restart RLE.
    while (remainder-- > 0) this.#appendValue(repeated, false);
    this.#lastForRle = 0n;
  }
}
