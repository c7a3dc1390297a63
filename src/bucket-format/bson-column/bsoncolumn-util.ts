/**
 * Constants shared by the BSONColumn encoder and decoder (the server's `bsoncolumn_util.h`): control bytes,
 * BSON type bytes and the error raised for a malformed column.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../../errors.js';

/** BSON element type bytes used by the column code. */
export const BsonType = {
  eoo: 0x00,
  double: 0x01,
  string: 0x02,
  object: 0x03,
  array: 0x04,
  binData: 0x05,
  undefined: 0x06,
  objectId: 0x07,
  bool: 0x08,
  date: 0x09,
  null: 0x0a,
  regex: 0x0b,
  dbPointer: 0x0c,
  code: 0x0d,
  symbol: 0x0e,
  codeWScope: 0x0f,
  int32: 0x10,
  timestamp: 0x11,
  int64: 0x12,
  decimal128: 0x13,
  maxKey: 0x7f,
  minKey: 0xff,
} as const;

/** Interleaved start, legacy (5.2): object root, arrays are leaves (docs/bsoncolumn.md §1.2). */
export const kInterleavedStartLegacy = 0xf0;
/** Interleaved start (6.0+): object root, arrays are descended into. */
export const kInterleavedStartObject = 0xf1;
/** Interleaved start (6.0+): array root, arrays are descended into. */
export const kInterleavedStartArray = 0xf2;

/** Control byte high nibble for each scale index 0..5 (index 5 = raw IEEE bits), §1.4. */
export const kControlByteForScaleIndex: Readonly<Uint8Array> = Uint8Array.of(
  0x90,
  0xa0,
  0xb0,
  0xc0,
  0xd0,
  0x80,
);

/** Maximum number of Simple-8b blocks under one control byte. */
export const kMaxBlocksPerControl = 16;

/**
 * Whether `b` starts a literal item: a BSON type byte (`(b & 0xE0) == 0`), or MaxKey/MinKey.
 *
 * @param b - first byte of an item.
 * @returns `true` for a literal.
 */
export function isLiteralControlByte(b: number): boolean {
  return (b & 0xe0) === 0 || b === BsonType.maxKey || b === BsonType.minKey;
}

/**
 * Whether `b` starts an interleaved section (`F0`, `F1` or `F2`).
 *
 * @param b - first byte of an item.
 * @returns `true` for an interleaved start.
 */
export function isInterleavedStartControlByte(b: number): boolean {
  return b === kInterleavedStartLegacy || b === kInterleavedStartObject || b === kInterleavedStartArray;
}

/**
 * Whether `b` is a Simple-8b control byte (`0x80`–`0xDF`).
 *
 * @param b - first byte of an item.
 * @returns `true` for a Simple-8b control.
 */
export function isSimple8bControlByte(b: number): boolean {
  return b >= 0x80 && b <= 0xdf;
}

/**
 * Scale index (0..5) of a Simple-8b control byte; the caller has checked {@link isSimple8bControlByte}.
 *
 * @param control - the control byte.
 * @returns the scale index: 5 for `0x8X`, 0..4 for `0x9X`..`0xDX`.
 */
export function scaleIndexForControlByte(control: number): number {
  const nibble = control >> 4;
  return nibble === 0x8 ? 5 : nibble - 0x9;
}

/**
 * The error for a malformed column. Every decoding failure goes through here so callers see one code.
 *
 * @param message - what is wrong, with the byte offset where useful.
 * @returns the error to throw.
 */
export function invalidColumn(message: string): TimeseriesError {
  return new TimeseriesError('BadValue', `Invalid BSONColumn encoding: ${message}`);
}
