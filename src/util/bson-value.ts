/**
 * BSON values as they appear in JavaScript: classification, MongoDB's comparison order, and exact BSON sizes.
 *
 * A "BSON value" here is whatever js-bson (v7) serialises: primitives (`number`, `string`, `boolean`,
 * `null`, `bigint`), `Date`, `RegExp`, `Uint8Array`, arrays, plain (or null-prototype) objects and the
 * js-bson classes (`Int32`, `Long`, `Double`, `Decimal128`, `ObjectId`, `Binary`, `Timestamp`, `MinKey`,
 * `MaxKey`, `BSONRegExp`, `Code`, `BSONSymbol`, `DBRef`). JS `undefined` means "missing": a field whose
 * value is `undefined` does not exist (js-bson with `ignoreUndefined: true`), and an `undefined` array
 * element is BSON null (js-bson always writes it so). BSON's deprecated `undefined` type cannot be
 * expressed: js-bson has no class for it.
 *
 * js-bson classes are recognised by their `_bsontype` tag, not by `instanceof`, exactly as js-bson's own
 * serializer does, so values created by another copy of `bson` are handled too.
 *
 * Comparison follows the server's `BSONElement::woCompare` / `compareElementValues` with field names
 * ignored at the top level, no collation (strings compare as UTF-8 bytes) and exact numeric comparison
 * across int32, int64, double and decimal128.
 *
 * @packageDocumentation
 */

import { Buffer } from 'node:buffer';

import { Binary as BinaryClass } from 'bson';
import type {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  ObjectId,
  Timestamp,
} from 'bson';
import { TimeseriesError } from '../errors.js';
import { defineField, hasOwnField } from './safe-record.js';
import { wrapInt64 } from './int64.js';

/**
 * The value of a BSON number as a JS number (rounded when it has no exact double), whatever its width:
 * a JS number or bigint, or a js-bson `Int32`, `Double`, `Long` or `Decimal128` (recognised by their
 * `_bsontype`, so values from another copy of js-bson count too).
 *
 * @param v - any value.
 * @returns the number, or `undefined` when `v` is not a BSON number.
 */
export function bsonNumberValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'object' && v !== null && '_bsontype' in v) {
    const tag = v._bsontype;
    if (tag === 'Int32' || tag === 'Double' || tag === 'Long' || tag === 'Decimal128') {
      return Number((v as { toString(): string }).toString());
    }
  }
  return undefined;
}

/**
 * Whether a value counts as true where MongoDB takes a flag of any type (`$exists: <value>`; the server's
 * `BSONElement::trueValue`): `false`, `null`, `undefined` and zero of any numeric type are false, anything
 * else (an empty string, an object) is true.
 *
 * @param v - any value.
 * @returns its truth.
 */
export function bsonTrueValue(v: unknown): boolean {
  if (v === false || v === null || v === undefined) return false;
  const n = bsonNumberValue(v);
  return n === undefined || n !== 0;
}

/** MongoDB's maximum size of a user document (`BSONObjMaxUserSize`): 16 MiB. */
export const kBSONObjMaxUserSize: number = 16 * 1024 * 1024;

/**
 * BSON element type bytes (bsonspec.org). `minKey` is the byte `0xFF` (the server's signed `-1`).
 */
export const BsonType = {
  double: 1,
  string: 2,
  object: 3,
  array: 4,
  binData: 5,
  undefined: 6,
  objectId: 7,
  bool: 8,
  date: 9,
  null: 10,
  regex: 11,
  dbPointer: 12,
  javascript: 13,
  symbol: 14,
  javascriptWithScope: 15,
  int: 16,
  timestamp: 17,
  long: 18,
  decimal: 19,
  minKey: 255,
  maxKey: 127,
} as const;

/**
 * MongoDB's canonical type order (`canonicalizeBSONType` in `bsontypes.h`): values of different canonical
 * types compare by these numbers; all numeric types share 10, string and symbol share 15.
 */
export const CanonicalType = {
  minKey: -1,
  /** EOO ("missing") and BSON undefined. */
  undefined: 0,
  null: 5,
  number: 10,
  string: 15,
  object: 20,
  array: 25,
  binData: 30,
  objectId: 35,
  bool: 40,
  date: 45,
  timestamp: 47,
  regex: 50,
  /** BSON DBPointer (0x0C); js-bson never writes it (its `DBRef` class is an embedded document). */
  dbPointer: 55,
  code: 60,
  codeWithScope: 65,
  maxKey: 127,
} as const;

const BINARY_SUBTYPE_BYTE_ARRAY = 2;
const TWO_POW_63 = 9223372036854775808;
const TWO_POW_32 = 4294967296;
const DECIMAL_MAX_COEFFICIENT = 10n ** 34n - 1n;
const DECIMAL_EXPONENT_BIAS = 6176n;
const LOG10_2 = Math.log10(2);

