/**
 * A new compressed bucket records its flat shape from its first measurement, with the layout the
 * validation walk gave that measurement: its second measurement of that layout skips the size and schema
 * checks without its fields being read.
 */
import { describe, expect, it } from 'vitest';

import type { BucketCatalog, InsertItem } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kNoFlatShape } from '../../../src/catalog/flat-shape.js';
import type { Bucket } from '../../../src/catalog/bucket.js';
import { copyMeasurement, makeWalk } from '../../../src/util/bson-validation.js';
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
});
