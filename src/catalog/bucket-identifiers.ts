/**
 * How the catalog names series and buckets (`bucket_catalog/bucket_identifiers.h`).
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { bytesHex } from '../util/bson-value.js';

/** Number of stripes of the catalog (`kNumStripes`, docs/mongodb-behaviour.md §0). */
export const kNumberOfStripes = 32;

/** A series within a collection: namespace plus binary meta key. */
export interface BucketKey {
  /** Namespace of the time-series collection. */
  readonly ns: string;
  /** Binary key of the normalised meta (see `bucket-metadata.ts`). */
  readonly metaKey: string;
  /** `ns` and `metaKey` joined: the map key of the series within a stripe. */
  readonly signature: string;
  /** Deterministic hash of the signature; `stripe = hash % 32`. */
  readonly hash: number;
}

/** A bucket: its collection and ObjectId. */
export interface BucketId {
  /** Namespace of the time-series collection. */
  readonly ns: string;
  /** The bucket's `_id`. */
  readonly oid: ObjectId;
  /** `_id` as hex: the map key of the bucket. */
  readonly hex: string;
  /**
   * The `_id`'s bytes three at a time, as numbers (`(b0 << 16) | (b1 << 8) | b2`, then bytes 3..5, 6..8,
   * 9..11): comparing them in turn compares the ids as their hex does, without reading the string (small
   * integers, so they sit in this object rather than in one more).
   */
  readonly order0: number;
  /** Bytes 3..5 (see {@link BucketId.order0}). */
  readonly order1: number;
  /** Bytes 6..8. */
  readonly order2: number;
  /** Bytes 9..11. */
  readonly order3: number;
}

/**
 * Make the key of a series.
 *
 * @param ns - namespace of the collection.
 * @param metaKey - binary key of the normalised meta.
 * @returns the key with its hash.
 */
export function makeBucketKey(ns: string, metaKey: string): BucketKey {
  const signature = `${ns}\u0000${metaKey}`;
  return { ns, metaKey, signature, hash: fnv1a(signature) };
}

/**
 * Make the id of a bucket.
 *
 * @param ns - namespace of the collection.
 * @param oid - the bucket's `_id`.
 * @returns the id.
 */
export function makeBucketId(ns: string, oid: ObjectId): BucketId {
  // Read once: each read of `id` makes a buffer.
  const b = oid.id;
  return {
    ns,
    oid,
    hex: bytesHex(b),
    order0: threeBytes(b, 0),
    order1: threeBytes(b, 3),
    order2: threeBytes(b, 6),
    order3: threeBytes(b, 9),
  };
}

/** Bytes `at..at + 2` of `b` as one big-endian number. */
function threeBytes(b: Uint8Array, at: number): number {
  return ((b[at] ?? 0) << 16) | ((b[at + 1] ?? 0) << 8) | (b[at + 2] ?? 0);
}

/**
 * The stripe of a series.
 *
 * @param key - the series key.
 * @returns a stripe number in `[0, 32)`.
 */
export function stripeNumber(key: BucketKey): number {
  return key.hash % kNumberOfStripes;
}

/** 32-bit FNV-1a over UTF-16 code units: cheap, deterministic, well spread. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
