/**
 * BSONColumn: MongoDB's compressed column format (BSON BinData subtype 7), as written in the `data`
 * fields of compressed time-series buckets. Specification: `docs/bsoncolumn.md`.
 *
 * @packageDocumentation
 */
import { BSONColumnBuilder } from './bsoncolumn-builder.js';
import { decodeColumn } from './decoder.js';
import type { DecodeOptions } from './decoder.js';

export type { DecodeOptions } from './decoder.js';

/** The BSONColumn codec: see {@link BSONColumn}. */
export interface BSONColumnCodec {
  /**
   * Encode values into a BSONColumn binary.
   *
   * @param values - entries; `undefined` marks a missing entry.
   * @returns the BinData subtype 7 payload.
   * @throws TimeseriesError (`BadValue`) when a value has no BSON representation (a function, a symbol).
   */
  encode(values: ReadonlyArray<unknown>): Uint8Array;
  /**
   * Decode a BSONColumn binary.
   *
   * @param bytes - the BinData subtype 7 payload.
   * @param options - limits, e.g. the expected number of entries.
   * @returns one canonical value per entry, `undefined` for missing entries.
   * @throws TimeseriesError (`BadValue`) when the binary is malformed.
   */
  decode(bytes: Uint8Array, options?: DecodeOptions): unknown[];
}

let idleBuilder: BSONColumnBuilder | undefined;

/**
 * Encoder and decoder of BSONColumn binaries.
 *
 * Values map to BSON exactly as js-bson's `serialize` maps them: a JS number is an int32 when it is an
 * integer in int32 range (and not -0), a double otherwise; a bigint is an int64; `Date`, strings,
 * booleans, `null`, arrays, plain objects and js-bson classes (`Int32`, `Double`, `Long`, `Decimal128`,
 * `ObjectId`, `Binary`, `Timestamp`, ...) as js-bson writes them. `undefined` in the array is a missing
 * entry.
 *
 * Decoding returns the canonical JS value of each element: int32 → `number`; double → `number`, except an
 * integral double in int32 range → `Double` (so it stays a double when serialized again); int64 → `Long`;
 * decimal128 → `Decimal128`; date → `Date`; string → `string`; bool → `boolean`; null → `null`; objectId →
 * `ObjectId`; binData → `Binary`; timestamp → `Timestamp`; objects and arrays recursively by the same
 * rule; missing → `undefined`. So `serialize` of decoded values gives the same bytes as `serialize` of
 * the encoded values.
 *
 * The encoder makes the server's choices (selectors, RLE, double scaling, interleaving with `F1`/`F2`),
 * so for the same input it writes the same bytes as a current server.
 *
 * @example
 * ```ts
 * const bytes = BSONColumn.encode([1, 2, 3, undefined, 5]);
 * const values = BSONColumn.decode(bytes); // [1, 2, 3, undefined, 5]
 * const binary = new Binary(bytes, Binary.SUBTYPE_COLUMN);
 * ```
 */
export const BSONColumn: BSONColumnCodec = Object.freeze({
  encode(values: ReadonlyArray<unknown>): Uint8Array {
    // One builder serves every call (a new one allocates a dozen buffers, more than a short column costs
    // to encode). It is taken out while in use, so a nested call (a `toBSON` that encodes a column)
    // builds its own, and a call that throws leaves no half-written builder behind.
    const builder = idleBuilder ?? new BSONColumnBuilder();
    idleBuilder = undefined;
    for (const v of values) builder.append(v);
    const bytes = builder.finalize();
    idleBuilder = builder;
    return bytes;
  },
  decode(bytes: Uint8Array, options?: DecodeOptions): unknown[] {
    return decodeColumn(bytes, options);
  },
});

export { BSONColumnBuilder } from './bsoncolumn-builder.js';
export { applyBinaryDiff } from './binary-diff.js';
export type { BinaryDiff } from './binary-diff.js';
