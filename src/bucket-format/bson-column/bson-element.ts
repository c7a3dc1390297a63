/**
 * BSON elements as the column sees them: the size of an element value (validated against the buffer),
 * the canonical JS value of an element, and the element of a JS value.
 *
 * Canonical JS representation (what {@link readCanonicalValue} returns, recursively inside objects and
 * arrays):
 *
 * | BSON type | JS value |
 * |---|---|
 * | int32 | `number` |
 * | double | `number`, except an integral double in int32 range (not -0) → `Double`, so that it re-serializes as a double |
 * | int64 | `Long` |
 * | decimal128 | `Decimal128` |
 * | date | `Date` |
 * | string | `string` |
 * | bool | `boolean` |
 * | null, undefined | `null` (undefined is deprecated; js-bson writes `null` for it anyway) |
 * | objectId | `ObjectId` |
 * | binData | `Binary` |
 * | timestamp | `Timestamp` |
 * | object / array | plain object (own fields, `__proto__` as an ordinary field) / array |
 * | regex, symbol, code, codeWScope, dbPointer, minKey, maxKey | the js-bson class (`BSONRegExp`, `BSONSymbol`, `Code`, `DBRef`, `MinKey`, `MaxKey`) |
 *
 * The invariant: `serialize` of the canonical values gives the bytes of the original elements.
 *
 * @packageDocumentation
 */
import { Binary, Decimal128, Double, Long, ObjectId, Timestamp, deserialize, serialize } from 'bson';

import { TimeseriesError } from '../../errors.js';
import { defineField } from '../../util/safe-record.js';
import { BsonType, invalidColumn } from './bsoncolumn-util.js';
import { isInt32Number } from '../../util/bson-value.js';
import { wrapInt64 } from '../../util/int64.js';
import { isBsonValue } from '../../util/bson-type.js';

// ignoreBOM: a leading U+FEFF is part of the string, not a marker to drop.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/**
 * The canonical JS value of a BSON double (see the module comment).
 *
 * @param x - the double.
 * @returns `x`, or `new Double(x)` when `x` would otherwise re-serialize as an int32.
 */
export function canonicalDouble(x: number): number | Double {
  return isInt32Number(x) ? new Double(x) : x;
}

function need(end: number, pos: number, n: number): void {
  if (n < 0 || pos + n > end) throw invalidColumn(`element at offset ${pos} runs past the end of its buffer`);
}

function cstringEnd(bytes: Uint8Array, pos: number, end: number): number {
  const nul = bytes.indexOf(0, pos);
  if (nul < 0 || nul >= end) throw invalidColumn(`unterminated C string at offset ${pos}`);
  return nul + 1;
}

function stringSize(bytes: Uint8Array, view: DataView, pos: number, end: number): number {
  need(end, pos, 4);
  const len = view.getInt32(pos, true);
  if (len < 1) throw invalidColumn(`invalid string length ${len} at offset ${pos}`);
  need(end, pos + 4, len);
  if (bytes[pos + 4 + len - 1] !== 0) throw invalidColumn(`string at offset ${pos} does not end with NUL`);
  return 4 + len;
}

function documentSize(bytes: Uint8Array, view: DataView, pos: number, end: number): number {
  need(end, pos, 4);
  const len = view.getInt32(pos, true);
  if (len < 5) throw invalidColumn(`invalid document length ${len} at offset ${pos}`);
  need(end, pos, len);
  if (bytes[pos + len - 1] !== 0) throw invalidColumn(`document at offset ${pos} does not end with EOO`);
  return len;
}

/**
 * Size in bytes of the value of an element of type `type` starting at `pos`, checked against `end`.
 *
 * @param bytes - buffer.
 * @param view - view over `bytes`.
 * @param type - BSON type byte.
 * @param pos - first byte of the value.
 * @param end - end of the readable region.
 * @returns the value size.
 * @throws TimeseriesError when the value is truncated or the type is unknown.
 */
