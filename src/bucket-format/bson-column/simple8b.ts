/**
 * MongoDB's Simple-8b variant (docs/bsoncolumn.md §2): selector tables and the block reader.
 *
 * A block is a little-endian uint64. Bits 0–3 are the selector; selectors 7 and 8 use bits 4–7 as an
 * extension nibble (trailing-zero compression); selector 15 is RLE. A slot whose bits are all ones is a
 * missing value ("skip").
 *
 * @packageDocumentation
 */
import { invalidColumn } from './bsoncolumn-util.js';

/** Marks a missing (skipped) slot. Slot values are unsigned, so -1 can never be a real value. */
export const kMissing = -1n;

/** Selector of an RLE block. */
export const kRleSelector = 15;
/** Entries per RLE group: an RLE block stands for `(k + 1) * 120` entries. */
export const kRleMultiplier = 120;

/** Extension types of §2.7, in the encoder's priority order. */
export const ExtensionType = { base: 0, seven: 1, eightSmall: 2, eightLarge: 3 } as const;

/** Bits of the trailing-zero count per extension type. */
export const kTrailingZeroBits: Readonly<Uint8Array> = Uint8Array.of(0, 4, 4, 5);
/** Trailing zeros per unit of the count, per extension type. */
export const kTrailingZeroMultiplier: Readonly<Uint8Array> = Uint8Array.of(0, 1, 4, 4);
/** Largest count of trailing zeros per extension type (in bits). */
export const kTrailingZeroMax: Readonly<Uint8Array> = Uint8Array.of(0, 15, 60, 124);
/** Bits available for slots per extension type. */
export const kDataBits: Readonly<Uint8Array> = Uint8Array.of(60, 56, 56, 56);
/** Smallest slot value width per extension type (a missing value needs this much). */
export const kMinDataBits: Readonly<Uint8Array> = Uint8Array.of(1, 2, 4, 4);

/**
 * Per extension type, the layouts ordered by capacity (entries per block), largest first:
 * `[entries, selector, extension nibble, value bits]` packed as 4 numbers.
 */
export const kLayoutsByType: ReadonlyArray<ReadonlyArray<number>> = [
  // base: selector s holds `entries` values of `bits` bits; nibble 0.
  [
    60, 1, 0, 1, 30, 2, 0, 2, 20, 3, 0, 3, 15, 4, 0, 4, 12, 5, 0, 5, 10, 6, 0, 6, 8, 7, 0, 7, 7, 8, 0, 8, 6,
    9, 0, 10, 5, 10, 0, 12, 4, 11, 0, 15, 3, 12, 0, 20, 2, 13, 0, 30, 1, 14, 0, 60,
  ],
  // seven: selector 7, nibble 1..9.
  [
    9, 7, 1, 2, 8, 7, 2, 3, 7, 7, 3, 4, 6, 7, 4, 5, 5, 7, 5, 7, 4, 7, 6, 10, 3, 7, 7, 14, 2, 7, 8, 24, 1, 7,
    9, 52,
  ],
  // eight small: selector 8, nibble 1..7.
  [7, 8, 1, 4, 6, 8, 2, 5, 5, 8, 3, 7, 4, 8, 4, 10, 3, 8, 5, 14, 2, 8, 6, 24, 1, 8, 7, 52],
  // eight large: selector 8, nibble 8..13.
  [6, 8, 8, 4, 5, 8, 9, 6, 4, 8, 10, 9, 3, 8, 11, 13, 2, 8, 12, 23, 1, 8, 13, 51],
];

// Decoder layout table indexed by (selector << 4 | nibble). A count of 0 marks an invalid combination.
const kLayoutCount = new Uint8Array(256);
const kLayoutStart = new Uint8Array(256);
const kLayoutWidth = new Uint8Array(256);
const kLayoutType = new Uint8Array(256);
// The all-ones slot of each layout as halves, precomputed so the reader builds no masks per slot.
const kLayoutMaskLo = new Uint32Array(256);
const kLayoutMaskHi = new Uint32Array(256);

