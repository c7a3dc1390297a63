import { BSONSymbol, Decimal128, Double, Int32, Long, MinKey, ObjectId, Timestamp } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { createMinMax, maxDocument, minDocument, updateMinMax } from '../../src/bucket-format/min-max.js';
import { BucketEngine } from '../../src/index.js';
import {
  createSchema,
  schemaFromDocuments,
  updateSchema,
  type Schema,
} from '../../src/bucket-format/schema.js';
import { canonicalTypeOf, isPlainObject } from '../../src/util/bson-value.js';

const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -3, max: 3 }).map((i) => new Int32(i)),
  fc.integer({ min: -3, max: 3 }).map((i) => Long.fromNumber(i)),
  fc.constantFrom(0.5, -1.5).map((d) => new Double(d)),
  fc.constantFrom(1, 2.5),
  fc.constantFrom('1', '-2').map((s) => Decimal128.fromString(s)),
  fc.constantFrom('a', 'b'),
  fc.constant(new BSONSymbol('s')),
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: 0, max: 3 }).map((t) => new Date(t)),
  fc.constant(new Timestamp({ t: 1, i: 1 })),
  fc.constant(new ObjectId('000000000000000000000001')),
  fc.constant(new MinKey()),
);

const names = fc.constantFrom('a', 'b', '__proto__', 'constructor', 'x.y');

const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(names, tie('value'), { maxKeys: 3 }),
  ),
})).value;

const measurement = fc.dictionary(names, value, { maxKeys: 4 });

/** Reference: every path of a document with the canonical type found there (containers as 20 / 25). */
function flatten(v: unknown, path: string, out: Map<string, number>): Map<string, number> {
  if (isPlainObject(v)) {
    out.set(path, 20);
    for (const k of Object.keys(v)) if (v[k] !== undefined) flatten(v[k], `${path}\u0001o${k}`, out);
  } else if (Array.isArray(v)) {
    out.set(path, 25);
    v.forEach((e: unknown, i) => flatten(e ?? null, `${path}\u0001i${i}`, out));
  } else {
    out.set(path, canonicalTypeOf(v));
  }
  return out;
}

describe('Schema properties', () => {
  it('matches a reference: incompatible iff some shared path has another canonical type', () => {
    fc.assert(
      fc.property(fc.array(measurement, { minLength: 1, maxLength: 10 }), (measurements) => {
        // Arrange: a bucket's schema and a reference set of recorded paths.
        let schema: Schema = createSchema();
        let recorded = new Map<string, number>();
        for (const m of measurements) {
          const paths = flatten(m, '', new Map());
          let conflict = false;
          for (const [p, t] of paths) if (recorded.has(p) && recorded.get(p) !== t) conflict = true;
          // Act
          const result = updateSchema(schema, m);
          // Assert
          expect(result).toBe(conflict ? 'incompatible' : 'compatible');
          if (result === 'incompatible') {
            // The caller discards the schema; the measurement opens a new bucket.
            schema = createSchema();
            expect(updateSchema(schema, m)).toBe('compatible');
            recorded = paths;
          } else {
            for (const [p, t] of paths) recorded.set(p, t);
          }
        }
        expect(Object.keys(Object.prototype)).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });

  it("a schema rebuilt from a bucket's control.min/max accepts every measurement of that bucket", () => {
    fc.assert(
      fc.property(fc.array(measurement, { minLength: 1, maxLength: 8 }), (measurements) => {
        // Arrange: the measurements one bucket holds: the run before the first schema change.
        const schema = createSchema();
        const mm = createMinMax();
        const accepted: Array<Record<string, unknown>> = [];
        for (const m of measurements) {
          if (updateSchema(schema, m) === 'incompatible') break;
          accepted.push(m);
          updateMinMax(mm, m);
        }
        // Act
        const rebuilt = schemaFromDocuments(minDocument(mm), maxDocument(mm));
        // Assert
        expect(rebuilt.kind).toBe('ok');
        if (rebuilt.kind !== 'ok') return;
        for (const m of accepted) expect(updateSchema(rebuilt.schema, m)).toBe('compatible');
      }),
      { numRuns: 1000 },
    );
  });
  it("the buckets of a collection share a schema, yet each series' schema changes are its own", async () => {
    // Several series whose buckets start with the same paths (one shared schema), then record their own.
    const row = fc.record({ series: fc.integer({ min: 0, max: 2 }), fields: measurement });
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { minLength: 1, maxLength: 12 }),
        fc.boolean(),
        async (rows, compressed) => {
          // Arrange: the expected rollovers, a schema per series' bucket as one bucket alone would have.
          const schemas = new Map<number, Schema>();
          let expected = 0;
          for (const { series, fields } of rows) {
            let schema = schemas.get(series);
            if (schema !== undefined && updateSchema(schema, fields) === 'incompatible') {
              expected++;
              schema = undefined;
            }
            if (schema === undefined) {
              schema = createSchema();
              updateSchema(schema, fields);
              schemas.set(series, schema);
            }
          }
          const engine = new BucketEngine({
            parameters: { timeseriesAlwaysUseCompressedBuckets: compressed },
          });
          const coll = await engine.createCollection('s', {
            timeseries: { timeField: 'ts', metaField: 'series', granularity: 'hours' },
          });
          // Act: one call per measurement, a second apart (no other rollover).
          for (const [i, { series, fields }] of rows.entries()) {
            await coll.insertOne({ ...fields, ts: new Date(Date.UTC(2026, 0, 1) + i * 1000), series });
          }
          // Assert
          expect((await coll.stats()).timeseries.numBucketsClosedDueToSchemaChange).toBe(expected);
          await engine.close();
        },
      ),
      { numRuns: 300 },
    );
  });
});