/** Shared scratch for reading doubles' bits; module-level so comparisons allocate no DataView. */
const float64Scratch = new DataView(new ArrayBuffer(8));

/**
 * The flags js-bson's serializer writes for a JS RegExp, in its order (`global` is written as `s`).
 *
 * @param re - a regex.
 * @returns the BSON flags.
 */
export function jsBsonRegexFlags(re: RegExp): string {
  return (re.ignoreCase ? 'i' : '') + (re.global ? 's' : '') + (re.multiline ? 'm' : '');
}

function unsupported(v: unknown): TimeseriesError {
  const what =
    typeof v === 'object' && v !== null
      ? `object with prototype ${String((Object.getPrototypeOf(v) as { constructor?: { name?: unknown } } | null)?.constructor?.name)}`
      : typeof v;
  return new TimeseriesError('BadValue', `Unsupported value for BSON: ${what}`);
}

/**
 * The hex string of an ObjectId, as one flat string.
 *
 * js-bson's `toHexString()` returns a string built by concatenation (a tree of pieces, about 220 bytes
 * of heap); the hex ids kept as map keys for every open and every stored bucket are made by Node's hex
 * encoder instead (about 40 bytes, and hashed without flattening first).
 *
 * @param oid - an ObjectId.
 * @returns its 24 lowercase hex digits.
 */
export function objectIdHex(oid: ObjectId): string {
  return bytesHex(oid.id);
}

/**
 * {@link objectIdHex} of an ObjectId's bytes (`oid.id` makes a new buffer on every read: a caller that
 * needs the bytes too reads them once).
 *
 * @param bytes - the 12 bytes.
 * @returns their lowercase hex digits.
 */
export function bytesHex(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes)).toString('hex');
}

/**
 * Whether `v` is a plain object that js-bson writes as an embedded document: its prototype is
 * `Object.prototype` or `null`. Arrays, `Date`, `RegExp`, typed arrays, js-bson class instances and other
 * class instances are not plain objects.
 *
 * @param v - any value.
 * @returns `true` for `{...}` literals and `Object.create(null)` objects.
 */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/**
 * A value to keep or hand out: a primitive as it is, an object through {@link cloneBsonValue}. Small enough
 * to be inlined where it runs per value (cells, min/max slots, unpacked rows); most values are numbers.
 *
 * @param v - a BSON value (acyclic).
 * @returns `v`, or a copy of it.
 */
export function ownValue(v: unknown): unknown {
  return typeof v === 'object' && v !== null ? cloneBsonValue(v) : v;
}

/**
 * A copy of a BSON value that shares nothing mutable with it: dates, documents, arrays and binary data are
 * copied (deeply); primitives and js-bson's value classes that nobody changes in place (ObjectId, Long,
 * Decimal128, Timestamp...) are returned as they are. tsbuckets copies what it keeps from callers and what
 * it hands back, so that a caller changing its own objects cannot change stored measurements.
 *
 * Hot paths call {@link ownValue}, which skips the call for primitives.
 *
 * @param v - a BSON value (acyclic).
 * @returns the copy.
 */
export function cloneBsonValue(v: unknown): unknown {
  if (typeof v !== 'object' || v === null) return v;
  if (v instanceof Date) return new Date(v.getTime());
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) out[i] = cloneBsonValue(v[i]);
    return out;
  }
  if (isPlainObject(v)) {
    // A spread copies a document in one step (own keys only, `__proto__` as a plain own field); then only
    // the values that are objects are copied in turn. The reader copies each row's meta this way.
    const out: Record<string, unknown> = { ...v };
    for (const key in out) {
      if (!hasOwnField(out, key)) continue;
      const value = out[key];
      if (typeof value === 'object' && value !== null) defineField(out, key, cloneBsonValue(value));
    }
    return out;
  }
  if (v instanceof Uint8Array) return Uint8Array.prototype.slice.call(v);
  if ((v as { _bsontype?: unknown })._bsontype === 'Binary') {
    const binary = v as Binary;
    return new BinaryClass(
      Uint8Array.prototype.slice.call(binary.buffer, 0, binary.position),
      binary.sub_type,
    );
  }
  return v;
}

/**
 * A copy of `bytes[start, end)` as a Node `Buffer` of its own bytes. Small copies come from Node's shared
 * pool, as `Buffer.from` of a string does: a new `ArrayBuffer` per copy (what `slice` makes) costs about a
 * microsecond, and a bucket document's columns are a dozen binaries. js-bson's `Binary` keeps a `Buffer`
 * it is given as it is (any other array it wraps in a new one). A pooled copy keeps its pool's 8 KiB
 * alive: for what is handed out (read results), not for what tsbuckets keeps.
 *
 * @param bytes - the source.
 * @param start - first byte.
 * @param end - end (exclusive).
 * @returns new bytes, never sharing memory with `bytes`.
 */
export function copyBytes(bytes: Uint8Array, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(end - start);
  out.set(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end));
  return out;
}

