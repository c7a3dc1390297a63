/**
 * Meta normalisation and series identity (docs/mongodb-behaviour.md §2.5; `timeseries/metadata.cpp`,
 * `bucket_catalog/bucket_metadata.cpp`).
 *
 * The normalised meta sorts object fields by the byte order of their UTF-8 names, at every depth and inside
 * arrays; arrays keep their order; scalars are unchanged. Two measurements belong to the same series iff
 * their normalised metas are binary equal as BSON, so `1` (int32), `1.5` (double) and `Long(1)` are
 * different series, and a missing meta differs from `null`.
 *
 * @packageDocumentation
 */

import { Buffer } from 'node:buffer';

import { serialize } from 'bson';
import { LRUCache } from 'lru-cache';

import type { BucketKey } from './bucket-identifiers.js';
import { defineField, hasOwnField } from '../util/safe-record.js';
import { cloneBsonValue, compareUtf8, isInt32Number, isPlainObject } from '../util/bson-value.js';
import { kMaxDepthForUserStorage } from '../util/bson-validation.js';

/** The identity of a series: its normalised meta and the binary key derived from it. */
export interface BucketMetadata {
  /** The normalised meta value, or `undefined` when the measurement had no meta. */
  readonly normalizedMeta: unknown;
  /**
   * A string that is equal for two metas iff their normalised BSON is binary equal: the BSON bytes of
   * `{"": normalizedMeta}` read as latin1 (one char per byte), or `''` when there is no meta.
   */
  readonly key: string;
  /**
   * The series key the catalog last made of this identity (`keyFor`): an identity kept across calls
   * ({@link BucketMetadataCache}) keeps its key, whose signature is then built and hashed once. A cache
   * of a pure function of the namespace and {@link BucketMetadata.key}, on the object rather than in a
   * weak map (whose entries cost a new series a hash-table insertion and the garbage collector more).
   */
  bucketKey: BucketKey | undefined;
}

/** The key of measurements without a meta value. No BSON document serialises to an empty string. */
const kNoMetaKey = '';

/**
 * Normalise a meta value: object fields sorted by UTF-8 byte order of their names, recursively (also inside
 * arrays); a field whose value is `undefined` is null, as the driver sends it and as the validated copy
 * of a measurement holds it.
 *
 * @param meta - the metaField value of a measurement.
 * @returns the normalised value (objects are fresh copies; scalars are returned as given).
 */
export function normalizeMetadata(meta: unknown): unknown {
  if (Array.isArray(meta)) return meta.map(normalizeMetadata);
  // A date or binary value is copied: the normalised meta is stored, and must not change with the caller's.
  if (!isPlainObject(meta)) return cloneBsonValue(meta);
  const names = Object.keys(meta);
  // MongoDB compares field names by their UTF-8 bytes, which is not JS's UTF-16 order.
  sortNames(names);
  const out: Record<string, unknown> = {};
  for (const name of names) {
    defineField(out, name, normalizeMetadata(meta[name] ?? null));
  }
  return out;
}

/**
 * Longest list of names sorted by insertion rather than `Array.prototype.sort`, whose merge state costs
 * V8 about 880 bytes per call whatever the length: a new series normalises its meta once, and a call of
 * many new series sorted a few names each.
 */
const kInsertionSortMax = 16;

/** Sort `names` in place by {@link compareUtf8}. */
function sortNames(names: string[]): void {
  if (names.length > kInsertionSortMax) {
    names.sort(compareUtf8);
    return;
  }
  for (let i = 1; i < names.length; i++) {
    const name = names[i] as string;
    let j = i - 1;
    for (; j >= 0 && compareUtf8(names[j] as string, name) > 0; j--) names[j + 1] = names[j] as string;
    names[j + 1] = name;
  }
}

/**
 * Normalise a meta value and compute its series key.
 *
 * @param meta - the metaField value, or `undefined` when the measurement has none.
 * @returns the normalised meta and its key.
 */
export function makeBucketMetadata(meta: unknown): BucketMetadata {
  if (meta === undefined) return { normalizedMeta: undefined, key: kNoMetaKey, bucketKey: undefined };
  const normalizedMeta = normalizeMetadata(meta);
  let key = directMetaKey(normalizedMeta);
  if (key === undefined) {
    const holder: Record<string, unknown> = {};
    defineField(holder, '', normalizedMeta);
    key = Buffer.from(serialize(holder)).toString('latin1');
  }
  return { normalizedMeta, key, bucketKey: undefined };
}

