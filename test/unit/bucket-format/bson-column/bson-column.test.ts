import { Binary, Decimal128, Double, Long, serialize } from 'bson';
import { describe, expect, it } from 'vitest';

import { BSONColumn, BSONColumnBuilder } from '../../../../src/bucket-format/bson-column/bson-column.js';
import { TimeseriesError } from '../../../../src/errors.js';
import {
  fromHex,
  interleavedVectors,
  legacyF0,
  realBoolBits,
  realBoolColumn,
  realDateColumn,
  smallVectors,
  toHex,
} from './vectors.js';

/** BSON bytes of a sequence, missing entries as a marker, to compare values exactly. */
function bsonOf(values: ReadonlyArray<unknown>): string {
  return values.map((v) => (v === undefined ? '<missing>' : toHex(serialize({ v })))).join('|');
}

describe('BSONColumn §4.1 real server vectors', () => {
  it('decodes the Date column and re-encodes it to identical bytes', () => {
    // Arrange
    const bytes = fromHex(realDateColumn);
    // Act
    const values = BSONColumn.decode(bytes);
    // Assert
    expect(values).toHaveLength(577);
    const ms = values.map((v) => (v as Date).getTime());
    expect(ms[0]).toBe(1654667357000);
    expect(ms[576]).toBe(1654667934000);
    for (let i = 1; i < ms.length; i++) expect(ms[i]! - ms[i - 1]!).toBe(i === 264 ? 2000 : 1000);
    expect(toHex(BSONColumn.encode(values))).toBe(realDateColumn);
  });

  it('decodes the Bool column and re-encodes it to identical bytes', () => {
    const values = BSONColumn.decode(fromHex(realBoolColumn));
    expect(values.map((v) => (v === true ? '1' : v === false ? '0' : '?')).join('')).toBe(realBoolBits);
    expect(values.filter((v) => v === true)).toHaveLength(82);
    expect(toHex(BSONColumn.encode(values))).toBe(realBoolColumn);
  });
});

describe('BSONColumn: a run of one large delta, then another (simple8b_test.cpp ResetRLEAfterLargeValue)', () => {
  // 127 deltas zigzagging to 0xC000000000000000 (a 7-value block with trailing zeros, then an RLE block
  // of 120), then one zigzagging to 0x07FFFFFFFFFFFFFF (60 bits alone): the server's three blocks.
  const M64 = (1n << 64n) - 1n;
  const M128 = (1n << 128n) - 1n;
  const unzigzag = (u: bigint) => (u >> 1n) ^ -(u & 1n);
  const deltas = [...Array<bigint>(127).fill(unzigzag(0xc000000000000000n)), unzigzag(0x07ffffffffffffffn)];
  const blocks = '82' + '18cfcfcfcfcfcfcf' + '0f00000000000000' + 'feffffffffffff7f' + '00';
  const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

  it('int64: encodes as the server does (it ran away writing empty blocks)', () => {
    let v = 0n;
    const values = [Long.fromBigInt(v)];
    for (const d of deltas) {
      v = (v + d) & M64;
      values.push(Long.fromBigInt(BigInt.asIntN(64, v)));
    }
    const column = BSONColumn.encode(values);
    expect(hex(column)).toBe('12' + '00' + '0000000000000000' + blocks);
    expect(BSONColumn.decode(column)).toEqual(values);
  });

  it('decimal128: no empty block (it wrote one, which no decoder reads)', () => {
    const decimal = (x: bigint) => {
      const b = Buffer.alloc(16);
      b.writeBigUInt64LE(x & M64, 0);
      b.writeBigUInt64LE(x >> 64n, 8);
      return new Decimal128(b);
    };
    let v = 0n;
    const values = [decimal(v)];
    for (const d of deltas) {
      v = (v + d) & M128;
      values.push(decimal(v));
    }
    const column = BSONColumn.encode(values);
    expect(hex(column)).toBe('13' + '00' + '00'.repeat(16) + blocks);
    expect((BSONColumn.decode(column) as Decimal128[]).map((d) => hex(d.bytes))).toEqual(
      values.map((d) => hex(d.bytes)),
    );
  });
});

