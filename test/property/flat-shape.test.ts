import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { createSchema, updateSchema } from '../../src/bucket-format/schema.js';
import type { Schema, SchemaEntry } from '../../src/bucket-format/schema.js';
import { calculateBucketFieldsAndSizeChange } from '../../src/catalog/bucket.js';
import { flatShapeOf, kNoFlatShape, matchesFlatShape } from '../../src/catalog/flat-shape.js';
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
  it('a measurement matching the known shape adds no field, estimates nothing and leaves the schema as it is', () => {
    // How often the shortcut was taken, over all runs: the property must exercise it.
    let matched = 0;
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
          if (matchesFlatShape(bucket.shape, m, 'm')) {
            matched++;
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
              // A new bucket takes the measurement, as the catalog does on a schema change.
              bucket = newBucket();
              updateSchema(bucket.schema, m, { skipField: 'm' });
              for (const name of Object.keys(m)) if (name !== 'm') bucket.fieldNames.add(name);
            } else {
              for (const name of change.newFieldNames) bucket.fieldNames.add(name);
              bucket.shape = flatShapeOf(m, 'm', lastShape);
              if (bucket.shape !== undefined) lastShape = bucket.shape;
            }
          }
          bucket.numMeasurements++;
        }
      }),
      { numRuns: 500 },
    );
    expect(matched).toBeGreaterThan(200);
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
  });
});