/** Where {@link directMetaKey} writes a key's bytes (a meta of strings longer than this takes js-bson). */
const keyScratch = Buffer.allocUnsafeSlow(4096);

/**
 * Write a string's UTF-8 bytes at `at`: an ASCII string (tags, mostly) byte by byte, which costs less than
 * a call into Node's encoder, any other by that encoder.
 *
 * @returns the number of bytes written.
 */
function writeUtf8(value: string, at: number): number {
  const buf = keyScratch;
  const n = value.length;
  for (let i = 0; i < n; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x80) return buf.write(value, at, 'utf8');
    buf[at + i] = c;
  }
  return n;
}

/** Write a string's int32 length + 1, UTF-8 bytes and NUL at `at`; the next position. */
function writeBsonString(value: string, at: number): number {
  const n = writeUtf8(value, at + 4);
  keyScratch.writeInt32LE(n + 1, at);
  keyScratch[at + 4 + n] = 0;
  return at + 5 + n;
}

/**
 * The key of a normalised meta that is a number, a boolean, `null`, a string, or a document whose fields
 * are strings (tags, mostly), written directly: the latin1 string of the BSON bytes of `{"": meta}` that
 * js-bson's `serialize` gives (a number as int32 when it is an integer in int32 range other than `-0`,
 * else as a double; fields in the order it enumerates them; strings as Node writes UTF-8), without its
 * buffers, frames and cycle check (about 700 bytes allocated per new series). Any other meta gives
 * `undefined`.
 */
function directMetaKey(meta: unknown): string | undefined {
  const buf = keyScratch;
  // The holder: int32 size, the value's type and the empty name, the value; the document's NUL.
  buf[5] = 0;
  let end: number;
  if (typeof meta === 'number') {
    const int32 = isInt32Number(meta);
    buf[4] = int32 ? 0x10 : 0x01;
    end = int32 ? buf.writeInt32LE(meta, 6) : buf.writeDoubleLE(meta, 6);
  } else if (typeof meta === 'boolean') {
    buf[4] = 0x08;
    buf[6] = meta ? 1 : 0;
    end = 7;
  } else if (meta === null) {
    buf[4] = 0x0a;
    end = 6;
  } else if (typeof meta === 'string') {
    if (3 * meta.length + 12 > buf.length) return undefined;
    buf[4] = 0x02;
    end = writeBsonString(meta, 6);
  } else return tagsMetaKey(meta);
  buf[end++] = 0;
  buf.writeInt32LE(end, 0);
  return buf.toString('latin1', 0, end);
}

/** {@link directMetaKey} of a document whose fields are strings; `undefined` for any other value. */
function tagsMetaKey(meta: unknown): string | undefined {
  const buf = keyScratch;
  if (!isPlainObject(meta)) return undefined;
  // The holder: int32 size, 0x03 (document) and the empty name; then the document's int32 size at 6.
  buf[4] = 0x03;
  buf[5] = 0;
  let at = 10;
  for (const name in meta) {
    if (!hasOwnField(meta, name)) continue;
    const value = meta[name];
    // A name is NUL-terminated: one holding a NUL is js-bson's to refuse.
    if (typeof value !== 'string' || name.includes('\0')) return undefined;
    // Room for the field (at most 7 bytes besides the text, 3 per UTF-16 unit) and the two closing NULs.
    if (at + 3 * (name.length + value.length) + 9 > buf.length) return undefined;
    buf[at++] = 0x02;
    at += writeUtf8(name, at);
    buf[at++] = 0;
    at = writeBsonString(value, at);
  }
  buf[at++] = 0;
  buf.writeInt32LE(at - 6, 6);
  buf[at++] = 0;
  buf.writeInt32LE(at, 0);
  return buf.toString('latin1', 0, at);
}

/** A scalar meta value whose series identity {@link BucketMetadataCache} keeps. */
type ScalarMeta = string | number | boolean;

/** Options of {@link BucketMetadataCache}. */
export interface BucketMetadataCacheOptions {
  /**
   * Most distinct scalar metas kept.
   * @defaultValue 10 000
   */
  readonly max?: number;
  /**
   * Most bytes kept, counting two per UTF-16 unit of a string meta and of its key.
   * @defaultValue 16 MiB
   */
  readonly maxSize?: number;
}