function initLayouts(): void {
  for (let type = 0; type < 4; type++) {
    const table = kLayoutsByType[type] ?? [];
    for (let i = 0; i < table.length; i += 4) {
      const entries = table[i] ?? 0;
      const selector = table[i + 1] ?? 0;
      const nibble = table[i + 2] ?? 0;
      const width = (table[i + 3] ?? 0) + (kTrailingZeroBits[type] ?? 0);
      const start = selector === 7 || selector === 8 ? 8 : 4;
      // Base selectors other than 7 and 8 use bits 4-7 for values: every nibble maps to the same layout.
      const nibbles = type === 0 && start === 4 ? [...Array(16).keys()] : [nibble];
      for (const x of nibbles) {
        const idx = (selector << 4) | x;
        kLayoutCount[idx] = entries;
        kLayoutStart[idx] = start;
        kLayoutWidth[idx] = width;
        kLayoutType[idx] = type;
        kLayoutMaskLo[idx] = width >= 32 ? 0xffffffff : (1 << width) - 1;
        kLayoutMaskHi[idx] = width > 32 ? (1 << (width - 32)) - 1 : 0;
      }
    }
  }
}
initLayouts();

/**
 * Reader over the Simple-8b blocks of one control byte, for one stream. Plain mutable state; reused for
 * every control of the stream so decoding allocates no reader objects.
 *
 * Slots are extracted from the block's two 32-bit halves and returned as halves in
 * {@link Simple8bReader.lo} / {@link Simple8bReader.hi} (see `Int64Halves`): decoding 64-bit streams
 * allocates nothing per value. 128-bit streams additionally get the value as a bigint in
 * {@link Simple8bReader.wideValue}, since trailing-zero shifts can move it past bit 63.
 */
export class Simple8bReader {
  /** Source buffer. */
  bytes: Uint8Array = new Uint8Array(0);
  /** View over `bytes`. */
  view: DataView = new DataView(new ArrayBuffer(0));
  /** Offset of the next block not yet loaded. */
  nextBlockPos = 0;
  /** Blocks of the current control not yet loaded. */
  blocksLeft = 0;
  /** Bits 0..31 of the current block. */
  blockLo = 0;
  /** Bits 32..63 of the current block. */
  blockHi = 0;
  // The current block's layout, copied out of the tables once per block rather than looked up per slot.
  #width = 0;
  #bitPos = 0;
  #maskLo = 0;
  #maskHi = 0;
  #type = 0;
  /** Next slot of the current block. */
  slot = 0;
  /** Slots in the current block (0 when no block is loaded or it was RLE). */
  slots = 0;
  /** Entries left in the current RLE block. */
  rleLeft = 0;
  /** Whether the last value decoded in this stream was missing; RLE repeats it. */
  missing = false;
  /** Low half of the last value decoded in a 64-bit stream. */
  lo = 0;
  /** High half of the last value decoded in a 64-bit stream. */
  hi = 0;
  /** The last value decoded of a 128-bit stream. */
  wideValue = 0n;
  /** `true` for 128-bit streams: trailing-zero shifts are not taken mod 64. */
  wide = false;

  /**
   * Start reading `blockCount` blocks at `pos`; the caller has checked that they are in bounds.
   *
   * @param bytes - column bytes.
   * @param view - view over `bytes`.
   * @param pos - offset of the first block.
   * @param blockCount - 1..16.
   */
  start(bytes: Uint8Array, view: DataView, pos: number, blockCount: number): void {
    this.bytes = bytes;
    this.view = view;
    this.nextBlockPos = pos;
    this.blocksLeft = blockCount;
    this.slot = 0;
    this.slots = 0;
    this.rleLeft = 0;
  }

  /** Make the previous value 0, as after a literal. */
  resetPrevious(): void {
    this.missing = false;
    this.lo = 0;
    this.hi = 0;
    this.wideValue = 0n;
  }

  /** Whether entries remain in this control. Every block holds at least one entry. */
  hasNext(): boolean {
    return this.slot < this.slots || this.rleLeft > 0 || this.blocksLeft > 0;
  }

