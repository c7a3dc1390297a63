/**
 * The decoding state of one stream (docs/bsoncolumn.md §1.7, §1.8): the last value, the per-type base integer,
 * the previous delta of delta-of-delta types, the scale of the current control and its Simple-8b reader.
 *
 * Regular mode has one state; interleaved mode has one per leaf of the reference object.
 *
 * @packageDocumentation
 */
import { Binary, Code, Decimal128, Long, ObjectId, Timestamp } from 'bson';

import { BsonType, invalidColumn, scaleIndexForControlByte } from './bsoncolumn-util.js';
import { canonicalDouble, cloneCanonical, decodeUtf8, readCanonicalValue } from './bson-element.js';
import { Simple8bReader } from './simple8b.js';
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
  unzigzag64,
  writeUint128LE,
} from './simple8b-type-util.js';
import type { Int64Halves } from '../../util/int64.js';
import { add64, int64ToNumber } from '../../util/int64.js';

/**
 * The error for a column that decodes to more entries than allowed.
 *
 * @param max - the limit.
 * @returns the error to throw.
 */
export function tooManyEntries(max: number): Error {
  return invalidColumn(`more than ${max} entries`);
}

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

/**
 * Decoding state of one stream. Plain mutable data, reused for the whole column.
 *
 * The base integer of 64-bit types and the previous delta are two 32-bit halves (see `Int64Halves`), so
 * decoding doubles, integers and dates does no bigint arithmetic; 128-bit types keep a `bigint` base.
 */
