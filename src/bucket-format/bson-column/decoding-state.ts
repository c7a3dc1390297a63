/**
 * The decoding state of one stream (BSONCOLUMN.md §1.7, §1.8): the last value, the per-type base integer,
 * the previous delta of delta-of-delta types, the scale of the current control and its Simple-8b reader.
 *
 * Regular mode has one state; interleaved mode has one per leaf of the reference object.
 *
 * @packageDocumentation
 */
import { Binary, Code, Decimal128, Long, ObjectId, Timestamp } from 'bson';

import { BsonType, invalidColumn, scaleIndexForControlByte } from './bsoncolumn-util.js';
import { canonicalDouble, cloneCanonical, decodeUtf8, readCanonicalValue } from './bson-element.js';
import { Simple8bReader, kMissing } from './simple8b.js';
import {
  decodeDouble,
  decodeObjectId,
  decodeString,
  encodeDouble,
  encodeObjectId,
  encodeString,
  kMemoryAsInteger,
  readUint128LE,
  unzigzag,
  writeUint128LE,
} from './simple8b-type-util.js';
import { wrapInt64 } from '../../util/int64.js';

/** How a state turns a Simple-8b value into an entry; chosen once per literal, not per value. */
const Scheme = {
  /** No value yet: every delta yields missing. */
  none: 0,
  /** Only zero deltas (repeats) are valid: null, regex, objects... */
  literalOnly: 1,
  /** 64-bit delta. */
  delta64: 2,
  /** 64-bit delta of delta (Date, Timestamp, ObjectId). */
  deltaOfDelta: 3,
  /** 128-bit delta (string, code, binData, decimal128). */
  delta128: 4,
  /** Scaled double delta. */
  double: 5,
} as const;
type Scheme = (typeof Scheme)[keyof typeof Scheme];

function schemeFor(type: number): Scheme {
  switch (type) {
    case BsonType.double:
      return Scheme.double;
    case BsonType.int32:
    case BsonType.int64:
    case BsonType.bool:
      return Scheme.delta64;
    case BsonType.date:
    case BsonType.timestamp:
    case BsonType.objectId:
      return Scheme.deltaOfDelta;
    case BsonType.string:
    case BsonType.code:
    case BsonType.binData:
    case BsonType.decimal128:
      return Scheme.delta128;
    default:
      return Scheme.literalOnly;
  }
}

/** Decoding state of one stream. Plain mutable data, reused for the whole column. */
export class DecodingState {
  /** Reader over the blocks of the current control. */
  readonly reader: Simple8bReader = new Simple8bReader();
  /** BSON type of the last value; 0 before the first value. */
  type = 0;
  #scheme: Scheme = Scheme.none;
  #base = 0n;
  #prevDelta = 0n;
  #scaleIndex = kMemoryAsInteger;
  #lastDouble = 0;
  // While `true`, the last value is the literal itself (a repeat re-reads it): literal-only types, strings
  // and binData that have no integer encoding, and any value not yet changed by a non-zero delta.
  #fromLiteral = false;
  #litBytes: Uint8Array = new Uint8Array(0);
  #litView: DataView = new DataView(new ArrayBuffer(0));
  #litPos = 0;
  #litSize = 0;
  #lastObject: unknown = null;
  #binLength = 0;
  #binSubtype = 0;
  readonly #oidUnique = new Uint8Array(5);
  readonly #scratch = new Uint8Array(16);

  /**
   * Make the element at `pos` the last value, as a literal does (§1.3).
   *
   * @param bytes - buffer holding the element value.
   * @param view - view over `bytes`.
   * @param type - BSON type.
   * @param pos - first value byte.
   * @param size - value size (already validated).
   */
  loadLiteral(bytes: Uint8Array, view: DataView, type: number, pos: number, size: number): void {
    this.type = type;
    this.#scheme = schemeFor(type);
    this.#fromLiteral = true;
    this.#litBytes = bytes;
    this.#litView = view;
    this.#litPos = pos;
    this.#litSize = size;
    this.#prevDelta = 0n;
    this.#scaleIndex = kMemoryAsInteger;
    this.reader.prev = 0n;
    this.reader.wide = this.#scheme === Scheme.delta128;
    switch (type) {
      case BsonType.double:
        this.#lastDouble = view.getFloat64(pos, true);
        break;
      case BsonType.int32:
        this.#base = BigInt(view.getInt32(pos, true));
        break;
      case BsonType.int64:
      case BsonType.date:
      case BsonType.timestamp:
        this.#base = view.getBigInt64(pos, true);
        break;
      case BsonType.bool:
        this.#base = bytes[pos] === 0 ? 0n : 1n;
        break;
      case BsonType.objectId:
        this.#base = encodeObjectId(bytes, pos);
        this.#oidUnique.set(bytes.subarray(pos + 4, pos + 9));
        break;
      case BsonType.string:
      case BsonType.code:
        // A string that cannot be encoded gives base 0 (§3.4).
        this.#base = encodeString(bytes, pos + 4, size - 5) ?? 0n;
        break;
      case BsonType.binData:
        this.#binLength = size - 5;
        this.#binSubtype = bytes[pos + 4] ?? 0;
        this.#base = this.#binLength <= 16 ? readUint128LE(bytes, pos + 5, this.#binLength) : 0n;
        break;
      case BsonType.decimal128:
        this.#base = readUint128LE(bytes, pos, 16);
        break;
      default:
        this.#base = 0n;
    }
  }

