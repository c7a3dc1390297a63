import { BSONSymbol, Code, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  checkSchema,
  cloneSchema,
  createSchema,
  sameSchema,
  schemaFromDocuments,
  startsFlatSchema,
  updateSchema,
  type Schema,
} from '../../../src/bucket-format/schema.js';

/** Check `second` against a schema that recorded `first`. */
function check(first: Record<string, unknown>, second: Record<string, unknown>): string {
  const schema = createSchema();
  expect(updateSchema(schema, first)).toBe('compatible');
  return updateSchema(schema, second);
}

describe('updateSchema (docs/mongodb-behaviour.md §4)', () => {
  it('follows timeseries_closed_due_to_schema_changes.js: every insert closes the previous bucket', () => {
    // BSON `undefined` (the jstest's 4th value) is skipped: js-bson has no value that serialises to it,
    // and JS `undefined` means "missing" here, which is always compatible.
    const values: unknown[] = [
      new ObjectId(),
      [1, 2],
      new Date(0),
      'MongoDB',
      Decimal128.fromString('1.5'),
      { a: 20 },
      42,
    ];
    // Arrange: one open bucket per (time, meta); a schema change closes it and opens a new one.
    let schema: Schema = createSchema();
    let numBucketsClosedDueToSchemaChange = 0;
    const counts: number[] = [];
    for (const x of values) {
      const m = { time: new Date(0), meta: 'm', x };
      // Act
      if (updateSchema(schema, m, { skipField: 'meta' }) === 'incompatible') {
        numBucketsClosedDueToSchemaChange++;
        schema = createSchema();
        // A measurement staged into a new bucket always fits.
        expect(updateSchema(schema, m, { skipField: 'meta' })).toBe('compatible');
      }
      counts.push(numBucketsClosedDueToSchemaChange);
    }
    // Assert
    expect(counts).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('accepts every number width and string/symbol interchangeably', () => {
    const numbers = [1, 1.5, new Int32(1), Long.fromNumber(1), new Double(1), Decimal128.fromString('1'), 1n];
    for (const a of numbers) for (const b of numbers) expect(check({ x: a }, { x: b })).toBe('compatible');
    expect(check({ x: 'a' }, { x: new BSONSymbol('b') })).toBe('compatible');
    expect(check({ x: new BSONSymbol('b') }, { x: 'a' })).toBe('compatible');
    expect(check({ x: null }, { x: null })).toBe('compatible');
  });

  it('rejects a different canonical type at a path', () => {
    const pairs: Array<[unknown, unknown]> = [
      [null, 1],
      ['s', 1],
      [new Date(0), new Timestamp({ t: 1, i: 1 })],
      [true, 1],
      [{ a: 1 }, [1]],
      [{ a: 1 }, 1],
      [[1], 1],
      [1, { a: 1 }],
      [1, [1]],
      [new MinKey(), new MaxKey()],
      [new Code('x'), new Code('x', { s: 1 })],
      [new ObjectId(), 'x'],
    ];
    for (const [a, b] of pairs)
      expect(check({ x: a }, { x: b }), `${String(a)} then ${String(b)}`).toBe('incompatible');
  });

  it('accepts new and missing paths, and checks nested paths', () => {
    expect(check({ a: 1 }, { b: 'x' })).toBe('compatible');
    expect(check({ a: 1, b: 'x' }, { b: 'y' })).toBe('compatible');
    expect(check({ o: { p: 1 } }, { o: { q: 'x' } })).toBe('compatible');
    expect(check({ o: { p: 1 } }, { o: { p: 'x' } })).toBe('incompatible');
    expect(check({ o: {} }, { o: { p: 'x' } })).toBe('compatible');
  });

  it('checks arrays position by position, new positions accepted', () => {
    expect(check({ a: [1, 'x'] }, { a: [2, 'y', true] })).toBe('compatible');
    expect(check({ a: [1, 'x'] }, { a: [2, 3] })).toBe('incompatible');
    expect(check({ a: [1] }, { a: [] })).toBe('compatible');
    expect(check({ a: [{ p: 1 }] }, { a: [{ p: 'x' }] })).toBe('incompatible');
  });

  it('records paths while checking, so later measurements see them', () => {
    const schema = createSchema();
    expect(updateSchema(schema, { a: 1 })).toBe('compatible');
    expect(updateSchema(schema, { b: 'x' })).toBe('compatible');
    expect(updateSchema(schema, { b: 1 })).toBe('incompatible');
  });

  it('skips the metaField at top level only, and ignores undefined fields', () => {
    const schema = createSchema();
    expect(updateSchema(schema, { meta: 1, o: { meta: 1 } }, { skipField: 'meta' })).toBe('compatible');
    expect(updateSchema(schema, { meta: 'x', o: { meta: 2 } }, { skipField: 'meta' })).toBe('compatible');
    expect(updateSchema(schema, { o: { meta: 'x' } }, { skipField: 'meta' })).toBe('incompatible');
    expect(check({ a: 1 }, { a: undefined })).toBe('compatible');
  });

  it('treats hostile field names as plain paths', () => {
    const first = JSON.parse('{"__proto__": 1, "constructor": {"x": 1}}') as Record<string, unknown>;
    const second = JSON.parse('{"__proto__": "s"}') as Record<string, unknown>;
    expect(check(first, second)).toBe('incompatible');
    expect(check(first, { constructor: { x: 2 } })).toBe('compatible');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });
});

describe('schemaFromDocuments', () => {
  it('rebuilds the schema from control.min and control.max', () => {
    const result = schemaFromDocuments(
      { t: new Date(0), x: 1, o: { s: 'a' } },
      { t: new Date(5), x: 9.5, o: { s: 'z' } },
    );
    expect(result.kind).toBe('ok');
    if (result.kind !== 'ok') return;
    expect(updateSchema(result.schema, { t: new Date(1), x: Long.fromNumber(3) })).toBe('compatible');
    expect(updateSchema(result.schema, { o: { s: 1 } })).toBe('incompatible');
  });

  it('reports a mixed-schema bucket (min and max of different types at one path)', () => {
    expect(schemaFromDocuments({ x: 1 }, { x: 'a' })).toEqual({ kind: 'mixed-schema', document: 'max' });
    expect(schemaFromDocuments({ x: [1, 'a'] }, { x: [2, 'b'] }).kind).toBe('ok');
  });
});

describe('a shared schema: checkSchema, cloneSchema, sameSchema', () => {
  // Few paths and types, nested: measurements that often repeat, add or conflict with a recorded path.
  const scalar = fc.constantFrom<unknown>(1, 1.5, 'a', true, null, new Date(0), Long.fromNumber(2));
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      scalar,
      fc.array(tie('value'), { maxLength: 2 }),
      fc.dictionary(fc.constantFrom('x', 'y'), tie('value'), { maxKeys: 2 }),
    ),
  }));
  const measurement = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'meta'), value, { maxKeys: 3 });

  it('checks what updateSchema would do, without changing the schema', () => {
    fc.assert(
      fc.property(fc.array(measurement, { maxLength: 6 }), measurement, (recorded, next) => {
        // Arrange: a schema that recorded some measurements (stopping at the first conflict).
        const schema = createSchema();
        for (const m of recorded)
          if (updateSchema(schema, m, { skipField: 'meta' }) === 'incompatible') break;
        const before = cloneSchema(schema);
        expect(sameSchema(before, schema)).toBe(true);
        // Act
        const check = checkSchema(schema, next, { skipField: 'meta' });
        const copy = cloneSchema(schema);
        const update = updateSchema(copy, next, { skipField: 'meta' });
        // Assert: the check changed nothing; updating the copy left the original as it was; and the
        // check says what the update did.
        expect(sameSchema(schema, before)).toBe(true);
        expect(sameSchema(before, schema)).toBe(true);
        if (check === 'unchanged') {
          expect(update).toBe('compatible');
          expect(sameSchema(copy, schema)).toBe(true);
        } else if (check === 'incompatible') {
          expect(update).toBe('incompatible');
          expect(sameSchema(copy, schema)).toBe(true);
        } else if (update === 'compatible') {
          expect(sameSchema(copy, schema)).toBe(false);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('startsFlatSchema: true exactly when a flat schema equals the one the measurement would start', () => {
    // Flat and nested measurements over few fields, values of a few canonical types and undefined.
    const flatValue = fc.constantFrom<unknown>(
      1,
      2.5,
      Long.fromNumber(3),
      'a',
      true,
      null,
      new Date(0),
      undefined,
    );
    const anyValue = fc.oneof(flatValue, value);
    const flat = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'meta'), flatValue, { maxKeys: 4 });
    const any = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'meta'), anyValue, { maxKeys: 4 });
    fc.assert(
      fc.property(fc.oneof(flat, any), fc.oneof(flat, any), (first, next) => {
        // Arrange: the schema a bucket started by `first` recorded.
        const schema = createSchema();
        updateSchema(schema, first, { skipField: 'meta' });
        const own = createSchema();
        updateSchema(own, next, { skipField: 'meta' });
        const isFlat = [...schema.root.fields!.values()].every((e) => typeof e === 'number');
        // Act and assert: on a flat schema it says what building and comparing says; never true otherwise.
        expect(startsFlatSchema(schema, next, 'meta')).toBe(isFlat && sameSchema(own, schema));
      }),
      { numRuns: 1000 },
    );
  });

  it('tells schemas apart by their paths and canonical types, not by the order they were recorded in', () => {
    const a = createSchema();
    updateSchema(a, { x: 1, o: { p: 'a' } });
    const b = createSchema();
    updateSchema(b, { o: { p: 'b' } });
    expect(sameSchema(a, b)).toBe(false);
    // An int32 then a double at x: one canonical type.
    updateSchema(b, { x: 2.5 });
    expect(sameSchema(a, b)).toBe(true);
    const c = createSchema();
    updateSchema(c, { x: 'a', o: { p: 'a' } });
    expect(sameSchema(a, c)).toBe(false);
    updateSchema(b, { l: [1] });
    expect(sameSchema(a, b)).toBe(false);
  });
});
