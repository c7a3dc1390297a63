import { Double, Int32, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { makeBucketMetadata, normalizeMetadata } from '../../../src/catalog/bucket-metadata.js';
import { compareUtf8 } from '../../../src/util/bson-value.js';

describe('normalizeMetadata', () => {
  it('sorts object fields by byte order, recursively and inside arrays; arrays keep order', () => {
    const normalized = normalizeMetadata({ b: 1, a: { d: [{ z: 1, y: 2 }, 3], c: 2 }, B: 0 });
    expect(JSON.stringify(normalized)).toBe('{"B":0,"a":{"c":2,"d":[{"y":2,"z":1},3]},"b":1}');
  });

  it('keeps scalars as given', () => {
    const l = Long.fromNumber(5);
    expect(normalizeMetadata(l)).toBe(l);
    expect(normalizeMetadata('x')).toBe('x');
    expect(normalizeMetadata(null)).toBe(null);
  });

  it('treats __proto__ and constructor as ordinary fields', () => {
    const meta = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as Record<string, unknown>;
    const normalized = normalizeMetadata(meta) as Record<string, unknown>;
    expect(Object.keys(normalized)).toEqual(['__proto__', 'constructor']);
    expect(Object.getPrototypeOf(normalized)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('field name order (compareUtf8, used by normalizeMetadata)', () => {
  it('orders by UTF-8 bytes, not UTF-16 code units', () => {
    // U+FF61 (EF BD A1) sorts before U+1F600 (F0 9F 98 80) in UTF-8, but after its surrogates in UTF-16.
    expect(compareUtf8('\uff61', '\u{1f600}')).toBeLessThan(0);
    expect(['\uff61', '\u{1f600}'].sort()).toEqual(['\u{1f600}', '\uff61']);
    expect(compareUtf8('a', 'b')).toBeLessThan(0);
    expect(compareUtf8('b', 'b')).toBe(0);
  });
});

describe('series identity (makeBucketMetadata)', () => {
  const key = (m: unknown) => makeBucketMetadata(m).key;
  it('field order does not matter', () => {
    expect(key({ b: 1, a: 1 })).toBe(key({ a: 1, b: 1 }));
  });
  it('int32 1, double 1.0 and long 1 are different series', () => {
    const keys = new Set([key(new Int32(1)), key(new Double(1)), key(Long.fromNumber(1))]);
    expect(keys.size).toBe(3);
    expect(key(1)).toBe(key(new Int32(1)));
  });
  it('missing meta differs from null', () => {
    expect(key(undefined)).not.toBe(key(null));
    expect(makeBucketMetadata(undefined).normalizedMeta).toBeUndefined();
  });
  it('different values are different series', () => {
    expect(key({ a: 1 })).not.toBe(key({ a: 2 }));
    expect(key('a')).not.toBe(key(['a']));
  });
});