/**
 * Series identities kept across insert calls: an ingester sends the same series in every call, and
 * normalising a meta value is a BSON serialisation.
 *
 * - Scalar metas (strings, numbers, booleans) in an LRU, by value. Not `-0` (a double, while `0` is an
 *   int32, yet one key for a map). Two strings that BSON cannot tell apart (lone surrogates are written as
 *   U+FFFD) are two entries with the same key: the identity is still BSON's.
 * - Meta objects, by identity (a WeakMap: an ingester often keeps one object per series), when they hold
 *   only plain objects, arrays, strings, numbers, booleans and null. An object can change between calls,
 *   so a hit is used only if the object still holds exactly what was normalised (compared field by field,
 *   which costs far less than a serialisation); otherwise it is normalised again.
 * - The same meta objects also by content, in an LRU keyed by a hash of the content that ignores field
 *   order ({@link contentHash}): an ingester that builds a fresh meta object for every document finds its
 *   series without normalising or serialising anything. A hit is used only if the meta holds exactly what
 *   was normalised (the same field-by-field comparison), so a hash collision costs a normalisation, never
 *   a wrong series.
 */
export class BucketMetadataCache {
  readonly #cache: LRUCache<ScalarMeta, BucketMetadata>;
  readonly #objects = new WeakMap<object, KnownMeta>();
  readonly #contents: LRUCache<number, KnownMeta>;
  readonly #max: number;

  /**
   * @param options - entry and byte limits.
   */
  constructor(options: BucketMetadataCacheOptions = {}) {
    // Bounded by bytes in the LRUs and by entries here ({@link BucketMetadataCache.#remember}): an LRU
    // given `max` allocates its arrays for that many entries up front (about 300 KB each for 10 000),
    // which an application making an engine per tenant would pay for every engine, however few series.
    this.#max = options.max ?? 10_000;
    this.#cache = new LRUCache<ScalarMeta, BucketMetadata>({
      maxSize: options.maxSize ?? 16 * 1024 * 1024,
      sizeCalculation: (metadata, meta) =>
        64 + 2 * metadata.key.length + (typeof meta === 'string' ? 2 * meta.length : 0),
    });
    // The normalised meta is about as large as its key (one latin1 char per BSON byte), and the
    // hash is a number.
    this.#contents = new LRUCache<number, KnownMeta>({
      maxSize: options.maxSize ?? 16 * 1024 * 1024,
      sizeCalculation: (known) => 64 + 4 * known.metadata.key.length,
    });
  }

  /**
   * The series identity of a meta value, as {@link makeBucketMetadata} computes it.
   *
   * @param meta - the metaField value as it will be stored (a validated copy), or `undefined` when the
   *   measurement has none.
   * @param identity - the object the caller passed as meta, whose identity finds a previous result (a copy
   *   is new every time); the result is used only if it still matches `meta`, so the identity is only a hint.
   * @returns the normalised meta and its key (shared: do not mutate).
   * @throws what {@link makeBucketMetadata} throws for a value BSON cannot hold.
   */
  get(meta: unknown, identity: unknown = meta): BucketMetadata {
    const scalar =
      typeof meta === 'string' ||
      typeof meta === 'boolean' ||
      (typeof meta === 'number' && !Object.is(meta, -0));
    if (!scalar) {
      if (!isPlainObject(meta)) return makeBucketMetadata(meta);
      const key = typeof identity === 'object' && identity !== null ? identity : meta;
      const cached = this.#objects.get(key);
      if (cached !== undefined && holds(meta, cached)) return cached.metadata;
      // A fresh object with the contents of a known meta (or a known object changed back and forth).
      const hash = contentHash(meta);
      if (hash >= 0) {
        const known = this.#contents.get(hash);
        if (known !== undefined && holds(meta, known)) return known.metadata;
      }
      const metadata = makeBucketMetadata(meta);
      if (hash >= 0) {
        const known = knownMeta(metadata, meta);
        this.#objects.set(key, known);
        this.#remember(this.#contents, hash, known);
      }
      return metadata;
    }
    let metadata = this.#cache.get(meta);
    if (metadata === undefined) {
      metadata = makeBucketMetadata(meta);
      this.#remember(this.#cache, meta, metadata);
    }
    return metadata;
  }

  /** Keep an entry in `lru`, evicting its least recently used ones beyond the entry limit. */
  #remember<K extends ScalarMeta, V extends BucketMetadata | KnownMeta>(
    lru: LRUCache<K, V>,
    key: K,
    value: V,
  ): void {
    lru.set(key, value);
    while (lru.size > this.#max) lru.pop();
  }

  /**
   * The series of a meta object the cache knows, found without validating, copying or normalising it:
   * by the object's identity or its contents, as {@link BucketMetadataCache.get} finds them, used only
   * when the object holds exactly what was normalised (so its validated copy would equal the normalised
   * meta, up to field order).
   *
   * @param meta - a meta object as the caller passed it (not validated).
   * @returns the series, or `undefined` when the object is not known as it is now.
   */
  known(meta: object): BucketMetadata | undefined {
    const cached = this.#objects.get(meta);
    if (cached !== undefined && holds(meta, cached)) return cached.metadata;
    const hash = isPlainObject(meta) ? contentHash(meta) : -1;
    if (hash < 0) return undefined;
    const known = this.#contents.get(hash);
    return known !== undefined && holds(meta, known) ? known.metadata : undefined;
  }
}

