import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { createSchema, updateSchema } from '../../src/bucket-format/schema.js';
import type { Schema, SchemaEntry } from '../../src/bucket-format/schema.js';
import { calculateBucketFieldsAndSizeChange } from '../../src/catalog/bucket.js';
import {
  fitsFlatShape,
  flatShapeOf,
  kNoFlatShape,
  matchesFlatShape,
  widenedFlatShape,
} from '../../src/catalog/flat-shape.js';
import type { FlatShape } from '../../src/catalog/flat-shape.js';
import { measurementArb, templatedStreamArb } from './measurement-arbitraries.js';

// 'm' is the metaField; '__proto__' and 'constructor' are untrusted names that must stay plain fields.
const names = fc.constantFrom('a', 'b', 'c', 'm', '__proto__', 'constructor');
const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constant(-0),
  fc.boolean(),
  fc.integer({ min: 0, max: 3 }).map((t) => new Date(t)),
  fc.constantFrom('s', 'a string longer than the thirty-two byte threshold'),
  fc.constant(null),
  fc.constant({ n: 1 }),
);
const measurement = measurementArb(names, value);

/** Streams that repeat shapes, as ingest does, mixed (below) with measurements of any shape. */
const stream = templatedStreamArb(measurement, fc.constant(undefined), (m) => m);

/** A comparable picture of a schema (its maps as arrays). */
function picture(entry: SchemaEntry): unknown {
  if (typeof entry === 'number') return entry;
  if (entry.fields !== null) return [...entry.fields].map(([k, v]) => [k, picture(v)]);
  return (entry.elements ?? []).map(picture);
}

/** The state the two checks read: a compressed bucket's field names and schema. */
interface BucketModel {
  fieldNames: Set<string>;
  schema: Schema;
  numMeasurements: number;
  shape: FlatShape | undefined;
}

function newBucket(): BucketModel {
  return { fieldNames: new Set(), schema: createSchema(), numMeasurements: 0, shape: undefined };
}

