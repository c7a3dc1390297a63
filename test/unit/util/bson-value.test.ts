import {
  Binary,
  BSON,
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
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import {
  BsonType,
  bsonElementSize,
  bsonNumberValue,
  bsonTypeOf,
  bsonValueSize,
  bufferView,
  CanonicalType,
  canonicalTypeOf,
  compareBsonValues,
  compareUtf8,
  cloneBsonValue,
  copyBytes,
  indexNamesLength,
  isPlainObject,
  objectIdHex,
  utf8ByteLength,
} from '../../../src/util/bson-value.js';
import { isBsonValue } from '../../../src/util/bson-type.js';

const oid = (hex: string) => new ObjectId(hex.padStart(24, '0'));

/** The type byte js-bson writes for `v` as field `k` of a document. */
function serializedType(v: unknown): number {
  return BSON.serialize({ k: v })[4] ?? -1;
}

describe('bsonTypeOf / canonicalTypeOf', () => {
  const table: Array<[string, unknown, number, number]> = [
    ['int32 number', 1, BsonType.int, CanonicalType.number],
    ['int32 max', 2147483647, BsonType.int, CanonicalType.number],
    ['int32 min', -2147483648, BsonType.int, CanonicalType.number],
    ['2^31 is a double', 2147483648, BsonType.double, CanonicalType.number],
    ['-0 is a double', -0, BsonType.double, CanonicalType.number],
    ['fraction', 1.5, BsonType.double, CanonicalType.number],
    ['NaN', NaN, BsonType.double, CanonicalType.number],
    ['Infinity', Infinity, BsonType.double, CanonicalType.number],
    ['2^53 is a double', 2 ** 53, BsonType.double, CanonicalType.number],
    ['bigint', 5n, BsonType.long, CanonicalType.number],
    ['Int32', new Int32(3), BsonType.int, CanonicalType.number],
    ['Long', Long.fromNumber(3), BsonType.long, CanonicalType.number],
    ['Double', new Double(3), BsonType.double, CanonicalType.number],
    ['Decimal128', Decimal128.fromString('3'), BsonType.decimal, CanonicalType.number],
    ['string', 'x', BsonType.string, CanonicalType.string],
    ['BSONSymbol', new BSONSymbol('x'), BsonType.symbol, CanonicalType.string],
    ['object', { a: 1 }, BsonType.object, CanonicalType.object],
    ['null-prototype object', Object.create(null), BsonType.object, CanonicalType.object],
    ['DBRef (an embedded document)', new DBRef('c', oid('1')), BsonType.object, CanonicalType.object],
    ['array', [1], BsonType.array, CanonicalType.array],
    ['Binary', new Binary(new Uint8Array([1])), BsonType.binData, CanonicalType.binData],
    ['Uint8Array', new Uint8Array([1]), BsonType.binData, CanonicalType.binData],
    ['ObjectId', oid('1'), BsonType.objectId, CanonicalType.objectId],
    ['boolean', true, BsonType.bool, CanonicalType.bool],
    ['Date', new Date(0), BsonType.date, CanonicalType.date],
    ['Timestamp', new Timestamp({ t: 1, i: 1 }), BsonType.timestamp, CanonicalType.timestamp],
    ['RegExp', /a/i, BsonType.regex, CanonicalType.regex],
    ['BSONRegExp', new BSONRegExp('a', 'i'), BsonType.regex, CanonicalType.regex],
    ['Code', new Code('f()'), BsonType.javascript, CanonicalType.code],
    ['Code with scope', new Code('f()', { a: 1 }), BsonType.javascriptWithScope, CanonicalType.codeWithScope],
    ['null', null, BsonType.null, CanonicalType.null],
    ['MinKey', new MinKey(), BsonType.minKey, CanonicalType.minKey],
    ['MaxKey', new MaxKey(), BsonType.maxKey, CanonicalType.maxKey],
  ];

  it.each(table)('%s', (_name, value, type, canonical) => {
    expect(bsonTypeOf(value)).toBe(type);
    expect(canonicalTypeOf(value)).toBe(canonical);
    // The type byte is exactly what js-bson's serializer writes.
    expect(bsonTypeOf(value)).toBe(serializedType(value));
  });

  it('treats undefined as missing (EOO, canonical 0)', () => {
    expect(bsonTypeOf(undefined)).toBe(0);
    expect(canonicalTypeOf(undefined)).toBe(0);
  });

  it('rejects what js-bson cannot write, with a BadValue TimeseriesError', () => {
    for (const bad of [
      () => 1,
      Symbol('s'),
      new Map(),
      new (class Foo {
        readonly x = 1;
      })(),
    ]) {
      let caught: unknown;
      try {
        bsonTypeOf(bad);
      } catch (e) {
        caught = e;
      }
      expect(TimeseriesError.isTimeseriesError(caught)).toBe(true);
      expect((caught as TimeseriesError).codeName).toBe('BadValue');
    }
  });

  it('matches js-bson number typing on random numbers', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer(), fc.double(), fc.constantFrom(-0, 2 ** 31, -(2 ** 31), 2 ** 31 - 1)),
        (n) => {
          expect(bsonTypeOf(n)).toBe(serializedType(n));
        },
      ),
    );
  });
});