export function elementValueSize(
  bytes: Uint8Array,
  view: DataView,
  type: number,
  pos: number,
  end: number,
): number {
  let size: number;
  switch (type) {
    case BsonType.double:
    case BsonType.date:
    case BsonType.timestamp:
    case BsonType.int64:
      size = 8;
      break;
    case BsonType.string:
    case BsonType.code:
    case BsonType.symbol:
      return stringSize(bytes, view, pos, end);
    case BsonType.object:
    case BsonType.array:
      return documentSize(bytes, view, pos, end);
    case BsonType.binData: {
      need(end, pos, 5);
      const len = view.getInt32(pos, true);
      if (len < 0) throw invalidColumn(`invalid binData length ${len} at offset ${pos}`);
      size = 5 + len;
      break;
    }
    case BsonType.undefined:
    case BsonType.null:
    case BsonType.minKey:
    case BsonType.maxKey:
      size = 0;
      break;
    case BsonType.objectId:
      size = 12;
      break;
    case BsonType.bool:
      size = 1;
      break;
    case BsonType.regex: {
      const afterPattern = cstringEnd(bytes, pos, end);
      return cstringEnd(bytes, afterPattern, end) - pos;
    }
    case BsonType.dbPointer:
      size = stringSize(bytes, view, pos, end) + 12;
      break;
    case BsonType.codeWScope: {
      need(end, pos, 4);
      const len = view.getInt32(pos, true);
      if (len < 14) throw invalidColumn(`invalid code with scope length ${len} at offset ${pos}`);
      size = len;
      break;
    }
    case BsonType.int32:
      size = 4;
      break;
    case BsonType.decimal128:
      size = 16;
      break;
    default:
      throw invalidColumn(`unknown BSON type 0x${type.toString(16)} at offset ${pos - 2}`);
  }
  need(end, pos, size);
  return size;
}

/**
 * Decode UTF-8 bytes, failing with the column error on invalid UTF-8.
 *
 * @param bytes - buffer.
 * @param start - first byte.
 * @param end - end (exclusive).
 * @returns the string.
 */
export function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  // Short ASCII strings (tags, host names, units) are decoded by hand: TextDecoder's call overhead is
  // several times the work for a few bytes. Any byte >= 0x80 takes the decoder.
  if (end - start <= 24) {
    let s = '';
    let i = start;
    for (; i < end; i++) {
      const b = bytes[i] ?? 0;
      if (b >= 0x80) break;
      s += String.fromCharCode(b);
    }
    if (i === end) return s;
  }
  try {
    return utf8Decoder.decode(bytes.subarray(start, end));
  } catch (cause) {
    throw new TimeseriesError('BadValue', 'Invalid BSONColumn encoding: string is not valid UTF-8', {
      cause,
    });
  }
}

/**
 * Convert a value returned by js-bson's `deserialize` with `promoteValues: false` to the canonical form
 * (in place for objects and arrays, which js-bson has just created for us).
 *
 * @param value - a deserialized value.
 * @returns the canonical value.
 */
function canonicalize(value: unknown): unknown {
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object') return value;
  if (isBsonValue(value, 'Int32')) return value.value;
  if (isBsonValue(value, 'Double')) return canonicalDouble(value.value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = canonicalize(value[i]);
    return value;
  }
  if ('_bsontype' in value || value instanceof Date) return value;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) defineField(record, key, canonicalize(record[key]));
  return value;
}

/**
 * Values js-bson represents well: documents, arrays and the rare types. Wrap the element in a one-field
 * document and let js-bson parse it.
 */
function readViaJsBson(bytes: Uint8Array, type: number, pos: number, size: number): unknown {
  const doc = new Uint8Array(size + 7);
  const view = new DataView(doc.buffer);
  view.setInt32(0, size + 7, true);
  doc[4] = type;
  doc[5] = 0;
  doc.set(bytes.subarray(pos, pos + size), 6);
  doc[size + 6] = 0;
  let parsed: Record<string, unknown>;
  try {
    parsed = deserialize(doc, { promoteValues: false, bsonRegExp: true, validation: { utf8: true } });
  } catch (cause) {
    throw new TimeseriesError('BadValue', 'Invalid BSONColumn encoding: invalid BSON value', { cause });
  }
  return canonicalize(parsed['']);
}

