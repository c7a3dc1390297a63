/**
 * MongoDB's Simple-8b variant (BSONCOLUMN.md §2): selector tables and the block reader.
 *
 * A block is a little-endian uint64. Bits 0–3 are the selector; selectors 7 and 8 use bits 4–7 as an
 * extension nibble (trailing-zero compression); selector 15 is RLE. A slot whose bits are all ones is a
 * missing value ("skip").
 *
 * @packageDocumentation
 */
import { invalidColumn } from './bsoncolumn-util.js';
import { wrapUint64 } from '../../util/int64.js';

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
// BigInt constants precomputed once so the block reader converts nothing per slot.
const kLayoutMask: bigint[] = new Array<bigint>(256).fill(0n);

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
        kLayoutMask[idx] = (1n << BigInt(width)) - 1n;
      }
    }
  }
}
initLayouts();

const kShift: ReadonlyArray<bigint> = Array.from({ length: 129 }, (_, i) => BigInt(i));

/**
 * Reader over the Simple-8b blocks of one control byte, for one stream. Plain mutable state; reused for
 * every control of the stream so decoding allocates no reader objects.
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
  /** Current block. */
  block = 0n;
  /** Layout index of the current block (`selector << 4 | nibble`). */
  layout = 0;
  /** Next slot of the current block. */
  slot = 0;
  /** Slots in the current block (0 when no block is loaded or it was RLE). */
  slots = 0;
  /** Entries left in the current RLE block. */
  rleLeft = 0;
  /** The last value decoded in this stream (may be {@link kMissing}); RLE repeats it. */
  prev = 0n;
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

  /** Whether entries remain in this control. Every block holds at least one entry. */
  hasNext(): boolean {
    return this.slot < this.slots || this.rleLeft > 0 || this.blocksLeft > 0;
  }

  /**
   * The next slot value, or {@link kMissing}; call only when {@link Simple8bReader.hasNext} is true.
   *
   * @returns the unsigned (zigzagged) value, or {@link kMissing}.
   * @throws TimeseriesError on an invalid selector.
   */
  next(): bigint {
    if (this.rleLeft > 0) {
      this.rleLeft--;
      return this.prev;
    }
    if (this.slot >= this.slots) this.#loadBlock();
    if (this.rleLeft > 0) {
      this.rleLeft--;
      return this.prev;
    }
    const idx = this.layout;
    const width = kLayoutWidth[idx] ?? 0;
    const mask = kLayoutMask[idx] ?? 0n;
    const raw = (this.block >> (kShift[(kLayoutStart[idx] ?? 0) + this.slot * width] ?? 0n)) & mask;
    this.slot++;
    let value: bigint;
    if (raw === mask) {
      value = kMissing;
    } else {
      const type = kLayoutType[idx] ?? 0;
      if (type === 0) {
        value = raw;
      } else {
        const tzBits = kTrailingZeroBits[type] ?? 0;
        const count = Number(raw & ((1n << (kShift[tzBits] ?? 0n)) - 1n));
        let shift = count * (kTrailingZeroMultiplier[type] ?? 0);
        if (!this.wide) shift %= 64;
        value = raw >> (kShift[tzBits] ?? 0n);
        value = this.wide
          ? BigInt.asUintN(128, value << (kShift[shift] ?? 0n))
          : wrapUint64(value << (kShift[shift] ?? 0n));
      }
    }
    this.prev = value;
    return value;
  }

  #loadBlock(): void {
    const pos = this.nextBlockPos;
    this.block = this.view.getBigUint64(pos, true);
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
    this.layout = idx;
    this.slot = 0;
    this.slots = kLayoutCount[idx] ?? 0;
  }
}