describe('copyBytes / bufferView', () => {
  it('copies own bytes, apart from the source and from each other; a view shares them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), fc.nat(), (raw, a, b) => {
        // A view inside a larger buffer: offsets are the view's, not its buffer's.
        const host = new Uint8Array(raw.length + 10);
        host.set(raw, 5);
        const bytes = host.subarray(5, 5 + raw.length);
        const start = a % (bytes.length + 1);
        const end = start + (b % (bytes.length - start + 1));
        const first = copyBytes(bytes, start, end);
        const second = copyBytes(bytes, start, end);
        expect([...first]).toEqual([...bytes.subarray(start, end)]);
        expect(Buffer.isBuffer(first)).toBe(true);
        const before = [...bytes];
        first.fill(0xee);
        expect([...bytes]).toEqual(before);
        expect([...second]).toEqual(before.slice(start, end));
        const view = bufferView(bytes, start, end);
        view.fill(0x11);
        expect([...bytes.subarray(start, end)]).toEqual(new Array<number>(end - start).fill(0x11));
        expect([...bytes.subarray(0, start)]).toEqual(before.slice(0, start));
        expect([...bytes.subarray(end)]).toEqual(before.slice(end));
      }),
    );
  });
});

describe('utf8ByteLength', () => {
  it("is Buffer.byteLength(s, 'utf8') for any UTF-16 string, lone surrogates included", () => {
    const unit = fc.oneof(
      fc.integer({ min: 0, max: 0x7f }),
      fc.integer({ min: 0x80, max: 0x7ff }),
      fc.integer({ min: 0x800, max: 0xffff }),
      fc.integer({ min: 0xd800, max: 0xdfff }),
    );
    fc.assert(
      fc.property(fc.array(unit, { maxLength: 70 }), (units) => {
        const s = String.fromCharCode(...units);
        expect(utf8ByteLength(s)).toBe(Buffer.byteLength(s, 'utf8'));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('objectIdHex', () => {
  it('is toHexString for any 12 bytes, from a Buffer or a plain Uint8Array id', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 12, maxLength: 12 }), (bytes) => {
        const oid = new ObjectId(bytes);
        expect(objectIdHex(oid)).toBe(oid.toHexString());
        const plain = { id: new Uint8Array(bytes) } as unknown as ObjectId;
        expect(objectIdHex(plain)).toBe(oid.toHexString());
      }),
    );
  });
});

describe('cloneBsonValue', () => {
  it('copies dates, documents, arrays and binary data deeply; the copy serialises the same', () => {
    const original = {
      at: new Date(5),
      doc: { n: 1, list: [new Date(6), { deep: 'x' }] },
      bytes: new Binary(Buffer.from([1, 2, 3]), 4),
      raw: new Uint8Array([7, 8]),
      id: new ObjectId(),
      big: Long.fromNumber(2 ** 40),
      none: null,
    };
    const copy = cloneBsonValue(original) as typeof original;
    expect(BSON.serialize(copy)).toEqual(BSON.serialize(original));
    original.at.setTime(0);
    original.doc.n = 2;
    (original.doc.list[0] as Date).setTime(0);
    (original.doc.list[1] as { deep: string }).deep = 'y';
    original.bytes.buffer[0] = 9;
    original.raw[0] = 9;
    expect(copy.at.getTime()).toBe(5);
    expect(copy.doc).toEqual({ n: 1, list: [new Date(6), { deep: 'x' }] });
    expect([...copy.bytes.buffer.subarray(0, copy.bytes.position)]).toEqual([1, 2, 3]);
    expect(copy.bytes.sub_type).toBe(4);
    expect([...copy.raw]).toEqual([7, 8]);
    expect(copy.id).toBe(original.id);
  });

  it('keeps __proto__ as an own field', () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": 1}, "a": 1}') as Record<string, unknown>;
    const copy = cloneBsonValue(hostile) as Record<string, unknown>;
    expect(Object.keys(copy)).toEqual(['__proto__', 'a']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
  });
});

describe('indexNamesLength', () => {
  it('is the byte length of the names "0".."n-1" together', () => {
    expect(indexNamesLength(0)).toBe(0);
    expect(indexNamesLength(10)).toBe(10);
    expect(indexNamesLength(11)).toBe(12);
    expect(indexNamesLength(1000)).toBe(10 + 90 * 2 + 900 * 3);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20_000 }), (n) => {
        const names = Array.from({ length: n }, (_, i) => String(i)).join('');
        expect(indexNamesLength(n)).toBe(names.length);
      }),
      { numRuns: 200 },
    );
  });
});

