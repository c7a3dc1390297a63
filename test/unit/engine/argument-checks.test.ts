import { describe, expect, it } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../../src/index.js';
import type { TimeseriesCollection } from '../../../src/index.js';

const t = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s));

async function setup() {
  const engine = new BucketEngine();
  const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
  await coll.insertMany([
    { t: t(0), m: { site: 'n' }, v: 1 },
    { t: t(1), m: { site: 's', extra: 1 }, v: 2 },
  ]);
  return { engine, coll };
}

/** Call shapes that must be refused: run, expected code name. */
type Case = readonly [
  name: string,
  run: (coll: TimeseriesCollection, engine: BucketEngine) => unknown,
  codeName: string,
];

// Arguments typed `never`: these are what an untyped caller can pass.
const cases: ReadonlyArray<Case> = [
  ['insertMany(non-array)', (c) => c.insertMany({} as never), 'TypeMismatch'],
  ['insertMany(docs, null)', (c) => c.insertMany([], null as never), 'TypeMismatch'],
  ['insertMany(docs, { ordered: "x" })', (c) => c.insertMany([], { ordered: 'x' } as never), 'TypeMismatch'],
  ['find("abc")', (c) => c.find('abc' as never).toArray(), 'TypeMismatch'],
  ['find(null)', (c) => c.find(null as never).toArray(), 'TypeMismatch'],
  ['find({}, null)', (c) => c.find({}, null as never).toArray(), 'TypeMismatch'],
  [
    'find({}, { projection: "x" })',
    (c) => c.find({}, { projection: 'x' as never }).toArray(),
    'TypeMismatch',
  ],
  ['find({}, { sort: { v: 2 } })', (c) => c.find({}, { sort: { v: 2 } as never }).toArray(), 'BadValue'],
  ['find({}, { limit: -1 })', (c) => c.find({}, { limit: -1 }).toArray(), 'Location51024'],
  ['find({}, { skip: "x" })', (c) => c.find({}, { skip: 'x' as never }).toArray(), 'TypeMismatch'],
  ['find({ v: { $foo: 1 } })', (c) => c.find({ v: { $foo: 1 } }).toArray(), 'BadValue'],
  ['find({ v: { $foo: 5n } })', (c) => c.find({ v: { $foo: 5n } }).toArray(), 'BadValue'],
  ['find({ $foo: 1 })', (c) => c.find({ $foo: 1 }).toArray(), 'BadValue'],
  ['find({ v: { $in: 5 } })', (c) => c.find({ v: { $in: 5 } }).toArray(), 'BadValue'],
  ['find(circular)', (c) => c.find(circular()).toArray(), 'BadValue'],
  ['find(nested 10 000)', (c) => c.find({ v: nested(10_000) }).toArray(), 'Overflow'],
  ['countDocuments("x")', (c) => c.countDocuments('x' as never), 'TypeMismatch'],
  ['aggregate({})', (c) => c.aggregate({} as never).toArray(), 'TypeMismatch'],
  ['aggregate([{ $foo: {} }])', (c) => c.aggregate([{ $foo: {} }]).toArray(), 'Location40324'],
  ['aggregate([two fields])', (c) => c.aggregate([{ $match: {}, $limit: 1 }]).toArray(), 'Location40323'],
  [
    'aggregate([{ $group: unknown accumulator }])',
    (c) => c.aggregate([{ $group: { _id: null, x: { $nope: 1 } } }]).toArray(),
    'Location15952',
  ],
  ['deleteMany("x")', (c) => c.deleteMany('x' as never), 'TypeMismatch'],
  ['deleteMany({ v: { $foo: 1 } })', (c) => c.deleteMany({ v: { $foo: 1 } }), 'BadValue'],
  ['updateMany(null, ...)', (c) => c.updateMany(null as never, { $set: { m: 1 } }), 'TypeMismatch'],
  ['updateMany({}, "x")', (c) => c.updateMany({}, 'x' as never), 'TypeMismatch'],
  ['updateMany({}, u, null)', (c) => c.updateMany({}, { $set: { m: 1 } }, null as never), 'TypeMismatch'],
  [
    'updateMany({}, u, { upsert: 1 })',
    (c) => c.updateMany({}, { $set: { m: 1 } }, { upsert: 1 } as never),
    'TypeMismatch',
  ],
  ['buckets.find("x")', (c) => c.buckets.find('x' as never).toArray(), 'TypeMismatch'],
  ['buckets.find({}, null)', (c) => c.buckets.find({}, null as never).toArray(), 'TypeMismatch'],
  [
    'buckets.find({}, { projection: 1 })',
    (c) => c.buckets.find({}, { projection: 1 as never }).toArray(),
    'TypeMismatch',
  ],
  ['buckets.countDocuments("x")', (c) => c.buckets.countDocuments('x' as never), 'TypeMismatch'],
  ['createIndex({ $natural: 1 })', (c) => c.createIndex({ $natural: 1 }), 'CannotCreateIndex'],
  ['createIndex(key, null)', (c) => c.createIndex({ v: 1 }, null as never), 'TypeMismatch'],
  ['collMod(null)', (c) => c.collMod(null as never), 'TypeMismatch'],
  [
    'engine.createCollection(5, ...)',
    (_c, e) => e.createCollection(5 as never, { timeseries: { timeField: 't' } }),
    'TypeMismatch',
  ],
  [
    'engine.createCollection("a$b", ...)',
    (_c, e) => e.createCollection('a$b', { timeseries: { timeField: 't' } }),
    'InvalidNamespace',
  ],
  [
    'engine.createCollection("", ...)',
    (_c, e) => e.createCollection('', { timeseries: { timeField: 't' } }),
    'InvalidNamespace',
  ],
  [
    'engine.createCollection(".a", ...)',
    (_c, e) => e.createCollection('.a', { timeseries: { timeField: 't' } }),
    'InvalidNamespace',
  ],
  [
    'engine.createCollection("system.x", ...)',
    (_c, e) => e.createCollection('system.x', { timeseries: { timeField: 't' } }),
    'InvalidNamespace',
  ],
  [
    'engine.createCollection(<a buckets namespace over 255 bytes>, ...)',
    (_c, e) => e.createCollection('é'.repeat(120), { timeseries: { timeField: 't' } }),
    'InvalidNamespace',
  ],
  ['engine.collection(null)', (_c, e) => e.collection(null as never), 'TypeMismatch'],
  ['new BucketEngine(null)', () => new BucketEngine(null as never), 'TypeMismatch'],
];

