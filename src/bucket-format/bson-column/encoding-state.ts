/**
 * The encoding state of one stream (the server's `BSONColumnBuilder::EncodingState`): turns elements into
 * literals and Simple-8b blocks under control bytes, with the server's choices so the bytes are identical
 * (docs/bsoncolumn.md §2.7, §3).
 *
 * @packageDocumentation
 */
import { InternalInvariantError } from '../../errors.js';
import { BsonType, kControlByteForScaleIndex, kMaxBlocksPerControl } from './bsoncolumn-util.js';
import { ByteWriter } from './byte-writer.js';
import { Simple8bBuilder, Simple8bBuilder64 } from './simple8b-builder.js';
import type { Simple8bSink, Simple8bSink64 } from './simple8b-builder.js';
import type { ScaledDouble } from './simple8b-type-util.js';
import {
  decodeDouble,
  encodeDouble,
  encodeObjectId,
  encodeString,
  highHalf,
  kMemoryAsInteger,
  kScaleMultipliers,
  mayEncodeAtSmallerScale,
  readUint128LE,
  scaleAndEncodeDouble,
  unzigzag64,
  zigzag128,
  zigzagDelta64,
  zigzagNumber,
} from './simple8b-type-util.js';
import type { Int64Halves } from '../../util/int64.js';
import { add64, sub64 } from '../../util/int64.js';
import { isInt32Number } from '../../util/bson-value.js';

function uses128(type: number): boolean {
  return (
    type === BsonType.string ||
    type === BsonType.code ||
    type === BsonType.binData ||
    type === BsonType.decimal128
  );
}

function usesDeltaOfDelta(type: number): boolean {
  return type === BsonType.date || type === BsonType.timestamp || type === BsonType.objectId;
}

// Scratch for the bits of a double (little-endian hosts, as every platform Node supports: word 0 is the
// low half), and for the bytes of a short previous value handed to a reader of bytes.
const f64 = new Float64Array(1);
const f64Words = new Uint32Array(f64.buffer);
const f64Ints = new Int32Array(f64.buffer);
const shortPrevious = new Uint8Array(8);

/**
 * An int32 view of a `Float64Array` (word `2i` is value `i`'s low half), made again only when the array
 * given is another: callers hand the same scratch array run after run.
 */
let wordsOfArray: Float64Array | undefined;
let words: Int32Array = new Int32Array(0);
function wordsOf(values: Float64Array): Int32Array {
  if (wordsOfArray !== values) {
    words = new Int32Array(values.buffer, values.byteOffset, 2 * values.length);
    wordsOfArray = values;
  }
  return words;
}

/** Scaled doubles below this in magnitude take {@link EncodingState}'s int32 path (deltas below 2^31). */
const kSmallScaled = 0x40000000;

/** What {@link encodeSmall} returns for a value the int32 path does not take (its values are at most 2^30). */
const kNotSmall = 0x7fffffff;

/**
 * `value` encoded at the scale multiplier `m` as `encodeDouble` encodes it (llround, exact at this scale,
 * not -0, which no scale holds), when that lies below 2^30 in magnitude: the int32 path's values.
 *
 * @returns the encoded int32, or {@link kNotSmall}.
 */
function encodeSmall(value: number, m: number): number {
  const y = value * m;
  if (!(y > -kSmallScaled && y < kSmallScaled)) return kNotSmall;
  const r = y < 0 ? -Math.round(-y) : Math.round(y);
  if (r / m !== value || (value === 0 && 1 / value < 0)) return kNotSmall;
  return r | 0;
}

/**
 * Per value of a run (`EncodingState.#smallRun`, `#appendInt32Run`): its zigzagged delta and its encoded
 * value (an int32's is itself). Longer runs are taken in pieces of this size.
 */
const kRunScratch = 64;
const runDeltas = new Int32Array(kRunScratch);
const runEncoded = new Int32Array(kRunScratch);

/**
 * Scratch results of the halves helpers, shared by every state: a column builder lives as long as its
 * open bucket, so per-state scratch objects multiply the catalog's heap. Each is used by one method only
 * and read into locals before any call that could re-enter a state (the double restart recurses through
 * #appendDouble), and no state's method runs inside another state's.
 */
const shared: {
  readonly scaled: ScaledDouble;
  readonly delta: Int64Halves;
  readonly block: Int64Halves;
  readonly pending: Int64Halves;
  readonly rescaled: Int64Halves;
} = {
  scaled: { lo: 0, hi: 0, scaleIndex: 0 },
  delta: { lo: 0, hi: 0 },
  block: { lo: 0, hi: 0 },
  pending: { lo: 0, hi: 0 },
  rescaled: { lo: 0, hi: 0 },
};

/** Little-endian uint32 at `at` (the stored previous value, which has no DataView of its own). */
function readUint32(b: Uint8Array, at: number): number {
  return ((b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16) | ((b[at + 3] ?? 0) << 24)) >>> 0;
}

/** Little-endian unsigned integer of the `n` (0..4) bytes at `at`. */
function readUintLE(b: Uint8Array, at: number, n: number): number {
  let v = 0;
  for (let i = n - 1; i >= 0; i--) v = v * 256 + (b[at + i] ?? 0);
  return v;
}

/** Write `v` (a uint32) little-endian at `at`. */
function writeUint32LE(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = v >>> 24;
}

/** The double whose bits are `(hi:lo)`. */
function doubleFromBits(lo: number, hi: number): number {
  f64Words[0] = lo;
  f64Words[1] = hi;
  return f64[0] ?? 0;
}

/** Little-endian double at `at`. */
function readFloat64(b: Uint8Array, at: number): number {
  return doubleFromBits(readUint32(b, at), readUint32(b, at + 4));
}

/** Sink for the double re-scaling trial: it only records that a block would have been written. */
class TrialSink implements Simple8bSink64 {
  #wrote = false;
  writeBlock64(): void {
    this.#wrote = true;
  }
  reset(): void {
    this.#wrote = false;
  }
  get wrote(): boolean {
    return this.#wrote;
  }
}
const trialSink = new TrialSink();

/**
 * Idle 64-bit builders for reuse, shared by every state: restarting a double stream after a block and
 * trying a re-scaling each need a fresh builder, and allocating one (64 pending slots and width tables) per
 * block dominated the encoder's profile. Each operation takes as many as it gives back, so the pool stays
 * at a few builders; per state, every double column of an open bucket kept an idle builder (about a third
 * of its heap). A builder is released only once nothing reads it any more, and no state's method runs
 * inside another state's.
 */
const spare64: Simple8bBuilder64[] = [];

/**
 * What {@link EncodingState.writeFlushTail} wrote: the blocks flushing the state would append to its
 * output, in a scratch writer shared by every state, and what they change in the output. Positions count
 * in the output followed by the scratch bytes. Read it before the next call.
 */
export interface FlushTail {
  /** The blocks (and any control bytes they open), to append after the state's output. */
  readonly bytes: ByteWriter;
  /** The new value of the state's open control byte (its `controlPos`), when it has one. */
  readonly openControl: number;
  /** Position of the last control byte of the output and the blocks, or -1 when there is none. */
  readonly lastControlPos: number;
  /** Value of that control byte. */
  readonly lastControl: number;
}

