import { describe, expect, it } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../../src/index.js';

const at = (seconds: number) => new Date(Date.UTC(2024, 9, 4, 10, 14, seconds));

async function setup() {
  const engine = new BucketEngine({ ttlMonitor: 'disabled' });
  const coll = await engine.createCollection('t', { timeseries: { timeField: 'tm', metaField: 'mm' } });
  return { engine, coll };
}

async function refusal(promise: Promise<unknown>): Promise<[string, string]> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!TimeseriesError.isTimeseriesError(error)) throw new Error('expected a TimeseriesError');
  return [error.codeName, error.message];
}

describe('createIndex / listIndexes / dropIndex', () => {
  it('lists the default index and created indexes as the user specified them', async () => {
    const { engine, coll } = await setup();
    expect(await coll.createIndex({ 'mm.a': 1, x: -1 })).toBe('mm.a_1_x_-1');
    expect(await coll.createIndex({ tm: -1 }, { name: 'recent', hidden: false })).toBe('recent');
    expect(await coll.listIndexes()).toStrictEqual([
      { v: 2, key: { mm: 1, tm: 1 }, name: 'mm_1_tm_1' },
      { v: 2, key: { 'mm.a': 1, x: -1 }, name: 'mm.a_1_x_-1' },
      { v: 2, key: { tm: -1 }, name: 'recent', hidden: false },
    ]);
    expect((await engine.storage.listIndexes(coll.bucketsNamespace)).map((i) => i.key)).toStrictEqual([
      { meta: 1, 'control.min.tm': 1, 'control.max.tm': 1 },
      { 'meta.a': 1, 'control.max.x': -1, 'control.min.x': -1 },
      { 'control.max.tm': -1, 'control.min.tm': -1 },
    ]);
  });

  it('is idempotent for an identical spec and refuses conflicting names and keys', async () => {
    const { coll } = await setup();
    expect(await coll.createIndex({ mm: 1, tm: 1 })).toBe('mm_1_tm_1');
    expect(await refusal(coll.createIndex({ mm: 1, tm: 1 }, { name: 'other' }))).toEqual([
      'IndexOptionsConflict',
      'Index already exists with a different name: mm_1_tm_1',
    ]);
    expect((await refusal(coll.createIndex({ x: 1 }, { name: 'mm_1_tm_1' })))[0]).toBe(
      'IndexKeySpecsConflict',
    );
    expect((await refusal(coll.createIndex({ mm: 1, tm: 1 }, { sparse: true })))[0]).toBe(
      'IndexOptionsConflict',
    );
  });

  it('drops by name or key, and refuses unknown ones with IndexNotFound', async () => {
    const { coll } = await setup();
    await coll.createIndex({ x: 1 });
    await coll.dropIndex({ x: 1 });
    await coll.dropIndex('mm_1_tm_1');
    expect(await coll.listIndexes()).toStrictEqual([]);
    expect(await refusal(coll.dropIndex('mm_1'))).toEqual([
      'IndexNotFound',
      'index not found with name [mm_1]',
    ]);
    expect(await refusal(coll.dropIndex({ y: 1 }))).toEqual([
      'IndexNotFound',
      "can't find index with key: { y: 1 }",
    ]);
  });

  it("'*' drops every index", async () => {
    const { coll } = await setup();
    await coll.createIndex({ x: 1 });
    await coll.dropIndex('*');
    expect(await coll.listIndexes()).toStrictEqual([]);
    await coll.dropIndex('*');
  });

  it('refuses the key patterns the server refuses, with its messages', async () => {
    const { coll } = await setup();
    const refused = async (key: Record<string, unknown>) =>
      await refusal(coll.createIndex(key as Record<string, number>));
    expect(await refused({ x: 0 })).toEqual([
      'CannotCreateIndex',
      'Values in the index key pattern cannot be 0.',
    ]);
    expect(await refused({ tm: 0 })).toEqual([
      'CannotCreateIndex',
      'Values in the index key pattern cannot be 0.',
    ]);
    expect(await refused({ mm: Number.NaN })).toEqual([
      'CannotCreateIndex',
      'Values in the index key pattern cannot be NaN.',
    ]);
    expect(await refused({ mm: 'foo' })).toEqual(['CannotCreateIndex', "Unknown index plugin 'foo'"]);
    expect(await refused({ mm: true })).toEqual([
      'CannotCreateIndex',
      'Values in v:2 index key pattern cannot be of type bool. Only numbers > 0, numbers < 0, and strings are allowed.',
    ]);
    expect(await refused({ 'a..b': 1 })).toEqual([
      'CannotCreateIndex',
      'Index keys cannot contain an empty field.',
    ]);
    expect(await refused({ 'a\0b': 1 })).toEqual([
      'CannotCreateIndex',
      'Index keys cannot contain a NUL byte.',
    ]);
    expect(await refusal(coll.createIndex({ x: 1 }, { name: '' }))).toEqual([
      'CannotCreateIndex',
      'index name cannot be empty',
    ]);
    expect(await refusal(coll.createIndex({ x: 1 }, { name: '*' }))).toEqual([
      'BadValue',
      "The index name '*' is not valid.",
    ]);
    // Wildcards on measurement fields (jstests/core/timeseries/ddl/timeseries_metric_index_wildcard.js).
    for (const key of [{ '$**': 1 }, { '_id.$**': 1 }, { x: 1, 'y.$**': 1 }, { 'mm.tag': 1, 'x.$**': 1 }]) {
      expect((await refused(key))[0]).toBe('CannotCreateIndex');
    }
    expect(await coll.listIndexes()).toStrictEqual([{ v: 2, key: { mm: 1, tm: 1 }, name: 'mm_1_tm_1' }]);
    // A wildcard on the metaField is a bucket index on meta.
    expect(await coll.createIndex({ 'mm.$**': 1 })).toBe('mm.$**_1');
  });

  it('dropping the {meta, time} index switches query-based reopening off; an equivalent index switches it on', async () => {
    // Arrange: one bucket of series 'a', forgotten by the catalog (cleared), so only a query can reopen it.
    const { engine, coll } = await setup();
    await coll.insertOne({ tm: at(0), mm: 'a' });
    await engine.catalog.clear(coll.namespace);
    await coll.dropIndex('mm_1_tm_1');
    // Act: without the index the late measurement opens a new bucket, and the query counts as failed.
    await coll.insertOne({ tm: at(1), mm: 'a' });
    const off = (await coll.stats()).timeseries;
    await engine.catalog.clear(coll.namespace);
    await coll.createIndex({ mm: 1, tm: 1 }, { name: 'again' });
    await coll.insertOne({ tm: at(2), mm: 'a' });
    const on = (await coll.stats()).timeseries;
    // Assert (the first insert's query found nothing: one failed query each)
    expect([off.bucketCount, off.numBucketQueriesFailed, off.numBucketsReopened]).toEqual([2, 2, 0]);
    expect([on.bucketCount, on.numBucketsReopened]).toEqual([2, 1]);
  });
});