describe('BSONColumn: a double stream after a block is written (derived by hand from the rule)', () => {
  // 2.50 (the literal), then 30 steps of +0.01: one ×100 block of thirty 2-bit deltas of +1 (selector 2,
  // every slot 0b10). The next value does not fit that block, so the block is written; its last value,
  // 2.80, needs no more than ×10, so the stream drops back to ×10 for what follows.
  const head = Array.from({ length: 31 }, (_, i) => (250 + i) / 100);
  const literal = '01 00 0000000000000440';
  const thirtyPlusOne = 'a2aaaaaaaaaaaaaa';

  it("drops to the smallest scale of the block's last value: a new ×10 control for 2.9, 3.1, 3.3", () => {
    // Act
    const hex = toHex(BSONColumn.encode([...head, 2.9, 3.1, 3.3]));
    // Assert: 0xb0 (×100, one block), then 0xa0 (×10, one block): three 20-bit slots (selector 12) of
    // +1, +2, +2 at ×10.
    expect(hex).toBe(`${literal} b0 ${thirtyPlusOne} a0 2c00000400400000 00`.replace(/\s+/g, ''));
    expect(bsonOf(BSONColumn.decode(fromHex(hex)))).toBe(bsonOf([...head, 2.9, 3.1, 3.3]));
  });

  it('stays at ×100 when the values after the block need it: one control of two blocks', () => {
    // Act
    const hex = toHex(BSONColumn.encode([...head, 2.91, 3.11, 3.31]));
    // Assert: 0xb1 (×100, two blocks), the second three 20-bit slots of +11, +20, +20 at ×100.
    expect(hex).toBe(`${literal} b1 ${thirtyPlusOne} 6c01002800800200 00`.replace(/\s+/g, ''));
    expect(bsonOf(BSONColumn.decode(fromHex(hex)))).toBe(bsonOf([...head, 2.91, 3.11, 3.31]));
  });
});

describe('BSONColumn §4.2 small vectors', () => {
  for (const vector of smallVectors) {
    it(`encodes ${vector.name}`, () => {
      expect(toHex(BSONColumn.encode(vector.values))).toBe(vector.hex.replace(/\s+/g, ''));
    });
    it(`decodes ${vector.name}`, () => {
      expect(bsonOf(BSONColumn.decode(fromHex(vector.hex)))).toBe(bsonOf(vector.values));
    });
  }

  it('decodes the alternative [1.0, 2.0, 2.5] bytes with a scale change between controls', () => {
    const values = BSONColumn.decode(
      fromHex('01 00 000000000000f03f 90 2e00000000000000 a0 ae00000000000000 00'),
    );
    expect(bsonOf(values)).toBe(bsonOf([new Double(1), new Double(2), 2.5]));
  });
});

describe('BSONColumn §4.3 interleaved vectors', () => {
  for (const vector of interleavedVectors) {
    it(`encodes ${vector.name}`, () => {
      expect(toHex(BSONColumn.encode(vector.values))).toBe(vector.hex.replace(/\s+/g, ''));
    });
    it(`decodes ${vector.name}`, () => {
      expect(bsonOf(BSONColumn.decode(fromHex(vector.hex)))).toBe(bsonOf(vector.values));
    });
  }

  it('decodes legacy F0 with an array leaf', () => {
    expect(bsonOf(BSONColumn.decode(fromHex(legacyF0.hex)))).toBe(bsonOf(legacyF0.values));
  });

  it('re-encodes legacy F0 data with F1', () => {
    const bytes = BSONColumn.encode(BSONColumn.decode(fromHex(legacyF0.hex)));
    expect(bytes[0]).toBe(0xf1);
    expect(bsonOf(BSONColumn.decode(bytes))).toBe(bsonOf(legacyF0.values));
  });
});