describe('isPlainObject', () => {
  it('accepts literals and null-prototype objects only', () => {
    expect(isPlainObject({})).toBe(true);
    expect(isPlainObject(Object.create(null))).toBe(true);
    for (const v of [
      [],
      new Date(),
      /x/,
      new Int32(1),
      oid('1'),
      null,
      'x',
      1,
      new Map(),
      new Uint8Array(),
    ]) {
      expect(isPlainObject(v)).toBe(false);
    }
  });
});

describe('compareBsonValues', () => {
  it('orders by canonical type first (MinKey < missing < null < numbers < ... < MaxKey)', () => {
    const ascending: unknown[] = [
      new MinKey(),
      undefined,
      null,
      NaN,
      -Infinity,
      Long.fromString('-9223372036854775808'),
      -1.5,
      new Int32(0),
      1,
      Decimal128.fromString('1.5'),
      Long.fromNumber(2),
      Infinity,
      '',
      'a',
      new BSONSymbol('b'),
      {},
      { a: 1 },
      [],
      [1],
      new Binary(new Uint8Array([9])),
      new Binary(new Uint8Array([0, 0])),
      oid('1'),
      oid('2'),
      false,
      true,
      new Date(-1),
      new Date(0),
      new Timestamp({ t: 1, i: 0 }),
      new Timestamp({ t: 0xffffffff, i: 0 }),
      new BSONRegExp('a', ''),
      new BSONRegExp('a', 'i'),
      new Code('a'),
      new Code('a', { x: 1 }),
      new MaxKey(),
    ];
    for (let i = 0; i < ascending.length; i++) {
      for (let j = 0; j < ascending.length; j++) {
        expect(compareBsonValues(ascending[i], ascending[j]), `${i} vs ${j}`).toBe(Math.sign(i - j));
      }
    }
  });

  it('compares numbers exactly across widths', () => {
    // Long vs double beyond 2^53: the double cannot represent 2^53 + 1.
    expect(compareBsonValues(Long.fromString('9007199254740993'), 2 ** 53)).toBe(1);
    expect(compareBsonValues(2 ** 53, Long.fromString('9007199254740993'))).toBe(-1);
    expect(compareBsonValues(Long.fromString('9007199254740992'), 2 ** 53)).toBe(0);
    expect(compareBsonValues(Long.MAX_VALUE, 2 ** 63)).toBe(-1);
    expect(compareBsonValues(Long.MIN_VALUE, -(2 ** 63))).toBe(0);
    // 2^63 - 1 is not a double: the nearest double is 2^63.
    expect(compareBsonValues(Long.fromString('9223372036854775806'), 2 ** 63)).toBe(-1);
    expect(compareBsonValues(Long.fromString('-9007199254740993'), -(2 ** 53))).toBe(-1);
    expect(compareBsonValues(Long.fromNumber(3), 3.5)).toBe(-1);
    expect(compareBsonValues(Long.fromNumber(3), 2.5)).toBe(1);
    expect(compareBsonValues(9007199254740993n, 2 ** 53)).toBe(1);
    expect(compareBsonValues(Long.fromBigInt(2n ** 62n), 2n ** 62n + 1n)).toBe(-1);
    expect(compareBsonValues(new Int32(1), new Double(1))).toBe(0);
    expect(compareBsonValues(-0, 0)).toBe(0);
    expect(compareBsonValues(new Double(-0), new Int32(0))).toBe(0);
    // NaN is the smallest number and equals NaN, whatever the width.
    expect(compareBsonValues(NaN, -Infinity)).toBe(-1);
    expect(compareBsonValues(NaN, NaN)).toBe(0);
    expect(compareBsonValues(Decimal128.fromString('NaN'), NaN)).toBe(0);
    expect(compareBsonValues(Decimal128.fromString('NaN'), Long.MIN_VALUE)).toBe(-1);
    expect(compareBsonValues(Long.MIN_VALUE, NaN)).toBe(1);
  });

  it('compares decimal128 with every other width', () => {
    const d = (s: string) => Decimal128.fromString(s);
    expect(compareBsonValues(d('2.5'), Long.fromNumber(2))).toBe(1);
    expect(compareBsonValues(d('2'), Long.fromNumber(2))).toBe(0);
    expect(compareBsonValues(d('2.000'), new Int32(2))).toBe(0);
    // 0.1 as a double is 0.1000000000000000055511151231257827...
    expect(compareBsonValues(d('0.1'), 0.1)).toBe(-1);
    expect(compareBsonValues(d('0.1000000000000000055511151231257827'), 0.1)).toBe(-1);
    expect(compareBsonValues(d('0.1000000000000000055511151231257828'), 0.1)).toBe(1);
    expect(compareBsonValues(d('0.5'), 0.5)).toBe(0);
    expect(compareBsonValues(d('-0'), 0)).toBe(0);
    expect(compareBsonValues(d('1E+400'), Number.MAX_VALUE)).toBe(1);
    expect(compareBsonValues(d('1E+400'), Infinity)).toBe(-1);
    expect(compareBsonValues(d('Infinity'), Infinity)).toBe(0);
    expect(compareBsonValues(d('-Infinity'), -Number.MAX_VALUE)).toBe(-1);
    expect(compareBsonValues(d('1E-400'), 0)).toBe(1);
    expect(compareBsonValues(d('1E-400'), Number.MIN_VALUE)).toBe(-1);
    expect(compareBsonValues(d('9223372036854775807'), Long.MAX_VALUE)).toBe(0);
    expect(compareBsonValues(d('9223372036854775806.5'), Long.MAX_VALUE)).toBe(-1);
    expect(compareBsonValues(d('1.10'), d('1.1'))).toBe(0);
    expect(compareBsonValues(d('-1.2'), d('-1.1'))).toBe(-1);
  });

  it('compares strings by UTF-8 bytes, not UTF-16 code units', () => {
    expect(compareBsonValues('Z', 'a')).toBe(-1);
    expect(compareBsonValues('a', 'ab')).toBe(-1);
    // U+FFFF (EF BF BF) < U+10000 (F0 90 80 80), although its UTF-16 unit 0xFFFF > 0xD800.
    expect(compareBsonValues('\uffff', '\u{10000}')).toBe(-1);
    expect(compareBsonValues('\ue000', '\u{1f600}')).toBe(-1);
    expect(compareBsonValues(new BSONSymbol('b'), 'a')).toBe(1);
    expect(compareUtf8('é', 'z')).toBe(1);
  });

  it('compares documents by canonical type, then field name, then value; arrays element-wise', () => {
    expect(compareBsonValues({ a: 1 }, { a: 2 })).toBe(-1);
    expect(compareBsonValues({ a: 1 }, { b: 0 })).toBe(-1);
    expect(compareBsonValues({ b: 1 }, { a: 'x' })).toBe(-1); // number < string before names
    expect(compareBsonValues({}, { a: new MinKey() })).toBe(-1);
    expect(compareBsonValues({ a: 1, b: undefined }, { a: 1 })).toBe(0);
    expect(compareBsonValues({ a: { b: 1 } }, { a: { b: 1, c: 1 } })).toBe(-1);
    expect(compareBsonValues([1, 2], [1, 3])).toBe(-1);
    expect(compareBsonValues([1], [1, 0])).toBe(-1);
    expect(compareBsonValues([undefined], [null])).toBe(0);
    expect(compareBsonValues([2], [1, 5])).toBe(1);
    expect(compareBsonValues(new DBRef('a', oid('1')), { $ref: 'a', $id: oid('1') })).toBe(0);
  });

  it('compares binData by length, then subtype, then bytes', () => {
    const bin = (bytes: number[], sub = 0) => new Binary(new Uint8Array(bytes), sub);
    expect(compareBsonValues(bin([9]), bin([0, 0]))).toBe(-1);
    expect(compareBsonValues(bin([9], 0), bin([0], 4))).toBe(-1);
    expect(compareBsonValues(bin([1, 2]), bin([1, 3]))).toBe(-1);
    expect(compareBsonValues(bin([1, 2]), new Uint8Array([1, 2]))).toBe(0);
    // Subtype 2's length field includes its inner 4-byte length.
    expect(compareBsonValues(bin([1, 2, 3, 4, 5], 0), bin([1], 2))).toBe(-1);
    expect(compareBsonValues(bin([1, 2, 3, 4], 0), bin([1], 2))).toBe(-1);
  });

  it('compares dates signed, timestamps unsigned, ObjectIds by bytes', () => {
    expect(compareBsonValues(new Date(-5), new Date(3))).toBe(-1);
    expect(compareBsonValues(new Timestamp({ t: 0x80000000, i: 0 }), new Timestamp({ t: 1, i: 0 }))).toBe(1);
    expect(compareBsonValues(new Timestamp({ t: 1, i: 0xffffffff }), new Timestamp({ t: 1, i: 1 }))).toBe(1);
    expect(compareBsonValues(oid('ff'), oid('0100'))).toBe(-1);
    expect(compareBsonValues(oid('ff'), oid('ff'))).toBe(0);
  });
});

