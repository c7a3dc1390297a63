/**
 * A call of many measurements (`kLongCall` or more) makes its items another way than a short call (see
 * `insertItem`): the two must carry the same fields, and a long call must store and read back exactly
 * what a short one does.
 */
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../../src/index.js';
import type { BucketCatalog, InsertItem, WriteBatch } from '../../../src/index.js';
import { insertItem, kLongCall } from '../../../src/catalog/bucket-catalog.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

function items(n: number): InsertItem[] {
  return Array.from({ length: n }, (_, i) => ({
    measurement: { time: new Date(T0 + i), m: `s${i % 16}`, v: i },
    timeMs: T0 + i,
    metadata: makeBucketMetadata(`s${i % 16}`),
  }));
}

async function firstBatch(catalog: BucketCatalog, n: number): Promise<WriteBatch> {
  const results = await catalog.insert(ns, kTestBucketing, items(n), 'allow', catalog.newOpId());
  const first = results[0];
  if (first?.kind !== 'staged') throw new Error('not staged');
  expect(results.every((r) => r.kind === 'staged')).toBe(true);
  return first.batch;
}

describe('calls of many measurements', () => {
  it('make items with the fields and values of a short call, and batches of the same class', async () => {
    // Arrange
    const measurement = { time: new Date(T0), m: 's', v: 1 };
    const metadata = makeBucketMetadata('s');
    // Act
    const short = insertItem(measurement, T0, metadata, undefined, false);
    const long = insertItem(measurement, T0, metadata, undefined, true);
    const shortBatch = await firstBatch(newTestCatalog(), 4);
    const longBatch = await firstBatch(newTestCatalog(), kLongCall);
    // Assert: the same fields in the same order and the same values; made the two ways (a literal for the
    // long call, which V8 may tenure; a constructor for the short one). Batches: one class.
    expect(Object.keys(long)).toEqual(Object.keys(short));
    expect({ ...long }).toEqual({ ...short });
    expect(Object.getPrototypeOf(long)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(short)).not.toBe(Object.prototype);
    expect(Object.getPrototypeOf(longBatch)).toBe(Object.getPrototypeOf(shortBatch));
    expect([shortBatch.items.length, longBatch.items.length]).toEqual([1, kLongCall / 16]);
    expect(longBatch.measurements).toEqual(longBatch.items.map((item) => item.measurement));
  });

  it('store and read back exactly what is inserted, ordered and not', async () => {
    for (const ordered of [true, false]) {
      // Arrange: a long call and the same measurements in short calls, each into its own engine.
      const docs = Array.from({ length: kLongCall + 3 }, (_, i) => ({
        t: new Date(T0 + i * 1000),
        m: { sensor: i % 5 },
        v: i / 4,
      }));
      const read = async (calls: ReadonlyArray<typeof docs>) => {
        const engine = new BucketEngine({ storage: new MemoryStorage(), ttlMonitor: 'disabled' });
        const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
        let inserted = 0;
        for (const call of calls) inserted += (await coll.insertMany(call, { ordered })).insertedCount;
        const back = await coll.find({}, { sort: { t: 1 } }).toArray();
        await engine.close();
        return { inserted, back };
      };
      // Act
      const long = await read([docs]);
      const short = await read([docs.slice(0, 1000), docs.slice(1000)].flatMap((d) => chunks(d, 1000)));
      // Assert
      expect(long.inserted).toBe(docs.length);
      expect(long.back.map(({ _id: _ignored, ...m }) => m)).toEqual(docs);
      expect(long.back).toEqual(short.back.map((m, i) => ({ ...m, _id: long.back[i]!._id })));
    }
  });
});

function chunks<T>(xs: ReadonlyArray<T>, n: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += n) out.push(xs.slice(i, i + n));
  return out;
}