describe('BSONColumn value representation', () => {
  it('decodes an empty column', () => {
    expect(BSONColumn.decode(Uint8Array.of(0))).toEqual([]);
    expect(toHex(BSONColumn.encode([]))).toBe('00');
  });

  it('keeps integral doubles as Double and int32 as number', () => {
    const values = BSONColumn.decode(BSONColumn.encode([new Double(3), 3, 3.5, -0, 2 ** 40]));
    expect(values[0]).toBeInstanceOf(Double);
    expect(values[1]).toBe(3);
    expect(values[2]).toBe(3.5);
    expect(Object.is(values[3], -0)).toBe(true);
    expect(values[4]).toBe(2 ** 40);
  });

  it('decodes int64 as Long and binData as Binary', () => {
    const [l, b] = BSONColumn.decode(BSONColumn.encode([5n, new Binary(Uint8Array.of(1, 2), 0)]));
    expect(l).toBeInstanceOf(Long);
    expect(b).toBeInstanceOf(Binary);
  });

  it('never shares mutable objects between repeated entries', () => {
    const d = new Date(0);
    const values = BSONColumn.decode(BSONColumn.encode([d, d, { x: {} }, { x: {} }]));
    expect(values[0]).not.toBe(values[1]);
    expect(values[2]).not.toBe(values[3]);
  });

  it('keeps __proto__ as an ordinary field', () => {
    const obj = JSON.parse('{"__proto__": 1, "a": 2}') as object;
    const [decoded] = BSONColumn.decode(BSONColumn.encode([obj, obj]));
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.keys(decoded as object)).toEqual(['__proto__', 'a']);
    expect(bsonOf([decoded])).toBe(bsonOf([obj]));
  });

  it('keeps a leading byte order mark in strings and field names', () => {
    // U+FEFF is an ordinary character inside BSON; a UTF-8 decoder left at its default drops it when it
    // comes first. Short and long strings take different decoding paths.
    const bom = '\uFEFF';
    const values = [bom, `${bom}x`, bom + 'y'.repeat(40), { a: bom }, { [`${bom}k`]: 1 }, [bom]];
    const column = BSONColumn.encode(values);
    expect(bsonOf(BSONColumn.decode(column))).toBe(bsonOf(values));
    const resumed = BSONColumnBuilder.fromBinary(column);
    expect(resumed.size).toBe(column.length);
  });

  it('rejects values without a BSON representation', () => {
    expect(() => BSONColumn.encode([() => 1])).toThrow(TimeseriesError);
  });
});

describe('BSONColumn malformed input', () => {
  const cases: ReadonlyArray<[string, string]> = [
    ['empty buffer', ''],
    ['no final EOO', '10 00 01000000'],
    ['EOO before the end', '00 00'],
    ['invalid control byte', '20 00'],
    ['invalid control byte 0xE0', 'e0 00'],
    ['truncated literal', '10 00 0100'],
    ['literal with a field name', '10 61 00 01000000 00'],
    ['truncated Simple-8b blocks', '10 00 01000000 81 0000000000000000 00'],
    ['selector 0', '10 00 01000000 80 0000000000000000 00'],
    ['invalid extended selector 7/10', '10 00 01000000 80 a700000000000000 00'],
    ['invalid extended selector 8/14', '10 00 01000000 80 e800000000000000 00'],
    ['scaled control for an int', '10 00 01000000 90 0e00000000000000 00'],
    ['non-zero delta after null', '0a 00 80 0e20000000000000 00'],
    ['nested interleaved start', 'f1 0c000000 10 6100 01000000 00 f1 00'],
    ['interleaved reference without leaves', 'f1 05000000 00 00 00'],
    ['interleaved not terminated', 'f1 0c000000 10 6100 01000000 00 80 0e00000000000000'],
    ['string length overrun', '02 00 ffffff7f 61 00 00'],
    ['unknown BSON type in literal', '1f 00 00'],
  ];
  for (const [name, hex] of cases) {
    it(`fails clearly on ${name}`, () => {
      const bytes = fromHex(hex);
      expect(() => BSONColumn.decode(bytes)).toThrow(TimeseriesError);
      try {
        BSONColumn.decode(bytes);
      } catch (e) {
        expect((e as TimeseriesError).codeName).toBe('BadValue');
        expect((e as Error).message).toMatch(/^Invalid BSONColumn encoding/);
      }
    });
  }

  it('enforces maxCount on huge RLE counts', () => {
    // 16 RLE blocks of 1920 zero deltas each: 30 721 entries from 137 bytes.
    const hex = `10 00 01000000 8f ${'ff00000000000000'.repeat(16)} 00`;
    expect(BSONColumn.decode(fromHex(hex))).toHaveLength(30721);
    expect(() => BSONColumn.decode(fromHex(hex), { maxCount: 1000 })).toThrow(/more than 1000 entries/);
  });
});
