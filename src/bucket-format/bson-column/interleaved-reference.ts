/**
 * The encoder's view of objects for interleaved mode (docs/bsoncolumn.md §1.6 "Encoder behaviour"): objects as
 * trees of fields, the lock-step walk of an object against the reference, merging an object into the
 * reference, and writing the reference document.
 *
 * Compatibility is stricter than "field subset" where the decoder would otherwise rebuild a different
 * object: empty sub-objects are always written by the decoder, so an object lacking one of the reference's
 * empty sub-objects is incompatible, and an object with no field at all would decode as missing.
 *
 * @packageDocumentation
 */
import { BsonType } from './bsoncolumn-util.js';
import type { ByteWriter } from './byte-writer.js';

/** One field of an object: a scalar leaf (value bytes) or a sub-object. */
export interface RefField {
  /** Field name. */
  readonly name: string;
  /** The sub-object, or `undefined` for a scalar leaf. */
  readonly sub: RefObject | undefined;
  /** BSON type of a leaf. */
  readonly type: number;
  /** Buffer holding a leaf's value. */
  readonly bytes: Uint8Array;
  /** First value byte of a leaf. */
  readonly start: number;
  /** End of a leaf's value. */
  readonly end: number;
}

/** An object or array as a list of fields. */
export interface RefObject {
  /** `true` for an array. */
  readonly isArray: boolean;
  /** Fields in order. */
  readonly fields: ReadonlyArray<RefField>;
}

// ignoreBOM: a leading U+FEFF is part of the name, not a marker to drop.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
const utf8Encoder = new TextEncoder();

/**
 * Parse an embedded document (trusted bytes, from js-bson) into a tree; arrays are descended into.
 *
 * @param bytes - buffer.
 * @param pos - first byte of the document (its int32 length).
 * @param isArray - whether the document is an array.
 * @returns the tree.
 */
export function parseRefObject(bytes: Uint8Array, pos: number, isArray: boolean): RefObject {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const docEnd = pos + view.getInt32(pos, true) - 1;
  const fields: RefField[] = [];
  let p = pos + 4;
  while (p < docEnd) {
    const type = bytes[p] ?? 0;
    const nameEnd = bytes.indexOf(0, p + 1);
    const name = utf8.decode(bytes.subarray(p + 1, nameEnd));
    const start = nameEnd + 1;
    const end = start + valueSize(bytes, view, type, start);
    const sub =
      type === BsonType.object || type === BsonType.array
        ? parseRefObject(bytes, start, type === BsonType.array)
        : undefined;
    fields.push({ name, sub, type, bytes, start, end });
    p = end;
  }
  return { isArray, fields };
}

/** Value size of a trusted element. */
function valueSize(bytes: Uint8Array, view: DataView, type: number, pos: number): number {
  switch (type) {
    case BsonType.double:
    case BsonType.date:
    case BsonType.timestamp:
    case BsonType.int64:
      return 8;
    case BsonType.string:
    case BsonType.code:
    case BsonType.symbol:
      return 4 + view.getInt32(pos, true);
    case BsonType.object:
    case BsonType.array:
    case BsonType.codeWScope:
      return view.getInt32(pos, true);
    case BsonType.binData:
      return 5 + view.getInt32(pos, true);
    case BsonType.objectId:
      return 12;
    case BsonType.bool:
      return 1;
    case BsonType.regex: {
      const a = bytes.indexOf(0, pos) + 1;
      return bytes.indexOf(0, a) + 1 - pos;
    }
    case BsonType.dbPointer:
      return 4 + view.getInt32(pos, true) + 12;
    case BsonType.int32:
      return 4;
    case BsonType.decimal128:
      return 16;
    default:
      // undefined, null, minKey, maxKey
      return 0;
  }
}

/**
 * Number of scalar leaves (empty sub-objects count 0): the server's `numElements`.
 *
 * @param obj - a tree.
 * @returns the leaf count.
 */
export function countLeaves(obj: RefObject): number {
  let n = 0;
  for (const f of obj.fields) n += f.sub === undefined ? 1 : countLeaves(f.sub);
  return n;
}

/**
 * Whether the tree contains an empty sub-object at any depth (or is itself empty).
 *
 * @param obj - a tree.
 * @returns `true` if some sub-object has no fields.
 */
export function hasEmptyObject(obj: RefObject): boolean {
  if (obj.fields.length === 0) return true;
  for (const f of obj.fields) if (f.sub !== undefined && hasEmptyObject(f.sub)) return true;
  return false;
}

function fieldHasEmpty(f: RefField): boolean {
  return f.sub !== undefined && hasEmptyObject(f.sub);
}