describe('bsonValueSize / bsonElementSize', () => {
  const samples: Array<[string, unknown]> = [
    ['int32', 1],
    ['double', 1.5],
    ['-0', -0],
    ['bigint', 1n],
    ['string', 'héllo'],
    ['astral string', '😀'],
    ['lone surrogate', '\ud800x'],
    ['boolean', false],
    ['null', null],
    ['Date', new Date(5)],
    ['Int32', new Int32(5)],
    ['Long', Long.fromNumber(5)],
    ['Double', new Double(5)],
    ['Decimal128', Decimal128.fromString('5')],
    ['ObjectId', oid('1')],
    ['Binary', new Binary(new Uint8Array([1, 2, 3]))],
    ['Binary subtype 2', new Binary(new Uint8Array([1, 2, 3]), 2)],
    ['Uint8Array', new Uint8Array([1, 2])],
    ['Timestamp', new Timestamp({ t: 1, i: 2 })],
    ['MinKey', new MinKey()],
    ['MaxKey', new MaxKey()],
    ['RegExp', /ab+/gim],
    ['BSONRegExp', new BSONRegExp('x', 'imsx')],
    ['Code', new Code('return 1')],
    ['Code with scope', new Code('return a', { a: 1, b: 'é' })],
    ['BSONSymbol', new BSONSymbol('sym')],
    ['DBRef', new DBRef('coll', oid('1'), 'db', { extra: 1, gone: undefined })],
    ['object', { a: 1, b: { c: 'x' }, d: undefined }],
    ['__proto__ field', JSON.parse('{"__proto__": {"x": 1}}') as unknown],
    ['array with undefined', [1, undefined, 'x']],
    ['long array', Array.from({ length: 12 }, (_, i) => i)],
    ['nested', { a: [{ b: [1, { c: null }] }], 'é.$': true }],
  ];

  it.each(samples)('%s equals js-bson (calculateObjectSize and serialize)', (_name, value) => {
    const calculated = BSON.calculateObjectSize({ field: value }, { ignoreUndefined: true });
    const serialized = BSON.serialize({ field: value }, { ignoreUndefined: true }).length;
    expect(5 + bsonElementSize('field', value)).toBe(calculated);
    expect(5 + bsonElementSize('field', value)).toBe(serialized);
    expect(bsonElementSize('field', value)).toBe(7 + bsonValueSize(value));
  });

  it('gives 0 for a missing (undefined) field and counts UTF-8 bytes of field names', () => {
    expect(bsonElementSize('x', undefined)).toBe(0);
    expect(bsonElementSize('é', 1)).toBe(1 + 2 + 1 + 4);
  });
});

