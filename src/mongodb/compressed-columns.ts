/**
 * The column bytes of compressed buckets this process is appending to, kept by `MongoStorage` so that a
 * commit can be sent as whole-column `$set`s without reading the bucket first.
 *
 * The driver cannot send the server's binary diff (`{o, d}` in a `$v: 2` update), and MQL has no
 * expression that concatenates binaries: a column that grew is sent whole. The catalog holds only the
 * columns' encoders; the bytes they produced are kept here, in a size-bounded LRU. A bucket not in the
 * cache (evicted, or reopened) is read once by `_id`.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';
import { LRUCache } from 'lru-cache';

import { columnDiffsOf } from '../bucket-format/column-tails.js';
import { binaryBytes } from '../bucket-format/compressed-bucket.js';
import type { CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import type { SetOp } from '../bucket-format/min-max.js';
import { isPlainObject } from '../util/bson-value.js';
import { invariant } from '../util/invariant.js';
import { getOwnField, hasOwnField, isPathSafeFieldName } from '../util/safe-record.js';
import { sameBsonValue } from './bson-values.js';

/** The stored columns of one compressed bucket, the count they hold, and its `control.min`/`max`. */
interface CachedBucket {
  readonly count: number;
  /** `control.version`: 2 sorted, 3 unsorted. */
  readonly version: number;
  readonly columns: Map<string, Uint8Array>;
  readonly bytes: number;
  readonly minMax: StoredMinMax | undefined;
  /** What its column replacements have cost beyond the same commits as cells (see open-bucket-form.ts). */
  readonly excess: number;
}

/** A bucket's `control.min` and `control.max` as stored. */
export interface StoredMinMax {
  readonly min: Readonly<Record<string, unknown>>;
  readonly max: Readonly<Record<string, unknown>>;
}

/** Default bound on the bytes of cached columns. */
const kDefaultMaxBytes = 64 * 1024 * 1024;

/** Column bytes of compressed buckets, by namespace and `_id`. */
export class CompressedColumnCache {
  readonly #cache: LRUCache<string, CachedBucket>;

  /**
   * @param maxBytes - bound on the bytes kept.
   */
  constructor(maxBytes: number = kDefaultMaxBytes) {
    this.#cache = new LRUCache<string, CachedBucket>({
      maxSize: maxBytes,
      sizeCalculation: (entry) => Math.max(1, entry.bytes),
    });
  }

  /**
   * Remember a compressed bucket document as stored (a version-1 document is ignored).
   *
   * @param ns - namespace.
   * @param doc - the stored document.
   */
  remember(ns: string, doc: Readonly<Record<string, unknown>>): void {
    const control = getOwnField(doc, 'control') as Record<string, unknown> | undefined;
    const data = getOwnField(doc, 'data') as Record<string, unknown> | undefined;
    const key = keyOf(ns, doc._id);
    if (key === undefined) return;
    if (control === undefined || data === undefined || (control.version !== 2 && control.version !== 3)) {
      this.#cache.delete(key);
      return;
    }
    const columns = new Map<string, Uint8Array>();
    let bytes = 0;
    for (const field of Object.keys(data)) {
      const binary = data[field] as Binary;
      const column = Uint8Array.from(binaryBytes(binary));
      columns.set(field, column);
      bytes += column.length;
    }
    this.#cache.set(key, {
      count: Number(control.count),
      version: control.version,
      columns,
      bytes,
      minMax: storedMinMax(doc),
      excess: 0,
    });
  }

  /**
   * Forget a bucket (a direct write changed it), or every bucket of a namespace.
   *
   * @param ns - namespace.
   * @param id - the bucket's `_id`; all of the namespace when absent.
   */
  forget(ns: string, id?: unknown): void {
    forgetBuckets(this.#cache, ns, id);
  }

  /**
   * A commit spliced onto the bucket as the cache holds it, when it holds it as the commit expects it
   * (`numPreviouslyCommittedMeasurements` measurements).
   *
   * @param ns - namespace.
   * @param commit - the commit.
   * @returns the splice, or `undefined` on a cache miss.
   */
  splice(ns: string, commit: CompressedBucketCommit): SplicedCommit | undefined {
    const key = keyOf(ns, commit.bucketId);
    const cached = key === undefined ? undefined : this.#cache.get(key);
    if (cached?.count !== commit.numPreviouslyCommittedMeasurements) return undefined;
    if (commit.storedVersion !== undefined && cached.version !== commit.storedVersion) return undefined;
    const changed = spliceColumns(cached.columns, commit);
    return changed === undefined
      ? undefined
      : { changed, base: cached.columns, minMax: cached.minMax, excess: cached.excess };
  }

  /**
   * Record that a commit was applied: the bucket now holds the spliced columns.
   *
   * @param ns - namespace.
   * @param commit - the applied commit.
   * @param changed - the columns it wrote ({@link SplicedCommit.changed}).
   * @param base - the stored columns the commit was spliced onto.
   * @param minMax - the bucket's `control.min` and `control.max` now.
   * @param excess - what the bucket's column replacements have cost beyond cells, this one included.
   */
  applied(
    ns: string,
    commit: CompressedBucketCommit,
    changed: ReadonlyMap<string, Binary>,
    base: ReadonlyMap<string, Uint8Array>,
    minMax: StoredMinMax,
    excess: number,
  ): void {
    const key = keyOf(ns, commit.bucketId);
    if (key === undefined) return;
    const columns = new Map(base);
    for (const [field, binary] of changed) columns.set(field, binaryBytes(binary));
    let bytes = 0;
    for (const column of columns.values()) bytes += column.length;
    const version = commit.version ?? commit.storedVersion ?? this.#cache.get(key)?.version ?? 2;
    this.#cache.set(key, { count: commit.count, version, columns, bytes, minMax, excess });
  }
}