  /**
   * Decode the next slot into {@link Simple8bReader.lo}/{@link Simple8bReader.hi} (and
   * {@link Simple8bReader.wideValue} for 128-bit streams); call only when {@link Simple8bReader.hasNext}
   * is true.
   *
   * @returns `false` for a missing entry.
   * @throws TimeseriesError on an invalid selector.
   */
  next(): boolean {
    if (this.rleLeft > 0) {
      this.rleLeft--;
      return !this.missing;
    }
    if (this.slot >= this.slots) {
      this.#loadBlock();
      if (this.rleLeft > 0) {
        this.rleLeft--;
        return !this.missing;
      }
    }
    const pos = this.#bitPos;
    this.#bitPos = pos + this.#width;
    this.slot++;
    // raw = (block >> pos) & mask, on halves; pos + width <= 64.
    let lo: number;
    let hi: number;
    if (pos >= 32) {
      lo = this.blockHi >>> (pos - 32);
      hi = 0;
    } else {
      lo = ((this.blockLo >>> pos) | (this.blockHi << (32 - pos))) >>> 0;
      hi = this.blockHi >>> pos;
    }
    const maskLo = this.#maskLo;
    const maskHi = this.#maskHi;
    lo = (lo & maskLo) >>> 0;
    hi = (hi & maskHi) >>> 0;
    if (lo === maskLo && hi === maskHi) {
      this.missing = true;
      return false;
    }
    this.missing = false;
    const type = this.#type;
    if (type === 0) {
      if (this.wide) this.wideValue = (BigInt(hi) << 32n) | BigInt(lo);
      this.lo = lo;
      this.hi = hi;
      return true;
    }
    // Trailing-zero layouts: value = (raw >> tzBits) << (count * multiplier).
    const tzBits = kTrailingZeroBits[type] ?? 0;
    const count = lo & ((1 << tzBits) - 1);
    const shift = count * (kTrailingZeroMultiplier[type] ?? 0);
    lo = ((lo >>> tzBits) | (hi << (32 - tzBits))) >>> 0;
    hi >>>= tzBits;
    if (this.wide) {
      this.wideValue = BigInt.asUintN(128, ((BigInt(hi) << 32n) | BigInt(lo)) << BigInt(shift));
      return true;
    }
    // 64-bit streams take the shift mod 64, as the server's uint64 shift does.
    const k = shift % 64;
    if (k >= 32) {
      hi = (lo << (k - 32)) >>> 0;
      lo = 0;
    } else if (k > 0) {
      hi = ((hi << k) | (lo >>> (32 - k))) >>> 0;
      lo = (lo << k) >>> 0;
    }
    this.lo = lo;
    this.hi = hi;
    return true;
  }

  #loadBlock(): void {
    const pos = this.nextBlockPos;
    this.blockLo = this.view.getUint32(pos, true);
    this.blockHi = this.view.getUint32(pos + 4, true);
    this.nextBlockPos = pos + 8;
    this.blocksLeft--;
    const low = this.bytes[pos] ?? 0;
    const selector = low & 0x0f;
    if (selector === kRleSelector) {
      this.rleLeft = ((low >> 4) + 1) * kRleMultiplier;
      this.slot = 0;
      this.slots = 0;
      return;
    }
    const idx = (selector << 4) | (low >> 4);
    if (selector === 0 || kLayoutCount[idx] === 0) {
      throw invalidColumn(`invalid Simple-8b selector ${selector} (extension ${low >> 4}) at offset ${pos}`);
    }
    this.slot = 0;
    this.slots = kLayoutCount[idx] ?? 0;
    this.#width = kLayoutWidth[idx] ?? 0;
    this.#bitPos = kLayoutStart[idx] ?? 0;
    this.#maskLo = kLayoutMaskLo[idx] ?? 0;
    this.#maskHi = kLayoutMaskHi[idx] ?? 0;
    this.#type = kLayoutType[idx] ?? 0;
  }
}