/**
 * `bytes[start, end)` as a Node `Buffer` viewing the same memory: what a js-bson `Binary` keeps as it is
 * (given a plain view, `Binary` makes this `Buffer` itself, after the caller made the view).
 *
 * @param bytes - the memory.
 * @param start - first byte.
 * @param end - end (exclusive).
 * @returns a view; writes to either are seen by both.
 */
export function bufferView(bytes: Uint8Array, start: number, end: number): Buffer {
  // A Buffer's `subarray` is a Buffer, made in about two thirds of the time `Buffer.from` takes.
  return Buffer.isBuffer(bytes)
    ? bytes.subarray(start, end)
    : Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start);
}

/**
 * Whether a JS number is written by js-bson as an int32 (type 16) rather than a double (type 1): an
 * integer within int32 range that is not `-0` (`serializeNumber` in js-bson's serializer).
 *
 * @param v - a number.
 * @returns `true` for an integer in int32 range other than -0.
 */
export function isInt32Number(v: number): boolean {
  // `v | 0` truncates to int32, so equality means "integer in int32 range"; -0 passes it and is excluded.
  return (v | 0) === v && !(v === 0 && 1 / v < 0);
}

/**
 * The BSON type byte js-bson's serializer writes for `v`.
 *
 * JS numbers follow js-bson exactly: int32 (16) for integers in int32 range other than `-0`, double (1)
 * otherwise. `bigint` is int64 (18). A js-bson `DBRef` is an embedded document (3) and a `Code` with a
 * scope object is code-with-scope (15). `undefined` ("missing") gives 0, the server's EOO.
 *
 * @param v - a BSON value as described in this module.
 * @returns the type byte (see {@link BsonType}); `0` for `undefined`.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write (functions, symbols, `Map`,
 * class instances, js-bson tags it does not know).
 */
export function bsonTypeOf(v: unknown): number {
  switch (typeof v) {
    case 'number':
      return isInt32Number(v) ? BsonType.int : BsonType.double;
    case 'string':
      return BsonType.string;
    case 'boolean':
      return BsonType.bool;
    case 'bigint':
      return BsonType.long;
    case 'undefined':
      return 0;
    case 'object': {
      if (v === null) return BsonType.null;
      if (Array.isArray(v)) return BsonType.array;
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null) return BsonType.object;
      const tag = (v as { _bsontype?: unknown })._bsontype;
      if (typeof tag === 'string') return bsonTypeOfTag(tag, v);
      if (v instanceof Date) return BsonType.date;
      if (v instanceof RegExp) return BsonType.regex;
      if (v instanceof Uint8Array) return BsonType.binData;
      throw unsupported(v);
    }
    default:
      throw unsupported(v);
  }
}

function bsonTypeOfTag(tag: string, v: object): number {
  switch (tag) {
    case 'Int32':
      return BsonType.int;
    case 'Long':
      return BsonType.long;
    case 'Double':
      return BsonType.double;
    case 'Decimal128':
      return BsonType.decimal;
    case 'ObjectId':
    case 'ObjectID':
      return BsonType.objectId;
    case 'Binary':
      return BsonType.binData;
    case 'Timestamp':
      return BsonType.timestamp;
    case 'MinKey':
      return BsonType.minKey;
    case 'MaxKey':
      return BsonType.maxKey;
    case 'BSONRegExp':
      return BsonType.regex;
    case 'BSONSymbol':
      return BsonType.symbol;
    case 'DBRef':
      return BsonType.object;
    case 'Code': {
      // Same test as js-bson's serializer: only an object scope makes it code-with-scope.
      const scope = (v as Code).scope;
      return scope != null && typeof scope === 'object' ? BsonType.javascriptWithScope : BsonType.javascript;
    }
    default:
      throw unsupported(v);
  }
}

/**
 * The canonical order number of a BSON type byte.
 *
 * @param type - a type byte from {@link bsonTypeOf} (0 for missing).
 * @returns the canonical type (see {@link CanonicalType}).
 */
export function canonicalTypeOfBsonType(type: number): number {
  switch (type) {
    case BsonType.minKey:
      return CanonicalType.minKey;
    case 0:
    case BsonType.undefined:
      return CanonicalType.undefined;
    case BsonType.null:
      return CanonicalType.null;
    case BsonType.double:
    case BsonType.int:
    case BsonType.long:
    case BsonType.decimal:
      return CanonicalType.number;
    case BsonType.string:
    case BsonType.symbol:
      return CanonicalType.string;
    case BsonType.object:
      return CanonicalType.object;
    case BsonType.array:
      return CanonicalType.array;
    case BsonType.binData:
      return CanonicalType.binData;
    case BsonType.objectId:
      return CanonicalType.objectId;
    case BsonType.bool:
      return CanonicalType.bool;
    case BsonType.date:
      return CanonicalType.date;
    case BsonType.timestamp:
      return CanonicalType.timestamp;
    case BsonType.regex:
      return CanonicalType.regex;
    case BsonType.dbPointer:
      return CanonicalType.dbPointer;
    case BsonType.javascript:
      return CanonicalType.code;
    case BsonType.javascriptWithScope:
      return CanonicalType.codeWithScope;
    case BsonType.maxKey:
      return CanonicalType.maxKey;
    default:
      throw new TimeseriesError('BadValue', `Unknown BSON type byte ${type}`);
  }
}