describe('flat shapes', () => {
  it('a measurement fitting the known shape adds no field, estimates nothing and leaves the schema as it is', () => {
    // How often the shortcut was taken, over all runs, and how often by a measurement with fewer fields
    // than the shape (a shape widened, or fields left out): the property must exercise both.
    let matched = 0;
    let partial = 0;
    fc.assert(
      fc.property(fc.oneof(stream, fc.array(measurement, { minLength: 1, maxLength: 30 })), (ms) => {
        let bucket = newBucket();
        let lastShape: FlatShape | undefined;
        for (const m of ms) {
          const sizing = {
            fieldNames: bucket.fieldNames,
            uncommittedFieldNames: undefined,
            numMeasurements: bucket.numMeasurements,
            // Any map: the bucket is compressed.
            measurementMap: {} as never,
          };
          if (fitsFlatShape(bucket.shape, m, 'm')) {
            matched++;
            if (!matchesFlatShape(bucket.shape, m, 'm')) partial++;
            const change = calculateBucketFieldsAndSizeChange(sizing, m, 'm');
            expect(change.sizeToBeAdded).toBe(0);
            expect(change.uncommittedEstimate).toBe(0);
            expect(change.newFieldNames).toEqual([]);
            const before = picture(bucket.schema.root);
            expect(updateSchema(bucket.schema, m, { skipField: 'm' })).toBe('compatible');
            expect(picture(bucket.schema.root)).toEqual(before);
          } else {
            const change = calculateBucketFieldsAndSizeChange(sizing, m, 'm');
            if (updateSchema(bucket.schema, m, { skipField: 'm' }) === 'incompatible') {
              // A new bucket takes the measurement, as the catalog does on a schema change, and records
              // its shape from it (allocateBucket).
              bucket = newBucket();
              updateSchema(bucket.schema, m, { skipField: 'm' });
              for (const name of Object.keys(m)) if (name !== 'm') bucket.fieldNames.add(name);
              const first = flatShapeOf(m, 'm', lastShape);
              if (first !== undefined) lastShape = first;
              bucket.shape = first ?? kNoFlatShape;
            } else {
              for (const name of change.newFieldNames) bucket.fieldNames.add(name);
              // As the catalog records and widens a bucket's shape.
              if (bucket.shape !== kNoFlatShape) {
                const next =
                  bucket.shape === undefined
                    ? flatShapeOf(m, 'm', lastShape)
                    : widenedFlatShape(bucket.shape, m, 'm', lastShape);
                if (next !== undefined) lastShape = next;
                bucket.shape = next ?? kNoFlatShape;
              }
            }
          }
          bucket.numMeasurements++;
        }
      }),
      { numRuns: 500 },
    );
    expect(matched).toBeGreaterThan(200);
    expect(partial).toBeGreaterThan(20);
  });

  it('is shared when equal, and refused for values that are not numbers, dates or booleans', () => {
    const first = flatShapeOf({ ts: new Date(0), m: 'x', a: 1, b: true }, 'm', undefined);
    expect(first).toEqual({ names: ['ts', 'a', 'b'], kinds: [2, 1, 3], metaField: 'm' });
    expect(flatShapeOf({ ts: new Date(5), m: 'y', a: 2.5, b: false }, 'm', first)).toBe(first);
    // Another order is another shape (names are compared in enumeration order).
    expect(flatShapeOf({ a: 1, ts: new Date(0), b: true }, 'm', first)).not.toBe(first);
    expect(flatShapeOf({ ts: new Date(0), a: 'text' }, 'm', first)).toBeUndefined();
    expect(flatShapeOf({ ts: new Date(0), a: null }, 'm', first)).toBeUndefined();
    expect(matchesFlatShape(first, { ts: new Date(1), a: 1 }, 'm')).toBe(false);
    expect(matchesFlatShape(first, { ts: new Date(1), a: 1, b: true, c: 2 }, 'm')).toBe(false);
    expect(matchesFlatShape(first, { ts: new Date(1), a: 1, b: true }, 'other')).toBe(false);
    // The shape of a bucket that has none matches nothing, not even a measurement without fields.
    expect(matchesFlatShape(kNoFlatShape, {}, undefined)).toBe(false);
    expect(fitsFlatShape(kNoFlatShape, {}, undefined)).toBe(false);
  });

  it('fits measurements with some of its fields in any order, and widens by the fields a flat one adds', () => {
    const shape = flatShapeOf({ ts: new Date(0), m: 'x', a: 1, b: true }, 'm', undefined) as FlatShape;
    // Fewer fields, or another order: each name is the shape's, of its kind.
    expect(fitsFlatShape(shape, { ts: new Date(1), a: 2 }, 'm')).toBe(true);
    expect(fitsFlatShape(shape, { b: false, ts: new Date(1) }, 'm')).toBe(true);
    // A name the shape lacks, a kind it does not have for the name, another metaField: no.
    expect(fitsFlatShape(shape, { ts: new Date(1), c: 2 }, 'm')).toBe(false);
    expect(fitsFlatShape(shape, { ts: new Date(1), a: true }, 'm')).toBe(false);
    expect(fitsFlatShape(shape, { ts: new Date(1), a: 2 }, 'other')).toBe(false);
    // Widened: the shape's names, then those the measurement adds; shared when the last shape has them.
    const wide = widenedFlatShape(shape, { ts: new Date(2), c: 3, a: 4 }, 'm', shape);
    expect(wide).toEqual({ names: ['ts', 'a', 'b', 'c'], kinds: [2, 1, 3, 1], metaField: 'm' });
    expect(widenedFlatShape(shape, { c: 5, ts: new Date(3) }, 'm', wide)).toBe(wide);
    expect(fitsFlatShape(wide, { c: 1, b: true, ts: new Date(4) }, 'm')).toBe(true);
    // Nothing to add, a value that is not flat, a kind that differs: the shape as it was.
    expect(widenedFlatShape(shape, { ts: new Date(2), a: 4 }, 'm', undefined)).toBe(shape);
    expect(widenedFlatShape(shape, { ts: new Date(2), c: 'text' }, 'm', undefined)).toBe(shape);
    expect(widenedFlatShape(shape, { ts: new Date(2), a: true, c: 1 }, 'm', undefined)).toBe(shape);
  });
});