  /**
   * After an interleaved section: the last value is the last decoded object (§1.6 step 7).
   *
   * @param obj - the last object, or `undefined` when the section decoded none.
   * @param type - its BSON type (object or array).
   */
  loadObject(obj: unknown, type: number): void {
    this.type = obj === undefined ? 0 : type;
    this.#scheme = obj === undefined ? Scheme.none : Scheme.literalOnly;
    this.#fromLiteral = false;
    this.#lastObject = obj;
    this.#prevDelta = 0n;
    this.#scaleIndex = kMemoryAsInteger;
    this.reader.prev = 0n;
    this.reader.wide = false;
  }

  /**
   * Start a Simple-8b control at `pos` (the control byte).
   *
   * @param bytes - column bytes.
   * @param view - view over `bytes`.
   * @param pos - offset of the control byte.
   * @param end - end of the column.
   * @returns the offset after the control's blocks.
   * @throws TimeseriesError when the blocks are truncated or the scale is invalid for the last value.
   */
  startControl(bytes: Uint8Array, view: DataView, pos: number, end: number): number {
    const control = bytes[pos] ?? 0;
    const blocks = (control & 0x0f) + 1;
    const scale = scaleIndexForControlByte(control);
    if (pos + 1 + blocks * 8 > end) throw invalidColumn(`Simple-8b blocks truncated at offset ${pos}`);
    if (this.#scheme === Scheme.double) {
      const base = encodeDouble(this.#lastDouble, scale);
      if (base === undefined)
        throw invalidColumn(`scale index ${scale} cannot encode the last double (offset ${pos})`);
      this.#base = base;
    } else if (scale !== kMemoryAsInteger) {
      throw invalidColumn(`scaled control byte 0x${control.toString(16)} for a non-double at offset ${pos}`);
    }
    this.#scaleIndex = scale;
    this.reader.start(bytes, view, pos + 1, blocks);
    return pos + 1 + blocks * 8;
  }

  /** Whether the current control has entries left. */
  hasNext(): boolean {
    return this.reader.hasNext();
  }

  /**
   * The next entry of the current control.
   *
   * @returns the canonical value, or `undefined` for a missing entry.
   * @throws TimeseriesError for a non-zero delta that the last value's type cannot take.
   */
  next(): unknown {
    const d = this.reader.next();
    if (d === kMissing) return undefined;
    switch (this.#scheme) {
      case Scheme.none:
        return undefined;
      case Scheme.literalOnly:
        if (d !== 0n) throw invalidColumn(`non-zero delta for BSON type 0x${this.type.toString(16)}`);
        return this.current();
      case Scheme.deltaOfDelta:
        this.#prevDelta = wrapInt64(this.#prevDelta + unzigzag(d));
        this.#base = wrapInt64(this.#base + this.#prevDelta);
        this.#fromLiteral = false;
        return this.current();
      case Scheme.delta64:
        if (d === 0n) return this.current();
        this.#base = wrapInt64(this.#base + unzigzag(d));
        this.#fromLiteral = false;
        return this.current();
      case Scheme.double:
        if (d === 0n) return this.current();
        this.#base = wrapInt64(this.#base + unzigzag(d));
        this.#lastDouble = decodeDouble(this.#base, this.#scaleIndex);
        this.#fromLiteral = false;
        return this.current();
      case Scheme.delta128:
        if (d === 0n) return this.current();
        if (this.type === BsonType.binData && this.#binLength > 16) {
          throw invalidColumn('non-zero delta after a binData longer than 16 bytes');
        }
        this.#base = BigInt.asUintN(128, this.#base + unzigzag(d));
        this.#fromLiteral = false;
        return this.current();
    }
  }

  /**
   * A fresh canonical copy of the last value (what a zero delta produces).
   *
   * @returns the value, or `undefined` when there is none.
   */
  current(): unknown {
    if (this.#scheme === Scheme.none) return undefined;
    if (this.#fromLiteral) {
      return readCanonicalValue(this.#litBytes, this.#litView, this.type, this.#litPos, this.#litSize);
    }
    const base = this.#base;
    switch (this.type) {
      case BsonType.double:
        return canonicalDouble(this.#lastDouble);
      case BsonType.int32:
        return Number(BigInt.asIntN(32, base));
      case BsonType.int64:
        return Long.fromBigInt(base);
      case BsonType.date:
        return new Date(Number(base));
      case BsonType.timestamp:
        return new Timestamp({
          t: Number(BigInt.asUintN(32, base >> 32n)),
          i: Number(BigInt.asUintN(32, base)),
        });
      case BsonType.bool:
        return base !== 0n;
      case BsonType.objectId: {
        const oid = new Uint8Array(12);
        decodeObjectId(base, this.#oidUnique, oid);
        return new ObjectId(oid);
      }
      case BsonType.string:
      case BsonType.code: {
        const n = decodeString(base, this.#scratch);
        const s = decodeUtf8(this.#scratch, 0, n);
        return this.type === BsonType.code ? new Code(s) : s;
      }
      case BsonType.decimal128: {
        const bytes = new Uint8Array(16);
        writeUint128LE(base, bytes, 0, 16);
        return new Decimal128(bytes);
      }
      case BsonType.binData: {
        const bytes = new Uint8Array(this.#binLength);
        writeUint128LE(base, bytes, 0, this.#binLength);
        if (this.#binSubtype !== 2) return new Binary(bytes, this.#binSubtype);
        const value = new Uint8Array(5 + this.#binLength);
        new DataView(value.buffer).setInt32(0, this.#binLength, true);
        value[4] = 2;
        value.set(bytes, 5);
        return readCanonicalValue(value, new DataView(value.buffer), BsonType.binData, 0, value.length);
      }
      default:
        return cloneCanonical(this.#lastObject);
    }
  }
}
