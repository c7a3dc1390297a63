import { runInNewContext } from 'node:vm';

import { Binary, BSONRegExp, calculateObjectSize, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, BulkWriteError } from '../../../src/index.js';

async function setup(parameters: Record<string, number | boolean> = {}) {
  const engine = new BucketEngine({ parameters });
  const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
  return { engine, coll };
}

async function failure(run: Promise<unknown>): Promise<BulkWriteError> {
  const error = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(BulkWriteError.isTsBucketsError(error)).toBe(true);
  return error as BulkWriteError;
}

const t = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));

describe('insert validation', () => {
  it.each([true, false])(
    'refuses the same measurements before staging anything (ordered: %s)',
    async (ordered) => {
      // Arrange
      const { coll } = await setup();
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      let deep: unknown = 1;
      for (let i = 0; i < 5000; i++) deep = { d: deep };
      const docs = [
        { t: t(0), m: 'a', v: 0 },
        { t: t(1), m: 'a', v: circular },
        { t: t(2), m: 'a', v: deep },
        { t: t(3), m: 'a', f: () => 1 },
        { t: t(4), m: 'a', v: 4 },
      ];
      // Act
      const error = await failure(coll.insertMany(docs, { ordered }));
      // Assert
      const expected = ordered
        ? [[1, 'BadValue']]
        : [
            [1, 'BadValue'],
            [2, 'Overflow'],
            [3, 'BadValue'],
          ];
      expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual(expected);
      expect(error.insertedCount).toBe(ordered ? 1 : 2);
      const stored = await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray();
      expect(stored).toEqual(ordered ? [{ v: 0 }] : [{ v: 0 }, { v: 4 }]);
    },
  );

  it('a refused unordered measurement leaves nothing staged in a shared batch', async () => {
    const { coll, engine } = await setup();
    await failure(
      coll.insertMany(
        [
          { t: t(0), m: 'a', v: 1 },
          { t: t(1), m: 'a', v: Symbol('x') },
        ],
        { ordered: false },
      ),
    );
    // Every measurement the call staged was committed and acknowledged: no open batch is left behind.
    expect(await coll.countDocuments()).toBe(1);
    await coll.insertMany([{ t: t(2), m: 'a', v: 2 }], { ordered: false });
    expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([1, 2]);
    expect(engine.serverStatus().bucketCatalog.numOpenBuckets).toBe(1);
  });

  it('identifies a meta by what is stored: a BigInt outside int64 is refused, not merged with another series', async () => {
    const { coll } = await setup();
    await coll.insertOne({ t: t(0), m: 5n, v: 1 });
    const error = await failure(coll.insertOne({ t: t(1), m: 2n ** 64n + 5n, v: 2 }));
    expect(error.writeErrors[0]).toMatchObject({ index: 0, codeName: 'BadValue' });
    expect(error.writeErrors[0]?.errmsg).toContain('18446744073709551621');
    expect(await coll.find({}, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: t(0), m: Long.fromBigInt(5n), v: 1 },
    ]);
  });

  it('reads a value back the same whether its bucket is open or compressed', async () => {
    // Arrange: buckets of 16 measurements, compressed when they close.
    const { coll } = await setup({ timeseriesBucketMaxCount: 16 });
    const doc = {
      t: t(0),
      m: 'a',
      r: /a+b/gi,
      bytes: new Uint8Array([1, 2]),
      arr: [undefined, 1],
      u: undefined,
    };
    await coll.insertOne(doc);
    // Act
    const open = await coll.find({}, { projection: { _id: 0 } }).toArray();
    // Enough rows that compression pays off, then one in another bucket to close the first.
    const rows = Array.from({ length: 15 }, (_, i) => ({
      t: t(i + 1),
      m: 'a',
      v: i,
      bytes: new Uint8Array([1, 2]),
    }));
    await coll.insertMany([...rows, { t: t(120), m: 'a', v: 0 }]);
    const [bucket] = await coll.buckets.find({ 'control.min.t': t(0) }).toArray();
    const compressed = await coll.find({ t: t(0) }, { projection: { _id: 0 } }).toArray();
    // Assert
    expect((bucket?.control as { version: number }).version).toBe(2);
    const expected = {
      t: t(0),
      m: 'a',
      r: new BSONRegExp('a+b', 'is'),
      bytes: new Binary(new Uint8Array([1, 2]), 0),
      arr: [null, 1],
      u: null,
    };
    expect(open).toStrictEqual([expected]);
    expect(compressed).toStrictEqual([expected]);
  });

  it('takes a Date of another realm (a vm context) as a date, as js-bson sends one', async () => {
    const { coll } = await setup();
    const foreign = runInNewContext('new Date(Date.UTC(2024, 0, 1))') as Date;
    expect(foreign instanceof Date).toBe(false);
    await coll.insertOne({ t: foreign, m: 'a', at: foreign });
    // An object that only says it is a Date is not one.
    const forged = { [Symbol.toStringTag]: 'Date' };
    const error = await failure(coll.insertOne({ t: new Date(0), m: 'a', at: forged }));
    expect(error.writeErrors[0]?.codeName).toBe('BadValue');
    expect(await coll.find({}, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: new Date(Date.UTC(2024, 0, 1)), m: 'a', at: new Date(Date.UTC(2024, 0, 1)) },
    ]);
  });

  it('stores what was validated: changing the caller objects afterwards changes nothing', async () => {
    const { coll } = await setup();
    const when = t(0);
    const nested = { x: 1 };
    const pending = coll.insertMany([{ t: when, m: { site: 'n' }, nested }], { ordered: false });
    when.setTime(0);
    nested.x = 2;
    await pending;
    expect(await coll.find({}, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: t(0), m: { site: 'n' }, nested: { x: 1 } },
    ]);
  });

  it.each([true, false])(
    'dates of one time in one call stay what they were, whatever the caller or a reader changes (compressed: %s)',
    async (compressed) => {
      // Arrange: two series at one time (a bulk loader's tick), and a nested date of the same time.
      const { coll } = await setup({ timeseriesAlwaysUseCompressedBuckets: compressed });
      const first = t(5);
      const second = t(5);
      const nested = { at: t(5) };
      const pending = coll.insertMany(
        [
          { t: first, m: 'a', v: 1 },
          { t: second, m: 'b', v: 2, nested },
        ],
        { ordered: false },
      );
      // Act: the caller changes its dates before the call returns, a reader changes what it read.
      first.setTime(0);
      nested.at.setTime(0);
      await pending;
      const [read] = await coll.find({ m: 'a' }).toArray();
      (read?.t as Date).setTime(1);
      second.setTime(2);
      // Assert
      const rows = await coll.find({}, { projection: { _id: 0 } }).toArray();
      rows.sort((x, y) => String(x.m).localeCompare(String(y.m)));
      expect(rows).toEqual([
        { t: t(5), m: 'a', v: 1 },
        { t: t(5), m: 'b', v: 2, nested: { at: t(5) } },
      ]);
    },
  );

  it('reads each field of a measurement once, its meta too', async () => {
    // Arrange: a meta object the engine has not met, and a number, behind getters that count their reads
    // (and answer something BSON refuses from the second read on).
    const engine = new BucketEngine();
    const coll = await engine.createCollection('g', { timeseries: { timeField: 't', metaField: 'm' } });
    const reads = { m: 0, v: 0 };
    const meta = { sensor: 'a' };
    const doc = {
      t: new Date(0),
      get m() {
        return reads.m++ === 0 ? meta : Symbol('read twice');
      },
      get v() {
        return reads.v++ === 0 ? 1.5 : Symbol('read twice');
      },
    };
    // Act
    const result = await coll.insertMany([doc]);
    // Assert
    expect(result.insertedCount).toBe(1);
    expect(reads).toEqual({ m: 1, v: 1 });
    expect(await coll.find({}, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: new Date(0), m: { sensor: 'a' }, v: 1.5 },
    ]);
    await engine.close();
  });

  it('refuses a time whose bucket would start before the earliest Date, and stores the others', async () => {
    // Arrange: weekly buckets; -8.64e15 ms is not a multiple of a week.
    const engine = new BucketEngine();
    const week = 7 * 86_400;
    const coll = await engine.createCollection('c', {
      timeseries: { timeField: 't', bucketMaxSpanSeconds: week, bucketRoundingSeconds: week },
    });
    const earliest = new Date(-8.64e15);
    const later = new Date(-8.64e15 + 30 * 86_400_000);
    // Act
    const error = await failure(coll.insertMany([{ t: earliest }, { t: later }], { ordered: false }));
    // Assert
    expect(error.writeErrors.map((w) => [w.index, w.codeName])).toEqual([[0, 'BadValue']]);
    expect(await coll.find({ t: { $lte: later } }, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: later },
    ]);
  });

  it('an undefined field is stored as null, a type change like MongoDB', async () => {
    const { coll } = await setup();
    await coll.insertMany([
      { t: t(0), m: 'a', v: 1 },
      { t: t(1), m: 'a', v: undefined },
    ]);
    // A number then a null in one field is a schema change: the second measurement opens a new bucket.
    expect(await coll.buckets.countDocuments()).toBe(2);
    expect((await coll.stats()).timeseries.numBucketsClosedDueToSchemaChange).toBe(1);
    expect((await coll.find({}, { projection: { _id: 0, v: 1 } }).toArray()).map((d) => d.v)).toEqual([
      1,
      null,
    ]);
  });

  it.each([
    ['an empty meta first', [{}, { k: undefined }]],
    ['the undefined field first', [{ k: undefined }, {}]],
  ])('a meta field holding undefined is a null field, another series than none (%s)', async (_, metas) => {
    // Arrange
    const { coll } = await setup();
    // Act: the second meta comes in a later call, found through the series cache.
    for (const [i, m] of metas.entries()) await coll.insertOne({ t: t(i), m, v: i });
    // Assert: two series, {} and {k: null}, whichever came first.
    const buckets = await coll.buckets.find({}, { projection: { _id: 0, meta: 1 } }).toArray();
    expect(buckets.map((b) => b.meta)).toEqual(expect.arrayContaining([{}, { k: null }]));
    expect(buckets).toHaveLength(2);
    const stored = await coll.find({}, { projection: { _id: 0, m: 1, v: 1 } }).toArray();
    expect(stored.sort((a, b) => (a.v as number) - (b.v as number))).toEqual(
      metas.map((m, v) => ({ m: 'k' in m ? { k: null } : {}, v })),
    );
  });

  it('$set of the metaField with an own __proto__ key keeps it an own field', async () => {
    const { coll } = await setup();
    await coll.insertOne({ t: t(0), m: { site: 'n' }, v: 1 });
    const value = JSON.parse('{"__proto__": {"polluted": true}, "site": "s"}') as Record<string, unknown>;
    await coll.updateMany({}, { $set: { m: value } });
    const [row] = await coll.find({}).toArray();
    const meta = row?.m as Record<string, unknown>;
    expect(Object.getPrototypeOf(meta)).toBe(Object.prototype);
    expect(Object.keys(meta)).toEqual(['__proto__', 'site']);
    expect(Object.getOwnPropertyDescriptor(meta, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('$set of the metaField refuses a value BSON cannot hold', async () => {
    const { coll } = await setup();
    await coll.insertOne({ t: t(0), m: { site: 'n' }, v: 1 });
    await expect(coll.updateMany({}, { $set: { m: { f: new Map() } } })).rejects.toMatchObject({
      codeName: 'BadValue',
    });
  });
});

describe('bucket documents near 16 MiB', () => {
  it('never produces a bucket document over 16 MiB', async () => {
    // Arrange: 2 MiB measurements, each counted once in data and possibly in control.min/max.
    const { coll } = await setup({ timeseriesBucketMaxSize: 64 * 1024 * 1024, timeseriesBucketMinCount: 1 });
    const docs = Array.from({ length: 12 }, (_, i) => ({
      t: t(i),
      m: 'a',
      s: String.fromCharCode(97 + i).repeat(2 * 1024 * 1024),
    }));
    // Act
    await coll.insertMany(docs);
    // Assert
    const sizes = (await coll.buckets.find().toArray()).map((b) => calculateObjectSize(b));
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(16 * 1024 * 1024);
    expect(await coll.countDocuments()).toBe(12);
  });

  it.each([true, false])(
    'counts a large meta in the bucket: one measurement per bucket, then BSONObjectTooLarge (compressed: %s)',
    async (compressed) => {
      // Arrange: the server's bson_too_large/bucket_update_single_measurement.js, a 15 MiB meta.
      const { coll } = await setup({ timeseriesAlwaysUseCompressedBuckets: compressed });
      const m = 'a'.repeat(15 * 1024 * 1024);
      const stats = async () => {
        const s = (await coll.stats()).timeseries;
        return [
          s.numBucketInserts,
          s.numBucketUpdates,
          s.numBucketsClosedDueToSize,
          s.numBucketDocumentsTooLargeInsert,
        ];
      };
      // Act / Assert: the second measurement does not fit beside the first one's meta.
      await coll.insertOne({ a: 1, t: t(0), m });
      expect(await stats()).toEqual([1, 0, 0, 0]);
      await coll.insertOne({ a: 1, t: t(0), m });
      expect(await stats()).toEqual([2, 0, 1, 0]);
      // A measurement whose fields (counted three times) and meta exceed 16 MiB fits no bucket.
      const error = await failure(
        coll.insertOne({ a: 2, t: t(0), m, b: 'b'.repeat(Math.floor(1024 * 1024 * 0.335)) }),
      );
      expect(error.writeErrors.map((w) => w.codeName)).toEqual(['BSONObjectTooLarge']);
      expect(await stats()).toEqual([2, 0, 2, 1]);
      const buckets = await coll.buckets.find().toArray();
      for (const b of buckets) expect(calculateObjectSize(b)).toBeLessThanOrEqual(16 * 1024 * 1024);
      expect(await coll.countDocuments()).toBe(2);
    },
  );

  it('refuses a measurement no bucket can hold with BSONObjectTooLarge and counts it', async () => {
    const { coll } = await setup({ timeseriesBucketMaxSize: 64 * 1024 * 1024 });
    const error = await failure(coll.insertOne({ t: t(0), m: 'a', s: 'x'.repeat(6 * 1024 * 1024) }));
    expect(error.writeErrors.map((w) => w.codeName)).toEqual(['BSONObjectTooLarge']);
    expect((await coll.stats()).timeseries.numBucketDocumentsTooLargeInsert).toBe(1);
  });
});