// ---------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------

/** Exact value of a BSON number as a rational `num / den` (den > 0), or a special value. */
type Exact = { kind: 'nan' } | { kind: 'inf'; sign: 1 | -1 } | { kind: 'q'; num: bigint; den: bigint };

/** Independent reference: doubling a double is exact, so the loop ends with an integer numerator. */
function exactOfDouble(x: number): Exact {
  if (Number.isNaN(x)) return { kind: 'nan' };
  if (!Number.isFinite(x)) return { kind: 'inf', sign: x > 0 ? 1 : -1 };
  let den = 1n;
  while (!Number.isInteger(x)) {
    x *= 2;
    den *= 2n;
  }
  return { kind: 'q', num: BigInt(x), den };
}

/** Independent reference: parse Decimal128's string form. */
function exactOfDecimal(d: Decimal128): Exact {
  const s = d.toString();
  if (s === 'NaN') return { kind: 'nan' };
  if (s === 'Infinity' || s === '-Infinity') return { kind: 'inf', sign: s.startsWith('-') ? -1 : 1 };
  const m = /^(-)?(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/.exec(s);
  if (m === null) throw new Error(`unparsed decimal ${s}`);
  const frac = m[3] ?? '';
  let num = BigInt((m[2] ?? '') + frac) * (m[1] === '-' ? -1n : 1n);
  let exp = Number(m[4] ?? '0') - frac.length;
  let den = 1n;
  if (exp >= 0) num *= 10n ** BigInt(exp);
  else den = 10n ** BigInt(-exp);
  exp = 0;
  return { kind: 'q', num, den };
}

function exactOf(v: unknown): Exact {
  if (typeof v === 'number') return exactOfDouble(v);
  if (typeof v === 'bigint') return { kind: 'q', num: BigInt.asIntN(64, v), den: 1n };
  if (isBsonValue(v, 'Int32') || isBsonValue(v, 'Double')) return exactOfDouble(v.value);
  if (isBsonValue(v, 'Long')) return { kind: 'q', num: BigInt(v.toString()), den: 1n };
  if (isBsonValue(v, 'Decimal128')) return exactOfDecimal(v);
  throw new Error('not a number');
}

function refCompare(a: Exact, b: Exact): number {
  const rank = (x: Exact) => (x.kind === 'nan' ? 0 : x.kind === 'inf' ? (x.sign < 0 ? 1 : 3) : 2);
  if (rank(a) !== rank(b)) return Math.sign(rank(a) - rank(b));
  if (a.kind !== 'q' || b.kind !== 'q') return 0;
  const l = a.num * b.den;
  const r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

const decimalArb = fc.oneof(
  fc
    .tuple(fc.bigInt({ min: -(10n ** 34n) + 1n, max: 10n ** 34n - 1n }), fc.integer({ min: -400, max: 400 }))
    .map(([c, e]) => Decimal128.fromString(`${c}E${e}`)),
  fc
    .tuple(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: -3, max: 3 }))
    .map(([c, e]) => Decimal128.fromString(`${c}E${e}`)),
  fc
    .constantFrom(
      'NaN',
      'Infinity',
      '-Infinity',
      '-0',
      '0E-6176',
      '9.999999999999999999999999999999999E+6144',
    )
    .map((s) => Decimal128.fromString(s)),
);

const numberArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.integer({ min: -4, max: 4 }),
  fc.constantFrom(-0, 0.5, 2 ** 53, 2 ** 63, -(2 ** 63), 2 ** 53 + 2),
  fc.integer().map((i) => new Int32(i)),
  fc.double().map((d) => new Double(d)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((b) => Long.fromBigInt(b)),
  fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }).map((b) => Long.fromBigInt(b)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  decimalArb,
);

const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  numberArb,
  fc.string({ unit: 'binary', maxLength: 4 }),
  fc.boolean(),
  fc.constant(null),
  fc.integer({ min: -1e12, max: 1e12 }).map((t) => new Date(t)),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b)),
  fc.tuple(fc.uint8Array({ maxLength: 3 }), fc.constantFrom(0, 2, 4)).map(([b, s]) => new Binary(b, s)),
  fc.tuple(fc.nat(), fc.nat()).map(([t, i]) => new Timestamp({ t: t % 2 ** 32, i: i % 2 ** 32 })),
  fc.constantFrom(new MinKey(), new MaxKey()),
);

const valueArb: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarArb,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'é', '__proto__'), tie('value'), { maxKeys: 3 }),
  ),
})).value;

describe('compareBsonValues properties', () => {
  it('numbers compare like an exact rational reference, across all widths', () => {
    fc.assert(
      fc.property(numberArb, numberArb, (a, b) => {
        // Arrange: an independent exact value of each side. Act + Assert: the same order.
        expect(compareBsonValues(a, b)).toBe(refCompare(exactOf(a), exactOf(b)));
      }),
      { numRuns: 3000 },
    );
  });

  it('numbers keep their order and type through js-bson serialization', () => {
    fc.assert(
      fc.property(numberArb, numberArb, (a, b) => {
        const back = BSON.deserialize(BSON.serialize({ a, b }), { promoteValues: false, useBigInt64: false });
        expect(serializedType(a)).toBe(bsonTypeOf(a));
        expect(compareBsonValues(back.a, back.b)).toBe(compareBsonValues(a, b));
        expect(compareBsonValues(back.a, a)).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  it('is a total order: reflexive, antisymmetric and transitive', () => {
    fc.assert(
      fc.property(fc.array(valueArb, { minLength: 1, maxLength: 6 }), (values) => {
        for (const v of values) expect(compareBsonValues(v, v)).toBe(0);
        for (const a of values)
          for (const b of values) expect(compareBsonValues(a, b)).toBe(-compareBsonValues(b, a) || 0);
        const sorted = [...values].sort(compareBsonValues);
        for (let i = 0; i < sorted.length; i++) {
          for (let j = i + 1; j < sorted.length; j++)
            expect(compareBsonValues(sorted[i], sorted[j])).toBeLessThanOrEqual(0);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('sizes equal js-bson calculateObjectSize for random values', () => {
    fc.assert(
      fc.property(valueArb, (value) => {
        expect(5 + bsonElementSize('k', value)).toBe(
          BSON.calculateObjectSize({ k: value }, { ignoreUndefined: true }),
        );
      }),
      { numRuns: 1000 },
    );
  });
});

describe('bsonNumberValue', () => {
  it('reads every BSON number width and nothing else', () => {
    expect(bsonNumberValue(1.5)).toBe(1.5);
    expect(bsonNumberValue(7n)).toBe(7);
    expect(bsonNumberValue(new Int32(3))).toBe(3);
    expect(bsonNumberValue(new Double(2.5))).toBe(2.5);
    expect(bsonNumberValue(Long.fromNumber(-4))).toBe(-4);
    expect(bsonNumberValue(Decimal128.fromString('5.0'))).toBe(5);
    expect(bsonNumberValue('5')).toBeUndefined();
    expect(bsonNumberValue(new Date(5))).toBeUndefined();
    expect(bsonNumberValue(null)).toBeUndefined();
  });
});
