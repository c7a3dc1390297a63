/**
 * How values read back from the driver are represented: the same way the rest of tsbuckets represents
 * them, so that a document read from MongoDB serializes to exactly the BSON that was written.
 *
 * Documents are read with `promoteValues: false` (every number arrives as its `bson` class) and then
 * canonicalised in place:
 *
 * | BSON type | read as                         | why                                              |
 * | --------- | ------------------------------- | ------------------------------------------------ |
 * | int32     | JS `number`                     | js-bson writes an int32-range integer as int32   |
 * | double    | JS `number` if not integral     | js-bson writes a non-integral number as double   |
 * | double    | `Double` if integral (incl. -0) | a JS integer would be written back as int32      |
 * | int64     | `Long`                          | never a lossy `number`                           |
 * | others    | the driver's default classes    | `Date`, `ObjectId`, `Binary`, `Decimal128`, ...  |
 *
 * A `Double(1.5)` written by a user therefore reads back as `1.5` (same BSON), and a plain number
 * `2 ** 31` (written by js-bson as a double) reads back as `Double(2147483648)`.
 *
 * @packageDocumentation
 */
import { serialize } from 'bson';
import type { Double, Int32 } from 'bson';

import { isPlainObject } from '../util/bson-value.js';

/** Read options passed to the driver with every query (see the module comment). */
export const kReadBsonOptions: Readonly<{ promoteValues: false; promoteBuffers: false; bsonRegExp: false }> =
  Object.freeze({ promoteValues: false, promoteBuffers: false, bsonRegExp: false });

/**
 * Canonicalise the numbers of a document read with `promoteValues: false`, in place.
 *
 * @param doc - a freshly deserialized document owned by the caller.
 * @returns `doc`.
 */
export function canonicalizeDocument<T extends Record<string, unknown>>(doc: T): T {
  canonicalizeContainer(doc);
  return doc;
}

/**
 * Canonicalise one value (see the module comment); containers are updated in place.
 *
 * @param value - a value read with `promoteValues: false`.
 * @returns the canonical value.
 */
export function canonicalizeValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  if (tag === 'Int32') return (value as Int32).value;
  if (tag === 'Double') {
    const n = (value as Double).value;
    return Number.isInteger(n) ? value : n;
  }
  if (Array.isArray(value) || isPlainObject(value)) canonicalizeContainer(value);
  return value;
}

function canonicalizeContainer(container: Record<string, unknown> | unknown[]): void {
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) container[i] = canonicalizeValue(container[i]);
    return;
  }
  for (const key of Object.keys(container)) {
    const v = container[key];
    // Only rewrite when the value changes: most values are strings, dates and nested objects.
    if (typeof v === 'object' && v !== null) {
      const c = canonicalizeValue(v);
      if (c !== v)
        Object.defineProperty(container, key, {
          value: c,
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
  }
}

/**
 * Whether two documents serialize to the same BSON bytes (same fields, order and types).
 *
 * @param a - a document.
 * @param b - a document.
 * @returns `true` when the BSON encodings are identical.
 */
export function sameBsonDocument(
  a: Readonly<Record<string, unknown>>,
  b: Readonly<Record<string, unknown>>,
): boolean {
  return Buffer.from(serialize(a)).equals(serialize(b));
}

/**
 * Whether two values have the same BSON encoding (as the value of one field).
 *
 * @param a - a value.
 * @param b - a value.
 * @returns `true` when `{v: a}` and `{v: b}` serialize identically.
 */
export function sameBsonValue(a: unknown, b: unknown): boolean {
  return sameBsonDocument({ v: a }, { v: b });
}