/** A commit spliced onto a bucket's stored columns ({@link CompressedColumnCache.splice}, {@link spliceOntoStored}). */
export interface SplicedCommit {
  /** Each column the commit changes, whole. */
  readonly changed: Map<string, Binary>;
  /** The stored columns it was spliced onto. */
  readonly base: ReadonlyMap<string, Uint8Array>;
  /** The stored `control.min` and `control.max`, if known. */
  readonly minMax: StoredMinMax | undefined;
  /** What the bucket's column replacements have cost beyond cells so far (0 when not cached). */
  readonly excess: number;
}

/**
 * A commit spliced onto a stored bucket document (read because it was not cached), when the document
 * holds the measurements the commit expects.
 *
 * @param doc - the stored bucket.
 * @param commit - the commit.
 * @returns the splice, or `undefined` when the bucket holds another count or version, or a column the
 *   commit extends is not stored.
 */
export function spliceOntoStored(
  doc: Readonly<Record<string, unknown>>,
  commit: CompressedBucketCommit,
): SplicedCommit | undefined {
  const control = getOwnField(doc, 'control') as { count?: unknown; version?: unknown } | undefined;
  if (Number(control?.count) !== commit.numPreviouslyCommittedMeasurements) return undefined;
  if (commit.storedVersion !== undefined && control?.version !== commit.storedVersion) return undefined;
  const base = storedColumns(doc);
  const changed = spliceColumns(base, commit);
  return changed === undefined ? undefined : { changed, base, minMax: storedMinMax(doc), excess: 0 };
}

/**
 * Each changed column's whole new binary: the stored column cut at the diff's offset, the diff's bytes
 * appended; a new column is the diff's bytes.
 *
 * @param stored - the stored columns, by field.
 * @param commit - the commit.
 * @returns the new binaries, by field; `undefined` when a column the commit extends is not stored.
 */
function spliceColumns(
  stored: ReadonlyMap<string, Uint8Array>,
  commit: CompressedBucketCommit,
): Map<string, Binary> | undefined {
  // Only a storage that says it takes deferred columns is sent commits without their bytes.
  invariant(commit.deferred === undefined, 2404, 'deferred columns sent to MongoStorage');
  const out = new Map<string, Binary>();
  for (const diff of columnDiffsOf(commit.tails)) {
    if (diff.created) {
      out.set(diff.field, new Binary(Uint8Array.from(diff.bytes), Binary.SUBTYPE_COLUMN));
      continue;
    }
    const column = stored.get(diff.field);
    if (column === undefined || column.length < diff.offset) return undefined;
    const bytes = new Uint8Array(diff.offset + diff.bytes.length);
    bytes.set(column.subarray(0, diff.offset), 0);
    bytes.set(diff.bytes, diff.offset);
    out.set(diff.field, new Binary(bytes, Binary.SUBTYPE_COLUMN));
  }
  return out;
}

/**
 * The stored columns of a bucket document, by field.
 *
 * @param doc - a compressed bucket document.
 * @returns its columns' bytes.
 */
export function storedColumns(doc: Readonly<Record<string, unknown>>): Map<string, Uint8Array> {
  const data = getOwnField(doc, 'data') as Record<string, unknown> | undefined;
  const out = new Map<string, Uint8Array>();
  if (data === undefined) return out;
  for (const field of Object.keys(data)) {
    const value = data[field] as { _bsontype?: unknown; buffer: Uint8Array; position: number } | undefined;
    if (value?._bsontype === 'Binary') out.set(field, binaryBytes(value));
  }
  return out;
}

