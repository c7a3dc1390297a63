/**
 * What an in-memory storage hands to its readers: copies, never references into the documents it holds
 * (the embedded counterpart of a server reply, which is always new bytes).
 *
 * Every read path of `MemoryStorage` goes through {@link handOut}: the reader, the buckets view, reopening,
 * compression, TTL, deletes and updates; except a live compressed bucket changed since its document was
 * last built, whose document is built for the reader alone and owns the same way (`LiveColumns`
 * `readerDocument`). A reader may then change what it got (a projection shaping a result, a caller editing
 * a returned document) without changing stored data, and a document read stays what it was when read
 * while writers change the stored one in place.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';
import { Query } from 'mingo/query';

import { isBsonValue } from '../util/bson-type.js';
import { cloneBsonValue, copyBytes, isPlainObject } from '../util/bson-value.js';
import { defineField, hasOwnField } from '../util/safe-record.js';
import type { StorageFindOptions, StorageIndex, StoredBucket } from './storage.js';

/** A find projection, as {@link StorageFindOptions} takes it. */
export type StorageProjection = NonNullable<StorageFindOptions['projection']>;

/**
 * A copy of a stored document for a reader, shaped by `projection` when given.
 *
 * A projection that includes top-level fields only (`{ _id: 1, meta: 1 }`: the probes of deletes, updates
 * and TTL) copies just those fields; any other projection is applied by mingo to a whole copy, since
 * mingo's projection removes excluded paths from the document it is given.
 *
 * @param doc - a stored document (not changed).
 * @param projection - MongoDB projection (inclusion or exclusion).
 * @returns a document sharing nothing mutable with `doc`.
 */
export function handOut(doc: Readonly<StoredBucket>, projection?: StorageProjection): StoredBucket {
  if (projection === undefined) return cloneDocument(doc);
  const fields = topLevelInclusion(projection);
  if (fields !== undefined) {
    // In the document's field order, as MongoDB's inclusion projection keeps it.
    const out: StoredBucket = {};
    for (const field of Object.keys(doc)) {
      if (fields.has(field)) defineField(out, field, cloneBsonValue(doc[field]));
    }
    return out;
  }
  const [out] = new Query({}, {}).find<StoredBucket>([cloneBsonValue(doc)], projection).all();
  return out ?? {};
}

/**
 * {@link cloneBsonValue} of a whole stored document, the binaries of its `data` field (a bucket's columns,
 * a dozen per document) copied into pooled buffers ({@link copyBytes}): a new `ArrayBuffer` per column was
 * most of the cost of reading a small bucket. Only the columns: a pooled copy keeps its pool's 8 KiB
 * alive, and the engine writes parts of documents it read back into storage (a bucket's meta and a
 * version-1 bucket's values when it repacks or compresses one), where columns are always encoded anew.
 */
function cloneDocument(doc: Readonly<StoredBucket>): StoredBucket {
  return withFieldsCopied(doc, (key, value) =>
    key === 'data' && isPlainObject(value) ? withFieldsCopied(value, copyColumn) : cloneBsonValue(value),
  );
}

/** A column's copy: a binary into a pooled buffer, anything else by {@link cloneBsonValue}. */
function copyColumn(_name: string, value: object): unknown {
  return isBsonValue(value, 'Binary')
    ? new Binary(copyBytes(value.buffer, 0, value.position), value.sub_type)
    : cloneBsonValue(value);
}

/** A copy of `source` whose object values are replaced by `copyField` of each. */
function withFieldsCopied(
  source: Readonly<Record<string, unknown>>,
  copyField: (key: string, value: object) => unknown,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...source };
  for (const key in out) {
    if (!hasOwnField(out, key)) continue;
    const value = out[key];
    if (typeof value === 'object' && value !== null) defineField(out, key, copyField(key, value));
  }
  return out;
}

/**
 * Copies of stored index definitions.
 *
 * @param indexes - the stored definitions (not changed).
 * @returns definitions sharing nothing mutable with them.
 */
export function handOutIndexes(indexes: Iterable<StorageIndex>): StorageIndex[] {
  const out: StorageIndex[] = [];
  for (const index of indexes) out.push(cloneBsonValue(index) as StorageIndex);
  return out;
}

/**
 * The fields of a projection that only includes top-level fields (with `_id` unless excluded), or
 * `undefined` for any other projection.
 */
function topLevelInclusion(projection: StorageProjection): Set<string> | undefined {
  const fields = new Set<string>();
  let withId = true;
  for (const key of Object.keys(projection)) {
    const value = projection[key];
    if (key === '_id') {
      withId = value === 1 || value === true;
      continue;
    }
    if (key.includes('.') || key.startsWith('$') || !(value === 1 || value === true)) return undefined;
    fields.add(key);
  }
  if (fields.size === 0) return undefined;
  if (withId) fields.add('_id');
  return fields;
}