/**
 * MongoDB's canonical type of `v` (the first key of every comparison).
 *
 * @param v - a BSON value; `undefined` (missing) gives 0.
 * @returns the canonical type (see {@link CanonicalType}); a js-bson `DBRef` is an object (20).
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function canonicalTypeOf(v: unknown): number {
  return canonicalTypeOfBsonType(bsonTypeOf(v));
}

/**
 * The embedded document js-bson writes for a `DBRef`: `$ref`, `$id`, `$db` (when set), then the extra
 * fields, `undefined` extra fields omitted (js-bson forces `ignoreUndefined` there).
 *
 * @param ref - a js-bson `DBRef`.
 * @returns a fresh plain object in serialisation order.
 */
export function dbRefToDocument(ref: DBRef): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  defineField(doc, '$ref', ref.collection);
  defineField(doc, '$id', ref.oid);
  if (ref.db != null) defineField(doc, '$db', ref.db);
  const fields = ref.fields as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value !== undefined) defineField(doc, key, value);
  }
  return doc;
}

/**
 * The entries of an embedded document as js-bson would write them: own enumerable keys in
 * `Object.keys` order, `undefined` values skipped. `DBRef`s are expanded with {@link dbRefToDocument}.
 */
function documentOf(v: object): Record<string, unknown> {
  return (v as { _bsontype?: unknown })._bsontype === 'DBRef'
    ? dbRefToDocument(v as DBRef)
    : (v as Record<string, unknown>);
}

// ---------------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------------