/**
 * Sink of {@link EncodingState.writeFlushTail}: places blocks under control bytes as
 * {@link EncodingState.writeBlock64} does, into the shared scratch writer and without touching the state's
 * output, from a few fields set per call instead of a copy of the state: the column builder's intermediate
 * binaries then copy the output and these bytes once, with nothing to undo.
 */
class TailSink implements Simple8bSink64, FlushTail {
  readonly bytes = new ByteWriter(64);
  /** Length of the state's output: positions from there on are in {@link TailSink.bytes}. */
  base = 0;
  /** The control byte of the stream's scale (count bits 0). */
  control = 0;
  controlPos = -1;
  controlBlocks = 0;
  /** Current value of the control byte at `controlPos`. */
  controlValue = 0;
  openControl = 0;
  openControlPos = -1;
  lastControlPos = -1;
  lastControl = 0;
  writeBlock64(lo: number, hi: number): void {
    const bytes = this.bytes;
    const control = this.control;
    if (this.controlPos >= 0 && (this.controlValue & 0xf0) !== control) this.controlPos = -1;
    if (this.controlPos < 0) {
      this.controlPos = this.base + bytes.length;
      this.controlBlocks = 0;
      bytes.u8(control);
    }
    bytes.u64Halves(lo, hi);
    const value = control | this.controlBlocks;
    this.controlValue = value;
    if (this.controlPos === this.openControlPos) this.openControl = value;
    else bytes.buf[this.controlPos - this.base] = value;
    this.lastControlPos = this.controlPos;
    this.lastControl = value;
    this.controlBlocks++;
    if (this.controlBlocks === kMaxBlocksPerControl) this.controlPos = -1;
  }
}
const tailSink = new TailSink();

/**
 * Encoding state of one stream. Writes to `out`; when `items` is set (interleaved mode) it also records
 * every finished literal or control as `[start, end, entries]` so the section can be laid out in decoder
 * order.
 *
 * 64-bit values (deltas, scaled doubles, the base of the open control) are held as two 32-bit halves
 * ({@link Int64Halves}) in pairs of number fields, so that appending a double, an integer or a date
 * allocates nothing; only 128-bit streams use `bigint`.
 */
export class EncodingState implements Simple8bSink, Simple8bSink64 {
  // Replaced only by copyFrom, for the scratch copies that compute intermediate binaries.
  #out: ByteWriter;
  #items: number[] | undefined;
  #b64: Simple8bBuilder64;
  // Created on the first 128-bit value: most streams never need one, and a fresh builder is in the same
  // state as one that was only flushed and reset after literals.
  #b128: Simple8bBuilder | undefined = undefined;
  #wide = false;

  // The previous element (type + value bytes), copied: the caller's buffer is reused. Values of at most
  // 8 bytes (numbers, dates, booleans: nearly every column) are held in two number fields, little-endian,
  // the bytes past #prevSize zero: a state lives as long as its open bucket, and a typed array (with the
  // DataView the number paths read it through) cost about 380 bytes of heap per state. Longer values
  // (ObjectIds, decimals, strings, objects) go to #prevLong, allocated on the first one.
  #prevType = 0;
  #prevSize = 0;
  #prevLo = 0;
  #prevHi = 0;
  #prevLong: Uint8Array | undefined = undefined;

  // The halves of 64-bit values in the fields below and #prevLo/#prevHi are stored as int32 (`| 0`) and
  // read back as uint32 (`>>> 0`): a uint32 of 2^31 or more is no small integer, and a field that holds
  // one gets a heap number box in every state (16 bytes each); an int32 is a small integer in Node's
  // builds (no pointer compression).
  // Previous encoded value of doubles (at the current scale) and ObjectIds.
  #prevEncodedLo = 0;
  #prevEncodedHi = 0;
  #prevEncoded128: bigint | undefined = undefined;
  // Previous delta of delta-of-delta types.
  #prevDeltaLo = 0;
  #prevDeltaHi = 0;

  #scaleIndex = kMemoryAsInteger;
  #lastValueInPrevBlock = 0;
  // Encoded (at the open control's scale) value at the end of the blocks written: the decoder's base.
  #blockEndLo = 0;
  #blockEndHi = 0;
  #controlPos = -1;
  #controlBlocks = 0;
  #controlEntries = 0;

  /**
   * @param out - where bytes go.
   * @param items - when given, receives `[start, end, entries]` for each finished item.
   */
  constructor(out: ByteWriter, items?: number[]) {
    this.#out = out;
    this.#items = items;
    this.#b64 = new Simple8bBuilder64(this);
  }

  #builder128(): Simple8bBuilder {
    return (this.#b128 ??= new Simple8bBuilder(this, true));
  }

