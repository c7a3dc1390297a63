/** Test vectors of docs/bsoncolumn.md §4, shared by the unit tests. */
import { Binary, Decimal128, Double, ObjectId, Timestamp } from 'bson';

/** A vector: input values and the expected column bytes (hex, spaces ignored). */
export interface Vector {
  readonly name: string;
  readonly values: ReadonlyArray<unknown>;
  readonly hex: string;
}

const t0 = 1704067200000;
const longString = 'this string is longer than 16';
const hexOf = (s: string): string => Buffer.from(s).toString('hex');

/** §4.2 small vectors. */
export const smallVectors: ReadonlyArray<Vector> = [
  { name: 'int32 [1,2,3,4]', values: [1, 2, 3, 4], hex: '10 00 01000000 80 2c00000200200000 00' },
  { name: 'int32 [5,5,5,5]', values: [5, 5, 5, 5], hex: '10 00 05000000 80 0c00000000000000 00' },
  { name: 'int64 [10,7,7]', values: [10n, 7n, 7n], hex: '12 00 0a00000000000000 80 5d00000000000000 00' },
  { name: 'int32 [1, missing, 3]', values: [1, undefined, 3], hex: '10 00 01000000 80 fdffffff13000000 00' },
  {
    name: '[missing, missing, 5]',
    values: [undefined, undefined, 5],
    hex: '80 fdffffffffffffff 10 00 05000000 00',
  },
  { name: 'bool [true,false,true]', values: [true, false, true], hex: '08 00 01 80 1d00000008000000 00' },
  {
    name: 'date, 3 values 1 s apart',
    values: [0, 1, 2].map((i) => new Date(t0 + 1000 * i)),
    hex: '09 00 00f451c28c010000 80 0d7d000000000000 00',
  },
  {
    name: 'date, 5 values 1 s apart',
    values: [0, 1, 2, 3, 4].map((i) => new Date(t0 + 1000 * i)),
    hex: '09 00 00f451c28c010000 80 0b7d000000000000 00',
  },
  {
    name: 'date [t0, t0+1s, missing, t0+2s]',
    values: [new Date(t0), new Date(t0 + 1000), undefined, new Date(t0 + 2000)],
    hex: '09 00 00f451c28c010000 80 0c7d00ffff0f0000 00',
  },
  {
    name: 'timestamp (100,1),(100,2),(100,3)',
    values: [1, 2, 3].map((i) => new Timestamp({ t: 100, i })),
    hex: '11 00 0100000064000000 80 2d00000000000000 00',
  },
  {
    name: 'ObjectId …01/…02/…03',
    values: ['01', '02', '03'].map((s) => new ObjectId(`65920080aabbccddee0000${s}`)),
    hex: '07 00 65920080aabbccddee000001 80 2d00000000000000 00',
  },
  {
    name: 'double [1.0, 2.0, 3.0]',
    values: [1, 2, 3].map((x) => new Double(x)),
    hex: '01 00 000000000000f03f 90 2d00000008000000 00',
  },
  {
    name: 'double [1.5, 2.5, 3.5]',
    values: [1.5, 2.5, 3.5],
    hex: '01 00 000000000000f83f a0 4d01000050000000 00',
  },
  {
    name: 'double [1.25, 1.5, 1.75]',
    values: [1.25, 1.5, 1.75],
    hex: '01 00 000000000000f43f b0 2d030000c8000000 00',
  },
  {
    name: 'double [1.0, 2.0, 2.5]',
    values: [new Double(1), new Double(2), 2.5],
    hex: '01 00 000000000000f03f a0 4d01000028000000 00',
  },
  {
    name: '1000 × double 0.5',
    values: new Array<number>(1000).fill(0.5),
    hex: '01 00 000000000000e03f a3 7f00000000000000 0200000000000000 0700000000000000 0e00000000000000 00',
  },
  {
    name: 'string ["a","b","c"]',
    values: ['a', 'b', 'c'],
    hex: '02 00 0200000061 00 80 2d00000008000000 00',
  },
  {
    name: 'string ["abc","abd"]',
    values: ['abc', 'abd'],
    hex: '02 00 04000000616263 00 80 2e00000000000000 00',
  },
  {
    name: 'string [29 characters, "abc", "abc"]',
    values: [longString, 'abc', 'abc'],
    hex: `02 00 1e000000 ${hexOf(longString)} 00 80 6d4c2c0c00000000 00`,
  },
  {
    name: 'decimal128 [1, 2]',
    values: [Decimal128.fromString('1'), Decimal128.fromString('2')],
    hex: '13 00 0100000000000000 0000000000004030 80 2e00000000000000 00',
  },
  {
    name: 'binData subtype 0 [01020304, 02020304]',
    values: [new Binary(Uint8Array.of(1, 2, 3, 4), 0), new Binary(Uint8Array.of(2, 2, 3, 4), 0)],
    hex: '05 00 04000000 00 01020304 80 2e00000000000000 00',
  },
  { name: 'null ×3', values: [null, null, null], hex: '0a 00 80 0d00000000000000 00' },
  { name: 'int32 1 then string "x"', values: [1, 'x'], hex: '10 00 01000000 02 00 0200000078 00 00' },
  {
    name: 'int32 ×130 of 7',
    values: new Array<number>(130).fill(7),
    hex: '10 00 07000000 82 0f00000000000000 0700000000000000 0e00000000000000 00',
  },
  {
    name: 'int32 0..200',
    values: Array.from({ length: 201 }, (_, i) => i),
    hex: '10 00 00000000 83 a2aaaaaaaaaaaaaa 0f00000000000000 a2aaaaaaaaaaaaaa 2349922449922449 00',
  },
  {
    name: 'int64 [0, 1<<40, 2<<40, 3<<40]',
    values: [0n, 1n << 40n, 2n << 40n, 3n << 40n],
    hex: '12 00 0000000000000000 80 582a00a800a00200 00',
  },
  {
    name: '200 × missing, then int32 1',
    values: [...new Array<undefined>(200).fill(undefined), 1],
    hex: '82 f1ffffffffffffff 0f00000000000000 f3ffffffffffffff 10 00 01000000 00',
  },
];

