import { Binary, BSONRegExp, Int32, Long, ObjectId, serialize } from 'bson';
import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import {
  copyBsonValue,
  copyMeasurement,
  describe as describeValue,
  kMaxDepthForUserStorage,
  makeWalk,
} from '../../../src/util/bson-validation.js';
import type { MeasurementLayout } from '../../../src/util/bson-validation.js';

function refusal(run: () => unknown): { code: number; codeName: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    const e = error as TimeseriesError;
    return { code: e.code, codeName: e.codeName, message: e.message };
  }
  throw new Error('expected a refusal');
}

function nested(depth: number): Record<string, unknown> {
  let doc: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < depth; i++) doc = { o: doc };
  return doc;
}

describe('copyMeasurement', () => {
  it('rewrites values into the form BSON reads back', () => {
    // Arrange
    const bytes = new Uint8Array([1, 2, 3]);
    const ts = new Date(1000);
    // An undefined element, then a hole at index 2.
    const sparse: unknown[] = [undefined, 1];
    sparse[3] = 'x';
    const doc = {
      ts,
      n: 5n,
      r: /a.b/gim,
      b: bytes,
      u: undefined,
      arr: sparse,
      s: 'a\uD800b',
    };
    // Act
    const copy = copyMeasurement(doc);
    // Assert
    expect(copy).toStrictEqual({
      ts: new Date(1000),
      n: Long.fromBigInt(5n),
      r: new BSONRegExp('a.b', 'ism'),
      b: new Binary(new Uint8Array([1, 2, 3]), 0),
      u: null,
      arr: [null, 1, null, 'x'],
      s: 'a\uFFFDb',
    });
    expect(copy.ts).not.toBe(ts);
    bytes[0] = 9;
    expect((copy.b as Binary).buffer[0]).toBe(1);
  });

  it('keeps an own __proto__ key as an own field, never as a prototype', () => {
    const doc = JSON.parse('{"__proto__": {"x": 1}, "m": {"__proto__": 2}}') as Record<string, unknown>;
    const copy = copyMeasurement(doc);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(Object.keys(copy)).toEqual(['__proto__', 'm']);
    expect(Object.getOwnPropertyDescriptor(copy, '__proto__')?.value).toEqual({ x: 1 });
    expect(Object.getOwnPropertyDescriptor(copy.m, '__proto__')?.value).toBe(2);
  });

  it('keeps js-bson values, copying Binary', () => {
    const oid = new ObjectId();
    const bin = new Binary(new Uint8Array([7]), 4);
    const copy = copyMeasurement({ oid, i: new Int32(3), bin });
    expect(copy.oid).toBe(oid);
    expect(copy.bin).not.toBe(bin);
    expect(copy.bin).toStrictEqual(bin);
  });

  it('reads a getter once: the copy is what was validated', () => {
    let reads = 0;
    const doc = {
      get v() {
        reads++;
        return reads === 1 ? 1 : Symbol('later');
      },
    };
    expect(copyMeasurement(doc)).toStrictEqual({ v: 1 });
    expect(reads).toBe(1);
  });

  it.each([
    ['a function', { f: () => 1 }],
    ['a symbol', { s: Symbol('s') }],
    ['a Map', { m: new Map() }],
    ['a Set', { s: new Set() }],
    [
      'a class instance',
      {
        c: new (class Point {
          readonly x = 1;
        })(),
      },
    ],
    ['a Float64Array', { f: new Float64Array(1) }],
    ['an Invalid Date', { d: new Date(Number.NaN) }],
    ['a BigInt over int64', { n: 2n ** 63n }],
    ['a BigInt under int64', { n: -(2n ** 63n) - 1n }],
    ['a forged _bsontype', { v: { _bsontype: 'Int32', value: 1 } }],
    [
      'an unknown _bsontype',
      {
        v: Object.assign(Object.create({ [Symbol.for('@@mdb.bson.version')]: 7 }) as object, {
          _bsontype: 'Nope',
        }),
      },
    ],
    [
      'a js-bson value of another major version',
      { v: Object.defineProperty(new Int32(1), Symbol.for('@@mdb.bson.version'), { value: 6 }) },
    ],
    ['a NUL in a field name', { 'a\0b': 1 }],
    ['a NUL in a nested field name', { m: { 'a\0': 1 } }],
    ['a NUL in a regex', { r: new RegExp(String.fromCharCode(97, 0)) }],
    ['a non-document', 'abc'],
    ['an array as document', [1]],
  ])('refuses %s with BadValue', (_name, doc) => {
    expect(refusal(() => copyMeasurement(doc)).codeName).toBe('BadValue');
  });

  it('checks each name whatever the names at the same positions in the measurements before', () => {
    // Arrange: plain names at positions 0 and 1 first, then bad ones there, then plain ones again.
    const plain = { a: 1, b: 2 };
    const bad = { a: 1, ['b\0']: 2 };
    const lone = { ['\ud800']: 1, b: 2 };
    // Act / Assert
    expect(copyMeasurement(plain)).toStrictEqual(plain);
    expect(refusal(() => copyMeasurement(bad)).codeName).toBe('BadValue');
    expect(Object.keys(copyMeasurement(lone))).toEqual(['\ufffd', 'b']);
    expect(copyMeasurement(plain)).toStrictEqual(plain);
    expect(refusal(() => copyMeasurement({ m: { a: 1, ['b\0']: 2 } })).codeName).toBe('BadValue');
  });

  it('accepts the int64 bounds', () => {
    expect(copyMeasurement({ a: 2n ** 63n - 1n, b: -(2n ** 63n) })).toStrictEqual({
      a: Long.fromBigInt(2n ** 63n - 1n),
      b: Long.fromBigInt(-(2n ** 63n)),
    });
  });

  it('refuses circular values with BadValue', () => {
    const doc: Record<string, unknown> = { a: 1 };
    doc.self = doc;
    expect(refusal(() => copyMeasurement(doc))).toMatchObject({
      codeName: 'BadValue',
      message: 'Cannot convert circular structure to BSON',
    });
    const arr: unknown[] = [];
    arr.push({ back: arr });
    expect(refusal(() => copyMeasurement({ arr })).codeName).toBe('BadValue');
  });

  it('accepts a shared (non-circular) object twice', () => {
    const shared = { x: 1 };
    expect(copyMeasurement({ a: shared, b: [shared] })).toStrictEqual({ a: { x: 1 }, b: [{ x: 1 }] });
  });

  it(`allows ${kMaxDepthForUserStorage} levels of nesting and refuses one more with Overflow`, () => {
    expect(() => copyMeasurement(nested(kMaxDepthForUserStorage))).not.toThrow();
    expect(refusal(() => copyMeasurement(nested(kMaxDepthForUserStorage + 1)))).toEqual({
      code: 15,
      codeName: 'Overflow',
      message: 'cannot insert document because it exceeds 180 levels of nesting',
    });
    // Far deeper than the stack: refused, not a RangeError.
    expect(refusal(() => copyMeasurement(nested(20_000))).codeName).toBe('Overflow');
  });

  it('refuses a document over 16 MiB with BSONObjectTooLarge and counts exactly as js-bson', () => {
    const doc = { ts: new Date(0), s: 'é'.repeat(1000), n: [1, 2.5, -0, 5n], r: /x/i, d: { a: null } };
    // The size the walk computes is serialize()'s: a document exactly at the limit passes.
    const base = serialize(copyMeasurement({ ...doc, pad: '' })).length;
    const limit = 16 * 1024 * 1024;
    expect(() => copyMeasurement({ ...doc, pad: 'x'.repeat(limit - base) })).not.toThrow();
    expect(refusal(() => copyMeasurement({ ...doc, pad: 'x'.repeat(limit - base + 1) })).codeName).toBe(
      'BSONObjectTooLarge',
    );
  });
});

