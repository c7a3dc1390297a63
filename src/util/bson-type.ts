/**
 * Recognising js-bson values by their `_bsontype` tag, as js-bson's own serializer does, never with
 * `instanceof`: a process may hold two copies of `bson` (this package's ESM import and the `mongodb`
 * driver's CommonJS one), and a value made by one copy is not an instance of the other copy's classes.
 * The lint configuration forbids `instanceof` on js-bson classes so that every check goes through here.
 *
 * @packageDocumentation
 */
import type {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Code,
  DBRef,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
} from 'bson';

/** The js-bson classes by their `_bsontype` tag. */
export interface BsonClassesByTag {
  readonly Binary: Binary;
  readonly BSONRegExp: BSONRegExp;
  readonly BSONSymbol: BSONSymbol;
  readonly Code: Code;
  readonly DBRef: DBRef;
  readonly Decimal128: Decimal128;
  readonly Double: Double;
  readonly Int32: Int32;
  readonly Long: Long;
  readonly MaxKey: MaxKey;
  readonly MinKey: MinKey;
  readonly ObjectId: ObjectId;
  readonly Timestamp: Timestamp;
}

/**
 * Whether `v` is a js-bson value of the class tagged `tag`, from any copy of `bson`.
 *
 * @param v - any value.
 * @param tag - the class's `_bsontype` (`'ObjectId'`, `'Binary'`...).
 * @returns `true` when `v` carries that tag.
 * @example
 * ```ts
 * if (isBsonValue(doc._id, 'ObjectId')) doc._id.toHexString();
 * ```
 */
export function isBsonValue<K extends keyof BsonClassesByTag>(v: unknown, tag: K): v is BsonClassesByTag[K] {
  return typeof v === 'object' && v !== null && (v as { _bsontype?: unknown })._bsontype === tag;
}