/** §4.3 interleaved vectors that the current encoder writes. */
export const interleavedVectors: ReadonlyArray<Vector> = [
  {
    name: '[{a:1,b:2},{a:2,b:4}]',
    values: [
      { a: 1, b: 2 },
      { a: 2, b: 4 },
    ],
    hex: 'f1 13000000 10 6100 01000000 10 6200 02000000 00 80 0d00000008000000 80 0d00000010000000 00 00',
  },
  {
    name: 'InterleavedAfterSkip [missing, missing, {a:100}, {a:200}]',
    values: [undefined, undefined, { a: 100 }, { a: 200 }],
    hex: '80 fdffffffffffffff f1 0c000000 10 6100 64000000 00 80 0d00000020030000 00 00',
  },
  {
    name: '[{a:1,b:1},{a:2}]',
    values: [{ a: 1, b: 1 }, { a: 2 }],
    hex: 'f1 13000000 10 6100 01000000 10 6200 01000000 00 80 0d00000008000000 80 0d000000fcffffff 00 00',
  },
  {
    name: 'array root [[1,2],[2,3]]',
    values: [
      [1, 2],
      [2, 3],
    ],
    hex: 'f2 13000000 10 3000 01000000 10 3100 02000000 00 80 0d00000008000000 80 0d00000008000000 00 00',
  },
];

/** §4.3 legacy F0 vector (decode only: a current encoder writes F1). */
export const legacyF0: Vector = {
  name: 'LegacyInterleavedPaths {a:[10], b:20} × 4',
  values: new Array(4).fill(null).map(() => ({ a: [10], b: 20 })),
  hex: 'f0 1b000000 04 6100 0c000000 10 3000 0a000000 00 10 6200 14000000 00 80 0b00000000000000 80 0b00000000000000 00 00',
};

/** §4.1 A: real server Date column. */
export const realDateColumn =
  '0900482bdc4181010000870a7d0000000000001f0000000000000004000000000000000a00000000d0f77c01000000000000001f0000000000000006000000000000000e0000000000000000';

/** §4.1 B: real server Bool column. */
export const realBoolColumn =
  '0800008f02000000000000209240200180040020121200000000000002000000008001000200000000000000622009098404000002986160000000000200001860801900010000000000000082810400004800000260000000060000020000000000000002000000062609094208210118000600026060809909006102000000000000008282040000000600801200000060928101090000000000000000';

/** §4.1 B as a bit string, index 0 first. */
export const realBoolBits =
  '0000000000000000000000000000011011110001100000001100000000011001100000000000000000000000000000000000000000000000100000000000000000000000000000000000000100011011101111001100000000000000101001000100000000000000000000000000001000010000101000000000000000000000000000000000000000000000000000000000000000000010001100000000000011000000000000010000000000000100000000000000000000000000000000000000000000000000000001000101101110111100111001100000100000010000000000010001000010101011111110010000000000000000000000000000000011000000000000000100000000001000000000000000010110100010000000000';

/**
 * Hex string to bytes (spaces ignored).
 *
 * @param hex - hex digits.
 * @returns the bytes.
 */
export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.replace(/\s+/g, ''), 'hex'));
}

/**
 * Bytes to hex.
 *
 * @param bytes - bytes.
 * @returns lowercase hex.
 */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