/**
 * A meta object's series as the cache keeps it: with, when every field of the object it was made from is
 * a scalar (a string, number, boolean or null: tags, mostly), those fields as they came (names and values
 * in the object's order, an `undefined` one as null), so that an object holding the same fields in the
 * same order (the same object sent again, or one built alike) is recognised by comparing each field with
 * the one at its position, instead of looking each name up in the normalised meta (whose fields are
 * sorted, so mostly in another order).
 */
interface KnownMeta {
  readonly metadata: BucketMetadata;
  /** The fields' names in the object's order, or `undefined` when a value is not a scalar. */
  readonly names: ReadonlyArray<string> | undefined;
  /** The fields' values, at the same positions. */
  readonly values: ReadonlyArray<unknown>;
}

/**
 * The names of the last entry made: the next entry with the same names shares them (an ingester's meta
 * objects mostly have the same fields, and an entry is kept per series).
 */
let lastNames: ReadonlyArray<string> = [];
const kNoValues: ReadonlyArray<unknown> = Object.freeze([]);

/** Where {@link knownMeta} collects an object's fields (reused; the entry keeps copies of its length). */
const scratchNames: string[] = [];
const scratchValues: unknown[] = [];

/** The entry of `metadata`, made from `meta` (a validated meta object): see {@link KnownMeta}. */
function knownMeta(metadata: BucketMetadata, meta: Record<string, unknown>): KnownMeta {
  scratchNames.length = 0;
  scratchValues.length = 0;
  for (const name in meta) {
    if (!hasOwnField(meta, name)) continue;
    // An undefined field is stored as null, as the driver sends it.
    const value = meta[name] ?? null;
    if (typeof value === 'object' && value !== null) return { metadata, names: undefined, values: kNoValues };
    scratchNames.push(name);
    scratchValues.push(value);
  }
  const n = scratchNames.length;
  if (n !== lastNames.length || scratchNames.some((name, i) => name !== lastNames[i])) {
    lastNames = scratchNames.slice();
  }
  return { metadata, names: lastNames, values: scratchValues.slice() };
}

/**
 * Whether `meta` (a meta object as given) normalises to the entry's normalised meta: it has the fields the
 * entry was made from, in their order (each value the same by `Object.is`, as {@link sameSimpleValue}
 * compares numbers), or failing that, the same fields in any order.
 */
function holds(meta: object, known: KnownMeta): boolean {
  const names = known.names;
  if (names !== undefined) {
    const fields = meta as Record<string, unknown>;
    const values = known.values;
    let i = 0;
    let same = true;
    for (const name in fields) {
      if (!hasOwnField(fields, name)) continue;
      const value = fields[name] ?? null;
      if (names[i] !== name || !Object.is(value, values[i])) {
        same = false;
        break;
      }
      i++;
    }
    if (same && i === names.length) return true;
  }
  return sameSimpleValue(meta, known.metadata.normalizedMeta);
}

/** Scratch for the bits of a double in {@link contentHash} (one per module: hashing allocates nothing). */
const kFloat = new Float64Array(1);
const kFloatWords = new Uint32Array(kFloat.buffer);

