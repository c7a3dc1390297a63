/**
 * A new compressed bucket records its flat shape from its first measurement, with the layout the
 * validation walk gave that measurement: its second measurement of that layout skips the size and schema
 * checks without its fields being read.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { BucketCatalog, InsertItem } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { flatShapeOf, kNoFlatShape } from '../../../src/catalog/flat-shape.js';
import type { Bucket } from '../../../src/catalog/bucket.js';
import { PackedItem } from '../../../src/catalog/packed-item.js';
import { createSchema, sameSchema, updateSchema } from '../../../src/bucket-format/schema.js';
import { copyMeasurement, makeWalk, packOrCopy } from '../../../src/util/bson-validation.js';
import { PackedRows } from '../../../src/util/packed-rows.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

function newCatalog(): BucketCatalog {
  return newTestCatalog({
    parameters: { timeseriesAlwaysUseCompressedBuckets: true },
    deferredColumns: true,
  });
}

/** The measurements' items as an insert makes them: validated copies, with the walk's layouts. */
function walked(docs: ReadonlyArray<Record<string, unknown>>): InsertItem[] {
  const walk = makeWalk();
  return docs.map((doc) => {
    const measurement = copyMeasurement(doc, walk);
    const timeMs = (measurement.time as Date).getTime();
    return { measurement, timeMs, metadata: makeBucketMetadata(measurement.m), layout: walk.layout };
  });
}

function onlyBucket(catalog: BucketCatalog): Bucket {
  const buckets = catalog.state.stripes.flatMap((stripe) => [...stripe.openBucketsById.values()]);
  expect(buckets).toHaveLength(1);
  return buckets[0] as Bucket;
}

describe("a new bucket's flat shape", () => {
  it('is its first measurement’s, with that measurement’s layout', async () => {
    // Arrange: two measurements of one layout walked first, so that the third has the layout's token.
    const items = walked([0, 1, 2].map((i) => ({ time: new Date(T0 + i), m: `s${i}`, v: i + 0.5, w: i })));
    const third = items[2] as InsertItem;
    expect(third.layout).toBeDefined();
    const catalog = newCatalog();
    // Act: the third measurement opens a bucket.
    await catalog.insert(ns, kTestBucketing, [third], 'allow', catalog.newOpId());
    // Assert
    const shape = onlyBucket(catalog).knownShape;
    expect(shape?.names).toEqual(['time', 'v', 'w']);
    expect(shape?.kinds).toEqual([2, 1, 1]);
    expect(shape?.metaField).toBe('m');
    expect(shape?.layout).toBe(third.layout);
  });

  it('is none when its first measurement is not flat', async () => {
    const catalog = newCatalog();
    const [item] = walked([{ time: new Date(T0), m: 'a', v: 'text' }]);
    await catalog.insert(ns, kTestBucketing, [item as InsertItem], 'allow', catalog.newOpId());
    expect(onlyBucket(catalog).knownShape).toBe(kNoFlatShape);
  });

  it('and schema are its first measurement’s after a measurement of the same layout but another type', async () => {
    // A string and an object are one kind of a layout: the walk gives both measurements one layout, whose
    // start of the last schema (a string) must not be taken for the object's.
    const catalog = newCatalog();
    const items = walked(
      ['text', 'text', { n: 1 }].map((w, i) => ({ time: new Date(T0 + i), m: `s${i}`, v: 1.5, w })),
    );
    expect((items[2] as InsertItem).layout).toBe((items[1] as InsertItem).layout);
    for (const item of items) {
      // Act
      await catalog.insert(ns, kTestBucketing, [item], 'allow', catalog.newOpId());
      // Assert
      const bucket = catalog.state.stripes
        .flatMap((stripe) => [...stripe.openBucketsById.values()])
        .find((b) => b.normalizedMeta === item.metadata.normalizedMeta) as Bucket;
      const expected = createSchema();
      updateSchema(expected, item.measurement, { skipField: 'm' });
      expect(sameSchema(bucket.schema, expected)).toBe(true);
    }
  });

  it('and schema are its first measurement’s, whatever the new buckets before it had', async () => {
    // Each measurement is a new series; layouts repeat (so that rows and remembered layouts are used) and
    // change (a field left out, or of another kind), as the items of an insert call are made.
    const field = fc.oneof(
      { weight: 6, arbitrary: fc.constant<unknown>(1.5) },
      { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, 'text', true, new Date(5), { n: 1 }) },
    );
    const doc = fc.record({ v: field, w: field });
    await fc.assert(
      fc.asyncProperty(fc.array(doc, { minLength: 1, maxLength: 25 }), async (docs) => {
        const catalog = newCatalog();
        const walk = makeWalk();
        const rows = new PackedRows(docs.length);
        for (let i = 0; i < docs.length; i++) {
          const given: Record<string, unknown> = { time: new Date(T0 + i), m: `s${i}` };
          const { v, w } = docs[i] as { v: unknown; w: unknown };
          if (v !== undefined) given.v = v;
          if (w !== undefined) given.w = w;
          const copy = packOrCopy(given, walk, rows, 'm', 'time');
          const metadata = makeBucketMetadata(given.m);
          const layout = walk.layout;
          const item: InsertItem =
            copy === undefined
              ? new PackedItem(
                  rows,
                  walk.row,
                  walk.rowTimeMs,
                  metadata,
                  layout!,
                  layout!.rowPlan('m', 'time')!,
                )
              : { measurement: copy, timeMs: T0 + i, metadata, layout };
          // Act
          await catalog.insert(ns, kTestBucketing, [item], 'allow', catalog.newOpId());
          // Assert: the bucket just opened.
          const bucket = catalog.state.stripes
            .flatMap((stripe) => [...stripe.openBucketsById.values()])
            .find((b) => b.normalizedMeta === metadata.normalizedMeta) as Bucket;
          const expected = createSchema();
          updateSchema(expected, item.measurement, { skipField: 'm' });
          expect(sameSchema(bucket.schema, expected)).toBe(true);
          const shape = flatShapeOf(item.measurement, 'm', undefined);
          expect(bucket.knownShape?.names).toEqual(shape === undefined ? [] : shape.names);
          expect(bucket.knownShape?.kinds).toEqual(shape === undefined ? [] : shape.kinds);
        }
      }),
      { numRuns: 300 },
    );
  });
});
