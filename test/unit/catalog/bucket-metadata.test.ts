import { Double, Int32, Long, serialize } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  BucketMetadataCache,
  contentHash,
  makeBucketMetadata,
  normalizeMetadata,
} from '../../../src/catalog/bucket-metadata.js';
import { compareUtf8 } from '../../../src/util/bson-value.js';
import { copyBsonValue } from '../../../src/util/bson-validation.js';

describe('normalizeMetadata', () => {
  it('sorts object fields by byte order, recursively and inside arrays; arrays keep order', () => {
    const normalized = normalizeMetadata({ b: 1, a: { d: [{ z: 1, y: 2 }, 3], c: 2 }, B: 0 });
    expect(JSON.stringify(normalized)).toBe('{"B":0,"a":{"c":2,"d":[{"y":2,"z":1},3]},"b":1}');
  });

  it('orders any field names by UTF-8 bytes, for few fields and for many', () => {
    // Names from a small alphabet with surrogate pairs and characters past them, so that ties on prefixes
    // and UTF-16 vs UTF-8 order both occur; up to 40 names to cover both ways the names are sorted.
    const name = fc.string({
      unit: fc.constantFrom('a', 'b', 'B', '\uff61', '\u{1f600}', '\u00e9'),
      maxLength: 4,
    });
    fc.assert(
      fc.property(fc.uniqueArray(name, { maxLength: 40 }), (names) => {
        const meta: Record<string, unknown> = {};
        names.forEach((n, i) => Object.defineProperty(meta, n, { value: i, enumerable: true }));
        const expected = [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
        expect(Object.keys(normalizeMetadata(meta) as object)).toEqual(expected);
      }),
      { numRuns: 400 },
    );
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
  it('is the BSON of { "": meta } for strings and tags of any length, also about 4 KiB', () => {
    const bsonKey = (m: unknown) => {
      const holder: Record<string, unknown> = {};
      Object.defineProperty(holder, '', { value: normalizeMetadata(m), enumerable: true });
      return Buffer.from(serialize(holder)).toString('latin1');
    };
    // Lengths that put the end of the key on either side of the writer's 4 KiB scratch, in ASCII and in
    // characters of three UTF-8 bytes (whose worst case the writer reserves).
    for (let n = 1300; n < 1400; n++) {
      for (const text of ['x'.repeat(3 * n + (n % 3)), '\u20ac'.repeat(n)]) {
        expect(key(text)).toBe(bsonKey(text));
        expect(key({ a: text })).toBe(bsonKey({ a: text }));
        expect(key({ host: 'h1', a: text.slice(7) })).toBe(bsonKey({ host: 'h1', a: text.slice(7) }));
      }
      // Names and values all of three-byte characters after a short field: a key that fills the scratch.
      const tags = { h: 'xx', '\u20ac': '\u20ac'.repeat(n - 20) };
      expect(key(tags)).toBe(bsonKey(tags));
    }
  });

  it('is the BSON of { "": normalised meta } as latin1, for tags of any characters and any other meta', () => {
    // Strings of ASCII (NUL included), characters past it and lone surrogates, so that both the direct
    // writer of ASCII tags and js-bson's serialisation are compared with js-bson's bytes.
    const text = fc.string({
      unit: fc.constantFrom('a', 'Z', '0', '\0', '\x7f', '\u00e9', '\ud83d', '\u{1f600}'),
    });
    const name = fc.oneof(text, fc.constantFrom('__proto__', '$x', 'a.b', '10', '9', 'constructor'));
    const tags = fc.dictionary(name, text, { maxKeys: 6 });
    const meta = fc.oneof(
      text,
      tags,
      fc.dictionary(name, fc.oneof(text, fc.integer(), fc.double(), fc.boolean(), fc.constant(null)), {
        maxKeys: 4,
      }),
      fc.integer(),
      // Scalars whose key is written directly: each side of the int32/double line, -0, NaN, infinities.
      fc.double(),
      fc.maxSafeInteger(),
      fc.constantFrom(0, -0, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, NaN, Infinity, -Infinity),
      fc.boolean(),
      fc.constant(null),
      fc.array(text, { maxLength: 3 }),
    );
    fc.assert(
      fc.property(meta, (m) => {
        const holder: Record<string, unknown> = {};
        Object.defineProperty(holder, '', { value: normalizeMetadata(m), enumerable: true });
        let expected: string;
        try {
          expected = Buffer.from(serialize(holder)).toString('latin1');
        } catch {
          // A name js-bson refuses (one holding a NUL) is refused either way.
          expect(() => key(m)).toThrow();
          return;
        }
        expect(key(m)).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('BucketMetadataCache', () => {
  it('gives the identity makeBucketMetadata gives, for any sequence of metas, also under eviction', () => {
    const scalar = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 4 }),
      fc.integer({ min: -3, max: 3 }),
      fc.constantFrom(0, -0, 0.5, 2 ** 31, -(2 ** 31) - 1, NaN, Infinity, true, false),
    );
    const meta = fc.oneof(
      scalar,
      fc.constant(null),
      fc.constant(undefined),
      fc.dictionary(fc.string(), scalar),
    );
    fc.assert(
      fc.property(fc.array(meta, { maxLength: 60 }), fc.integer({ min: 1, max: 8 }), (metas, max) => {
        const cache = new BucketMetadataCache({ max });
        for (const m of metas) {
          const expected = makeBucketMetadata(m);
          const got = cache.get(m);
          expect(got.key).toBe(expected.key);
          expect(got.normalizedMeta).toEqual(expected.normalizedMeta);
        }
      }),
    );
  });

  it('keeps at most max series of each kind, evicting the least recently used', () => {
    const cache = new BucketMetadataCache({ max: 2 });
    const a = cache.get('a');
    const b = cache.get('b');
    expect(cache.get('a')).toBe(a);
    cache.get('c');
    expect(cache.get('a')).toBe(a);
    const bAgain = cache.get('b');
    expect(bAgain).not.toBe(b);
    expect(bAgain.key).toBe(b.key);
    // Meta objects by contents: a fresh object each time, so only the contents find the series.
    const x = cache.get({ site: 'x' });
    const y = cache.get({ site: 'y' });
    expect(cache.get({ site: 'x' })).toBe(x);
    cache.get({ site: 'z' });
    expect(cache.get({ site: 'x' })).toBe(x);
    expect(cache.get({ site: 'y' })).not.toBe(y);
  });

  it('reuses the identity of an unchanged meta object, and recomputes it once the object changed', () => {
    const cache = new BucketMetadataCache();
    const meta: Record<string, unknown> = { site: 'a', pos: { x: 1, tags: ['n', 2] } };
    const first = cache.get(meta);
    expect(cache.get(meta)).toBe(first);
    meta.site = 'b';
    expect(cache.get(meta).key).not.toBe(first.key);
    expect(cache.get(meta).key).toBe(makeBucketMetadata({ site: 'b', pos: { x: 1, tags: ['n', 2] } }).key);
    (meta.pos as { tags: unknown[] }).tags.push(-0);
    expect(cache.get(meta).key).toBe(makeBucketMetadata(meta).key);
    // 0 is an int32 and -0 a double: two series.
    expect(cache.get(0).key).not.toBe(cache.get(-0).key);
    expect(cache.get('x')).toBe(cache.get('x'));
  });

  it('finds the series of a fresh meta object with known contents, in any field order, without normalising', () => {
    const leaf = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.constantFrom<unknown>(0, -0, 1, 1.5, 2 ** 31, NaN, true, false, null),
    );
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('tree'), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'é', '__proto__', 'z'), tie('tree'), { maxKeys: 4 }),
      ),
    }));
    /** A fresh deep copy of `v` whose object fields come in reverse order. */
    const reversed = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(reversed);
      if (typeof v !== 'object' || v === null) return v;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).reverse())
        Object.defineProperty(out, k, {
          value: reversed((v as Record<string, unknown>)[k]),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      return out;
    };
    fc.assert(
      fc.property(fc.array(tree, { minLength: 1, maxLength: 12 }), (metas) => {
        const cache = new BucketMetadataCache();
        const first = metas.map((m) => cache.get(m));
        metas.forEach((m) => {
          const fresh = reversed(m);
          // Arrange: a meta made of the same values, in another object.
          expect(contentHash(fresh)).toBe(contentHash(m));
          // Act
          const got = cache.get(fresh);
          // Assert: one series iff the normalised BSON is equal, and a known document meta is the same
          // object (array metas are not cached).
          expect(got.key).toBe(makeBucketMetadata(m).key);
          if (typeof m === 'object' && m !== null && !Array.isArray(m))
            expect(got).toBe(first[metas.indexOf(m)]);
        });
      }),
      { numRuns: 300 },
    );
  });

  it('hashes contents: field order ignored, types and positions not', () => {
    expect(contentHash({ a: 1, b: 'x' })).toBe(contentHash({ b: 'x', a: 1 }));
    // An undefined field is null, as the driver sends it: not an absent field.
    expect(contentHash({ a: 1, b: undefined })).toBe(contentHash({ a: 1, b: null }));
    expect(contentHash({ a: 1, b: undefined })).not.toBe(contentHash({ a: 1 }));
    expect(contentHash([1, undefined])).toBe(contentHash([1, null]));
    expect(contentHash({ a: 0 })).not.toBe(contentHash({ a: -0 }));
    expect(contentHash({ a: 1 })).not.toBe(contentHash({ a: '1' }));
    expect(contentHash([1, 2])).not.toBe(contentHash([2, 1]));
    expect(contentHash({ a: { b: 1 } })).not.toBe(contentHash({ a: { c: 1 } }));
    expect(contentHash({ a: new Date(0) })).toBe(-1);
    // A value nobody validated yet: a cycle, or a nesting BSON refuses, cannot be hashed.
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(contentHash(cyclic)).toBe(-1);
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = [deep];
    expect(contentHash({ deep })).toBe(-1);
    expect(new BucketMetadataCache().known(cyclic)).toBeUndefined();
    expect(contentHash({ a: 1 })).toBeGreaterThanOrEqual(0);
  });

  it('gives the identity makeBucketMetadata gives while meta objects are changed between calls', () => {
    const value = fc.oneof(
      fc.constantFrom<unknown>(0, -0, 1, 1.5, NaN, 'a', 'b', true, null, undefined, new Date(0)),
      fc.constantFrom<unknown>([], [0], [-0], ['a', undefined], { z: 1 }, { z: -0 }),
    );
    const step = fc.record({
      target: fc.nat({ max: 2 }),
      path: fc.constantFrom('a', 'b', 'n.c', 'n.d'),
      op: fc.oneof(
        fc.record({ kind: fc.constant('set' as const), value }),
        fc.constant({ kind: 'delete' as const }),
      ),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const cache = new BucketMetadataCache();
        const metas: Array<Record<string, unknown>> = [{ a: 1 }, { a: 1, n: { c: 'x' } }, { b: [1, 2] }];
        for (const { target, path, op } of steps) {
          const meta = metas[target] as Record<string, unknown>;
          const [head, tail] = path.split('.') as [string, string | undefined];
          let holder: Record<string, unknown> = meta;
          if (tail !== undefined) {
            if (typeof meta[head] !== 'object' || meta[head] === null || Array.isArray(meta[head]))
              meta[head] = {};
            holder = meta[head] as Record<string, unknown>;
          }
          const field = tail ?? head;
          if (op.kind === 'set') holder[field] = op.value;
          else Reflect.deleteProperty(holder, field);
          for (const m of metas) expect(cache.get(m).key).toBe(makeBucketMetadata(m).key);
        }
      }),
      { numRuns: 300 },
    );
  });
  it('knows a meta object of scalars field by field in its order, and not once a field changes', () => {
    const cache = new BucketMetadataCache();
    const tags: Record<string, unknown> = { host: 'h1', zone: 0, up: true, rack: null };
    const first = cache.get(tags);
    expect(cache.known(tags)).toBe(first);
    // The same fields in another order: the same series.
    expect(cache.known({ zone: 0, host: 'h1', rack: null, up: true })).toBe(first);
    // A field holding undefined is stored as null (as the driver sends it): another series.
    tags.extra = undefined;
    expect(cache.known(tags)).toBeUndefined();
    const withNull = cache.get({ ...tags, extra: null });
    expect(withNull.key).toBe(
      makeBucketMetadata({ host: 'h1', zone: 0, up: true, rack: null, extra: null }).key,
    );
    expect(cache.known(tags)).toBe(withNull);
    Reflect.deleteProperty(tags, 'extra');
    expect(cache.known(tags)).toBe(first);
    // -0 is a double and 0 an int32: another series, which the cache does not know.
    tags.zone = -0;
    expect(cache.known(tags)).toBeUndefined();
    expect(cache.get(tags).key).toBe(makeBucketMetadata({ host: 'h1', zone: -0, up: true, rack: null }).key);
    expect(cache.get(tags).key).not.toBe(first.key);
    tags.zone = 0;
    tags.up = false;
    expect(cache.known(tags)).toBeUndefined();
    tags.up = true;
    tags.more = 'x';
    expect(cache.known(tags)).toBeUndefined();
    Reflect.deleteProperty(tags, 'more');
    Reflect.deleteProperty(tags, 'rack');
    expect(cache.known(tags)).toBeUndefined();
    // NaN is the same value as NaN.
    const nan = { v: NaN };
    const nanSeries = cache.get(nan);
    expect(cache.known(nan)).toBe(nanSeries);
  });

  it('knows a meta object without copying it only when its validated copy is the normalised meta', () => {
    // Values the copy rewrites or refuses, next to plain ones: a known object that now holds one of them
    // must be copied (or refused) again.
    const value = fc.constantFrom<unknown>(
      0,
      -0,
      1.5,
      NaN,
      'a',
      '\uD800',
      true,
      null,
      undefined,
      10n,
      new Date(0),
      () => 1,
      [undefined],
      ['a', 1],
      { z: 1 },
    );
    let known = 0;
    const step = fc.record({
      target: fc.nat({ max: 2 }),
      field: fc.constantFrom('a', 'b', '__proto__'),
      value: fc.option(value, { nil: undefined, freq: 4 }),
      fresh: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const cache = new BucketMetadataCache();
        const metas: Array<Record<string, unknown>> = [{ a: 1 }, { a: 'x', b: [1] }, { b: { c: 2 } }];
        for (const { target, field, value: v, fresh } of steps) {
          // Arrange: change one meta object (or replace it by a fresh one with the same contents).
          const meta = fresh
            ? { ...(metas[target] as Record<string, unknown>) }
            : (metas[target] as Record<string, unknown>);
          if (v === undefined) Reflect.deleteProperty(meta, field);
          else
            Object.defineProperty(meta, field, {
              value: v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          metas[target] = meta;
          for (const m of metas) {
            // Act
            const got = cache.known(m);
            // Assert: an answer is the series of the object's validated copy; a refused object has none.
            let copy: unknown;
            try {
              copy = copyBsonValue(m);
            } catch {
              expect(got).toBeUndefined();
              continue;
            }
            const expected = makeBucketMetadata(copy);
            if (got !== undefined) {
              known++;
              expect(got.key).toBe(expected.key);
              expect(got.normalizedMeta).toEqual(expected.normalizedMeta);
            }
            // As the engine does after a miss: the series of the copy, found by the caller's object.
            expect(cache.get(copy, m).key).toBe(expected.key);
          }
        }
      }),
      { numRuns: 300 },
    );
    // The property is not vacuous: most unchanged objects are known.
    expect(known).toBeGreaterThan(1000);
  });
});