describe('measurement layouts', () => {
  /** The layout the walk gives each measurement, in order (`undefined` for a refused one). */
  function layouts(docs: ReadonlyArray<unknown>): Array<MeasurementLayout | undefined> {
    const walk = makeWalk();
    return docs.map((doc) => {
      try {
        copyMeasurement(doc, walk);
        return walk.layout;
      } catch {
        return undefined;
      }
    });
  }

  it('vouches from the second measurement of a layout until the layout changes', () => {
    const t = new Date(0);
    const [a1, a2, a3, b1, b2, a4, a5] = layouts([
      { t, a: 1 },
      { t, a: 2 },
      { t, a: 3 },
      { t, a: true },
      { t, a: false },
      { t, a: 4 },
      { t, a: 5 },
    ]);
    expect(a1).toBeUndefined();
    expect(a2).toBeDefined();
    expect(a3).toBe(a2);
    // A value of another kind is another layout.
    expect(b1).toBeUndefined();
    expect(b2).toBeDefined();
    expect(b2).not.toBe(a2);
    expect(a4).toBeUndefined();
    expect(a5).toBeDefined();
    expect(a5).not.toBe(a2);
  });

  it('a refused measurement that changed the caches part way leaves no token behind', () => {
    const t = new Date(0);
    const [, a2, refused, b1, b2] = layouts([
      { t, a: 1, c: 1 },
      { t, a: 2, c: 2 },
      // Refused at its third field, after its second was recorded.
      { t, b: 1, c: Symbol('x') },
      { t, b: 2, c: 2 },
      { t, b: 3, c: 3 },
    ]);
    expect(a2).toBeDefined();
    expect(refused).toBeUndefined();
    // {t, b, c} matches the caches the refused walk left: it must not be taken for {t, a, c}.
    expect(b1).not.toBe(a2);
    expect(b2).not.toBe(a2);
  });

  it('a walk that a nested walk interrupted vouches for nothing', () => {
    const t = new Date(0);
    const inner = { t, o: {}, b: 1 };
    const outer = {
      t,
      // Read while the outer walk copies its second field: the nested walk records {t, o, b}.
      o: {
        get x(): number {
          copyMeasurement(inner, makeWalk());
          return 1;
        },
      },
      b: 2,
    };
    const [, a2, interrupted] = layouts([{ t, o: {}, a: 1 }, { t, o: {}, a: 2 }, outer]);
    expect(a2).toBeDefined();
    // Its third name matched only because the nested walk had just written it.
    expect(interrupted).not.toBe(a2);
  });
});

describe('copyBsonValue', () => {
  it('copies one value with the nesting of its document', () => {
    expect(copyBsonValue({ a: [undefined] })).toStrictEqual({ a: [null] });
    expect(refusal(() => copyBsonValue(nested(10), kMaxDepthForUserStorage - 5)).codeName).toBe('Overflow');
  });
});

describe('describe', () => {
  it('never throws, whatever the value', () => {
    expect(describeValue(5n)).toBe('bigint 5');
    expect(describeValue(Symbol('x'))).toBe('symbol');
    expect(describeValue(Object.create(null))).toBe('object');
    expect(describeValue(new Map())).toBe('object of class Map');
    expect(describeValue('x'.repeat(100))).toBe(`string "${'x'.repeat(40)}..."`);
  });
});
