/**
 * A call of many measurements (`kLongCall` or more) makes its batches and items another way than a
 * short call (see `makeWriteBatch`): the two must carry the same fields, and a long call must store and
 * read back exactly what a short one does.
 */
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../../src/index.js';
import type { BucketCatalog, InsertItem, WriteBatch } from '../../../src/index.js';
import { kLongCall } from '../../../src/catalog/bucket-catalog.js';
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
  it('make batches with the fields, values and staging result a short call makes', async () => {
    // Arrange and act: the first batch of a short call and of a long one (16 series: fewer
    // measurements per series than a bucket holds), in two catalogs.
    const short = await firstBatch(newTestCatalog(), 4);
    const long = await firstBatch(newTestCatalog(), kLongCall);
    // Assert: the same fields in the same order, the same values, a staging result naming its batch;
    // only the bucket, the measurements (and their count) and the result differ.
    expect(Object.keys(long)).toEqual(Object.keys(short));
    const rest = (b: WriteBatch) => {
      const { bucket: _b, measurements: _m, result: _r, staged: _s, stats: _st, ...fields } = b;
      return { ...fields, firstWriterCount: undefined };
    };
    expect(rest(long)).toEqual(rest(short));
    expect([short.firstWriterCount, long.firstWriterCount]).toEqual([1, kLongCall / 16]);
    expect(long.staged).toEqual({ kind: 'staged', batch: long });
    expect(short.staged).toEqual({ kind: 'staged', batch: short });
    expect(short.measurements).toHaveLength(1);
    expect(long.measurements).toHaveLength(kLongCall / 16);
    expect(long.result.state).toBe('pending');
    // Made the two ways: a literal for the long call (V8 may tenure it), a constructor for the short one.
    expect(Object.getPrototypeOf(long)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(short)).not.toBe(Object.prototype);
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
