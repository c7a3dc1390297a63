/**
 * Documents as mingo can compare and add them up.
 *
 * tsbuckets keeps the BSON type of every value it reads back (bson-value.ts): an int64 is a `Long`, an
 * integral double a `Double`, so that a document serializes to the bytes that were written. mingo, which
 * evaluates the aggregation stages tsbuckets does not run itself, knows only JS values: it compares a
 * `Long` or a `Double` by its decimal string (`Long(1000)` before `Long(300)`), orders it after every
 * number, and leaves it out of `$sum` and `$avg`. So documents are handed to it with their numbers as the
 * MongoDB driver gives them by default (`promoteValues`, `promoteLongs`): `Int32` and `Double` as JS
 * numbers, a `Long` as a JS number when it has one exactly. A `Long` beyond 2^53 and every `Decimal128`
 * stay as they are (mingo still compares them by their strings).
 *
 * @packageDocumentation
 */
import type { Double, Int32, Long } from 'bson';

import { isPlainObject } from './bson-value.js';
import { defineField } from './safe-record.js';

/**
 * A value with its numbers promoted as the driver promotes them (see the module comment). Copy on write:
 * a value without a number to promote is returned as it is, and a container is copied only along the
 * paths to the values that change, so documents shared with a storage are never changed.
 *
 * @param value - a value as tsbuckets represents it.
 * @returns the value for mingo.
 */
export function mingoValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const tag = (value as { _bsontype?: unknown })._bsontype;
  if (tag === 'Double' || tag === 'Int32') return (value as Double | Int32).value;
  if (tag === 'Long') {
    const n = (value as Long).toNumber();
    return Number.isSafeInteger(n) ? n : value;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const promoted = mingoValue(v);
      if (promoted !== v) (out ??= value.slice())[i] = promoted;
    }
    return out ?? value;
  }
  if (!isPlainObject(value)) return value;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const v = value[key];
    const promoted = mingoValue(v);
    if (promoted === v) continue;
    if (out === undefined) {
      out = {};
      for (const k of Object.keys(value)) defineField(out, k, value[k]);
    }
    defineField(out, key, promoted);
  }
  return out ?? value;
}

/**
 * {@link mingoValue} of each document, in place in `docs` (an array the caller owns; the documents
 * themselves are not changed).
 *
 * @param docs - documents about to be handed to mingo.
 * @returns `docs`.
 */
export function mingoDocuments<T>(docs: T[]): T[] {
  for (let i = 0; i < docs.length; i++) docs[i] = mingoValue(docs[i]) as T;
  return docs;
}
