/**
 * Keys for MongoDB's equality on a bucket's `meta`: equal for any two values the server's equality
 * treats as equal, so that a set of keys tells which series a set of buckets may belong to (the meta
 * index of `MemoryStorage`; which series a `MongoStorage` probe found buckets of).
 *
 * @packageDocumentation
 */
import { Buffer } from 'node:buffer';

import { serialize } from 'bson';

import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField, hasOwnField } from '../util/safe-record.js';

/** The keys one document is filed under: one, or several (an array meta). */
export type MetaKeys = string | ReadonlyArray<string>;

/**
 * The keys a document is filed under in the meta index: `''` without `meta`, else {@link equalityKey} of
 * its value and, for an array, of each element too (a multikey index: `{meta: x}` matches arrays
 * containing `x`).
 */
export function metaIndexKeys(doc: Readonly<Record<string, unknown>>): MetaKeys {
  if (!Object.prototype.hasOwnProperty.call(doc, 'meta')) return '';
  const meta = doc.meta;
  const key = `m${equalityKey(meta)}`;
  if (!Array.isArray(meta)) return key;
  const keys = [key];
  for (const element of meta) keys.push(`m${equalityKey(element)}`);
  return keys;
}

/**
 * A string equal for any two values MongoDB's equality treats as equal (so an equality filter finds every
 * match under one key): numbers compare by value across int32, long, double and decimal, so an integer
 * value up to 2^53 is keyed by its value and any other number by `#` (a coarser key: the filter itself
 * then decides); objects keep field order (MongoDB compares embedded documents in order); other BSON
 * values by their bytes.
 */
export function equalityKey(value: unknown): string {
  const n = bsonNumberValue(value);
  if (n !== undefined) return Number.isSafeInteger(n) ? `n${n === 0 ? 0 : n}` : '#';
  if (typeof value === 'string') return `s${JSON.stringify(value)}`;
  if (value === null || typeof value === 'boolean') return String(value);
  if (value instanceof Date) return `d${value.getTime()}`;
  if (Array.isArray(value)) return `[${value.map(equalityKey).join(',')}]`;
  if (isPlainObject(value)) {
    // An object of strings only (the usual meta: tags) as its JSON text, in one native call. Its values
    // are strings without a type prefix, so its key equals no key of the general form below (whose values
    // all start with one), and the same value always takes the same form.
    if (everyOwnValue(value, isString)) return JSON.stringify(value);
    // Joined, not concatenated field by field: the index keeps its keys, and a string built by `+=` stays
    // a tree of its pieces (about 300 bytes more per bucket of three string fields).
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${equalityKey(value[k])}`)
      .join(',')}}`;
  }
  const holder: Record<string, unknown> = {};
  defineField(holder, '', value);
  return `b${Buffer.from(serialize(holder)).toString('hex')}`;
}

/** Whether `test` holds for every own enumerable value of `value`. */
export function everyOwnValue(value: Record<string, unknown>, test: (v: unknown) => boolean): boolean {
  for (const key in value) {
    if (hasOwnField(value, key) && !test(value[key])) return false;
  }
  return true;
}

/** Whether `value` is a string (for {@link everyOwnValue}). */
function isString(value: unknown): boolean {
  return typeof value === 'string';
}

/**
 * The meta index key of an equality with `value`; `undefined` when no single entry holds every match:
 * equality with an array also matches arrays containing it, and `null` also matches a missing meta.
 */
export function equalityIndexKey(value: unknown): string | undefined {
  if (Array.isArray(value) || value === undefined || value === null) return undefined;
  return `m${equalityKey(value)}`;
}