/**
 * The canonical JS value of an element value (see the module comment for the mapping).
 *
 * @param bytes - buffer.
 * @param view - view over `bytes`.
 * @param type - BSON type byte.
 * @param pos - first byte of the value.
 * @param size - value size from {@link elementValueSize}.
 * @returns the value.
 */
export function readCanonicalValue(
  bytes: Uint8Array,
  view: DataView,
  type: number,
  pos: number,
  size: number,
): unknown {
  switch (type) {
    case BsonType.double:
      return canonicalDouble(view.getFloat64(pos, true));
    case BsonType.int32:
      return view.getInt32(pos, true);
    case BsonType.string:
      return decodeUtf8(bytes, pos + 4, pos + size - 1);
    case BsonType.bool:
      return bytes[pos] !== 0;
    case BsonType.null:
    case BsonType.undefined:
      return null;
    case BsonType.date:
      return new Date(Number(view.getBigInt64(pos, true)));
    case BsonType.int64:
      return Long.fromBits(view.getInt32(pos, true), view.getInt32(pos + 4, true));
    case BsonType.timestamp:
      return new Timestamp({ i: view.getUint32(pos, true), t: view.getUint32(pos + 4, true) });
    case BsonType.objectId:
      return new ObjectId(copyOf(bytes, pos, pos + 12));
    case BsonType.decimal128:
      return new Decimal128(copyOf(bytes, pos, pos + 16));
    case BsonType.binData: {
      const subtype = bytes[pos + 4] ?? 0;
      // Subtype 2 has an inner length that js-bson strips and re-adds: let js-bson handle it.
      if (subtype === 2) return readViaJsBson(bytes, type, pos, size);
      return new Binary(copyOf(bytes, pos + 5, pos + size), subtype);
    }
    default:
      return readViaJsBson(bytes, type, pos, size);
  }
}

/**
 * Converts JS values to BSON elements (type byte + value bytes, no name) in a reused buffer, exactly as
 * js-bson's `serialize` would write them.
 *
 * Common scalars are written directly; everything else goes through `serialize({ '': value })`.
 */
export class ElementWriter {
  // Our own scratch for the fast paths; `bytes` points at it or at a buffer js-bson returned.
  #scratch: Uint8Array = new Uint8Array(64);
  #scratchView: DataView = new DataView(this.#scratch.buffer);
  /** Buffer holding the last element's value at `[start, end)`; valid until the next write. */
  bytes: Uint8Array = this.#scratch;
  /** View over {@link ElementWriter.bytes}. */
  view: DataView = this.#scratchView;
  /** Type byte of the last element. */
  type = 0;
  /** First value byte. */
  start = 0;
  /** End of the value. */
  end = 0;

  #reserve(n: number): void {
    if (this.#scratch.length >= n) return;
    this.#scratch = new Uint8Array(Math.max(n, this.#scratch.length * 2));
    this.#scratchView = new DataView(this.#scratch.buffer);
    this.bytes = this.#scratch;
    this.view = this.#scratchView;
  }