/** FNV-1a's prime and offset basis, and a marker per kind of value so that `'1'`, `1` and `[1]` differ. */
const kPrime = 0x01000193;
const kBasis = 0x811c9dc5;
const HashTag = { string: 1, number: 2, true: 3, false: 4, null: 5, array: 6, object: 7 } as const;

function mix(h: number, word: number): number {
  return Math.imul(h ^ word, kPrime);
}

/**
 * A hash of a meta value made of plain objects, arrays, strings, numbers, booleans and null (what
 * {@link sameSimpleValue} compares), the same whatever the order of object fields, as two metas that
 * differ only in field order are one series; a field whose value is `undefined` hashes as null, as the
 * driver sends it and the stored copy holds it. Numbers hash by their bits (`0` and `-0` differ). Returns a 31-bit
 * non-negative integer, or `-1` for any other value (dates, binaries, BSON types: not cached by content).
 *
 * @param value - the meta value.
 * @returns the hash, or -1.
 */
export function contentHash(value: unknown): number {
  const h = hashValue(value, kBasis);
  return h < 0 ? -1 : h & 0x7fffffff;
}

/**
 * The hash of `value` continuing from `h` (as an int32), or -1 once something cannot be hashed; `depth`
 * counts the containers around `value`, so that a value the caller has not validated (a cycle, a nesting
 * BSON refuses) gives -1 instead of recursing without end.
 */
function hashValue(value: unknown, h: number, depth = 0): number {
  switch (typeof value) {
    case 'string':
      h = mix(h, HashTag.string);
      for (let i = 0; i < value.length; i++) h = mix(h, value.charCodeAt(i));
      return mix(h, value.length) >>> 1;
    case 'number':
      kFloat[0] = value;
      return mix(mix(mix(h, HashTag.number), kFloatWords[0] as number), kFloatWords[1] as number) >>> 1;
    case 'boolean':
      return mix(h, value ? HashTag.true : HashTag.false) >>> 1;
    case 'object': {
      if (value === null) return mix(h, HashTag.null) >>> 1;
      if (depth >= kMaxDepthForUserStorage) return -1;
      if (Array.isArray(value)) {
        h = mix(h, HashTag.array);
        for (let i = 0; i < value.length; i++) {
          // An array hole or undefined element is written as null.
          const element: unknown = value[i];
          h = hashValue(element === undefined ? null : element, h, depth + 1);
          if (h < 0) return -1;
        }
        return mix(h, value.length) >>> 1;
      }
      if (!isPlainObject(value)) return -1;
      // Field order must not matter: each field hashes on its own, and the fields are summed.
      let sum = 0;
      let fields = 0;
      for (const name in value) {
        if (!hasOwnField(value, name)) continue;
        // An undefined field hashes as null, as the driver sends it (and the stored copy holds it).
        const v: unknown = value[name] ?? null;
        const field = hashValue(v, hashValue(name, kBasis), depth + 1);
        if (field < 0) return -1;
        sum = (sum + field) | 0;
        fields++;
      }
      return mix(mix(mix(h, HashTag.object), sum), fields) >>> 1;
    }
    default:
      return -1;
  }
}

/**
 * Whether `value` (a meta as given) normalises to `normalized` (a simple normalised meta): the same
 * fields whatever their order, the same scalars (numbers by `Object.is`: `-0` is a double, `0` an
 * int32), arrays element by element.
 */
function sameSimpleValue(value: unknown, normalized: unknown): boolean {
  if (typeof value !== 'object' || value === null) {
    return typeof value === 'number' ? Object.is(value, normalized) : value === normalized;
  }
  if (Array.isArray(value)) {
    if (!Array.isArray(normalized) || value.length !== normalized.length) return false;
    for (let i = 0; i < value.length; i++) if (!sameSimpleValue(value[i], normalized[i])) return false;
    return true;
  }
  if (!isPlainObject(value) || !isPlainObject(normalized) || Array.isArray(normalized)) return false;
  // An undefined field is null in the stored copy, as the driver sends it.
  let fields = 0;
  for (const key in value) {
    if (!hasOwnField(value, key)) continue;
    const v: unknown = value[key] ?? null;
    if (!hasOwnField(normalized, key) || !sameSimpleValue(v, normalized[key])) return false;
    fields++;
  }
  let normalizedFields = 0;
  for (const key in normalized) if (hasOwnField(normalized, key)) normalizedFields++;
  return fields === normalizedFields;
}