function sign(n: number): number {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

/**
 * Compare two strings by their UTF-8 bytes (the server's `memcmp` order; no collation).
 *
 * Below U+D800, UTF-16 code-unit order equals UTF-8 byte order, so the common case compares code units.
 * At a difference involving a surrogate or a code unit of U+E000 or above, the orders can disagree (and
 * lone surrogates are written as U+FFFD by the encoder), so the exact UTF-8 bytes decide.
 *
 * @param a - first string.
 * @param b - second string.
 * @returns negative, zero or positive.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca === cb) continue;
    if (ca < 0xd800 && cb < 0xd800) return ca < cb ? -1 : 1;
    return sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
  }
  // A code-unit prefix is also a UTF-8 prefix, or (lone high surrogate against a pair) a smaller one.
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

function compareDoubles(x: number, y: number): number {
  if (x < y) return -1;
  if (x > y) return 1;
  if (x === y) return 0;
  // At least one NaN: NaN equals NaN and sorts below every other number (server `compareDoubles`).
  return Number.isNaN(x) ? (Number.isNaN(y) ? 0 : -1) : 1;
}

/** int64 value of a Long / bigint as js-bson writes it (two's complement, 64 bits). */
function int64Of(v: unknown): bigint {
  if (typeof v === 'bigint') return wrapInt64(v);
  const l = v as Long;
  return (BigInt(l.high) << 32n) | BigInt(l.low >>> 0);
}

/**
 * The int64 value as an exact JS number when it is small enough (|v| < 2^53), else `undefined`.
 * Avoids bigint allocation for the common case.
 */
function int64AsSafeNumber(v: unknown): number | undefined {
  if (typeof v === 'bigint') {
    const n = wrapInt64(v);
    return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : undefined;
  }
  const l = v as Long;
  // high is a signed int32; |high| < 2^21 keeps high * 2^32 + low below 2^53 in magnitude.
  return l.high >= -0x200000 && l.high < 0x200000 ? l.high * TWO_POW_32 + (l.low >>> 0) : undefined;
}

/** JS number value of an int32 / double BSON value (number, `Int32`, `Double`). */
function doubleOf(v: unknown): number {
  return typeof v === 'number' ? v : (v as Int32 | Double).value;
}

function compareInt64ToDouble(l: unknown, d: number): number {
  const small = int64AsSafeNumber(l);
  if (small !== undefined) return compareDoubles(small, d);
  if (Number.isNaN(d)) return 1;
  if (d >= TWO_POW_63) return -1;
  if (d < -TWO_POW_63) return 1;
  // d is within int64 range: its floor is an exact integer, so the bigint comparison is exact.
  const fl = Math.floor(d);
  const big = int64Of(l);
  const fb = BigInt(fl);
  if (big < fb) return -1;
  if (big > fb) return 1;
  return d > fl ? -1 : 0;
}

/** An exact finite number `(-1)^neg * coef * 10^e10 * 2^e2`, or NaN / ±Infinity. */
interface ExactNumber {
  kind: 'finite' | 'nan' | 'inf';
  neg: boolean;
  coef: bigint;
  e10: number;
  e2: number;
}

function readUint64LE(bytes: Uint8Array, offset: number): bigint {
  let lo = 0;
  let hi = 0;
  for (let i = 3; i >= 0; i--) {
    lo = lo * 256 + (bytes[offset + i] ?? 0);
    hi = hi * 256 + (bytes[offset + 4 + i] ?? 0);
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * Decode an IEEE 754-2008 decimal128 (BID encoding, as stored by BSON) into an exact number.
 * Non-canonical coefficients (above 10^34 − 1) are zero, as the standard prescribes.
 */
function exactFromDecimal(d: Decimal128): ExactNumber {
  const bytes = d.bytes;
  const hi = readUint64LE(bytes, 8);
  const lo = readUint64LE(bytes, 0);
  const neg = hi >> 63n === 1n;
  const combination = Number((hi >> 58n) & 0x1fn);
  if (combination === 0x1f) return { kind: 'nan', neg, coef: 0n, e10: 0, e2: 0 };
  if (combination === 0x1e) return { kind: 'inf', neg, coef: 0n, e10: 0, e2: 0 };
  let exponent: bigint;
  let coef: bigint;
  if (((hi >> 61n) & 3n) === 3n) {
    // "11" combination prefix: the implied coefficient exceeds 10^34 - 1, so the value is zero.
    exponent = (hi >> 47n) & 0x3fffn;
    coef = 0n;
  } else {
    exponent = (hi >> 49n) & 0x3fffn;
    coef = ((hi & 0x1ffffffffffffn) << 64n) | lo;
    if (coef > DECIMAL_MAX_COEFFICIENT) coef = 0n;
  }
  return { kind: 'finite', neg, coef, e10: Number(exponent - DECIMAL_EXPONENT_BIAS), e2: 0 };
}

function exactFromDouble(x: number): ExactNumber {
  if (Number.isNaN(x)) return { kind: 'nan', neg: false, coef: 0n, e10: 0, e2: 0 };
  if (!Number.isFinite(x)) return { kind: 'inf', neg: x < 0, coef: 0n, e10: 0, e2: 0 };
  if (Number.isSafeInteger(x))
    return { kind: 'finite', neg: x < 0, coef: BigInt(Math.abs(x)), e10: 0, e2: 0 };
  float64Scratch.setFloat64(0, x);
  const bits = float64Scratch.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & 0xfffffffffffffn;
  const neg = bits >> 63n === 1n;
  return biased === 0
    ? { kind: 'finite', neg, coef: fraction, e10: 0, e2: -1074 }
    : { kind: 'finite', neg, coef: fraction | (1n << 52n), e10: 0, e2: biased - 1075 };
}

function exactOf(v: unknown, type: number): ExactNumber {
  switch (type) {
    case BsonType.decimal:
      return exactFromDecimal(v as Decimal128);
    case BsonType.long: {
      const n = int64Of(v);
      return { kind: 'finite', neg: n < 0n, coef: n < 0n ? -n : n, e10: 0, e2: 0 };
    }
    default:
      return exactFromDouble(doubleOf(v));
  }
}

/** Approximate log10 of a finite non-zero exact number, good to well under 1. */
function approxLog10(x: ExactNumber): number {
  const digits = x.coef < 10n ** 15n ? Math.log10(Number(x.coef)) : x.coef.toString().length;
  return digits + x.e10 + x.e2 * LOG10_2;
}

function compareExact(a: ExactNumber, b: ExactNumber): number {
  if (a.kind === 'nan' || b.kind === 'nan') return a.kind === 'nan' ? (b.kind === 'nan' ? 0 : -1) : 1;
  const sa = a.kind === 'inf' ? (a.neg ? -2 : 2) : a.coef === 0n ? 0 : a.neg ? -1 : 1;
  const sb = b.kind === 'inf' ? (b.neg ? -2 : 2) : b.coef === 0n ? 0 : b.neg ? -1 : 1;
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0 || sa === 2 || sa === -2) return 0;
  // Same sign, both finite and non-zero: compare magnitudes, cheaply when they are far apart.
  const la = approxLog10(a);
  const lb = approxLog10(b);
  let mag: number;
  if (la - lb > 2) mag = 1;
  else if (lb - la > 2) mag = -1;
  else {
    // Close magnitudes bound the exponent differences, so these bigints stay small.
    let lhs = a.coef;
    let rhs = b.coef;
    const d10 = a.e10 - b.e10;
    if (d10 > 0) lhs *= 10n ** BigInt(d10);
    else if (d10 < 0) rhs *= 10n ** BigInt(-d10);
    const d2 = a.e2 - b.e2;
    if (d2 > 0) lhs <<= BigInt(d2);
    else if (d2 < 0) rhs <<= BigInt(-d2);
    mag = lhs < rhs ? -1 : lhs > rhs ? 1 : 0;
  }
  return sa > 0 ? mag : -mag;
}

function compareNumbers(a: unknown, ta: number, b: unknown, tb: number): number {
  if (ta === BsonType.decimal || tb === BsonType.decimal) return compareExact(exactOf(a, ta), exactOf(b, tb));
  if (ta === BsonType.long) {
    if (tb === BsonType.long) {
      const x = int64AsSafeNumber(a);
      const y = int64AsSafeNumber(b);
      if (x !== undefined && y !== undefined) return compareDoubles(x, y);
      const bx = int64Of(a);
      const by = int64Of(b);
      return bx < by ? -1 : bx > by ? 1 : 0;
    }
    return compareInt64ToDouble(a, doubleOf(b));
  }
  if (tb === BsonType.long) return -compareInt64ToDouble(b, doubleOf(a));
  return compareDoubles(doubleOf(a), doubleOf(b));
}

function stringOf(v: unknown): string {
  return typeof v === 'string' ? v : (v as BSONSymbol).value;
}

function compareBytes(a: Uint8Array, aLen: number, b: Uint8Array, bLen: number): number {
  const n = Math.min(aLen, bLen);
  for (let i = 0; i < n; i++) {
    const x = a[i] ?? 0;
    const y = b[i] ?? 0;
    if (x !== y) return x < y ? -1 : 1;
  }
  return aLen === bLen ? 0 : aLen < bLen ? -1 : 1;
}

function compareBinData(a: unknown, b: unknown): number {
  const [subA, bytesA, lenA] = binaryParts(a);
  const [subB, bytesB, lenB] = binaryParts(b);
  // The server compares the int32 length field first; subtype 2 counts its inner 4-byte length in it.
  const sizeA = lenA + (subA === BINARY_SUBTYPE_BYTE_ARRAY ? 4 : 0);
  const sizeB = lenB + (subB === BINARY_SUBTYPE_BYTE_ARRAY ? 4 : 0);
  if (sizeA !== sizeB) return sizeA < sizeB ? -1 : 1;
  if (subA !== subB) return subA < subB ? -1 : 1;
  return compareBytes(bytesA, lenA, bytesB, lenB);
}

function binaryParts(v: unknown): [subtype: number, bytes: Uint8Array, length: number] {
  if (v instanceof Uint8Array) return [0, v, v.byteLength];
  const bin = v as Binary;
  return [bin.sub_type, bin.buffer, bin.position];
}

function compareObjectIds(a: ObjectId, b: ObjectId): number {
  return compareBytes(a.id, 12, b.id, 12);
}

function dateMillis(d: Date): number {
  // js-bson writes Long.fromNumber(getTime()): an invalid date (NaN) becomes 0.
  const t = d.getTime();
  return Number.isNaN(t) ? 0 : t;
}

function regexParts(v: unknown): [pattern: string, flags: string] {
  if (v instanceof RegExp) {
    // js-bson's serializeRegExp writes these three flags, in this order (global as 's').
    return [v.source, (v.ignoreCase ? 'i' : '') + (v.global ? 's' : '') + (v.multiline ? 'm' : '')];
  }
  const r = v as BSONRegExp;
  return [r.pattern, r.options];
}

/** Compare two embedded documents element by element: canonical type, field name, value. */
function compareDocuments(a: Record<string, unknown>, b: Record<string, unknown>): number {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  let i = 0;
  let j = 0;
  for (;;) {
    while (i < ka.length && a[ka[i] as string] === undefined) i++;
    while (j < kb.length && b[kb[j] as string] === undefined) j++;
    if (i >= ka.length) return j >= kb.length ? 0 : -1;
    if (j >= kb.length) return 1;
    const nameA = ka[i] as string;
    const nameB = kb[j] as string;
    const va = a[nameA];
    const vb = b[nameB];
    const ta = bsonTypeOf(va);
    const tb = bsonTypeOf(vb);
    const ca = canonicalTypeOfBsonType(ta);
    const cb = canonicalTypeOfBsonType(tb);
    if (ca !== cb) return ca < cb ? -1 : 1;
    const byName = compareUtf8(nameA, nameB);
    if (byName !== 0) return byName;
    const byValue = compareSameCanonical(va, ta, vb, tb, ca);
    if (byValue !== 0) return byValue;
    i++;
    j++;
  }
}

/** Compare two arrays element-wise (their field names are equal positions); the shorter sorts first. */
function compareArrays(a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const c = compareBsonValues(a[i] ?? null, b[i] ?? null);
    if (c !== 0) return c;
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

function compareSameCanonical(a: unknown, ta: number, b: unknown, tb: number, canonical: number): number {
  switch (canonical) {
    case CanonicalType.minKey:
    case CanonicalType.undefined:
    case CanonicalType.null:
    case CanonicalType.maxKey:
      return 0;
    case CanonicalType.number:
      return compareNumbers(a, ta, b, tb);
    case CanonicalType.string:
      return compareUtf8(stringOf(a), stringOf(b));
    case CanonicalType.object:
      return compareDocuments(documentOf(a as object), documentOf(b as object));
    case CanonicalType.array:
      return compareArrays(a as ReadonlyArray<unknown>, b as ReadonlyArray<unknown>);
    case CanonicalType.binData:
      return compareBinData(a, b);
    case CanonicalType.objectId:
      return compareObjectIds(a as ObjectId, b as ObjectId);
    case CanonicalType.bool:
      return a === b ? 0 : a === false ? -1 : 1;
    case CanonicalType.date:
      return compareDoubles(dateMillis(a as Date), dateMillis(b as Date));
    case CanonicalType.timestamp: {
      // Unsigned: seconds (`t`, high word) then increment (`i`, low word); both getters are unsigned.
      const x = a as Timestamp;
      const y = b as Timestamp;
      return x.t !== y.t ? (x.t < y.t ? -1 : 1) : x.i < y.i ? -1 : x.i > y.i ? 1 : 0;
    }
    case CanonicalType.regex: {
      const [pa, fa] = regexParts(a);
      const [pb, fb] = regexParts(b);
      return compareUtf8(pa, pb) || compareUtf8(fa, fb);
    }
    case CanonicalType.code:
      return compareUtf8((a as Code).code, (b as Code).code);
    case CanonicalType.codeWithScope: {
      const x = a as Code;
      const y = b as Code;
      return compareUtf8(x.code, y.code) || compareDocuments(x.scope ?? {}, y.scope ?? {});
    }
    default:
      throw new TimeseriesError('BadValue', `Cannot compare values of canonical type ${canonical}`);
  }
}

/**
 * Compare two BSON values the way MongoDB orders them (`woCompare` of two elements, field names
 * ignored, no collation).
 *
 * Order: canonical type first ({@link canonicalTypeOf}); numbers numerically and exactly across int32,
 * int64 (`Long`, `bigint`), double and decimal128, NaN lowest and equal to NaN, `-0` equal to `0`;
 * strings and symbols by UTF-8 bytes; documents field by field (canonical type, name bytes, value), a
 * prefix sorting first; arrays element-wise; binData by length, subtype, bytes; ObjectIds by bytes;
 * `false < true`; dates as signed milliseconds; timestamps unsigned; regexes by pattern then flags; code
 * by its text, code-with-scope then by scope. `undefined` (missing) sorts after MinKey and before
 * everything else.
 *
 * @param a - first value.
 * @param b - second value.
 * @returns `-1`, `0` or `1`.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 * @example
 * ```ts
 * compareBsonValues(new Int32(1), 1.5); // -1
 * compareBsonValues(Long.fromString('9007199254740993'), 9007199254740992); // 1
 * compareBsonValues('z', new ObjectId()); // -1 (string sorts before ObjectId)
 * ```
 */
export function compareBsonValues(a: unknown, b: unknown): number {
  const ta = bsonTypeOf(a);
  const tb = bsonTypeOf(b);
  const ca = canonicalTypeOfBsonType(ta);
  const cb = canonicalTypeOfBsonType(tb);
  if (ca !== cb) return ca < cb ? -1 : 1;
  return sign(compareSameCanonical(a, ta, b, tb, ca));
}

// ---------------------------------------------------------------------------------------------------
// Sizes
// ---------------------------------------------------------------------------------------------------

/**
 * Strings at least this long are measured by Node's encoder, shorter ones in JS. Measured on Node 20:
 * row keys ("0".."359") 6 ns in JS vs 13 ns through `Buffer.byteLength`; 10–16-character field names
 * 22 ns vs 14 ns.
 */
const kNativeUtf8LengthThreshold = 8;

/**
 * The number of bytes of `s` in UTF-8, as js-bson writes it (a lone surrogate becomes U+FFFD, 3 bytes):
 * what `Buffer.byteLength(s, 'utf8')` returns. Sizing visits every name of every document, most of them
 * short row keys of bucket columns, for which counting in JS is cheaper than the call.
 *
 * @param s - a string.
 * @returns its UTF-8 byte length.
 */
export function utf8ByteLength(s: string): number {
  if (s.length >= kNativeUtf8LengthThreshold) return Buffer.byteLength(s, 'utf8');
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4; // a surrogate pair: one code point above U+FFFF
      i++;
    } else n += 3; // the rest of the BMP, and a lone surrogate (written as U+FFFD)
  }
  return n;
}

/**
 * UTF-8 length of the decimal representation of an array index (or a version-1 row key).
 *
 * @param i - a non-negative integer.
 * @returns its number of decimal digits (1 for 0).
 */
export function indexNameLength(i: number): number {
  let n = 1;
  while (i >= 10) {
    i = Math.floor(i / 10);
    n++;
  }
  return n;
}

/**
 * The bytes of the field names "0".."n-1" together: the sum of {@link indexNameLength} over `[0, n)`.
 *
 * @param n - how many consecutive indices, from 0.
 * @returns bytes, without NULs.
 */
export function indexNamesLength(n: number): number {
  let total = 0;
  for (let digits = 1, low = 0, high = 10; low < n; digits++, low = high, high *= 10)
    total += (Math.min(n, high) - low) * digits;
  return total;
}

function documentSize(doc: Record<string, unknown>): number {
  let size = 5; // int32 length + trailing NUL
  // for-in with an own-property check, not Object.keys: no array of names per call (documents are
  // sized for every measurement and every bucket).
  for (const key in doc) {
    if (!hasOwnField(doc, key)) continue;
    const v = doc[key];
    if (v !== undefined) size += 2 + utf8ByteLength(key) + bsonValueSize(v);
  }
  return size;
}

function arraySize(arr: ReadonlyArray<unknown>): number {
  let size = 5;
  for (let i = 0; i < arr.length; i++) {
    // `undefined` elements are written as null: type byte, name, NUL, no value bytes.
    size += 2 + indexNameLength(i) + bsonValueSize(arr[i] ?? null);
  }
  return size;
}

/**
 * The number of bytes of `v`'s value inside a BSON element (everything after the field name's NUL).
 *
 * Equal to what js-bson's `calculateObjectSize` adds for the value. Documents and arrays are sized
 * recursively without serialising anything. `undefined` (missing) gives 0.
 *
 * @param v - a BSON value (acyclic).
 * @returns the value's size in bytes.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function bsonValueSize(v: unknown): number {
  const type = bsonTypeOf(v);
  switch (type) {
    case 0:
    case BsonType.null:
    case BsonType.minKey:
    case BsonType.maxKey:
      return 0;
    case BsonType.int:
      return 4;
    case BsonType.double:
    case BsonType.long:
    case BsonType.date:
    case BsonType.timestamp:
      return 8;
    case BsonType.decimal:
      return 16;
    case BsonType.bool:
      return 1;
    case BsonType.objectId:
      return 12;
    case BsonType.string:
    case BsonType.symbol:
      return 5 + utf8ByteLength(stringOf(v));
    case BsonType.object:
      return documentSize(documentOf(v as object));
    case BsonType.array:
      return arraySize(v as ReadonlyArray<unknown>);
    case BsonType.binData: {
      const [subtype, , length] = binaryParts(v);
      return 5 + length + (subtype === BINARY_SUBTYPE_BYTE_ARRAY ? 4 : 0);
    }
    case BsonType.regex: {
      const [pattern, flags] = regexParts(v);
      return Buffer.byteLength(pattern, 'utf8') + 1 + Buffer.byteLength(flags, 'utf8') + 1;
    }
    case BsonType.javascript:
      return 5 + Buffer.byteLength((v as Code).code, 'utf8');
    case BsonType.javascriptWithScope: {
      const code = v as Code;
      return 4 + 5 + Buffer.byteLength(code.code, 'utf8') + documentSize(code.scope ?? {});
    }
    default:
      throw new TimeseriesError('BadValue', `Cannot size BSON type ${type}`);
  }
}

/**
 * The number of bytes of the BSON element `fieldName: v` inside a document: type byte, field name,
 * NUL, value. A field whose value is `undefined` is not written and has size 0.
 *
 * @param fieldName - the field name (UTF-8 encoded in BSON).
 * @param v - the value.
 * @returns the element's size in bytes.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function bsonElementSize(fieldName: string, v: unknown): number {
  if (v === undefined) return 0;
  return 2 + utf8ByteLength(fieldName) + bsonValueSize(v);
}

/**
 * The BSON type aliases of `$type` and `$jsonSchema`'s `bsonType` (server `findBSONTypeAlias`), with `number`
 * as the four numeric types.
 */
export const BSON_TYPE_ALIASES: Readonly<Record<string, ReadonlyArray<number>>> = {
  double: [BsonType.double],
  string: [BsonType.string],
  object: [BsonType.object],
  array: [BsonType.array],
  binData: [BsonType.binData],
  undefined: [BsonType.undefined],
  objectId: [BsonType.objectId],
  bool: [BsonType.bool],
  date: [BsonType.date],
  null: [BsonType.null],
  regex: [BsonType.regex],
  dbPointer: [BsonType.dbPointer],
  javascript: [BsonType.javascript],
  symbol: [BsonType.symbol],
  javascriptWithScope: [BsonType.javascriptWithScope],
  int: [BsonType.int],
  timestamp: [BsonType.timestamp],
  long: [BsonType.long],
  decimal: [BsonType.decimal],
  minKey: [BsonType.minKey],
  maxKey: [BsonType.maxKey],
  number: [BsonType.double, BsonType.int, BsonType.long, BsonType.decimal],
};
