/**
 * The Simple-8b encoder with MongoDB's selector choice and RLE rules (docs/bsoncolumn.md §2.7), so that the
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
import { invariant } from '../../util/invariant.js';
import type { Int64Halves } from '../../util/int64.js';
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
 * appended with {@link Simple8bBuilder.skip}. The encoder uses it for 128-bit streams; 64-bit streams use
 * the faster {@link Simple8bBuilder64}, which tests check against this one.
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
   * Become a copy of `other`'s state (pending values, widths, RLE), keeping this builder's sink: the column
   * builder flushes such a copy to compute an intermediate binary without touching the real state.
   *
   * @param other - a builder of the same width.
   */
  copyFrom(other: Simple8bBuilder): void {
    this.trackSum = other.trackSum;
    this.lastWritten = other.lastWritten;
    this.blocksWritten = other.blocksWritten;
    const n = other.#count;
    for (let i = 0; i < n; i++) this.#pending[i] = other.#pending[i] ?? 0n;
    this.#bits.set(other.#bits.subarray(0, n * kTypes));
    this.#maxBits.set(other.#maxBits);
    this.#possible.set(other.#possible);
    this.#count = n;
    this.#lastValidType = other.#lastValidType;
    this.#rleCount = other.#rleCount;
    this.#lastForRle = other.#lastForRle;
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
    // The server starts a new builder after a literal: a type ruled out before it is possible again.
    this.#resetWidths();
  }

  #appendValue(value: bigint, tryRle: boolean): boolean {
    // RLE may start only where the decoder would repeat the same value (see docs/bsoncolumn.md §2.7 pitfall).
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
      for (;;) {
        if (this.#count === 0) {
          // Nothing pending: every type is possible again (see Simple8bBuilder64's #appendAfterBlocks).
          this.#resetWidths();
          if (!this.#fits(bits)) return false;
          break;
        }
        this.#writeBlock(this.#lastValidType);
        if (this.#fits(bits)) break;
      }
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

/** Receives the blocks written by a {@link Simple8bBuilder64}. */
export interface Simple8bSink64 {
  /**
   * One block, in stream order.
   *
   * The halves come as int32s (`| 0`; `>>> 0` reads the unsigned half): a small integer is passed to a
   * call as it is, where a half of 2^31 or more was a heap number per block when the call is not inlined.
   *
   * @param lo - bits 0..31 of the block.
   * @param hi - bits 32..63 of the block.
   * @param entries - entries it holds (RLE blocks: 120..1920).
   * @param sumLo - low half of the int64 sum (mod 2^64) of the unzigzagged non-missing values in the
   *   block when the builder's `trackSum` is set, 0 otherwise; doubles need it to know the last value.
   * @param sumHi - high half of that sum.
   */
  writeBlock64(lo: number, hi: number, entries: number, sumLo: number, sumHi: number): void;
}

/**
 * Per extension type and number of pending values, the offset in `kLayoutsByType[type]` of the largest
 * layout holding at most that many: looked up once per block instead of scanning the layouts.
 */
const kLayoutForCount = new Uint8Array(kTypes * (kMaxPending + 1));
for (let type = 0; type < kTypes; type++) {
  const layouts = kLayoutsByType[type] ?? [];
  for (let count = 1; count <= kMaxPending; count++) {
    let li = 0;
    while ((layouts[li] ?? 0) > count) li += 4;
    kLayoutForCount[type * (kMaxPending + 1) + count] = li;
  }
}

/**
 * The blocks (5 numbers each: the halves, entries, the sum's halves) that flushing `r` repeats of a value
 * writes after its RLE blocks, keyed by {@link remainderKey}; shared by all builders, bounded.
 */
const remainderBlocks = new Map<number, number[]>();
const kMaxCachedRemainders = 4096;
const kMaxCachedValue = 1 << 20;

/**
 * Cache key of an RLE remainder: the value (small values only; missing is 0, `v` is `v + 1`), the count
 * and whether sums are reported. -1 when the value is not cached.
 */
function remainderKey(lo: number, hi: number, remainder: number, trackSum: boolean): number {
  let value: number;
  if (isMissing(lo, hi)) value = 0;
  else if (hi === 0 && lo < kMaxCachedValue) value = lo + 1;
  else return -1;
  return (value * kRleMultiplier + remainder) * 2 + (trackSum ? 1 : 0);
}

/** A missing slot in {@link Simple8bBuilder64}: both halves all ones (no storable value is all ones). */
const kMissingHalf = 0xffffffff;

/**
 * Whether `(hi:lo)` is the missing marker: one int32 compare, where comparing each half with 0xffffffff
 * (outside int32) compares doubles.
 */
function isMissing(lo: number, hi: number): boolean {
  return (lo & hi) === -1;
}

/** Make `pending` (a builder's pending halves) at least `n` long, with zeros: its only growth. */
function roomFor(pending: number[], n: number): void {
  while (pending.length < n) pending.push(0);
}

function ctz32(x: number): number {
  return 31 - Math.clz32(x & -x);
}

/** Bit length of `((hi:lo) >> k) + 1` for `k` in 1..63; the value is not all ones. */
function bitLengthShiftedPlus1(lo: number, hi: number, k: number): number {
  let slo: number;
  let shi: number;
  if (k < 32) {
    slo = ((lo >>> k) | (hi << (32 - k))) >>> 0;
    shi = hi >>> k;
  } else {
    slo = hi >>> (k - 32);
    shi = 0;
  }
  slo = (slo + 1) >>> 0;
  if (slo === 0) shi++;
  return shi !== 0 ? 64 - Math.clz32(shi) : 32 - Math.clz32(slo);
}

// Widths per extension type packed one byte per type (type t in bits 8t..8t+7; a width is at most 64):
// the per-value bookkeeping of Simple8bBuilder64 then stays in registers instead of four typed-array
// slots per value.
const kMinWidths = packWidths(
  kMinDataBits[0] ?? 0,
  kMinDataBits[1] ?? 0,
  kMinDataBits[2] ?? 0,
  kMinDataBits[3] ?? 0,
);
const kAllTypes = (1 << kTypes) - 1;

function packWidths(w0: number, w1: number, w2: number, w3: number): number {
  return w0 | (w1 << 8) | (w2 << 16) | (w3 << 24);
}

function widthOf(widths: number, type: number): number {
  return (widths >>> (8 * type)) & 0xff;
}

/**
 * The per-type maximum of two packed widths, all four lanes at once (widths are below 128, so setting
 * each lane's top bit before subtracting leaves it set exactly where `a >= b`, with no borrow between
 * lanes).
 */
function maxWidths(a: number, b: number): number {
  // `b | 0` types both operands as int32, so that the subtraction is an int32 one that wraps: with an
  // operand of unknown type, TurboFan subtracts doubles (the difference overflows int32) and converts back.
  const aGreaterOrEqual = Math.imul((((a | 0x80808080) - (b | 0)) & 0x80808080) >>> 7, 0xff);
  return (a & aGreaterOrEqual) | (b & ~aGreaterOrEqual);
}

/**
 * Per number of values n (1..kMaxPending + 1), the largest width each type's slots can have, packed:
 * `floor(kDataBits / n) - kTrailingZeroBits`, or 0 when none fits (every width is at least 1).
 */
const kWidthLimits = new Int32Array(kMaxPending + 2);
for (let n = 1; n <= kMaxPending + 1; n++) {
  let limits = 0;
  for (let t = 0; t < kTypes; t++) {
    const limit = Math.floor((kDataBits[t] ?? 0) / n) - (kTrailingZeroBits[t] ?? 0);
    limits |= Math.max(limit, 0) << (8 * t);
  }
  kWidthLimits[n] = limits;
}

/**
 * The width a value needs in each extension type, packed, or -1 when it fits none.
 *
 * @param lo - low half of the value; the value is not all ones.
 * @param hi - high half.
 * @returns the packed widths, or -1.
 */
function valueWidths(lo: number, hi: number): number {
  // Widths of value + 1 (the all-ones slot is reserved for skips).
  const p1lo = (lo + 1) >>> 0;
  const p1hi = p1lo === 0 ? hi + 1 : hi;
  const plus1 = p1hi !== 0 ? 64 - Math.clz32(p1hi) : 32 - Math.clz32(p1lo);
  if (lo === 0 && hi === 0) return packWidths(plus1, plus1, plus1, plus1);
  const tz = lo !== 0 ? ctz32(lo) : 32 + ctz32(hi);
  const seven = tz === 15 ? bitLengthShiftedPlus1(lo, hi, 15) : plus1 - (tz < 15 ? tz : 15);
  // tz <= 63 below 2^64, so `4 * floor(min(tz, 60) / 4)` is `tz & ~3` (60..63 all give 60), and
  // eightLarge's cap of 124 never applies.
  const tz4 = tz & ~3;
  const eightSmall = tz === 60 ? bitLengthShiftedPlus1(lo, hi, 60) : plus1 - tz4;
  const eightLarge = plus1 - tz4;
  const widths = packWidths(plus1, seven, eightSmall, eightLarge);
  if (plus1 <= (kDataBits[0] ?? 0)) return widths;
  for (let t = 1; t < kTypes; t++)
    if (widthOf(widths, t) + (kTrailingZeroBits[t] ?? 0) <= (kDataBits[t] ?? 0)) return widths;
  return -1;
}

/** The last block {@link packBlock} packed: its halves and the halves of its delta sum. */
const packed = { lo: 0, hi: 0, sumLo: 0, sumHi: 0 };

/**
 * Pack one block of `type` from the pending values (halves interleaved) at `from`, of which `count` are left: as many as the
 * type's largest layout holding at most `count` allows. The block (and, when `trackSum` is set, the sum
 * of its unzigzagged values) goes to {@link packed}.
 *
 * @returns the number of values the block holds.
 */
function packBlock(
  pending: ReadonlyArray<number>,
  from: number,
  count: number,
  type: number,
  trackSum: boolean,
): number {
  const layouts = kLayoutsByType[type] ?? [];
  const li = kLayoutForCount[type * (kMaxPending + 1) + count] ?? 0;
  const entries = layouts[li] ?? 0;
  const selector = layouts[li + 1] ?? 0;
  const nibble = layouts[li + 2] ?? 0;
  const tzBits = kTrailingZeroBits[type] ?? 0;
  const mult = kTrailingZeroMultiplier[type] ?? 0;
  const tzMax = kTrailingZeroMax[type] ?? 0;
  const width = (layouts[li + 3] ?? 0) + tzBits;
  // The all-ones slot of this width (a skip), as halves; width is 2..60.
  const onesLo = width >= 32 ? kMissingHalf : ((1 << width) - 1) >>> 0;
  const onesHi = width > 32 ? (1 << (width - 32)) - 1 : 0;
  let offset = selector === 7 || selector === 8 ? 8 : 4;
  let wordLo = selector | (nibble << 4);
  let wordHi = 0;
  if (type === ExtensionType.base && packBase32(pending, from, entries, width, offset, wordLo, trackSum)) {
    return entries;
  }
  let sumLo = 0;
  let sumHi = 0;
  for (let i = from; i < from + entries; i++, offset += width) {
    let slo = (pending[2 * i] ?? 0) >>> 0;
    let shi = (pending[2 * i + 1] ?? 0) >>> 0;
    if (isMissing(slo, shi)) {
      slo = onesLo;
      shi = onesHi;
    } else {
      if (trackSum) {
        // sum += unzigzag(value), modulo 2^64.
        const sign = -(slo & 1);
        const dlo = (((slo >>> 1) | (shi << 31)) ^ sign) >>> 0;
        const dhi = ((shi >>> 1) ^ sign) >>> 0;
        const lo = (sumLo + dlo) >>> 0;
        sumHi = (sumHi + dhi + (lo < sumLo ? 1 : 0)) >>> 0;
        sumLo = lo;
      }
      if (type !== ExtensionType.base && (slo !== 0 || shi !== 0)) {
        // slot = ((v >> (count * mult)) << tzBits) | count.
        const tz = slo !== 0 ? ctz32(slo) : 32 + ctz32(shi);
        const zeros = Math.floor(Math.min(tz, tzMax) / mult);
        const k = zeros * mult;
        if (k >= 32) {
          slo = shi >>> (k - 32);
          shi = 0;
        } else if (k > 0) {
          slo = ((slo >>> k) | (shi << (32 - k))) >>> 0;
          shi >>>= k;
        }
        // tzBits is 4 or 5, and the shifted value has at most 56 - tzBits bits.
        shi = ((shi << tzBits) | (slo >>> (32 - tzBits))) >>> 0;
        slo = ((slo << tzBits) | zeros) >>> 0;
      }
    }
    // word |= slot << offset; offset + width <= 64, so nothing of the slot falls off the top.
    if (offset < 32) {
      wordLo |= slo << offset;
      wordHi |= (slo >>> (32 - offset)) | (shi << offset);
    } else {
      wordHi |= slo << (offset - 32);
    }
  }
  packed.lo = wordLo | 0;
  packed.hi = wordHi | 0;
  packed.sumLo = sumLo | 0;
  packed.sumHi = sumHi | 0;
  return entries;
}

/**
 * {@link packBlock} of a base-type block whose values are all below 2^32 (no skip: a skip's high half is
 * all ones), the usual block of a stream of small deltas: no slot is shifted for trailing zeros, and the
 * delta sum (each value unzigzags to an int32, at most 60 of them) is exact in a double. Fills
 * {@link packed} (the sum only when `trackSum` is set, else 0) and returns `true`; `false`, having filled
 * nothing, when a value is not below 2^32.
 */
function packBase32(
  pending: ReadonlyArray<number>,
  from: number,
  entries: number,
  width: number,
  offset: number,
  wordLo: number,
  trackSum: boolean,
): boolean {
  let lo = wordLo;
  let hi = 0;
  let sum = 0;
  for (let i = from; i < from + entries; i++, offset += width) {
    if ((pending[2 * i + 1] ?? 0) !== 0) return false;
    const slo = pending[2 * i] ?? 0;
    // The value unzigzagged, as an int32.
    sum += (slo >>> 1) ^ -(slo & 1);
    if (offset < 32) {
      // offset is at least 4 (the selector's bits come first).
      lo |= slo << offset;
      hi |= slo >>> (32 - offset);
    } else hi |= slo << (offset - 32);
  }
  packed.lo = lo | 0;
  packed.hi = hi | 0;
  packed.sumLo = trackSum ? sum | 0 : 0;
  packed.sumHi = trackSum ? Math.floor(sum / 4294967296) | 0 : 0;
  return true;
}

/**
 * The Simple-8b builder for 64-bit streams: the same selector choice and RLE rules as
 * {@link Simple8bBuilder}, with values held as two unsigned 32-bit halves in typed arrays instead of
 * `bigint`s (see {@link Int64Halves}). Encoding doubles, integers and dates spends most of its time here,
 * and bigints made it allocate several heap numbers per value. The bigint builder stays for 128-bit
 * streams and as the reference this one is tested against.
 */
export class Simple8bBuilder64 {
  /** Where blocks go; replaceable (the double re-scaling trial writes to a sink that only records). */
  sink: Simple8bSink64;
  /** When set, blocks report the sum of their deltas to the sink (doubles need it). */
  trackSum = false;
  /** Low half of the last slot value written in any block of this stream: what the decoder's RLE repeats. */
  lastWrittenLo = 0;
  /** High half of {@link Simple8bBuilder64.lastWrittenLo}. */
  lastWrittenHi = 0;
  /** Blocks written so far. */
  blocksWritten = 0;

  // Pending values as halves, value i at [2i] (low) and [2i + 1] (high), stored as int32 (`| 0`, read
  // back with `>>> 0`); (kMissingHalf, kMissingHalf) is a skip. A plain array of small integers (4 bytes
  // each): a builder lives as long as its column's open bucket, a typed array costs about 260 bytes of heap
  // whatever it holds, and a stream's blocks mostly hold a few values. Grown only by `roomFor`, so that
  // every store is an in-bounds store of a small integer: stores that grew the array at its end, and
  // doubles copied in from a parked record, gave each store site several handlers for one array kind
  // (megamorphic: a call per value appended).
  #pending: number[] = [];
  // Per extension type (packed), the largest width among the pending values.
  #maxWidths = kMinWidths;
  // Bit t set: type t can still hold all pending values.
  #possible = kAllTypes;
  // #maxWidths with the value #fits last accepted.
  #fittingMaxWidths = kMinWidths;
  #count = 0;
  #lastValidType = 0;
  #rleCount = 0;
  #rleLo = 0;
  #rleHi = 0;
  // Set while #flushRle records the blocks of a remainder for remainderBlocks.
  #recording: number[] | undefined = undefined;

  /** @param sink - receives the blocks. */
  constructor(sink: Simple8bSink64) {
    this.sink = sink;
  }

  /**
   * Make this builder empty again, continuing the stream position of `from` (the encoder restarts a
   * double stream after blocks whose scale drops, and tries re-scalings on a scratch builder; reusing
   * builders avoids allocating their tables each time), or as a new builder when `from` is omitted.
   *
   * @param sink - receives the blocks.
   * @param trackSum - whether blocks report their delta sums.
   * @param from - the builder whose `lastWritten` and `blocksWritten` to continue from.
   * @returns this builder.
   */
  reset(sink: Simple8bSink64, trackSum: boolean, from?: Simple8bBuilder64): this {
    this.sink = sink;
    this.trackSum = trackSum;
    this.lastWrittenLo = from?.lastWrittenLo ?? 0;
    this.lastWrittenHi = from?.lastWrittenHi ?? 0;
    this.blocksWritten = from?.blocksWritten ?? 0;
    this.#count = 0;
    this.#lastValidType = 0;
    this.#rleCount = 0;
    this.#rleLo = 0;
    this.#rleHi = 0;
    this.#maxWidths = kMinWidths;
    this.#possible = kAllTypes;
    return this;
  }

  /**
   * Continue a stream whose last written block ended with `(hi:lo)` and left nothing pending (a reopened
   * column, right before a run of RLE blocks or after a literal): what the decoder's RLE repeats, and what
   * a new RLE run may start on.
   *
   * @param lo - low half of that block's last slot value (both halves all ones for a missing slot).
   * @param hi - high half.
   */
  resumeAfterBlock(lo: number, hi: number): void {
    this.reset(this.sink, false);
    this.lastWrittenLo = lo;
    this.lastWrittenHi = hi;
    this.#rleLo = lo;
    this.#rleHi = hi;
  }

  /**
   * Become a copy of `other`'s state (pending values, widths, RLE), keeping this builder's sink: the column
   * builder flushes such a copy to compute an intermediate binary without touching the real state.
   *
   * @param other - the builder to copy.
   */
  copyFrom(other: Simple8bBuilder64): void {
    this.trackSum = other.trackSum;
    this.lastWrittenLo = other.lastWrittenLo;
    this.lastWrittenHi = other.lastWrittenHi;
    this.blocksWritten = other.blocksWritten;
    const n = other.#count;
    const pending = this.#pending;
    const from = other.#pending;
    roomFor(pending, 2 * n);
    for (let i = 0; i < 2 * n; i++) pending[i] = (from[i] ?? 0) | 0;
    this.#maxWidths = other.#maxWidths;
    this.#possible = other.#possible;
    this.#fittingMaxWidths = other.#fittingMaxWidths;
    this.#count = n;
    this.#lastValidType = other.#lastValidType;
    this.#rleCount = other.#rleCount;
    this.#rleLo = other.#rleLo;
    this.#rleHi = other.#rleHi;
  }

  /** How many numbers {@link Simple8bBuilder64.parkInto} writes. */
  get parkedLength(): number {
    return 12 + 2 * this.#count;
  }

  /**
   * Record this builder's state (everything but its sink) into `record` from index `at`, for
   * {@link Simple8bBuilder64.unparkFrom} (see `BSONColumnBuilder.parkInto`). Not while a remainder is being
   * recorded (never between two calls).
   *
   * @param record - receives the numbers.
   * @param at - the first index to write.
   * @returns the index after the last one written.
   */
  parkInto(record: number[], at: number): number {
    record[at] = this.trackSum ? 1 : 0;
    record[at + 1] = this.lastWrittenLo;
    record[at + 2] = this.lastWrittenHi;
    record[at + 3] = this.blocksWritten;
    record[at + 4] = this.#maxWidths;
    record[at + 5] = this.#possible;
    record[at + 6] = this.#fittingMaxWidths;
    record[at + 7] = this.#lastValidType;
    record[at + 8] = this.#rleCount;
    record[at + 9] = this.#rleLo;
    record[at + 10] = this.#rleHi;
    const n = 2 * this.#count;
    record[at + 11] = n;
    at += 12;
    const pending = this.#pending;
    for (let i = 0; i < n; i++) record[at++] = pending[i] as number;
    return at;
  }

  /**
   * Become the builder {@link Simple8bBuilder64.parkInto} recorded at `at`, keeping this builder's sink.
   *
   * @param record - the numbers.
   * @param at - where {@link Simple8bBuilder64.parkInto} started writing.
   * @returns the index after the recorded state.
   */
  unparkFrom(record: ReadonlyArray<number>, at: number): number {
    this.trackSum = record[at] === 1;
    this.lastWrittenLo = record[at + 1] as number;
    this.lastWrittenHi = record[at + 2] as number;
    this.blocksWritten = record[at + 3] as number;
    this.#maxWidths = record[at + 4] as number;
    this.#possible = record[at + 5] as number;
    this.#fittingMaxWidths = record[at + 6] as number;
    this.#lastValidType = record[at + 7] as number;
    this.#rleCount = record[at + 8] as number;
    this.#rleLo = record[at + 9] as number;
    this.#rleHi = record[at + 10] as number;
    const n = record[at + 11] as number;
    at += 12;
    const pending = this.#pending;
    roomFor(pending, n);
    for (let i = 0; i < n; i++) pending[i] = (record[at++] as number) | 0;
    this.#count = n / 2;
    return at;
  }

  /** Number of pending values (not counting RLE repeats). */
  get pendingCount(): number {
    return this.#count;
  }

  /** Number of RLE repeats not yet written. */
  get rleCount(): number {
    return this.#rleCount;
  }

  /**
   * Pending value `i` (`0..pendingCount + rleCount - 1`; indices past the pending values give the RLE
   * value) into `out`.
   *
   * @param i - 0-based index.
   * @param out - receives the halves.
   * @returns `false` for a missing entry.
   */
  pendingAt(i: number, out: Int64Halves): boolean {
    if (i < this.#count) {
      out.lo = (this.#pending[2 * i] ?? 0) >>> 0;
      out.hi = (this.#pending[2 * i + 1] ?? 0) >>> 0;
    } else {
      out.lo = this.#rleLo;
      out.hi = this.#rleHi;
    }
    return !isMissing(out.lo, out.hi);
  }

  /**
   * Whether a builder {@link Simple8bBuilder64.reset | reset} from this one and given the pending values
   * again, in order, would end up exactly as this one is (same pending values, widths and types, no block
   * written). So it is when values are pending (then none is held for RLE) and the last is not 0: the
   * pending values fit one block, so no prefix of them writes one; and the reset builder can start RLE
   * only on leading zeros, which the last value ends, putting the repeats back as pending values.
   */
  get replaysUnchanged(): boolean {
    const last = this.#count - 1;
    return last >= 0 && (this.#pending[2 * last] !== 0 || this.#pending[2 * last + 1] !== 0);
  }

  /** Whether the value RLE repeats is a missing entry. */
  get rleIsMissing(): boolean {
    return isMissing(this.#rleLo, this.#rleHi);
  }

  /**
   * Append one value.
   *
   * @param lo - low half of the unsigned zigzagged value.
   * @param hi - high half.
   * @returns `false` when it cannot be stored in Simple-8b (the caller writes a literal).
   */
  append(lo: number, hi: number): boolean {
    if (isMissing(lo, hi)) {
      // 2^64 - 1 fits no selector. It would also read as a skip here; the bigint builder ends RLE first.
      if (this.#rleCount > 0) this.#endRle();
      return false;
    }
    return this.#appendValue(lo, hi, true);
  }

  /** Append a missing value. */
  skip(): void {
    this.#appendValue(kMissingHalf, kMissingHalf, true);
  }

  /**
   * Append `values[from, to)` (each below 2^32, as int32) as {@link Simple8bBuilder64.append} would, up to
   * and including the first value that writes a block: the caller learns of each block (its
   * `blocksWritten` moves) before the values after it go in. Stops before a value that would start an RLE
   * run or meet an open one (the caller appends that one by `append`). One loop with the state in locals,
   * for the encoder's runs of small deltas: most values only join the pending block, and the one that
   * writes a block is appended here too, without going back through `append` to find again what the loop
   * knows (its widths, that it fits no open block).
   *
   * @param values - the values, `>>> 0` read.
   * @param from - first index.
   * @param to - end index.
   * @returns the index of the first value not appended.
   */
  appendFitting(values: Int32Array, from: number, to: number): number {
    if (this.#rleCount > 0) return from;
    const pending = this.#pending;
    // An RLE run may start only on an empty block, on the value the decoder repeats.
    const rleOpen =
      this.#rleHi === 0 && this.#rleLo === this.lastWrittenLo && this.#rleHi === this.lastWrittenHi;
    const rleLo = this.#rleLo;
    // Loop variables typed as int32 (`| 0`): started from a parameter, whose type TurboFan does not know,
    // the index and the count were doubles across the loop (converted at each use and after each block).
    let count = this.#count | 0;
    let max = this.#maxWidths;
    let possible = this.#possible;
    let lastValidType = this.#lastValidType;
    let i = from | 0;
    const end = to | 0;
    for (; i < end; i++) {
      const lo = (values[i] as number) >>> 0;
      if (count === 0 && rleOpen && lo === rleLo) break;
      // #fits, on locals: the first still possible type whose widths hold the block with this value.
      const own = valueWidths(lo, 0);
      const widths = maxWidths(max, own);
      const limits = kWidthLimits[count + 1] ?? 0;
      let t = 0;
      while (t < kTypes) {
        if ((possible & (1 << t)) !== 0) {
          if (widthOf(widths, t) <= widthOf(limits, t)) break;
          possible &= ~(1 << t);
        }
        t++;
      }
      if (t === kTypes) {
        // None (every type is ruled out, as #fits rules them out): the rest of `#appendValue`.
        this.#count = count;
        this.#maxWidths = max;
        this.#fittingMaxWidths = max;
        this.#possible = possible;
        this.#lastValidType = lastValidType;
        this.#appendAfterBlocks(lo, 0, own, true);
        return i + 1;
      }
      lastValidType = t;
      if (2 * count + 2 > pending.length) roomFor(pending, 2 * count + 2);
      pending[2 * count] = lo | 0;
      pending[2 * count + 1] = 0;
      count++;
      max = widths;
    }
    this.#count = count;
    this.#maxWidths = max;
    this.#fittingMaxWidths = max;
    this.#possible = possible;
    this.#lastValidType = lastValidType;
    return i;
  }

  /**
   * Append `(hi:lo)`, of `widths`, which fits no open block (no RLE run is open): write blocks until it
   * fits, then, when `tryRle` allows, start an RLE run on it if the decoder would repeat it, else make it
   * pending.
   */
  #appendAfterBlocks(lo: number, hi: number, widths: number, tryRle: boolean): void {
    for (;;) {
      if (this.#count === 0) {
        // Nothing pending: every type is possible again. A type ruled out by values already written must
        // not make an empty block (its layout for no value held entries that were never pending).
        this.#possible = kAllTypes;
        this.#maxWidths = kMinWidths;
        // The callers pass widths `valueWidths` found some type for.
        invariant(this.#fits(widths), 2408, 'a value no Simple-8b block holds');
        break;
      }
      this.#writeBlock(this.#lastValidType);
      if (this.#fits(widths)) break;
    }
    if (tryRle && this.#count === 0 && lo === this.#rleLo && hi === this.#rleHi) {
      this.#rleCount = 1;
      return;
    }
    this.#pushPending(lo, hi);
  }

  /**
   * Append `(hi:lo)`, or a missing value when both halves are all ones, `n` times: {@link Simple8bBuilder64.append} or
   * {@link Simple8bBuilder64.skip} each time, except that once an RLE run of that value is open the rest only add to its
   * count (a reopened column replays its RLE blocks, up to 1920 entries each).
   *
   * @param lo - low half.
   * @param hi - high half.
   * @param n - repeats.
   * @returns `false` when the value cannot be stored in Simple-8b.
   */
  appendRun(lo: number, hi: number, n: number): boolean {
    for (let k = 0; k < n; k++) {
      if (this.#rleCount > 0 && lo === this.#rleLo && hi === this.#rleHi) {
        this.#rleCount += n - k;
        return true;
      }
      if (isMissing(lo, hi)) this.skip();
      else if (!this.#appendValue(lo, hi, true)) return false;
    }
    return true;
  }

  /** Write everything pending, RLE included. */
  flush(): void {
    // Nothing is pending while an RLE run is open (a run starts only on an empty builder).
    if (this.#rleCount > 0) this.#flushRle();
    while (this.#count > 0) this.#writeBlock(this.#lastValidType);
    // As the server does: RLE may only start on 0 after a flush. lastWritten keeps the decoder's view.
    this.#rleLo = 0;
    this.#rleHi = 0;
    this.#lastValidType = 0;
  }

  /**
   * Write to `sink` the blocks {@link Simple8bBuilder64.flush} would write, without changing this builder
   * (the column builder's intermediate binaries: no copy of the state to flush). Delta sums are not
   * reported (0).
   *
   * @param sink - receives the blocks.
   * @returns `false`, having written nothing, when an open RLE run's remainder blocks are not cached yet
   *   (the caller then flushes a copy, which caches them).
   */
  writePendingTo(sink: Simple8bSink64): boolean {
    if (this.#rleCount > 0) {
      const remainder = this.#rleCount % kRleMultiplier;
      const cached = remainderBlocks.get(remainderKey(this.#rleLo, this.#rleHi, remainder, this.trackSum));
      // Nothing else is pending while a run is open.
      if (cached === undefined || this.#count > 0) return false;
      let groups = Math.floor(this.#rleCount / kRleMultiplier);
      while (groups > 0) {
        const k = Math.min(groups, 16);
        groups -= k;
        sink.writeBlock64(((k - 1) << 4) | kRleSelector, 0, k * kRleMultiplier, 0, 0);
      }
      for (let i = 0; i < cached.length; i += 5) {
        sink.writeBlock64(cached[i] ?? 0, cached[i + 1] ?? 0, cached[i + 2] ?? 0, 0, 0);
      }
      return true;
    }
    const type = this.#lastValidType;
    for (let from = 0; from < this.#count;) {
      const entries = packBlock(this.#pending, from, this.#count - from, type, false);
      sink.writeBlock64(packed.lo, packed.hi, entries, 0, 0);
      from += entries;
    }
    return true;
  }

  /**
   * Flush an open RLE run: its RLE blocks, then the remainder (fewer than 120 repeats) as ordinary blocks.
   * The remainder's blocks depend only on the repeated value and the count (nothing else is pending, and
   * a type ruled out for the value could not hold it anyway), so they are cached: a column in a run
   * (dates at a fixed interval, a constant) flushes one for every intermediate binary, and packing up to
   * 119 values one by one was most of that call's cost.
   */
  #flushRle(): void {
    const lo = this.#rleLo;
    const hi = this.#rleHi;
    const remainder = this.#rleCount % kRleMultiplier;
    const key = remainderKey(lo, hi, remainder, this.trackSum);
    const cached = key < 0 ? undefined : remainderBlocks.get(key);
    if (cached === undefined) {
      const record = key >= 0 && remainderBlocks.size < kMaxCachedRemainders;
      if (record) this.#recording = [];
      this.#endRle();
      while (this.#count > 0) this.#writeBlock(this.#lastValidType);
      if (record && this.#recording !== undefined) remainderBlocks.set(key, this.#recording);
      this.#recording = undefined;
      return;
    }
    this.#rleCount -= remainder;
    this.#endRle();
    for (let i = 0; i < cached.length; i += 5) {
      this.blocksWritten++;
      this.sink.writeBlock64(
        cached[i] ?? 0,
        cached[i + 1] ?? 0,
        cached[i + 2] ?? 0,
        cached[i + 3] ?? 0,
        cached[i + 4] ?? 0,
      );
    }
    this.lastWrittenLo = lo;
    this.lastWrittenHi = hi;
    // As after the last block the uncached path writes.
    if (cached.length > 0) {
      this.#maxWidths = kMinWidths;
      this.#possible = kAllTypes;
    }
  }

  /** After a literal the decoder's previous Simple-8b value is 0 again. */
  resetAfterLiteral(): void {
    this.lastWrittenLo = 0;
    this.lastWrittenHi = 0;
    this.#rleLo = 0;
    this.#rleHi = 0;
    // The server starts a new builder after a literal: a type ruled out before it is possible again.
    this.#possible = kAllTypes;
    this.#maxWidths = kMinWidths;
  }

  #appendValue(lo: number, hi: number, tryRle: boolean): boolean {
    const sameAsRle = lo === this.#rleLo && hi === this.#rleHi;
    // RLE may start only where the decoder would repeat the same value (see docs/bsoncolumn.md §2.7 pitfall).
    if (
      tryRle &&
      sameAsRle &&
      (this.#count === 0 || this.#rleCount > 0) &&
      this.#rleLo === this.lastWrittenLo &&
      this.#rleHi === this.lastWrittenHi
    ) {
      this.#rleCount++;
      return true;
    }
    if (this.#rleCount > 0) this.#endRle();
    // A skip needs no width of its own.
    const widths = isMissing(lo, hi) ? 0 : valueWidths(lo, hi);
    if (widths < 0) return false;
    if (!this.#fits(widths)) {
      this.#appendAfterBlocks(lo, hi, widths, tryRle);
      return true;
    }
    this.#pushPending(lo, hi);
    return true;
  }

  /** Make `(hi:lo)` the next pending value, with the widths #fits accepted it with. */
  #pushPending(lo: number, hi: number): void {
    const p = this.#count++;
    roomFor(this.#pending, 2 * p + 2);
    this.#pending[2 * p] = lo | 0;
    this.#pending[2 * p + 1] = hi | 0;
    this.#maxWidths = this.#fittingMaxWidths;
  }

  /**
   * Whether the pending values and one more of `widths` fit a block of a still possible type. The first
   * such type becomes the last valid type; the types before it are ruled out until the next block.
   */
  #fits(widths: number): boolean {
    const max = maxWidths(this.#maxWidths, widths);
    const limits = kWidthLimits[this.#count + 1] ?? 0;
    for (let t = 0; t < kTypes; t++) {
      if ((this.#possible & (1 << t)) === 0) continue;
      if (widthOf(max, t) <= widthOf(limits, t)) {
        this.#lastValidType = t;
        this.#fittingMaxWidths = max;
        return true;
      }
      this.#possible &= ~(1 << t);
    }
    return false;
  }

  /** Write one block of `type` holding as many pending values as its largest fitting layout allows. */
  #writeBlock(type: number): void {
    const pending = this.#pending;
    const entries = packBlock(pending, 0, this.#count, type, this.trackSum);
    const { lo: wordLo, hi: wordHi, sumLo, sumHi } = packed;
    const lastLo = (pending[2 * entries - 2] ?? 0) >>> 0;
    const lastHi = (pending[2 * entries - 1] ?? 0) >>> 0;
    // Drop the written values from the front. Usually none or one remain: a plain loop is cheaper than
    // `copyWithin` builtin calls, and recomputing their widths cheaper than keeping every value's.
    const left = this.#count - entries;
    let max = kMinWidths;
    for (let j = 0; j < left; j++) {
      const vlo = pending[2 * (entries + j)] ?? 0;
      const vhi = pending[2 * (entries + j) + 1] ?? 0;
      pending[2 * j] = vlo;
      pending[2 * j + 1] = vhi;
      if (!isMissing(vlo, vhi)) max = maxWidths(max, valueWidths(vlo >>> 0, vhi >>> 0));
    }
    this.#maxWidths = max;
    this.#possible = kAllTypes;
    this.#count = left;
    this.lastWrittenLo = lastLo;
    this.lastWrittenHi = lastHi;
    this.#rleLo = lastLo;
    this.#rleHi = lastHi;
    this.blocksWritten++;
    this.#recording?.push(wordLo, wordHi, entries, sumLo, sumHi);
    this.sink.writeBlock64(wordLo, wordHi, entries, sumLo, sumHi);
  }

  #endRle(): void {
    let groups = Math.floor(this.#rleCount / kRleMultiplier);
    const lo = this.#rleLo;
    const hi = this.#rleHi;
    const missing = isMissing(lo, hi);
    while (groups > 0) {
      const k = Math.min(groups, 16);
      groups -= k;
      let sumLo = 0;
      let sumHi = 0;
      if (this.trackSum && !missing) {
        // sum = k * 120 * unzigzag(value) mod 2^64: lo * m < 2^43 is exact, its carry goes to the high half.
        const m = k * kRleMultiplier;
        const sign = -(lo & 1);
        const dlo = (((lo >>> 1) | (hi << 31)) ^ sign) >>> 0;
        const dhi = ((hi >>> 1) ^ sign) >>> 0;
        const p = dlo * m;
        sumLo = p | 0;
        sumHi = (Math.imul(dhi, m) + Math.floor(p / 4294967296)) | 0;
      }
      this.blocksWritten++;
      this.sink.writeBlock64(((k - 1) << 4) | kRleSelector, 0, k * kRleMultiplier, sumLo, sumHi);
    }
    const remainder = this.#rleCount % kRleMultiplier;
    this.#rleCount = 0;
    // The remainder goes in as ordinary values that never restart RLE.
    this.#appendRepeated(lo, hi, remainder);
    this.#rleLo = 0;
    this.#rleHi = 0;
  }

  /**
   * `#appendValue(lo, hi, false)` `n` times (values that already fit a block, so their widths are valid),
   * with the widths computed once: flushing an RLE run appends up to 119 of them, and every intermediate
   * binary of a column in a run flushes one.
   */
  #appendRepeated(lo: number, hi: number, n: number): void {
    const widths = isMissing(lo, hi) ? 0 : valueWidths(lo, hi);
    for (let k = 0; k < n; k++) {
      while (!this.#fits(widths)) this.#writeBlock(this.#lastValidType);
      this.#pushPending(lo, hi);
    }
  }
}
