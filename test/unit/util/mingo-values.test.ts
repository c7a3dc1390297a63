import { Decimal128, Double, Int32, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { mingoDocuments, mingoValue } from '../../../src/util/mingo-values.js';

describe('mingoValue', () => {
  it('promotes numbers as the driver does by default, and nothing else', () => {
    expect(mingoValue(new Double(21))).toBe(21);
    expect(mingoValue(new Double(-0))).toBe(-0);
    expect(mingoValue(new Int32(7))).toBe(7);
    expect(mingoValue(Long.fromNumber(-300))).toBe(-300);
    expect(mingoValue(Long.fromString('9007199254740991'))).toBe(9007199254740991);
    // Beyond 2^53 a Long has no exact number; a Decimal128 never is promoted.
    const big = Long.fromString('9007199254740993');
    expect(mingoValue(big)).toBe(big);
    const dec = Decimal128.fromString('1.10');
    expect(mingoValue(dec)).toBe(dec);
    const date = new Date(5);
    expect(mingoValue(date)).toBe(date);
    expect(mingoValue('x')).toBe('x');
  });

  it('copies only the containers on the way to a promoted number, and never changes its input', () => {
    // Arrange
    const untouched = { tags: ['a', 'b'], at: new Date(0) };
    const doc = { meta: untouched, v: [1, new Double(2), { l: Long.fromNumber(3) }], s: 'x' };
    // Act
    const out = mingoValue(doc) as typeof doc;
    // Assert
    expect(out).not.toBe(doc);
    expect(out.meta).toBe(untouched);
    expect(out.v).toEqual([1, 2, { l: 3 }]);
    expect(Object.keys(out)).toEqual(['meta', 'v', 's']);
    expect((doc.v[1] as Double)._bsontype).toBe('Double');
    expect((doc.v[2] as { l: Long }).l._bsontype).toBe('Long');
    expect(mingoValue(untouched)).toBe(untouched);
  });

  it('keeps __proto__ as an ordinary field of the copy', () => {
    const doc = JSON.parse('{"__proto__": {"x": 1}, "n": 0}') as Record<string, unknown>;
    doc.n = new Double(4);
    const out = mingoValue(doc) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.keys(out)).toEqual(['__proto__', 'n']);
    expect(out.n).toBe(4);
  });

  it('mingoDocuments promotes each document of the array it is given', () => {
    const docs = [{ n: new Double(1) }, { n: 2 }];
    const second = docs[1];
    expect(mingoDocuments(docs)).toBe(docs);
    expect(docs).toEqual([{ n: 1 }, { n: 2 }]);
    expect(typeof docs[0]?.n).toBe('number');
    expect(docs[1]).toBe(second);
  });
});
