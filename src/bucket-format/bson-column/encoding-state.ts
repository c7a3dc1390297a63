/**
 * The encoding state of one stream (the server's `BSONColumnBuilder::EncodingState`): turns elements into
 * literals and Simple-8b blocks under control bytes, with the server's choices so the bytes are identical
 * (BSONCOLUMN.md §2.7, §3).
 *
 * @packageDocumentation
 */
import { InternalInvariantError } from '../../errors.js';
import { BsonType, kControlByteForScaleIndex, kMaxBlocksPerControl } from './bsoncolumn-util.js';
import type { ByteWriter } from './byte-writer.js';
import { kMissing } from './simple8b.js';
import { Simple8bBuilder } from './simple8b-builder.js';
import type { Simple8bSink } from './simple8b-builder.js';
import type { ScaledDouble } from './simple8b-type-util.js';
import {
  decodeDouble,
  encodeDouble,
  encodeObjectId,
  encodeString,
  kMemoryAsInteger,
  readUint128LE,
  scaleAndEncodeDouble,
  unzigzag,
  zigzag128,
  zigzag64,
} from './simple8b-type-util.js';
import { wrapInt64 } from '../../util/int64.js';

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

/** Sink for the double re-scaling trial: it only records that a block would have been written. */
class TrialSink implements Simple8bSink {
  #wrote = false;
  writeBlock(): void {
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
 * Encoding state of one stream. Writes to `out`; when `items` is set (interleaved mode) it also records
 * every finished literal or control as `[start, end, entries]` so the section can be laid out in decoder
 * order.
 */
export class EncodingState implements Simple8bSink {
  readonly #out: ByteWriter;
  readonly #items: number[] | undefined;
  #b64: Simple8bBuilder;
  readonly #b128: Simple8bBuilder;
  #wide = false;

  // The previous element (type + value bytes), copied: the caller's buffer is reused.
  #prevType = 0;
  #prev = new Uint8Array(32);
  #prevView = new DataView(this.#prev.buffer);
  #prevSize = 0;

  #prevEncoded64 = 0n;
  #prevEncoded128: bigint | undefined = undefined;
  #prevDelta = 0n;

  #scaleIndex = kMemoryAsInteger;
  #lastValueInPrevBlock = 0;
  // Encoded (at the open control's scale) value at the end of the blocks written: the decoder's base.
  #blockEndEncoded = 0n;
  readonly #scaled: ScaledDouble = { encoded: 0n, scaleIndex: 0 };

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
    this.#b64 = new Simple8bBuilder(this, false);
    this.#b128 = new Simple8bBuilder(this, true);
  }

  /**
   * Idle 64-bit builders for reuse: restarting a double stream after a block and trying a re-scaling each
   * need a fresh builder, and allocating one (64 pending slots and width tables) per block dominated the
   * encoder's profile. A builder is released only once nothing reads it any more.
   */
  readonly #spare64: Simple8bBuilder[] = [];

  #acquire64(
    sink: Simple8bSink,
    from: { readonly trackSum: boolean; readonly lastWritten: bigint; readonly blocksWritten: number },
  ): Simple8bBuilder {
    return (this.#spare64.pop() ?? new Simple8bBuilder(sink, false)).reset(sink, from);
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
      (this.#wide ? this.#b128 : this.#b64).append(0n);
    } else if (this.#wide) {
      compressed = this.#append128(type, bytes, start, end);
    } else if (type === BsonType.double) {
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      compressed = this.#appendDouble(view.getFloat64(start, true), this.#prevView.getFloat64(0, true));
    } else {
      compressed = this.#append64(type, bytes, start);
    }
    this.#storePrevious(type, bytes, start, end);
    if (!compressed) {
      this.#flushBuilders();
      this.#writeLiteralFromPrevious();
    }
  }

  /** Append a missing entry. */
  skip(): void {
    const builder = this.#wide ? this.#b128 : this.#b64;
    const before = builder.blocksWritten;
    builder.skip();
    if (builder.blocksWritten === before || this.#prevType !== BsonType.double) return;
    // Blocks were written: start the next block at the smallest scale that fits the last value written.
    let onlySkips = builder.rleCount === 0 || builder.lastForRle === kMissing;
    for (let i = 0; i < builder.pendingCount && onlySkips; i++) onlySkips = builder.pendingAt(i) === kMissing;
    if (onlySkips) {
      scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, this.#scaled);
      this.#prevEncoded64 = this.#scaled.encoded;
      this.#scaleIndex = this.#scaled.scaleIndex;
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

  /** @internal Simple-8b sink: place a block under a control byte of the current scale. */
  writeBlock(word: bigint, entries: number, deltaSum: bigint): void {
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
        const base = encodeDouble(this.#lastValueInPrevBlock, this.#scaleIndex);
        if (base === undefined)
          throw new InternalInvariantError(7001, 'double control scale cannot encode its base');
        this.#blockEndEncoded = base;
      }
    }
    out.u64(word);
    out.buf[this.#controlPos] = control | this.#controlBlocks;
    this.#controlBlocks++;
    this.#controlEntries += entries;
    if (isDouble) {
      this.#blockEndEncoded = wrapInt64(this.#blockEndEncoded + deltaSum);
      this.#lastValueInPrevBlock = decodeDouble(this.#blockEndEncoded, this.#scaleIndex);
    }
    if (this.#controlBlocks === kMaxBlocksPerControl) this.#closeControl();
  }

  #closeControl(): void {
    if (this.#controlPos < 0) return;
    this.#items?.push(this.#controlPos, this.#out.length, this.#controlEntries);
    this.#controlPos = -1;
  }

  #flushBuilders(): void {
    this.#b128.flush();
    this.#b64.flush();
  }

  #equalsPrevious(bytes: Uint8Array, start: number, end: number): boolean {
    if (end - start !== this.#prevSize) return false;
    const prev = this.#prev;
    for (let i = 0; i < this.#prevSize; i++) if (prev[i] !== bytes[start + i]) return false;
    return true;
  }

  #storePrevious(type: number, bytes: Uint8Array, start: number, end: number): void {
    const size = end - start;
    if (size > this.#prev.length) {
      this.#prev = new Uint8Array(Math.max(size, this.#prev.length * 2));
      this.#prevView = new DataView(this.#prev.buffer);
    }
    this.#prev.set(bytes.subarray(start, end));
    this.#prevSize = size;
    this.#prevType = type;
  }

  #writeLiteralFromPrevious(): void {
    this.#closeControl();
    const out = this.#out;
    const start = out.length;
    out.u8(this.#prevType);
    out.u8(0);
    out.bytes(this.#prev, 0, this.#prevSize);
    this.#items?.push(start, out.length, 1);
    this.#scaleIndex = kMemoryAsInteger;
    this.#prevDelta = 0n;
    // The decoder's previous Simple-8b value is 0 after a literal.
    this.#b64.resetAfterLiteral();
    this.#b128.resetAfterLiteral();
    this.#initializeFromPrevious();
  }

  #initializeFromPrevious(): void {
    const type = this.#prevType;
    const prev = this.#prev;
    this.#wide = uses128(type);
    switch (type) {
      case BsonType.double:
        this.#lastValueInPrevBlock = this.#prevView.getFloat64(0, true);
        scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, this.#scaled);
        this.#prevEncoded64 = this.#scaled.encoded;
        this.#scaleIndex = this.#scaled.scaleIndex;
        this.#b64.trackSum = true;
        break;
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
      case BsonType.objectId:
        this.#prevEncoded64 = encodeObjectId(prev, 0);
        break;
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
        if (len === this.#prevSize - 5 && bytes[start + 4] === this.#prev[4] && len <= 16) {
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
    const ok = this.#b128.append(zigzag128(BigInt.asIntN(128, encoded - (this.#prevEncoded128 ?? 0n))));
    this.#prevEncoded128 = encoded;
    return ok;
  }

  #append64(type: number, bytes: Uint8Array, start: number): boolean {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const prevView = this.#prevView;
    let value: bigint;
    switch (type) {
      case BsonType.int32:
        value = BigInt(view.getInt32(start, true) - prevView.getInt32(0, true));
        break;
      case BsonType.int64:
      case BsonType.date:
      case BsonType.timestamp:
        value = wrapInt64(view.getBigInt64(start, true) - prevView.getBigInt64(0, true));
        break;
      case BsonType.bool:
        value = BigInt((bytes[start] ?? 0) - (this.#prev[0] ?? 0));
        break;
      case BsonType.objectId: {
        // The 5 process-unique bytes are not encoded: they must match the previous ObjectId.
        for (let i = 4; i < 9; i++) if (bytes[start + i] !== this.#prev[i]) return false;
        const cur = encodeObjectId(bytes, start);
        value = wrapInt64(cur - this.#prevEncoded64);
        this.#prevEncoded64 = cur;
        break;
      }
      case BsonType.null:
      case BsonType.undefined:
      case BsonType.minKey:
      case BsonType.maxKey:
        value = 0n;
        break;
      default:
        // regex, dbPointer, codeWScope, symbol, object, array: literal only.
        return false;
    }
    if (usesDeltaOfDelta(type)) {
      const current = value;
      value = wrapInt64(current - this.#prevDelta);
      this.#prevDelta = current;
    }
    return this.#b64.append(zigzag64(value));
  }

  #appendDouble(value: number, previous: number): boolean {
    const s = this.#scaled;
    scaleAndEncodeDouble(value, this.#scaleIndex, s);
    let encoded = s.encoded;
    let scale = s.scaleIndex;
    if (scale !== this.#scaleIndex) {
      // A larger scale is needed: re-scale the pending values if that writes no extra block, else flush
      // them at the old scale and open a new control.
      const rescaled = this.#tryRescalePending(encoded, scale);
      if (rescaled !== undefined) {
        rescaled.sink = this;
        rescaled.trackSum = true;
        this.#spare64.push(this.#b64);
        this.#b64 = rescaled;
        this.#prevEncoded64 = encoded;
        this.#scaleIndex = scale;
        return true;
      }
      this.#b64.flush();
      this.#closeControl();
      scaleAndEncodeDouble(previous, scale, s);
      let prevEncoded = s.encoded;
      if (s.scaleIndex !== scale) {
        scaleAndEncodeDouble(value, s.scaleIndex, s);
        encoded = s.encoded;
        scale = s.scaleIndex;
        scaleAndEncodeDouble(previous, scale, s);
        prevEncoded = s.encoded;
      }
      this.#prevEncoded64 = prevEncoded;
      this.#scaleIndex = scale;
    }
    const builder = this.#b64;
    const before = builder.blocksWritten;
    if (!builder.append(zigzag64(wrapInt64(encoded - this.#prevEncoded64)))) return false;
    if (builder.blocksWritten === before) {
      this.#prevEncoded64 = encoded;
      return true;
    }
    this.#restartScaleAfterBlock();
    return true;
  }

  /**
   * After a block was written, drop to the smallest scale that fits the last value written and re-add the
   * pending values (which raises the scale again as needed).
   */
  #restartScaleAfterBlock(): void {
    const prevScale = this.#scaleIndex;
    const s = this.#scaled;
    scaleAndEncodeDouble(this.#lastValueInPrevBlock, 0, s);
    this.#prevEncoded64 = s.encoded;
    this.#scaleIndex = s.scaleIndex;
    const old = this.#b64;
    this.#b64 = this.#acquire64(this, {
      trackSum: true,
      lastWritten: old.lastWritten,
      blocksWritten: old.blocksWritten,
    });
    let prev = this.#lastValueInPrevBlock;
    let prevEncoded = encodeDouble(prev, prevScale);
    if (prevEncoded === undefined)
      throw new InternalInvariantError(7002, 'last block value not encodable at its scale');
    const n = old.pendingCount + old.rleCount;
    for (let i = 0; i < n; i++) {
      const v = i < old.pendingCount ? old.pendingAt(i) : old.lastForRle;
      if (v === kMissing) {
        this.#b64.skip();
        continue;
      }
      prevEncoded = wrapInt64(prevEncoded + unzigzag(v));
      const val = decodeDouble(prevEncoded, prevScale);
      this.#appendDouble(val, prev);
      prev = val;
    }
    this.#spare64.push(old);
  }

  #tryRescalePending(encoded: bigint, newScale: number): Simple8bBuilder | undefined {
    const old = this.#b64;
    const prev = encodeDouble(this.#lastValueInPrevBlock, this.#scaleIndex);
    const prevRescaled = encodeDouble(this.#lastValueInPrevBlock, newScale);
    if (prev === undefined || prevRescaled === undefined) return undefined;
    trialSink.reset();
    const trial = this.#acquire64(trialSink, {
      trackSum: false,
      lastWritten: old.lastWritten,
      blocksWritten: old.blocksWritten,
    });
    if (this.#rescaleInto(trial, old, encoded, newScale, prev, prevRescaled)) return trial;
    this.#spare64.push(trial);
    return undefined;
  }

  /** Append `old`'s pending values and `encoded` re-scaled to `newScale`; `false` if that does not fit. */
  #rescaleInto(
    trial: Simple8bBuilder,
    old: Simple8bBuilder,
    encoded: bigint,
    newScale: number,
    prevAtOldScale: bigint,
    prevAtNewScale: bigint,
  ): boolean {
    let prev = prevAtOldScale;
    let prevRescaled = prevAtNewScale;
    const n = old.pendingCount + old.rleCount;
    for (let i = 0; i < n; i++) {
      const v = i < old.pendingCount ? old.pendingAt(i) : old.lastForRle;
      if (v === kMissing) {
        trial.skip();
        continue;
      }
      prev = wrapInt64(prev + unzigzag(v));
      const rescaled = encodeDouble(decodeDouble(prev, this.#scaleIndex), newScale);
      if (rescaled === undefined) return false;
      if (!trial.append(zigzag64(wrapInt64(rescaled - prevRescaled))) || trialSink.wrote) return false;
      prevRescaled = rescaled;
    }
    return trial.append(zigzag64(wrapInt64(encoded - prevRescaled))) && !trialSink.wrote;
  }
}