  /**
   * Set the element for `value`.
   *
   * @param value - any value js-bson can serialize (not `undefined`).
   * @throws TimeseriesError when the value has no BSON representation (a function or a symbol).
   */
  write(value: unknown): void {
    this.bytes = this.#scratch;
    this.view = this.#scratchView;
    this.start = 0;
    switch (typeof value) {
      case 'number':
        if (isInt32Number(value)) {
          this.type = BsonType.int32;
          this.view.setInt32(0, value, true);
          this.end = 4;
        } else {
          this.type = BsonType.double;
          this.view.setFloat64(0, value, true);
          this.end = 8;
        }
        return;
      case 'boolean':
        this.type = BsonType.bool;
        this.bytes[0] = value ? 1 : 0;
        this.end = 1;
        return;
      case 'bigint':
        this.type = BsonType.int64;
        this.view.setBigInt64(0, wrapInt64(value), true);
        this.end = 8;
        return;
      case 'string': {
        // UTF-8 needs at most 3 bytes per UTF-16 unit.
        this.#reserve(value.length * 3 + 5);
        const bytes = this.bytes;
        // Short ASCII strings are copied by hand: encodeInto's call and the subarray cost more than the
        // copy. Anything else is left to the encoder, which rewrites the bytes from the start.
        let written = 0;
        if (value.length <= 24) {
          while (written < value.length) {
            const c = value.charCodeAt(written);
            if (c >= 0x80) break;
            bytes[4 + written++] = c;
          }
        }
        if (written !== value.length) written = utf8Encoder.encodeInto(value, bytes.subarray(4)).written;
        this.type = BsonType.string;
        this.view.setInt32(0, written + 1, true);
        this.bytes[4 + written] = 0;
        this.end = 5 + written;
        return;
      }
      case 'object':
        if (value === null) {
          this.type = BsonType.null;
          this.end = 0;
          return;
        }
        if (value instanceof Date) {
          this.type = BsonType.date;
          const ms = value.getTime();
          // Two 32-bit stores instead of `BigInt(ms)`, which allocated a bigint per date. A valid time
          // is an integer with |ms| <= 8.64e15, so both halves are exact; an invalid date is written as 0.
          if (Number.isNaN(ms)) {
            this.view.setUint32(0, 0, true);
            this.view.setUint32(4, 0, true);
          } else {
            this.view.setUint32(0, ms >>> 0, true);
            this.view.setUint32(4, Math.floor(ms / 4294967296) >>> 0, true);
          }
          this.end = 8;
          return;
        }
        break;
      default:
        break;
    }
    this.#writeViaJsBson(value);
  }

  #writeViaJsBson(value: unknown): void {
    let doc: Uint8Array;
    try {
      doc = serialize({ '': value });
    } catch (cause) {
      throw new TimeseriesError('BadValue', 'value cannot be serialized to BSON', { cause });
    }
    if (doc.length <= 5)
      throw new TimeseriesError('BadValue', `a ${typeof value} has no BSON representation`);
    this.bytes = doc;
    this.view = new DataView(doc.buffer, doc.byteOffset, doc.byteLength);
    this.type = doc[4] ?? 0;
    this.start = 6;
    this.end = doc.length - 1;
  }
}

/**
 * A copy of `bytes[start, end)` that shares no memory with `bytes`. `bytes.slice` does not do this when
 * `bytes` is a Node `Buffer` (the driver's `Binary.buffer`, a column read from storage): `Buffer#slice` is
 * a view, and js-bson's `Binary` and `Decimal128` keep the array they are given, so decoded values would
 * change with the column's memory when it is reused or patched in place.
 *
 * @param bytes - source.
 * @param start - first byte.
 * @param end - end (exclusive).
 * @returns a new array.
 */
export function copyOf(bytes: Uint8Array, start: number, end: number): Uint8Array {
  return Uint8Array.prototype.slice.call(bytes, start, end);
}

/**
 * A deep copy of a canonical value, so that repeated entries never share mutable objects (`Date`,
 * `Binary`, objects, arrays). Immutable js-bson values (`Long`, `ObjectId`, ...) are shared.
 *
 * @param value - a canonical value.
 * @returns an equal value that shares nothing mutable with `value`.
 */
export function cloneCanonical(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return new Date(value.getTime());
  if (isBsonValue(value, 'Binary'))
    return new Binary(copyOf(value.buffer, 0, value.position), value.sub_type);
  if (Array.isArray(value)) return value.map(cloneCanonical);
  if ('_bsontype' in value) return value;
  const out = {};
  for (const [key, v] of Object.entries(value)) defineField(out, key, cloneCanonical(v));
  return out;
}