  #acquire64(sink: Simple8bSink64, trackSum: boolean, from: Simple8bBuilder64): Simple8bBuilder64 {
    return (spare64.pop() ?? new Simple8bBuilder64(sink)).reset(sink, trackSum, from);
  }

  /**
   * Return to the state of a new instance, keeping the allocated buffers and builders (the column
   * builder reuses its states for every column it encodes).
   */
  reset(): void {
    this.#b64.reset(this, false);
    this.#b128 = undefined;
    this.#wide = false;
    this.#prevType = 0;
    this.#prevSize = 0;
    this.#prevLo = 0;
    this.#prevHi = 0;
    this.#prevEncodedLo = 0;
    this.#prevEncodedHi = 0;
    this.#prevEncoded128 = undefined;
    this.#prevDeltaLo = 0;
    this.#prevDeltaHi = 0;
    this.#scaleIndex = kMemoryAsInteger;
    this.#lastValueInPrevBlock = 0;
    this.#blockEndLo = 0;
    this.#blockEndHi = 0;
    this.#controlPos = -1;
    this.#controlBlocks = 0;
    this.#controlEntries = 0;
  }

  /**
   * Become a copy of `other`, writing to the same output and item list: flushing the copy writes what
   * flushing `other` would, and leaves `other` as it was (the column builder's intermediate binaries).
   *
   * @param other - the state to copy.
   */
  copyFrom(other: EncodingState): void {
    this.#out = other.#out;
    this.#items = other.#items;
    this.#b64.copyFrom(other.#b64);
    this.#b64.sink = this;
    if (other.#b128 === undefined) {
      this.#b128 = undefined;
    } else {
      this.#builder128().copyFrom(other.#b128);
    }
    this.#wide = other.#wide;
    this.#prevType = other.#prevType;
    const size = other.#prevSize;
    this.#prevLo = other.#prevLo;
    this.#prevHi = other.#prevHi;
    if (size > 8) this.#storeLong(other.#prevLong ?? shortPrevious, 0, size);
    this.#prevSize = size;
    this.#prevEncodedLo = other.#prevEncodedLo;
    this.#prevEncodedHi = other.#prevEncodedHi;
    this.#prevEncoded128 = other.#prevEncoded128;
    this.#prevDeltaLo = other.#prevDeltaLo;
    this.#prevDeltaHi = other.#prevDeltaHi;
    this.#scaleIndex = other.#scaleIndex;
    this.#lastValueInPrevBlock = other.#lastValueInPrevBlock;
    this.#blockEndLo = other.#blockEndLo;
    this.#blockEndHi = other.#blockEndHi;
    this.#controlPos = other.#controlPos;
    this.#controlBlocks = other.#controlBlocks;
    this.#controlEntries = other.#controlEntries;
  }

  /**
   * Whether {@link EncodingState.parkInto} can record this state: a 64-bit stream whose previous value
   * fits in eight bytes (numbers, dates, booleans, ...), and no item list.
   */
  get parkable(): boolean {
    return (
      !this.#wide &&
      this.#b128 === undefined &&
      this.#prevEncoded128 === undefined &&
      this.#prevSize <= 8 &&
      this.#items === undefined
    );
  }

  /** How many numbers {@link EncodingState.parkInto} writes. */
  get parkedLength(): number {
    return 16 + this.#b64.parkedLength;
  }

  /**
   * Record this state (its 64-bit builder's too, not its output) into `record` from index `at`, for
   * {@link EncodingState.unparkFrom}. Only when {@link EncodingState.parkable}.
   *
   * @param record - receives the numbers.
   * @param at - the first index to write.
   * @returns the index after the last one written.
   */
  parkInto(record: number[], at: number): number {
    record[at] = this.#prevType;
    record[at + 1] = this.#prevSize;
    record[at + 2] = this.#prevLo;
    record[at + 3] = this.#prevHi;
    record[at + 4] = this.#prevEncodedLo;
    record[at + 5] = this.#prevEncodedHi;
    record[at + 6] = this.#prevDeltaLo;
    record[at + 7] = this.#prevDeltaHi;
    record[at + 8] = this.#scaleIndex;
    // A double as its bits: an array of numbers would store a NaN as the canonical one.
    f64[0] = this.#lastValueInPrevBlock;
    record[at + 9] = f64Words[0] ?? 0;
    record[at + 10] = f64Words[1] ?? 0;
    record[at + 11] = this.#blockEndLo;
    record[at + 12] = this.#blockEndHi;
    record[at + 13] = this.#controlPos;
    record[at + 14] = this.#controlBlocks;
    record[at + 15] = this.#controlEntries;
    return this.#b64.parkInto(record, at + 16);
  }

  /**
   * Become the state {@link EncodingState.parkInto} recorded at `at`, whatever this state held before,
   * writing to this state's output (which the caller fills with the bytes the recorded state's output
   * held). Not for a state with an item list (an interleaved section's).
   *
   * @param record - the numbers.
   * @param at - where {@link EncodingState.parkInto} started writing.
   * @returns the index after the recorded state.
   */
  unparkFrom(record: ReadonlyArray<number>, at: number): number {
    this.#wide = false;
    this.#b128 = undefined;
    this.#prevEncoded128 = undefined;
    this.#prevType = record[at] as number;
    this.#prevSize = record[at + 1] as number;
    this.#prevLo = record[at + 2] as number;
    this.#prevHi = record[at + 3] as number;
    this.#prevEncodedLo = record[at + 4] as number;
    this.#prevEncodedHi = record[at + 5] as number;
    this.#prevDeltaLo = record[at + 6] as number;
    this.#prevDeltaHi = record[at + 7] as number;
    this.#scaleIndex = record[at + 8] as number;
    this.#lastValueInPrevBlock = doubleFromBits(record[at + 9] as number, record[at + 10] as number);
    this.#blockEndLo = record[at + 11] as number;
    this.#blockEndHi = record[at + 12] as number;
    this.#controlPos = record[at + 13] as number;
    this.#controlBlocks = record[at + 14] as number;
    this.#controlEntries = record[at + 15] as number;
    return this.#b64.unparkFrom(record, at + 16);
  }

  /**
   * Write to a shared scratch writer what {@link EncodingState.flush} would append to the output, leaving
   * this state and its output as they are: the column builder's intermediate binaries, without copying
   * the state.
   *
   * @returns the tail written, or `undefined`, having written nothing, when it cannot (128-bit streams,
   *   an RLE run whose remainder is not cached): the caller flushes a copy made with
   *   {@link EncodingState.copyFrom}.
   */
  writeFlushTail(): FlushTail | undefined {
    if (this.#wide) return undefined;
    const sink = tailSink;
    const out = this.#out;
    const controlPos = this.#controlPos;
    const openControl = controlPos >= 0 ? (out.buf[controlPos] ?? 0) : 0;
    sink.bytes.length = 0;
    sink.base = out.length;
    sink.control = kControlByteForScaleIndex[this.#scaleIndex] ?? 0;
    sink.controlPos = controlPos;
    sink.controlBlocks = this.#controlBlocks;
    sink.controlValue = openControl;
    sink.openControl = openControl;
    sink.openControlPos = controlPos;
    sink.lastControlPos = controlPos;
    sink.lastControl = openControl;
    return this.#b64.writePendingTo(sink) ? sink : undefined;
  }

  /** Offset in the output of the open Simple-8b control byte (one that may still change), or -1. */
  get controlPos(): number {
    return this.#controlPos;
  }

  /**
   * The output dropped its first `n` bytes (the column builder keeps only bytes that may still change):
   * move the open control's offset with them.
   *
   * @param n - bytes dropped, at most {@link EncodingState.controlPos} when a control is open.
   */
  rebase(n: number): void {
    if (this.#controlPos >= 0) this.#controlPos -= n;
  }

  /**
   * Resume a 64-bit stream of a reopened column (the column builder's `fromBinary`), in the state right
   * before a Simple-8b block whose predecessors left nothing pending: `controlBlocks` blocks of the open
   * control byte at `controlPos` already written (none open when `controlPos` is -1), and the last slot
   * value written `(hi:lo)`. The caller then replays the following slots with {@link EncodingState.replaySlot} and
   * {@link EncodingState.skip}, and sets the last value with {@link EncodingState.resumePrevious}.
   *
   * @param type - BSON type of the stream's values (0 before any literal); not a double or 128-bit type.
   * @param bytes - buffer holding the stream's last literal value.
   * @param start - first value byte of that literal.
   * @param end - end of its value.
   * @param controlPos - offset of the open control byte in the output, or -1.
   * @param controlBlocks - blocks already under it.
   * @param lastLo - low half of the last slot value written (all ones for a missing slot).
   * @param lastHi - high half.
   */
  resumeStream(
    type: number,
    bytes: Uint8Array,
    start: number,
    end: number,
    controlPos: number,
    controlBlocks: number,
    lastLo: number,
    lastHi: number,
  ): void {
    this.reset();
    if (type !== 0) this.initializeFrom(type, bytes, start, end);
    this.#b64.resumeAfterBlock(lastLo, lastHi);
    this.#controlPos = controlPos;
    this.#controlBlocks = controlPos < 0 ? 0 : controlBlocks;
    this.#controlEntries = 0;
  }

  /**
   * Append a Simple-8b slot value as stored in a column (a zigzagged delta), during a resume.
   *
   * @param lo - low half.
   * @param hi - high half.
   * @returns `false` if it does not fit Simple-8b (never for a value read from a valid column).
   */
  replaySlot(lo: number, hi: number): boolean {
    return this.#b64.append(lo, hi);
  }

  /**
   * Append the `n` entries of an RLE block as stored in a column, during a resume: {@link EncodingState.replaySlot} (or
   * a skip) `n` times, at the cost of one once the run is open.
   *
   * @param lo - low half of the repeated slot value (both halves all ones for missing).
   * @param hi - high half.
   * @param n - entries.
   * @returns `false` if the value does not fit Simple-8b.
   */
  replayRun(lo: number, hi: number, n: number): boolean {
    return this.#b64.appendRun(lo, hi, n);
  }

  /**
   * End a resume: the stream's last value (what the next delta is taken from) and, for delta-of-delta
   * types, the last delta and the last encoded ObjectId.
   *
   * @param type - BSON type.
   * @param bytes - buffer holding the value.
   * @param start - first value byte.
   * @param end - end of the value.
   * @param deltaLo - low half of the last delta (delta-of-delta types).
   * @param deltaHi - high half.
   * @param encodedLo - low half of the last encoded ObjectId.
   * @param encodedHi - high half.
   */
  resumePrevious(
    type: number,
    bytes: Uint8Array,
    start: number,
    end: number,
    deltaLo: number,
    deltaHi: number,
    encodedLo: number,
    encodedHi: number,
  ): void {
    this.#storePrevious(type, bytes, start, end);
    this.#prevDeltaLo = deltaLo | 0;
    this.#prevDeltaHi = deltaHi | 0;
    if (type === BsonType.objectId) {
      this.#prevEncodedLo = encodedLo | 0;
      this.#prevEncodedHi = encodedHi | 0;
    }
  }

  /** BSON type of the previous element, 0 if none. */
  get previousType(): number {
    return this.#prevType;
  }

  /**
   * Make `[start, end)` of `bytes` (a value of `type`) the previous element without writing it, as the
   * interleaved encoder does with reference values.
   *
   * @param type - BSON type.
   * @param bytes - buffer.
   * @param start - first value byte.
   * @param end - end of the value.
   */
  initializeFrom(type: number, bytes: Uint8Array, start: number, end: number): void {
    this.#storePrevious(type, bytes, start, end);
    this.#initializeFromPrevious();
  }

  /**
   * Append one element.
   *
   * @param type - BSON type.
   * @param bytes - buffer holding the value.
   * @param start - first value byte.
   * @param end - end of the value.
   */
  append(type: number, bytes: Uint8Array, start: number, end: number): void {
    if (this.#prevType !== type) {
      this.#storePrevious(type, bytes, start, end);
      this.#flushBuilders();
      this.#writeLiteralFromPrevious();
      return;
    }
    let compressed = !usesDeltaOfDelta(type) && this.#equalsPrevious(bytes, start, end);
    if (compressed) {
      if (this.#wide) this.#builder128().append(0n);
      else this.#b64.append(0, 0);
    } else if (this.#wide) {
      compressed = this.#append128(type, bytes, start, end);
    } else {
      compressed =
        type === BsonType.double
          ? this.#appendDouble(readFloat64(bytes, start))
          : this.#append64(type, bytes, start);
    }
    this.#storePrevious(type, bytes, start, end);
    if (!compressed) {
      this.#flushBuilders();
      this.#writeLiteralFromPrevious();
    }
  }

  /**
   * Append a double given as a number: {@link EncodingState.append} of its element, without the caller
   * writing and this state re-reading its bytes (the column builder's path for JS numbers).
   *
   * @param x - the value.
   */
  appendDouble(x: number): void {
    f64[0] = x;
    this.#appendDoubleAt(f64, f64Ints, 0);
  }

  /**
   * {@link EncodingState.appendDouble} of `values[i]`, whose bits are `words[2i]` (low) and
   * `words[2i + 1]` (high): the value and its bits are read where they lie, so that a double is neither
   * boxed as the argument of a call that is not inlined nor read back from two halves just written (a
   * store-to-load stall).
   */
  #appendDoubleAt(values: Float64Array, words: Int32Array, i: number): void {
    // The bytes as the element writer stores them, to compare with the previous value bit for bit.
    const lo = words[2 * i] as number;
    const hi = words[2 * i + 1] as number;
    let compressed = false;
    if (this.#prevType === BsonType.double) {
      if (lo === this.#prevLo && hi === this.#prevHi) {
        // A repeated value: a zero delta, which always fits.
        this.#b64.append(0, 0);
        compressed = true;
      } else compressed = this.#appendSmallDouble(values, i) || this.#appendDouble(values[i] as number);
    }
    this.#prevLo = lo;
    this.#prevHi = hi;
    if (!compressed) this.#writeLiteral(BsonType.double, 8);
  }

  /**
   * Append numbers: each as {@link EncodingState.appendInt32} when it is an int32 (integral, in range,
   * not -0), else as {@link EncodingState.appendDouble}; nothing is boxed on the way (see
   * {@link #appendDoubleAt}).
   *
   * @param values - the numbers.
   * @param count - how many of them, from the first.
   */
  appendNumbers(values: Float64Array, count: number): void {
    const words = wordsOf(values);
    let i = 0;
    while (i < count) {
      if (this.#prevType === BsonType.int32) {
        const taken = this.#appendInt32Run(values, i, count);
        if (taken > 0) {
          i += taken;
          continue;
        }
      }
      const n = this.#smallRun(values, words, i, count);
      // Values [i, i + n) have their deltas in runDeltas[0, n): they join the builder in one loop
      // (appendFitting) up to the first that writes a block, which then gets what #appendSmallDouble gives
      // a value after a block (a repeat gets nothing, as #appendDoubleAt gives it); a value that would meet
      // RLE goes the general way (which gives it the same delta). The deltas after either hold while the
      // scale and last encoded value are as the run has them (a scale restart may change both).
      const scale = this.#scaleIndex;
      let j = 0;
      while (j < n) {
        const builder = this.#b64;
        const blocks = builder.blocksWritten;
        const taken = builder.appendFitting(runDeltas, j, n);
        let encoded: number;
        if (taken > j) {
          j = taken;
          const last = i + j - 1;
          encoded = runEncoded[j - 1] as number;
          if (
            builder.blocksWritten === blocks ||
            runDeltas[j - 1] === 0 ||
            this.#runRestartSkippable(builder, values, i + j)
          ) {
            this.#tookRun(words, last, encoded);
            continue;
          }
          this.#prevLo = words[2 * last] as number;
          this.#prevHi = words[2 * last + 1] as number;
          this.#restartScaleAfterBlock();
        } else {
          this.#appendDoubleAt(values, words, i + j);
          encoded = runEncoded[j] as number;
          j++;
        }
        if (
          this.#scaleIndex !== scale ||
          this.#prevEncodedLo !== encoded ||
          this.#prevEncodedHi !== encoded >> 31
        )
          break;
      }
      i += j;
      if (n > 0 || i === count) continue;
      // A value no run takes, the general way: an int32, a literal, a scale to change.
      const x = values[i] as number;
      if (isInt32Number(x)) this.appendInt32(x);
      else this.#appendDoubleAt(values, words, i);
      i++;
    }
  }

  /**
   * The doubles from `values[from]` on that {@link #appendSmallDouble} (or a repeat of the previous value)
   * would append at the current scale: their zigzagged deltas into `runDeltas` and encoded values into
   * `runEncoded`, in one loop with the state in locals.
   *
   * @returns how many (0 when the state is not a small double stream).
   */
  #smallRun(values: Float64Array, words: Int32Array, from: number, count: number): number {
    if (this.#prevType !== BsonType.double || !this.#smallStream()) return 0;
    let previous = this.#prevEncodedLo;
    const m = kScaleMultipliers[this.#scaleIndex] as number;
    let prevLo = this.#prevLo;
    let prevHi = this.#prevHi;
    const end = Math.min(count, from + kRunScratch);
    let n = 0;
    for (let i = from; i < end; i++, n++) {
      const value = values[i] as number;
      // An int32 is appended as one (a type change).
      if (isInt32Number(value)) break;
      const lo = words[2 * i] as number;
      const hi = words[2 * i + 1] as number;
      if (lo === prevLo && hi === prevHi) {
        // A repeated value: a zero delta (its encoded value is the previous one).
        runDeltas[n] = 0;
        runEncoded[n] = previous;
        continue;
      }
      const encoded = encodeSmall(value, m);
      if (encoded === kNotSmall) break;
      const delta = (encoded - previous) | 0;
      runDeltas[n] = (delta << 1) ^ (delta >> 31);
      runEncoded[n] = encoded;
      previous = encoded;
      prevLo = lo;
      prevHi = hi;
    }
    return n;
  }

  /**
   * The int32s from `values[from]` on whose delta to the one before zigzags below 2^32, appended to an
   * int32 stream as {@link EncodingState.appendInt32} appends each: their deltas go to the builder in one
   * loop (appendFitting), and a value that would meet RLE goes the general way.
   *
   * @returns how many were appended (0 when the first is not such an int32).
   */
  #appendInt32Run(values: Float64Array, from: number, count: number): number {
    let previous = this.#prevLo;
    const end = Math.min(count, from + kRunScratch);
    let n = 0;
    for (let i = from; i < end; i++, n++) {
      const x = values[i] as number;
      if (!isInt32Number(x)) break;
      const delta = x - previous;
      // A delta that is itself an int32 zigzags below 2^32.
      if ((delta | 0) !== delta) break;
      runDeltas[n] = (delta << 1) ^ (delta >> 31);
      runEncoded[n] = x;
      previous = x;
    }
    let j = 0;
    while (j < n) {
      const taken = this.#b64.appendFitting(runDeltas, j, n);
      if (taken > j) {
        j = taken;
        this.#prevLo = runEncoded[j - 1] as number;
        continue;
      }
      this.appendInt32(values[from + j] as number);
      j++;
    }
    return n;
  }

  /**
   * After appendFitting took a run up to value `last` (with no scale restart after a block): the state the
   * general path would have left.
   */
  #tookRun(words: Int32Array, last: number, encoded: number): void {
    this.#prevLo = words[2 * last] as number;
    this.#prevHi = words[2 * last + 1] as number;
    this.#prevEncodedLo = encoded;
    this.#prevEncodedHi = encoded >> 31;
  }

  /**
   * Append dates given as their `getTime()`: {@link EncodingState.appendDate} of each, in order, with
   * nothing boxed on the way.
   *
   * @param values - the times.
   * @param count - how many of them, from the first.
   */
  appendDates(values: Float64Array, count: number): void {
    for (let i = 0; i < count; i++) {
      const ms = values[i] as number;
      this.#appendDateHalves(ms | 0, highHalf(ms) | 0);
    }
  }

  /**
   * Append an int32 given as a number, as {@link EncodingState.appendDouble} does for doubles.
   *
   * @param x - an integer in int32 range.
   */
  appendInt32(x: number): void {
    let compressed = false;
    if (this.#prevType === BsonType.int32) {
      const previous = this.#prevLo;
      if (x === previous) {
        // A zero delta, which always fits.
        this.#b64.append(0, 0);
        compressed = true;
      } else {
        const d = shared.delta;
        zigzagNumber(x - previous, d);
        compressed = this.#b64.append(d.lo, d.hi);
      }
    }
    this.#prevLo = x | 0;
    this.#prevHi = 0;
    if (!compressed) this.#writeLiteral(BsonType.int32, 4);
  }

  /**
   * Append a date given as its `getTime()`, as {@link EncodingState.appendDouble} does for doubles.
   *
   * @param ms - milliseconds since the epoch; NaN (an invalid date) is stored as 0, as js-bson does.
   */
  appendDate(ms: number): void {
    // An integer below 2^53 in magnitude: both halves are exact. NaN gives 0 in both.
    this.#appendDateHalves(ms | 0, highHalf(ms) | 0);
  }

  /** {@link EncodingState.appendDate} of the time whose halves are `(hi:lo)`, given as int32s. */
  #appendDateHalves(loBits: number, hiBits: number): void {
    const lo = loBits >>> 0;
    const hi = hiBits >>> 0;
    let compressed = false;
    if (this.#prevType === BsonType.date) {
      const d = shared.delta;
      sub64(lo, hi, this.#prevLo >>> 0, this.#prevHi >>> 0, d);
      const deltaLo = d.lo;
      const deltaHi = d.hi;
      zigzagDelta64(deltaLo, deltaHi, this.#prevDeltaLo >>> 0, this.#prevDeltaHi >>> 0, d);
      this.#prevDeltaLo = deltaLo | 0;
      this.#prevDeltaHi = deltaHi | 0;
      compressed = this.#b64.append(d.lo, d.hi);
    }
    this.#prevLo = lo | 0;
    this.#prevHi = hi | 0;
    if (!compressed) this.#writeLiteral(BsonType.date, 8);
  }

  /**
   * Append an int64 given as its two 32-bit halves (a js-bson `Long`), as {@link EncodingState.appendDouble}
   * does for doubles.
   *
   * @param lo - bits 0..31, unsigned.
   * @param hi - bits 32..63, unsigned.
   */
  appendInt64(lo: number, hi: number): void {
    let compressed = false;
    if (this.#prevType === BsonType.int64) {
      const prevLo = this.#prevLo >>> 0;
      const prevHi = this.#prevHi >>> 0;
      if (lo === prevLo && hi === prevHi) {
        // A zero delta, which always fits.
        this.#b64.append(0, 0);
        compressed = true;
      } else {
        const d = shared.delta;
        sub64(lo, hi, prevLo, prevHi, d);
        zigzagDelta64(d.lo, d.hi, 0, 0, d);
        compressed = this.#b64.append(d.lo, d.hi);
      }
    }
    this.#prevLo = lo | 0;
    this.#prevHi = hi | 0;
    if (!compressed) this.#writeLiteral(BsonType.int64, 8);
  }

  /**
   * The number paths' fallback, once the value (of `type`, `size` bytes) is stored as the previous one:
   * it starts a new type or did not fit the current block, so it is written as an uncompressed literal.
   */
  #writeLiteral(type: number, size: number): void {
    this.#prevType = type;
    this.#prevSize = size;
    this.#flushBuilders();
    this.#writeLiteralFromPrevious();
  }

  /** Append a missing entry. */
  skip(): void {
    if (this.#wide) {
      this.#builder128().skip();
      return;
    }
    const builder = this.#b64;
    const before = builder.blocksWritten;
    builder.skip();
    if (builder.blocksWritten === before || this.#prevType !== BsonType.double) return;
    // Blocks were written: start the next block at the smallest scale that fits the last value written.
    let onlySkips = builder.rleCount === 0 || builder.rleIsMissing;
    const v = shared.pending;
    for (let i = 0; i < builder.pendingCount && onlySkips; i++) onlySkips = !builder.pendingAt(i, v);
    if (onlySkips) {
      const s = shared.scaled;
      scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, s);
      this.#prevEncodedLo = s.lo | 0;
      this.#prevEncodedHi = s.hi | 0;
      this.#scaleIndex = s.scaleIndex;
    } else {
      // Pending deltas are at the old scale: re-add them (the server would mis-scale them here).
      this.#restartScaleAfterBlock();
    }
  }

  /** Write everything pending and close the open control. */
  flush(): void {
    this.#flushBuilders();
    this.#closeControl();
  }

  /** @internal Simple-8b sink of the 128-bit builder: place a block under a control byte. */
  writeBlock(word: bigint, entries: number): void {
    // 128-bit streams never track sums (only doubles do).
    this.writeBlock64(Number(word & 0xffffffffn) | 0, Number(word >> 32n) | 0, entries, 0, 0);
  }

  /** @internal Simple-8b sink: place a block under a control byte of the current scale. */
  writeBlock64(lo: number, hi: number, entries: number, sumLo: number, sumHi: number): void {
    const out = this.#out;
    const control = kControlByteForScaleIndex[this.#scaleIndex] ?? 0;
    if (this.#controlPos >= 0 && ((out.buf[this.#controlPos] ?? 0) & 0xf0) !== control) this.#closeControl();
    const isDouble = this.#prevType === BsonType.double;
    if (this.#controlPos < 0) {
      this.#controlPos = out.length;
      this.#controlBlocks = 0;
      this.#controlEntries = 0;
      out.u8(control);
      if (isDouble) {
        const base = shared.block;
        if (!encodeDouble(this.#lastValueInPrevBlock, this.#scaleIndex, base))
          throw new InternalInvariantError(7001, 'double control scale cannot encode its base');
        this.#blockEndLo = base.lo | 0;
        this.#blockEndHi = base.hi | 0;
      }
    }
    out.u64Halves(lo, hi);
    out.buf[this.#controlPos] = control | this.#controlBlocks;
    this.#controlBlocks++;
    this.#controlEntries += entries;
    if (isDouble) {
      const end = shared.block;
      add64(this.#blockEndLo >>> 0, this.#blockEndHi >>> 0, sumLo >>> 0, sumHi >>> 0, end);
      this.#blockEndLo = end.lo | 0;
      this.#blockEndHi = end.hi | 0;
      this.#lastValueInPrevBlock = decodeDouble(end.lo, end.hi, this.#scaleIndex);
    }
    if (this.#controlBlocks === kMaxBlocksPerControl) this.#closeControl();
  }

  #closeControl(): void {
    if (this.#controlPos < 0) return;
    this.#items?.push(this.#controlPos, this.#out.length, this.#controlEntries);
    this.#controlPos = -1;
  }

  #flushBuilders(): void {
    this.#b128?.flush();
    this.#b64.flush();
  }

  #equalsPrevious(bytes: Uint8Array, start: number, end: number): boolean {
    const size = end - start;
    if (size !== this.#prevSize) return false;
    if (size <= 8) {
      return (
        readUintLE(bytes, start, size < 4 ? size : 4) === this.#prevLo >>> 0 &&
        (size <= 4 || readUintLE(bytes, start + 4, size - 4) === this.#prevHi >>> 0)
      );
    }
    const prev = this.#prevLong ?? shortPrevious;
    for (let i = 0; i < size; i++) if (prev[i] !== bytes[start + i]) return false;
    return true;
  }

  #storePrevious(type: number, bytes: Uint8Array, start: number, end: number): void {
    const size = end - start;
    if (size <= 8) {
      this.#prevLo = readUintLE(bytes, start, size < 4 ? size : 4) | 0;
      this.#prevHi = (size <= 4 ? 0 : readUintLE(bytes, start + 4, size - 4)) | 0;
    } else {
      this.#storeLong(bytes, start, size);
    }
    this.#prevSize = size;
    this.#prevType = type;
  }

  /** Copy a previous value longer than 8 bytes to #prevLong. */
  #storeLong(bytes: Uint8Array, start: number, size: number): void {
    let prev = this.#prevLong;
    if (prev === undefined || size > prev.length) {
      prev = new Uint8Array(Math.max(size, 2 * (prev?.length ?? 8)));
      this.#prevLong = prev;
    }
    // Values are mostly 12-16 bytes: a plain loop beats `set(subarray())`, which allocates a view.
    if (size <= 16) for (let i = 0; i < size; i++) prev[i] = bytes[start + i] ?? 0;
    else prev.set(bytes.subarray(start, start + size));
  }

  /**
   * The previous value's bytes, from index 0 to #prevSize. A short value is written to a shared scratch:
   * read it before the next call to this method.
   */
  #previousBytes(): Uint8Array {
    if (this.#prevSize > 8) return this.#prevLong ?? shortPrevious;
    writeUint32LE(shortPrevious, 0, this.#prevLo);
    writeUint32LE(shortPrevious, 4, this.#prevHi);
    return shortPrevious;
  }

  #writeLiteralFromPrevious(): void {
    this.#closeControl();
    const out = this.#out;
    const start = out.length;
    out.u8(this.#prevType);
    out.u8(0);
    out.bytes(this.#previousBytes(), 0, this.#prevSize);
    this.#items?.push(start, out.length, 1);
    this.#scaleIndex = kMemoryAsInteger;
    this.#prevDeltaLo = 0;
    this.#prevDeltaHi = 0;
    // The decoder's previous Simple-8b value is 0 after a literal.
    this.#b64.resetAfterLiteral();
    this.#b128?.resetAfterLiteral();
    this.#initializeFromPrevious();
  }

  #initializeFromPrevious(): void {
    const type = this.#prevType;
    const prev = this.#previousBytes();
    this.#wide = uses128(type);
    switch (type) {
      case BsonType.double: {
        const s = shared.scaled;
        this.#lastValueInPrevBlock = doubleFromBits(this.#prevLo, this.#prevHi);
        scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, s);
        this.#prevEncodedLo = s.lo | 0;
        this.#prevEncodedHi = s.hi | 0;
        this.#scaleIndex = s.scaleIndex;
        this.#b64.trackSum = true;
        break;
      }
      case BsonType.string:
      case BsonType.code:
        this.#prevEncoded128 = encodeString(prev, 4, this.#prevSize - 5);
        break;
      case BsonType.binData: {
        const len = this.#prevSize - 5;
        this.#prevEncoded128 = len <= 16 ? readUint128LE(prev, 5, len) : undefined;
        break;
      }
      case BsonType.decimal128:
        this.#prevEncoded128 = readUint128LE(prev, 0, 16);
        break;
      case BsonType.objectId: {
        const e = shared.delta;
        encodeObjectId(prev, 0, e);
        this.#prevEncodedLo = e.lo | 0;
        this.#prevEncodedHi = e.hi | 0;
        break;
      }
      default:
        break;
    }
    if (type !== BsonType.double) this.#b64.trackSum = false;
  }

  #append128(type: number, bytes: Uint8Array, start: number, end: number): boolean {
    let encoded: bigint | undefined;
    switch (type) {
      case BsonType.string:
      case BsonType.code:
        encoded = encodeString(bytes, start + 4, end - start - 5);
        break;
      case BsonType.binData: {
        const len = end - start - 5;
        // Deltas only between binData of the same length and subtype (the decoder copies both).
        if (len === this.#prevSize - 5 && bytes[start + 4] === this.#previousBytes()[4] && len <= 16) {
          encoded = readUint128LE(bytes, start + 5, len);
        }
        break;
      }
      default:
        encoded = readUint128LE(bytes, start, 16);
    }
    if (encoded === undefined) return false;
    // After a value with no encoding the base is 0, and a zero delta would mean "repeat": write a literal.
    if (this.#prevEncoded128 === undefined && encoded === 0n) return false;
    const ok = this.#builder128().append(
      zigzag128(BigInt.asIntN(128, encoded - (this.#prevEncoded128 ?? 0n))),
    );
    this.#prevEncoded128 = encoded;
    return ok;
  }

  #append64(type: number, bytes: Uint8Array, start: number): boolean {
    const d = shared.delta;
    switch (type) {
      case BsonType.int32:
        // An int32 delta is exact in a number: zigzag it without 64-bit arithmetic.
        zigzagNumber((readUint32(bytes, start) | 0) - (this.#prevLo | 0), d);
        return this.#b64.append(d.lo, d.hi);
      case BsonType.bool:
        zigzagNumber((bytes[start] ?? 0) - (this.#prevLo & 0xff), d);
        return this.#b64.append(d.lo, d.hi);
      case BsonType.null:
      case BsonType.undefined:
      case BsonType.minKey:
      case BsonType.maxKey:
        return this.#b64.append(0, 0);
      case BsonType.int64:
      case BsonType.date:
      case BsonType.timestamp:
        sub64(
          readUint32(bytes, start),
          readUint32(bytes, start + 4),
          this.#prevLo >>> 0,
          this.#prevHi >>> 0,
          d,
        );
        break;
      case BsonType.objectId: {
        // The 5 process-unique bytes are not encoded: they must match the previous ObjectId.
        const prev = this.#previousBytes();
        for (let i = 4; i < 9; i++) if (bytes[start + i] !== prev[i]) return false;
        encodeObjectId(bytes, start, d);
        const curLo = d.lo;
        const curHi = d.hi;
        sub64(curLo, curHi, this.#prevEncodedLo >>> 0, this.#prevEncodedHi >>> 0, d);
        this.#prevEncodedLo = curLo | 0;
        this.#prevEncodedHi = curHi | 0;
        break;
      }
      default:
        // regex, dbPointer, codeWScope, symbol, object, array: literal only.
        return false;
    }
    const curLo = d.lo;
    const curHi = d.hi;
    if (type === BsonType.int64) {
      zigzagDelta64(curLo, curHi, 0, 0, d);
    } else {
      // Delta of delta (date, timestamp, ObjectId).
      zigzagDelta64(curLo, curHi, this.#prevDeltaLo >>> 0, this.#prevDeltaHi >>> 0, d);
      this.#prevDeltaLo = curLo | 0;
      this.#prevDeltaHi = curHi | 0;
    }
    return this.#b64.append(d.lo, d.hi);
  }

  /**
   * Append a double that differs from the previous one.
   *
   * @param value - the double.
   * @param replayedPrevious - the value before it when replaying pending values; otherwise the previous
   *   element, read only when the scale changes (passing it on every call boxed a double per value).
   * @returns `false` when it needs a literal.
   */
  #appendDouble(value: number, replayedPrevious?: number): boolean {
    const s = shared.scaled;
    scaleAndEncodeDouble(value, this.#scaleIndex, s);
    let encLo = s.lo;
    let encHi = s.hi;
    let scale = s.scaleIndex;
    if (scale !== this.#scaleIndex) {
      // A larger scale is needed: re-scale the pending values if that writes no extra block, else flush
      // them at the old scale and open a new control.
      const rescaled = this.#tryRescalePending(encLo, encHi, scale);
      if (rescaled !== undefined) {
        rescaled.sink = this;
        rescaled.trackSum = true;
        spare64.push(this.#b64);
        this.#b64 = rescaled;
        this.#prevEncodedLo = encLo | 0;
        this.#prevEncodedHi = encHi | 0;
        this.#scaleIndex = scale;
        return true;
      }
      this.#b64.flush();
      this.#closeControl();
      const previous = replayedPrevious ?? doubleFromBits(this.#prevLo, this.#prevHi);
      scaleAndEncodeDouble(previous, scale, s);
      let prevLo = s.lo;
      let prevHi = s.hi;
      if (s.scaleIndex !== scale) {
        scaleAndEncodeDouble(value, s.scaleIndex, s);
        encLo = s.lo;
        encHi = s.hi;
        scale = s.scaleIndex;
        scaleAndEncodeDouble(previous, scale, s);
        prevLo = s.lo;
        prevHi = s.hi;
      }
      this.#prevEncodedLo = prevLo | 0;
      this.#prevEncodedHi = prevHi | 0;
      this.#scaleIndex = scale;
    }
    const builder = this.#b64;
    const before = builder.blocksWritten;
    const d = shared.delta;
    zigzagDelta64(encLo, encHi, this.#prevEncodedLo >>> 0, this.#prevEncodedHi >>> 0, d);
    if (!builder.append(d.lo, d.hi)) return false;
    if (builder.blocksWritten === before || this.#restartChangesNothing(builder)) {
      this.#prevEncodedLo = encLo | 0;
      this.#prevEncodedHi = encHi | 0;
      return true;
    }
    this.#restartScaleAfterBlock();
    return true;
  }

  /**
   * {@link #appendDouble}'s usual case, in int32 arithmetic: the value is exact at the current scale and
   * both it and the previous value scale below 2^30 in magnitude, so the delta's zigzag fits 32 bits (a
   * sensor's readings with a few decimals). Leaves everything as the general path would; `false`, having
   * changed nothing, when the case does not apply.
   */
  #appendSmallDouble(values: Float64Array, i: number): boolean {
    if (!this.#smallStream()) return false;
    const encoded = encodeSmall(values[i] as number, kScaleMultipliers[this.#scaleIndex] as number);
    if (encoded === kNotSmall) return false;
    const delta = (encoded - this.#prevEncodedLo) | 0;
    const builder = this.#b64;
    const before = builder.blocksWritten;
    // Below 2^32: a width every type holds, so the append cannot fail.
    builder.append(((delta << 1) ^ (delta >> 31)) >>> 0, 0);
    if (builder.blocksWritten === before || this.#restartChangesNothing(builder)) {
      this.#prevEncodedLo = encoded;
      this.#prevEncodedHi = encoded >> 31;
    } else this.#restartScaleAfterBlock();
    return true;
  }

  /**
   * Whether the stream's next double may take the int32 path: a scale with a multiplier, and the previous
   * encoded value below 2^30 in magnitude (so any delta to a value of the path fits 31 bits).
   */
  #smallStream(): boolean {
    const previous = this.#prevEncodedLo;
    return (
      this.#scaleIndex !== kMemoryAsInteger &&
      previous >= -kSmallScaled &&
      previous < kSmallScaled &&
      this.#prevEncodedHi === previous >> 31
    );
  }

  /**
   * After a run's `builder` wrote a block: whether the run may skip {@link #restartScaleAfterBlock}, because
   * the restart changes nothing ({@link #restartChangesNothing}) or would undo itself. The restart drops
   * the scale to the smallest that encodes the block's last value, then adds the pending values again;
   * when each of them needs the current scale from that smaller one, the first moves the scale back up by
   * re-scaling the pending values (none yet: one value, which writes no block) and the others follow at
   * that scale, with the deltas the builder holds: the builder then replays them as it holds them, and the
   * state is as before. On TSBS readings (two decimals, one in ten ending in 0) six restarts in seven are
   * such, each with its re-scaling about 200 ns (4% of encoding). Only the run path skips those (the
   * value-by-value path restarts, and the property comparing the two paths byte for byte checks this one).
   *
   * @param values - the run's values; the builder's pending values are the last ones before `end`.
   * @param end - the index after the value just appended.
   */
  #runRestartSkippable(builder: Simple8bBuilder64, values: Float64Array, end: number): boolean {
    if (!builder.replaysUnchanged) return false;
    const scale = this.#scaleIndex;
    const low = this.#restartScale();
    if (low === scale) return true;
    // The pending values among the run's, and every value the restart would add back.
    const pending = builder.pendingCount;
    if (pending > end) return false;
    const v = shared.pending;
    for (let k = end - pending; k < end; k++) {
      const x = values[k] as number;
      for (let t = low; t < scale; t++) if (encodeDouble(x, t, v)) return false;
    }
    return true;
  }

  /**
   * After `builder` wrote a block while appending a value: whether {@link #restartScaleAfterBlock} would
   * leave everything as it is, so it can be skipped (it swaps builders and re-encodes every pending value,
   * once per block). That is so when the last value written needs the current scale, so the pending values
   * are re-added at their own scale with the same deltas, and the builder replays them as it holds them.
   * The value appended last is the last pending one, so the previous encoded value is the caller's.
   */
  #restartChangesNothing(builder: Simple8bBuilder64): boolean {
    return builder.replaysUnchanged && this.#restartScale() === this.#scaleIndex;
  }

  /**
   * The scale a restart after the block just written would take: the smallest that encodes the block's
   * last value (the current one when no smaller does; the current one does, the block holds the value).
   */
  #restartScale(): number {
    const scale = this.#scaleIndex;
    // The block's last value encoded at this scale tells, mostly, that no smaller scale encodes it.
    if (scale !== kMemoryAsInteger && !mayEncodeAtSmallerScale(this.#blockEndLo, this.#blockEndHi)) {
      return scale;
    }
    const last = this.#lastValueInPrevBlock;
    const v = shared.pending;
    for (let i = 0; i < scale; i++) if (encodeDouble(last, i, v)) return i;
    return scale;
  }

  /**
   * After a block was written, drop to the smallest scale that fits the last value written and re-add the
   * pending values (which raises the scale again as needed).
   */
  #restartScaleAfterBlock(): void {
    const prevScale = this.#scaleIndex;
    const s = shared.scaled;
    scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, s);
    this.#prevEncodedLo = s.lo | 0;
    this.#prevEncodedHi = s.hi | 0;
    this.#scaleIndex = s.scaleIndex;
    const old = this.#b64;
    this.#b64 = this.#acquire64(this, true, old);
    let prev = this.#lastValueInPrevBlock;
    const v = shared.pending;
    if (!encodeDouble(prev, prevScale, v))
      throw new InternalInvariantError(7002, 'last block value not encodable at its scale');
    let prevLo = v.lo;
    let prevHi = v.hi;
    const n = old.pendingCount + old.rleCount;
    for (let i = 0; i < n; i++) {
      // #appendDouble below may re-enter this method and reuse `v`: read it into locals first.
      if (!old.pendingAt(i, v)) {
        this.#b64.skip();
        continue;
      }
      unzigzag64(v.lo, v.hi, v);
      add64(prevLo, prevHi, v.lo, v.hi, v);
      prevLo = v.lo;
      prevHi = v.hi;
      const val = decodeDouble(prevLo, prevHi, prevScale);
      this.#appendDouble(val, prev);
      prev = val;
    }
    spare64.push(old);
  }

  #tryRescalePending(encLo: number, encHi: number, newScale: number): Simple8bBuilder64 | undefined {
    const old = this.#b64;
    const prev = shared.pending;
    const prevRescaled = shared.rescaled;
    const last = this.#lastValueInPrevBlock;
    if (!encodeDouble(last, this.#scaleIndex, prev) || !encodeDouble(last, newScale, prevRescaled))
      return undefined;
    trialSink.reset();
    const trial = this.#acquire64(trialSink, false, old);
    if (
      this.#rescaleInto(
        trial,
        old,
        encLo,
        encHi,
        newScale,
        prev.lo,
        prev.hi,
        prevRescaled.lo,
        prevRescaled.hi,
      )
    )
      return trial;
    spare64.push(trial);
    return undefined;
  }

  /** Append `old`'s pending values and `enc` re-scaled to `newScale`; `false` if that does not fit. */
  #rescaleInto(
    trial: Simple8bBuilder64,
    old: Simple8bBuilder64,
    encLo: number,
    encHi: number,
    newScale: number,
    prevLo: number,
    prevHi: number,
    rescaledLo: number,
    rescaledHi: number,
  ): boolean {
    // The trial writes to trialSink, which never calls back into this state: the scratches are safe.
    const v = shared.pending;
    const r = shared.rescaled;
    const d = shared.delta;
    const n = old.pendingCount + old.rleCount;
    for (let i = 0; i < n; i++) {
      if (!old.pendingAt(i, v)) {
        trial.skip();
        continue;
      }
      unzigzag64(v.lo, v.hi, v);
      add64(prevLo, prevHi, v.lo, v.hi, v);
      prevLo = v.lo;
      prevHi = v.hi;
      if (!encodeDouble(decodeDouble(prevLo, prevHi, this.#scaleIndex), newScale, r)) return false;
      zigzagDelta64(r.lo, r.hi, rescaledLo, rescaledHi, d);
      if (!trial.append(d.lo, d.hi) || trialSink.wrote) return false;
      rescaledLo = r.lo;
      rescaledHi = r.hi;
    }
    zigzagDelta64(encLo, encHi, rescaledLo, rescaledHi, d);
    return trial.append(d.lo, d.hi) && !trialSink.wrote;
  }
}