/**
 * A stored bucket's `control.min` and `control.max`, if it has both as documents.
 *
 * @param doc - a stored bucket document.
 * @returns the documents, or `undefined`.
 */
function storedMinMax(doc: Readonly<Record<string, unknown>>): StoredMinMax | undefined {
  const control = getOwnField(doc, 'control') as Record<string, unknown> | undefined;
  const min = control === undefined ? undefined : getOwnField(control, 'min');
  const max = control === undefined ? undefined : getOwnField(control, 'max');
  return isPlainObject(min) && isPlainObject(max) ? { min, max } : undefined;
}

/**
 * The `$set` paths of a commit's `control.min` and `control.max`: only the fields whose value changed
 * (`control.min.<field>`), when the stored documents are known and the new ones have no field they lack
 * (a new field would be placed by the server in name order, not where the catalog places it) and every
 * changed name can be a dotted path; else that side whole. The commit's guard requires the stored
 * count, so the stored documents are the ones known.
 *
 * @param stored - the bucket's stored `control.min` and `control.max`, if known.
 * @param next - the commit's.
 * @returns the paths and values, in the order of the new documents' fields.
 */
export function minMaxPaths(
  stored: StoredMinMax | undefined,
  next: StoredMinMax,
): Array<readonly [string, unknown]> {
  const { min, max } = minMaxSetOps(stored, next);
  const path = (side: string, op: SetOp): readonly [string, unknown] => [
    op.path.length === 0 ? `control.${side}` : `control.${side}.${op.path.join('.')}`,
    op.value,
  ];
  return [...min.map((op) => path('min', op)), ...max.map((op) => path('max', op))];
}

/**
 * {@link minMaxPaths} as the changes of each side (paths below `control.min` and `control.max`; `[]`
 * for a side set whole), the form a version-1 commit's update is built from.
 *
 * @param stored - the bucket's stored `control.min` and `control.max`, if known.
 * @param next - the commit's.
 * @returns the changes of each side.
 */
export function minMaxSetOps(
  stored: StoredMinMax | undefined,
  next: StoredMinMax,
): { readonly min: SetOp[]; readonly max: SetOp[] } {
  return { min: sideOps(stored?.min, next.min), max: sideOps(stored?.max, next.max) };
}

function sideOps(
  stored: Readonly<Record<string, unknown>> | undefined,
  next: Readonly<Record<string, unknown>>,
): SetOp[] {
  const whole: SetOp[] = [{ path: [], value: next }];
  // Every stored field is still there (min and max only gain fields), and no other.
  if (stored === undefined || Object.keys(stored).length !== Object.keys(next).length) return whole;
  const ops: SetOp[] = [];
  for (const field of Object.keys(next)) {
    if (!hasOwnField(stored, field)) return whole;
    const value = next[field];
    if (sameStoredValue(stored[field], value)) continue;
    if (!isPathSafeFieldName(field)) return whole;
    ops.push({ path: [field], value });
  }
  return ops;
}

/** Whether two values are the same BSON (numbers, strings and dates compared without serialising). */
function sameStoredValue(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Object.is(a, b);
  if (typeof a === 'string' || typeof a === 'boolean' || a === null) return a === b;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return sameBsonValue(a, b);
}

/**
 * The key of a bucket in a map of the buckets of many namespaces: `<ns>\0<_id hex>`.
 *
 * @param ns - namespace.
 * @param id - the bucket's `_id`.
 * @returns the key, or `undefined` when `id` is not an ObjectId.
 */
export function keyOf(ns: string, id: unknown): string | undefined {
  const hex = (id as { toHexString?: unknown } | null | undefined)?.toHexString;
  return typeof hex === 'function' ? `${ns}\u0000${String(hex.call(id))}` : undefined;
}

/**
 * Delete a bucket from a map keyed by {@link keyOf}, or every bucket of a namespace.
 *
 * @param map - the map (or cache).
 * @param ns - namespace.
 * @param id - the bucket's `_id`; all of the namespace when absent.
 */
export function forgetBuckets(
  map: { delete(key: string): unknown; keys(): Iterable<string> },
  ns: string,
  id?: unknown,
): void {
  if (id !== undefined) {
    const key = keyOf(ns, id);
    if (key !== undefined) map.delete(key);
    return;
  }
  const prefix = `${ns}\u0000`;
  for (const key of [...map.keys()]) if (key.startsWith(prefix)) map.delete(key);
}