export class DecodingState {
  /** Reader over the blocks of the current control. */
  readonly reader: Simple8bReader = new Simple8bReader();
  /** BSON type of the last value; 0 before the first value. */
  type = 0;
  #scheme: Scheme = Scheme.none;
  #baseLo = 0;
  #baseHi = 0;
  #base128 = 0n;
  #prevDeltaLo = 0;
  #prevDeltaHi = 0;
  // Scratch for the halves helpers; read into fields right after each call.
  readonly #t: Int64Halves = { lo: 0, hi: 0 };
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
    this.#prevDeltaLo = 0;
    this.#prevDeltaHi = 0;
    this.#scaleIndex = kMemoryAsInteger;
    this.reader.resetPrevious();
    this.reader.wide = this.#scheme === Scheme.delta128;
    this.#baseLo = 0;
    this.#baseHi = 0;
    this.#base128 = 0n;
    switch (type) {
      case BsonType.double:
        this.#lastDouble = view.getFloat64(pos, true);
        break;
      case BsonType.int32: {
        const v = view.getInt32(pos, true);
        this.#baseLo = v >>> 0;
        this.#baseHi = v < 0 ? 0xffffffff : 0;
        break;
      }
      case BsonType.int64:
      case BsonType.date:
      case BsonType.timestamp:
        this.#baseLo = view.getUint32(pos, true);
        this.#baseHi = view.getUint32(pos + 4, true);
        break;
      case BsonType.bool:
        this.#baseLo = bytes[pos] === 0 ? 0 : 1;
        break;
      case BsonType.objectId:
        encodeObjectId(bytes, pos, this.#t);
        this.#baseLo = this.#t.lo;
        this.#baseHi = this.#t.hi;
        this.#oidUnique.set(bytes.subarray(pos + 4, pos + 9));
        break;
      case BsonType.string:
      case BsonType.code:
        // A string that cannot be encoded gives base 0 (§3.4).
        this.#base128 = encodeString(bytes, pos + 4, size - 5) ?? 0n;
        break;
      case BsonType.binData:
        this.#binLength = size - 5;
        this.#binSubtype = bytes[pos + 4] ?? 0;
        this.#base128 = this.#binLength <= 16 ? readUint128LE(bytes, pos + 5, this.#binLength) : 0n;
        break;
      case BsonType.decimal128:
        this.#base128 = readUint128LE(bytes, pos, 16);
        break;
      default:
        break;
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
    this.#prevDeltaLo = 0;
    this.#prevDeltaHi = 0;
    this.#scaleIndex = kMemoryAsInteger;
    this.reader.resetPrevious();
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
      if (!encodeDouble(this.#lastDouble, scale, this.#t))
        throw invalidColumn(`scale index ${scale} cannot encode the last double (offset ${pos})`);
      this.#baseLo = this.#t.lo;
      this.#baseHi = this.#t.hi;
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
    const r = this.reader;
    if (!r.next()) return undefined;
    const t = this.#t;
    switch (this.#scheme) {
      case Scheme.none:
        return undefined;
      case Scheme.literalOnly:
        if (r.lo !== 0 || r.hi !== 0)
          throw invalidColumn(`non-zero delta for BSON type 0x${this.type.toString(16)}`);
        return this.current();
      case Scheme.deltaOfDelta:
        unzigzag64(r.lo, r.hi, t);
        add64(this.#prevDeltaLo, this.#prevDeltaHi, t.lo, t.hi, t);
        this.#prevDeltaLo = t.lo;
        this.#prevDeltaHi = t.hi;
        add64(this.#baseLo, this.#baseHi, t.lo, t.hi, t);
        this.#baseLo = t.lo;
        this.#baseHi = t.hi;
        this.#fromLiteral = false;
        return this.current();
      case Scheme.delta64:
        if (r.lo === 0 && r.hi === 0) return this.current();
        unzigzag64(r.lo, r.hi, t);
        add64(this.#baseLo, this.#baseHi, t.lo, t.hi, t);
        this.#baseLo = t.lo;
        this.#baseHi = t.hi;
        this.#fromLiteral = false;
        return this.current();
      case Scheme.double:
        if (r.lo === 0 && r.hi === 0) return this.current();
        unzigzag64(r.lo, r.hi, t);
        add64(this.#baseLo, this.#baseHi, t.lo, t.hi, t);
        this.#baseLo = t.lo;
        this.#baseHi = t.hi;
        this.#lastDouble = decodeDouble(t.lo, t.hi, this.#scaleIndex);
        this.#fromLiteral = false;
        return this.current();
      case Scheme.delta128:
        if (r.wideValue === 0n) return this.current();
        if (this.type === BsonType.binData && this.#binLength > 16) {
          throw invalidColumn('non-zero delta after a binData longer than 16 bytes');
        }
        this.#base128 = BigInt.asUintN(128, this.#base128 + unzigzag(r.wideValue));
        this.#fromLiteral = false;
        return this.current();
    }
  }

  /**
   * Decode every entry left in the current control onto `out`: the same entries as calling
   * {@link DecodingState.next} while {@link DecodingState.hasNext}, for regular mode where nothing else
   * interleaves. Doubles, int32 and dates (nearly all time-series data) get a loop of their own that keeps
   * the base in locals and skips the per-value scheme dispatch of `next()`; the rest go through `next()`.
   *
   * @param out - receives the entries.
   * @param max - the largest number of entries `out` may hold.
   * @throws TimeseriesError when `out` would exceed `max` entries, or as {@link DecodingState.next}.
   */
  drainInto(out: unknown[], max: number): void {
    if (this.#scheme === Scheme.double) this.#drainDoubles(out, max);
    else if (this.#scheme === Scheme.delta64 && this.type === BsonType.int32) this.#drainInt32(out, max);
    else if (this.#scheme === Scheme.deltaOfDelta && this.type === BsonType.date) this.#drainDates(out, max);
    else {
      const r = this.reader;
      while (r.hasNext()) {
        if (out.length >= max) throw tooManyEntries(max);
        out.push(this.next());
      }
    }
  }

  #drainDoubles(out: unknown[], max: number): void {
    const r = this.reader;
    const scale = this.#scaleIndex;
    let lo = this.#baseLo;
    let hi = this.#baseHi;
    let x = this.#lastDouble;
    while (r.hasNext()) {
      // Read first, then check the limit: a bad selector is reported before the count, as next() does.
      const present = r.next();
      if (out.length >= max) throw tooManyEntries(max);
      if (!present) {
        out.push(undefined);
        continue;
      }
      if (r.lo !== 0 || r.hi !== 0) {
        // base += unzigzag(delta), modulo 2^64.
        const sign = -(r.lo & 1);
        const dLo = (((r.lo >>> 1) | (r.hi << 31)) ^ sign) >>> 0;
        const dHi = ((r.hi >>> 1) ^ sign) >>> 0;
        const sum = (lo + dLo) >>> 0;
        hi = (hi + dHi + (sum < lo ? 1 : 0)) >>> 0;
        lo = sum;
        x = decodeDouble(lo, hi, scale);
        this.#fromLiteral = false;
      }
      // A literal's canonical value is canonicalDouble(#lastDouble) too, so #fromLiteral needs no branch.
      out.push(canonicalDouble(x));
    }
    this.#baseLo = lo;
    this.#baseHi = hi;
    this.#lastDouble = x;
  }

  #drainInt32(out: unknown[], max: number): void {
    const r = this.reader;
    // An int32's value is the low half of the base, literal or not.
    let lo = this.#baseLo;
    let hi = this.#baseHi;
    while (r.hasNext()) {
      // Read first, then check the limit: a bad selector is reported before the count, as next() does.
      const present = r.next();
      if (out.length >= max) throw tooManyEntries(max);
      if (!present) {
        out.push(undefined);
        continue;
      }
      if (r.lo !== 0 || r.hi !== 0) {
        // base += unzigzag(delta), modulo 2^64.
        const sign = -(r.lo & 1);
        const dLo = (((r.lo >>> 1) | (r.hi << 31)) ^ sign) >>> 0;
        const dHi = ((r.hi >>> 1) ^ sign) >>> 0;
        const sum = (lo + dLo) >>> 0;
        hi = (hi + dHi + (sum < lo ? 1 : 0)) >>> 0;
        lo = sum;
        this.#fromLiteral = false;
      }
      out.push(lo | 0);
    }
    this.#baseLo = lo;
    this.#baseHi = hi;
  }

  #drainDates(out: unknown[], max: number): void {
    const r = this.reader;
    let lo = this.#baseLo;
    let hi = this.#baseHi;
    let dLo = this.#prevDeltaLo;
    let dHi = this.#prevDeltaHi;
    while (r.hasNext()) {
      // Read first, then check the limit: a bad selector is reported before the count, as next() does.
      const present = r.next();
      if (out.length >= max) throw tooManyEntries(max);
      if (!present) {
        out.push(undefined);
        continue;
      }
      // delta += unzigzag(slot); base += delta; both modulo 2^64.
      const sign = -(r.lo & 1);
      let sum = (dLo + ((((r.lo >>> 1) | (r.hi << 31)) ^ sign) >>> 0)) >>> 0;
      dHi = (dHi + (((r.hi >>> 1) ^ sign) >>> 0) + (sum < dLo ? 1 : 0)) >>> 0;
      dLo = sum;
      sum = (lo + dLo) >>> 0;
      hi = (hi + dHi + (sum < lo ? 1 : 0)) >>> 0;
      lo = sum;
      this.#fromLiteral = false;
      out.push(new Date(int64ToNumber(lo, hi)));
    }
    this.#baseLo = lo;
    this.#baseHi = hi;
    this.#prevDeltaLo = dLo;
    this.#prevDeltaHi = dHi;
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
    const lo = this.#baseLo;
    const hi = this.#baseHi;
    switch (this.type) {
      case BsonType.double:
        return canonicalDouble(this.#lastDouble);
      case BsonType.int32:
        return lo | 0;
      case BsonType.int64:
        return Long.fromBits(lo | 0, hi | 0);
      case BsonType.date:
        return new Date(int64ToNumber(lo, hi));
      case BsonType.timestamp:
        return new Timestamp({ t: hi, i: lo });
      case BsonType.bool:
        return (lo | hi) !== 0;
      case BsonType.objectId: {
        const oid = new Uint8Array(12);
        decodeObjectId(lo, hi, this.#oidUnique, oid);
        return new ObjectId(oid);
      }
      case BsonType.string:
      case BsonType.code: {
        const n = decodeString(this.#base128, this.#scratch);
        const s = decodeUtf8(this.#scratch, 0, n);
        return this.type === BsonType.code ? new Code(s) : s;
      }
      case BsonType.decimal128: {
        const bytes = new Uint8Array(16);
        writeUint128LE(this.#base128, bytes, 0, 16);
        return new Decimal128(bytes);
      }
      case BsonType.binData: {
        const bytes = new Uint8Array(this.#binLength);
        writeUint128LE(this.#base128, bytes, 0, this.#binLength);
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