function circular(): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  doc.self = doc;
  return doc;
}

function nested(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('every public method refuses bad arguments with a typed error', () => {
  it.each(cases)('%s', async (_name, run, codeName) => {
    // Arrange
    const { engine, coll } = await setup();
    // Act
    // A synchronous throw and a rejection are both collected.
    const error = await Promise.resolve()
      .then(() => run(coll, engine))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    // Assert: typed, and nothing was changed.
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect((error as TimeseriesError).codeName).toBe(codeName);
    expect(await coll.countDocuments()).toBe(2);
  });
});

describe('$jsonSchema where MongoDB accepts it', () => {
  it('deletes the measurements a schema matches', async () => {
    const { coll } = await setup();
    const result = await coll.deleteMany({
      $jsonSchema: { required: ['m'], properties: { v: { minimum: 2 } } },
    });
    expect(result.deletedCount).toBe(1);
    expect((await coll.find({}).toArray()).map((d) => d.v)).toEqual([1]);
  });

  it('deletes whole buckets with a metaField-only schema', async () => {
    const { coll } = await setup();
    const result = await coll.deleteMany({ $jsonSchema: { properties: { m: { required: ['extra'] } } } });
    expect(result.deletedCount).toBe(1);
    expect((await coll.find({}).toArray()).map((d) => d.v)).toEqual([1]);
  });

  it('selects the buckets of a metaField update', async () => {
    const { coll } = await setup();
    const result = await coll.updateMany(
      { $jsonSchema: { required: ['m'], properties: { m: { required: ['extra'] } } } },
      { $set: { 'm.site': 'S' } },
    );
    expect(result).toEqual({
      acknowledged: true,
      matchedCount: 1,
      modifiedCount: 1,
      upsertedCount: 0,
      upsertedId: null,
    });
    expect((await coll.find({}, { sort: { t: 1 } }).toArray()).map((d) => d.m)).toEqual([
      { site: 'n' },
      { extra: 1, site: 'S' },
    ]);
  });

  it('refuses a schema MongoDB refuses with FailedToParse', async () => {
    const { coll } = await setup();
    await expect(coll.deleteMany({ $jsonSchema: { nope: 1 } })).rejects.toMatchObject({
      codeName: 'FailedToParse',
    });
    expect(await coll.countDocuments()).toBe(2);
  });
});
