/**
 * Meta normalisation and series identity (INTERNALS §2.5; `timeseries/metadata.cpp`,
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

import { defineField } from '../util/safe-record.js';
import { compareUtf8, isPlainObject } from '../util/bson-value.js';

/** The identity of a series: its normalised meta and the binary key derived from it. */
export interface BucketMetadata {
  /** The normalised meta value, or `undefined` when the measurement had no meta. */
  readonly normalizedMeta: unknown;
  /**
   * A string that is equal for two metas iff their normalised BSON is binary equal: the BSON bytes of
   * `{"": normalizedMeta}` read as latin1 (one char per byte), or `''` when there is no meta.
   */
  readonly key: string;
}

/** The key of measurements without a meta value. No BSON document serialises to an empty string. */
const kNoMetaKey = '';

/**
 * Normalise a meta value: object fields sorted by UTF-8 byte order of their names, recursively (also inside
 * arrays); fields whose value is `undefined` are dropped (they are not serialised).
 *
 * @param meta - the metaField value of a measurement.
 * @returns the normalised value (objects are fresh copies; scalars are returned as given).
 */
export function normalizeMetadata(meta: unknown): unknown {
  if (Array.isArray(meta)) return meta.map(normalizeMetadata);
  if (!isPlainObject(meta)) return meta;
  const names = Object.keys(meta);
  // MongoDB compares field names by their UTF-8 bytes, which is not JS's UTF-16 order.
  names.sort(compareUtf8);
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const value = meta[name];
    if (value !== undefined) defineField(out, name, normalizeMetadata(value));
  }
  return out;
}

/**
 * Normalise a meta value and compute its series key.
 *
 * @param meta - the metaField value, or `undefined` when the measurement has none.
 * @returns the normalised meta and its key.
 */
export function makeBucketMetadata(meta: unknown): BucketMetadata {
  if (meta === undefined) return { normalizedMeta: undefined, key: kNoMetaKey };
  const normalizedMeta = normalizeMetadata(meta);
  const holder: Record<string, unknown> = {};
  defineField(holder, '', normalizedMeta);
  return { normalizedMeta, key: Buffer.from(serialize(holder)).toString('latin1') };
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
 * The series identities of recently seen scalar metas (strings, numbers, booleans), kept across insert
 * calls: an ingester sends the same sensor ids in every call, and normalising one is a BSON
 * serialisation. Objects and arrays are not kept (they can change between calls), nor `-0` (a double,
 * while `0` is an int32, yet one key for a map). Two strings that BSON cannot tell apart (lone
 * surrogates are written as U+FFFD) are two entries with the same key: the identity is still BSON's.
 */
export class BucketMetadataCache {
  readonly #cache: LRUCache<ScalarMeta, BucketMetadata>;

  /**
   * @param options - entry and byte limits.
   */
  constructor(options: BucketMetadataCacheOptions = {}) {
    this.#cache = new LRUCache<ScalarMeta, BucketMetadata>({
      max: options.max ?? 10_000,
      maxSize: options.maxSize ?? 16 * 1024 * 1024,
      sizeCalculation: (metadata, meta) =>
        64 + 2 * metadata.key.length + (typeof meta === 'string' ? 2 * meta.length : 0),
    });
  }

  /**
   * The series identity of a meta value, as {@link makeBucketMetadata} computes it.
   *
   * @param meta - the metaField value, or `undefined` when the measurement has none.
   * @returns the normalised meta and its key (shared: do not mutate).
   * @throws what {@link makeBucketMetadata} throws for a value BSON cannot hold.
   */
  get(meta: unknown): BucketMetadata {
    const scalar =
      typeof meta === 'string' ||
      typeof meta === 'boolean' ||
      (typeof meta === 'number' && !Object.is(meta, -0));
    if (!scalar) return makeBucketMetadata(meta);
    let metadata = this.#cache.get(meta);
    if (metadata === undefined) {
      metadata = makeBucketMetadata(meta);
      this.#cache.set(meta, metadata);
    }
    return metadata;
  }
}