function pushMissingLeaves(ref: RefObject, out: Array<RefField | undefined>): void {
  for (const f of ref.fields) {
    if (f.sub === undefined) out.push(undefined);
    else pushMissingLeaves(f.sub, out);
  }
}

/**
 * Walk `obj` in lock step with the reference; `out` receives, per reference leaf, the object's field or
 * `undefined` when the object lacks it.
 *
 * @param ref - reference tree.
 * @param obj - object tree.
 * @param out - receives one entry per reference leaf visited (also on failure, up to the failure).
 * @returns `true` when `obj` can be encoded against `ref`.
 */
export function lockStep(ref: RefObject, obj: RefObject, out: Array<RefField | undefined>): boolean {
  if (obj.fields.length === 0) return false;
  return lockStepInner(ref, obj, out);
}

function lockStepInner(ref: RefObject, obj: RefObject, out: Array<RefField | undefined>): boolean {
  const of = obj.fields;
  let j = 0;
  for (const rf of ref.fields) {
    const candidate = of[j];
    let match: RefField | undefined;
    if (candidate?.name === rf.name) {
      match = candidate;
      j++;
    }
    if (rf.sub !== undefined) {
      if (match === undefined) {
        // The decoder writes empty sub-objects always: the object must have them.
        if (hasEmptyObject(rf.sub)) return false;
        pushMissingLeaves(rf.sub, out);
        continue;
      }
      if (match.sub === undefined || match.sub.isArray !== rf.sub.isArray) return false;
      if ((rf.sub.fields.length === 0) !== (match.sub.fields.length === 0)) return false;
      if (!lockStepInner(rf.sub, match.sub, out)) return false;
    } else {
      if (match?.sub !== undefined) return false;
      out.push(match);
    }
  }
  return j === of.length;
}

/**
 * Merge `obj` into `ref`: a reference that is a field-wise superset of both, keeping `ref`'s values, or
 * `undefined` when the field orders conflict, a field changes between scalar and sub-object, or an empty
 * sub-object would be present in one and not the other.
 *
 * @param ref - reference tree.
 * @param obj - object tree.
 * @returns the merged tree, or `undefined`.
 */
export function mergeRefObject(ref: RefObject, obj: RefObject): RefObject | undefined {
  const rf = ref.fields;
  const of = obj.fields;
  if ((rf.length === 0) !== (of.length === 0)) return undefined;
  const fields: RefField[] = [];
  let i = 0;
  let j = 0;
  while (i < rf.length || j < of.length) {
    const r = rf[i];
    const o = of[j];
    let take: RefField;
    if (r === undefined) {
      if (o === undefined) break;
      take = o;
      if (rf.some((f) => f.name === take.name)) return undefined;
      j++;
    } else if (o === undefined) {
      take = r;
      i++;
    } else if (r.name === o.name) {
      i++;
      j++;
      if (r.sub !== undefined && o.sub !== undefined) {
        if (r.sub.isArray !== o.sub.isArray) return undefined;
        const sub = mergeRefObject(r.sub, o.sub);
        if (sub === undefined) return undefined;
        fields.push({ ...r, sub });
        continue;
      }
      if ((r.sub === undefined) !== (o.sub === undefined)) return undefined;
      fields.push(r);
      continue;
    } else {
      const objNameLaterInRef = rf.some((f, k) => k > i && f.name === o.name);
      const refNameLaterInObj = of.some((f, k) => k > j && f.name === r.name);
      if (objNameLaterInRef && refNameLaterInObj) return undefined;
      if (refNameLaterInObj) {
        take = o;
        j++;
      } else {
        take = r;
        i++;
      }
    }
    // A field present on one side only must not hold an empty sub-object (see the module comment).
    if (fieldHasEmpty(take)) return undefined;
    fields.push(take);
  }
  return { isArray: ref.isArray, fields };
}

/**
 * Write `obj` as a BSON document.
 *
 * @param obj - the tree.
 * @param out - destination.
 */
export function writeRefObject(obj: RefObject, out: ByteWriter): void {
  const start = out.length;
  out.i32(0);
  for (const f of obj.fields) {
    out.u8(f.sub === undefined ? f.type : f.sub.isArray ? BsonType.array : BsonType.object);
    const name = utf8Encoder.encode(f.name);
    out.bytes(name, 0, name.length);
    out.u8(0);
    if (f.sub === undefined) out.bytes(f.bytes, f.start, f.end);
    else writeRefObject(f.sub, out);
  }
  out.u8(0);
  out.setI32(start, out.length - start);
}
