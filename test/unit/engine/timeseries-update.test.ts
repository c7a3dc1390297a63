import { Decimal128, Double, Long } from 'bson';
import type { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../../src/index.js';
import { updatedMeta } from '../../../src/engine/timeseries-update.js';
import { Deferred } from '../../../src/util/deferred.js';
import { FaultyStorage } from '../../support/faulty-storage.js';

const iso = (s: string) => new Date(s);

async function setup(metaField: 'tag' | 'none' = 'tag') {
  const storage = new FaultyStorage();
  // The 5.x–7.x format: these tests pin version-1 documents.
  const engine = new BucketEngine({
    storage,
    parameters: { timeseriesAlwaysUseCompressedBuckets: false },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('t', {
    timeseries: metaField === 'none' ? { timeField: 'time' } : { timeField: 'time', metaField },
  });
  return { engine, coll, storage };
}

async function refusal(promise: Promise<unknown>): Promise<[string, string]> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!TimeseriesError.isTimeseriesError(error))
    throw new Error(`expected a TimeseriesError, got ${String(error)}`);
  return [error.codeName, error.message];
}

describe('updateMany', () => {
  it('rewrites the meta of whole buckets, normalised, and counts the measurements in them', async () => {
    // Arrange: two buckets of series {a, b} (two hours apart) and one of series {c}; commits go in id order.
    const { coll } = await setup();
    await coll.insertMany([
      { _id: 1, time: iso('2021-07-12T16:00:00Z'), tag: { b: 'B', a: 'A' }, x: 1 },
      { _id: 2, time: iso('2021-07-12T16:00:05Z'), tag: { a: 'A', b: 'B' }, x: 2 },
      { _id: 3, time: iso('2021-07-12T18:00:00Z'), tag: { a: 'A', b: 'B' }, x: 3 },
      { _id: 4, time: iso('2021-07-12T16:00:00Z'), tag: { c: 'C' }, x: 4 },
    ]);
    // In `_id` order, a clustered buckets collection's natural order.
    const byId = (docs: Array<Record<string, unknown>>) =>
      docs.sort((p, q) => ((p._id as ObjectId).toHexString() < (q._id as ObjectId).toHexString() ? -1 : 1));
    const before = byId(await coll.buckets.find().toArray());
    // Act
    const result = await coll.updateMany(
      { 'tag.a': 'A' },
      { $set: { 'tag.z': 0, 'tag.c': 'C' }, $unset: { 'tag.b': '' } },
    );
    // Assert: MongoDB counts each matched bucket by its measurements (two buckets: 2 + 1).
    expect(result).toStrictEqual({
      acknowledged: true,
      matchedCount: 3,
      modifiedCount: 3,
      upsertedCount: 0,
      upsertedId: null,
    });
    const after = byId(await coll.buckets.find().toArray());
    expect(after).toStrictEqual([
      {
        _id: before[0]!._id,
        control: {
          version: 1,
          min: { _id: 1, time: iso('2021-07-12T16:00:00Z'), x: 1 },
          max: { _id: 2, time: iso('2021-07-12T16:00:05Z'), x: 2 },
        },
        meta: { a: 'A', c: 'C', z: 0 },
        data: {
          _id: { '0': 1, '1': 2 },
          time: { '0': iso('2021-07-12T16:00:00Z'), '1': iso('2021-07-12T16:00:05Z') },
          x: { '0': 1, '1': 2 },
        },
      },
      before[1],
      {
        _id: before[2]!._id,
        control: {
          version: 1,
          min: { _id: 3, time: iso('2021-07-12T18:00:00Z'), x: 3 },
          max: { _id: 3, time: iso('2021-07-12T18:00:00Z'), x: 3 },
        },
        meta: { a: 'A', c: 'C', z: 0 },
        data: { _id: { '0': 3 }, time: { '0': iso('2021-07-12T18:00:00Z') }, x: { '0': 3 } },
      },
    ]);
    expect(Object.keys(after[2]!.meta as object)).toEqual(['a', 'c', 'z']);
    expect(await coll.find({ _id: 1 }).toArray()).toStrictEqual([
      { time: iso('2021-07-12T16:00:00Z'), tag: { a: 'A', c: 'C', z: 0 }, _id: 1, x: 1 },
    ]);
  });

  it('counts a matched bucket whose meta does not change as not modified', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: { a: 'A', b: 'B' } });
    // $set of the same fields in another order: the normalised meta is unchanged.
    expect(
      await coll.updateMany({ tag: { a: 'A', b: 'B' } }, { $set: { tag: { b: 'B', a: 'A' } } }),
    ).toStrictEqual({
      acknowledged: true,
      matchedCount: 1,
      modifiedCount: 0,
      upsertedCount: 0,
      upsertedId: null,
    });
    expect(await coll.updateMany({ tag: 'nothing' }, { $set: { tag: 1 } })).toStrictEqual({
      acknowledged: true,
      matchedCount: 0,
      modifiedCount: 0,
      upsertedCount: 0,
      upsertedId: null,
    });
  });

  it('counts measurements per bucket, a no-op bucket matched but not modified (the jstest no-op case)', async () => {
    // Arrange: jstests/core/timeseries/timeseries_update.js, "one of the matching documents is a no-op
    // update": docs 1 and 4 share series {a, b}; doc 5 is series {a, b, c}, which the update leaves alone.
    const { coll } = await setup();
    const time = iso('2021-07-12T16:00:00Z');
    await coll.insertMany([
      { _id: 1, time, tag: { a: 'A', b: 'B' } },
      { _id: 4, time, tag: { a: 'A', b: 'B' }, f: 'F' },
      { _id: 5, time, tag: { a: 'A', b: 'B', c: 'C' } },
    ]);
    // Act
    const result = await coll.updateMany({ 'tag.a': 'A' }, { $set: { 'tag.c': 'C' } });
    // Assert: MongoDB's n 3, nModified 2.
    expect(result).toMatchObject({ matchedCount: 3, modifiedCount: 2 });
  });

  it('resolves a positional $ against the query and $[<id>] against arrayFilters', async () => {
    // Arrange: the jstest's positional and arrayFilters cases.
    const { coll } = await setup();
    const time = iso('2021-07-12T16:00:00Z');
    await coll.insertMany([
      { _id: 1, time, tag: [1, 2, 2] },
      { _id: 2, time, tag: [2, 3, 4] },
      { _id: 3, time, tag: [9] },
    ]);
    // Act
    const positional = await coll.updateMany({ tag: 2 }, { $set: { 'tag.$': 1000 } });
    const filtered = await coll.updateMany(
      {},
      { $set: { 'tag.$[i]': 100 } },
      { arrayFilters: [{ i: { $gte: 1000 } }] },
    );
    // Assert
    expect(positional).toMatchObject({ matchedCount: 2, modifiedCount: 2 });
    expect(filtered).toMatchObject({ matchedCount: 3, modifiedCount: 2 });
    expect(await coll.find({}, { projection: { _id: 1, tag: 1 } }).toArray()).toStrictEqual([
      { tag: [1, 100, 2], _id: 1 },
      { tag: [100, 3, 4], _id: 2 },
      { tag: [9], _id: 3 },
    ]);
    // An array inside an object meta, and a query that selects no element of it.
    const nested = (await setup()).coll;
    await nested.insertMany([{ _id: 1, time, tag: { site: 'n', tags: ['a', 'b'] } }]);
    expect(await nested.updateMany({ 'tag.tags': 'b' }, { $set: { 'tag.tags.$': 'z' } })).toMatchObject({
      modifiedCount: 1,
    });
    expect(await nested.find({}, { projection: { _id: 0, tag: 1 } }).toArray()).toStrictEqual([
      { tag: { site: 'n', tags: ['a', 'z'] } },
    ]);
    expect(await refusal(nested.updateMany({ 'tag.site': 'n' }, { $set: { 'tag.tags.$': 'y' } }))).toEqual([
      'BadValue',
      'The positional operator did not find the match needed from the query.',
    ]);
    // An identifier without its filter, as the server refuses it (the path as translated to buckets).
    expect(await refusal(coll.updateMany({}, { $set: { 'tag.$[j]': 0 } }))).toEqual([
      'BadValue',
      "No array filter found for identifier 'j' in path 'meta.$[j]'",
    ]);
    expect(
      await refusal(coll.updateMany({}, { $set: { tag: 0 } }, { arrayFilters: 'i' as unknown as [] })),
    ).toEqual([
      'TypeMismatch',
      "BSON field 'update.updates.arrayFilters' is the wrong type 'string', expected type 'array'",
    ]);
  });

  it('checks array filters as the server parses them, and no identifier reaches a shared object', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: [1, 8] });
    const set = { $set: { 'tag.$[i]': 0 } };
    const refused = async (arrayFilters: unknown[], update: Record<string, unknown> = set) =>
      await refusal(coll.updateMany({}, update, { arrayFilters } as { arrayFilters: [] }));
    expect(await refused([{ I: 1 }], { $set: { 'tag.$[I]': 0 } })).toEqual([
      'BadValue',
      "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found 'I'",
    ]);
    expect((await refused([JSON.parse('{"__proto__.x": "polluted"}') as object]))[0]).toBe('BadValue');
    expect(await refused([{}])).toEqual([
      'FailedToParse',
      'Cannot use an expression without a top-level field name in arrayFilters',
    ]);
    expect(await refused([{ i: 1, j: 2 }])).toEqual([
      'FailedToParse',
      "Error parsing array filter :: caused by :: Expected a single top-level field name, found 'i' and 'j'",
    ]);
    expect(await refused([{ i: 1 }, { i: 2 }])).toEqual([
      'FailedToParse',
      'Found multiple array filters with the same top-level field name i',
    ]);
    expect(await refused([{ i: 1 }, { j: 2 }])).toEqual([
      'FailedToParse',
      "The array filter for identifier 'j' was not used in the update",
    ]);
    // An identifier named like an Object.prototype member works as any other, and touches nothing shared.
    const result = await coll.updateMany(
      {},
      { $set: { 'tag.$[constructor]': 0 } },
      {
        arrayFilters: [{ constructor: { $gt: 5 } }],
      },
    );
    expect(result).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
    expect(await coll.find({}, { projection: { _id: 0, tag: 1 } }).toArray()).toStrictEqual([
      { tag: [1, 0] },
    ]);
    expect(Object.getOwnPropertyNames(Object.prototype).filter((k) => k.includes('.'))).toEqual([]);
    expect(Object.getOwnPropertyNames(Object).filter((k) => k.includes('.'))).toEqual([]);
  });

  it('creates fields named like Object.prototype members on the way, as any other', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: { a: 1 } });
    const result = await coll.updateMany(
      { 'tag.a': 1 },
      { $set: { 'tag.constructor.x': 1, 'tag.toString.y': 2 }, $push: { 'tag.valueOf': 3 } },
    );
    expect(result).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
    // As JSON: an own `constructor` field confuses the matchers' class comparison.
    const docs = await coll.find({}, { projection: { _id: 0, tag: 1 } }).toArray();
    expect(JSON.stringify(docs)).toBe(
      '[{"tag":{"a":1,"constructor":{"x":1},"toString":{"y":2},"valueOf":[3]}}]',
    );
    expect(Object.getOwnPropertyNames(Object).includes('x')).toBe(false);
  });

  it('refuses an updated path with an empty component, changing nothing', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: { a: 1 } });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ $set: { 'tag.': 1 } }, 'tag.'],
      [{ $unset: { 'tag..x': '' } }, 'tag..x'],
      [{ $rename: { 'tag.a': 'tag.' } }, 'tag.'],
    ];
    for (const [update, path] of cases) {
      expect(await refusal(coll.updateMany({}, update))).toEqual([
        'EmptyFieldName',
        `The update path '${path}' contains an empty field name, which is not allowed.`,
      ]);
    }
    expect(await coll.find({}, { projection: { _id: 0, tag: 1 } }).toArray()).toStrictEqual([
      { tag: { a: 1 } },
    ]);
  });

  it('$setOnInsert without an upsert sets nothing; the rest of the update applies', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: { a: 1 } });
    expect(await coll.updateMany({ 'tag.a': 1 }, { $setOnInsert: { 'tag.b': 2 } })).toMatchObject({
      matchedCount: 1,
      modifiedCount: 0,
    });
    expect(
      await coll.updateMany({ 'tag.a': 1 }, { $setOnInsert: { 'tag.b': 2 }, $set: { 'tag.c': 3 } }),
    ).toMatchObject({ matchedCount: 1, modifiedCount: 1 });
    expect(await coll.find({}, { projection: { _id: 0, tag: 1 } }).toArray()).toStrictEqual([
      { tag: { a: 1, c: 3 } },
    ]);
  });

  it('refuses a collation rather than ignoring it (updates, deletes and finds)', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: 'café' });
    const collation = { locale: 'fr', strength: 1 };
    const untyped = { collation } as Record<string, unknown>;
    expect(await refusal(coll.updateMany({ tag: 'cafe' }, { $set: { tag: 'x' } }, untyped))).toEqual([
      'InvalidOptions',
      "update: option 'collation' is not supported by tsbuckets",
    ]);
    expect(await refusal(coll.deleteMany({ tag: 'cafe' }, untyped as Record<string, never>))).toEqual([
      'InvalidOptions',
      "delete: option 'collation' is not supported by tsbuckets",
    ]);
    expect(() => coll.find({ tag: 'cafe' }, untyped)).toThrow(
      "find: option 'collation' is not supported by tsbuckets",
    );
    expect(await coll.countDocuments()).toBe(1);
  });

  it('$unset of the metaField leaves buckets without meta', async () => {
    const { coll } = await setup();
    await coll.insertOne({ time: iso('2021-07-12T16:00:00Z'), tag: 'A', x: 1 });
    await coll.updateMany({}, { $unset: { tag: '' } });
    const [bucket] = await coll.buckets.find().toArray();
    expect(Object.keys(bucket!)).toEqual(['_id', 'control', 'data']);
    expect(await coll.find().toArray()).toStrictEqual([{ time: iso('2021-07-12T16:00:00Z'), x: 1 }]);
  });

  it('applies $inc and $rename inside the metaField (the jstest vector { c: "C", d: 2 } + 6)', async () => {
    const { coll } = await setup();
    await coll.insertOne({
      _id: 2,
      time: iso('2021-07-12T16:00:00Z'),
      tag: { c: 'C', d: 2 },
      f: [{ k: 'K', v: 'V' }],
    });
    await coll.updateMany({ tag: { c: 'C', d: 2 } }, { $inc: { 'tag.d': 6 } });
    await coll.updateMany({ 'tag.d': 8 }, { $rename: { 'tag.c': 'tag.e' } });
    expect(await coll.find().toArray()).toStrictEqual([
      { time: iso('2021-07-12T16:00:00Z'), tag: { d: 8, e: 'C' }, _id: 2, f: [{ k: 'K', v: 'V' }] },
    ]);
  });

  it('refuses upserts, replacements, pipelines, non-meta paths and collections without metaField', async () => {
    const { coll } = await setup();
    expect(await refusal(coll.updateMany({ tag: 'Z' }, { $set: { tag: 5 } }, { upsert: true }))).toEqual([
      'InvalidOptions',
      'Cannot perform an upsert on a time-series collection',
    ]);
    expect(await refusal(coll.updateMany({ tag: 'A' }, { f2: 1 }))).toEqual([
      'InvalidOptions',
      'Cannot perform an update on a time-series collection using a replacement document',
    ]);
    expect(
      await refusal(coll.updateMany({}, [{ $set: { tag: 1 } }] as unknown as Record<string, unknown>)),
    ).toEqual([
      'InvalidOptions',
      'Cannot perform an update on a time-series collection using a pipeline update',
    ]);
    expect(await refusal(coll.updateMany({ measurement: 'cpu' }, { $set: { tag: 1 } }))).toEqual([
      'InvalidOptions',
      "Cannot perform an update or delete on a time-series collection when querying on a field that is not the metaField 'tag'",
    ]);
    const { coll: noMeta } = await setup('none');
    expect(await refusal(noMeta.updateMany({}, { $set: { f: 'FF' } }))).toEqual([
      'InvalidOptions',
      'Cannot perform an update on a time-series collection that does not have a metaField',
    ]);
  });

  it('clears the updated bucket in the catalog: the old series opens a new bucket, the new series reopens it', async () => {
    // Arrange: bucket B of series 'A' is open in the catalog.
    const { coll } = await setup();
    await coll.insertOne({ _id: 1, time: iso('2021-07-12T16:00:00Z'), tag: 'A' });
    const [b] = await coll.buckets.find().toArray();
    // Act
    await coll.updateMany({ tag: 'A' }, { $set: { tag: 'B' } });
    await coll.insertOne({ _id: 2, time: iso('2021-07-12T16:00:01Z'), tag: 'A' });
    await coll.insertOne({ _id: 3, time: iso('2021-07-12T16:00:02Z'), tag: 'B' });
    // Assert: 'A' did not go into B (now series 'B'); 'B' reopened B by query.
    const buckets = await coll.buckets.find({}, { projection: { meta: 1, 'data._id': 1 } }).toArray();
    expect(buckets).toStrictEqual([
      { _id: b!._id, meta: 'B', data: { _id: { '0': 1, '1': 3 } } },
      { _id: buckets[1]!._id, meta: 'A', data: { _id: { '0': 2 } } },
    ]);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numBucketsReopened).toBe(1);
  });

  it('waits for a prepared batch in flight; the acknowledged measurement is updated with its bucket', async () => {
    // Arrange: the second commit to bucket B is held in storage (prepared, write in flight).
    const { coll, storage } = await setup();
    await coll.insertOne({ _id: 1, time: iso('2021-07-12T16:00:00Z'), tag: 'A' });
    const gate = new Deferred<void>();
    storage.faults.push({ kind: 'block', gate: gate.promise });
    const insert = coll.insertOne({ _id: 2, time: iso('2021-07-12T16:00:01Z'), tag: 'A' });
    await new Promise((r) => setImmediate(r));
    // Act
    let updated = false;
    const update = coll.updateMany({ tag: 'A' }, { $set: { tag: 'B' } }).then((r) => {
      updated = true;
      return r;
    });
    await new Promise((r) => setImmediate(r));
    // Assert: the update waits for the prepared batch.
    expect(updated).toBe(false);
    gate.resolve();
    await insert;
    expect(await update).toMatchObject({ matchedCount: 2, modifiedCount: 2 });
    expect(await coll.find({}, { projection: { _id: 1, tag: 1 } }).toArray()).toStrictEqual([
      { tag: 'B', _id: 1 },
      { tag: 'B', _id: 2 },
    ]);
  });
});

describe('updatedMeta', () => {
  it('does not mutate the stored meta and normalises nested objects', () => {
    const doc = { _id: 1 as unknown as ObjectId, meta: { b: { y: 1, x: 2 }, a: 1 } };
    expect(updatedMeta(doc, { $set: { 'meta.b.w': 0 } })).toStrictEqual({
      kind: 'present',
      meta: { a: 1, b: { w: 0, x: 2, y: 1 } },
    });
    expect(doc.meta).toStrictEqual({ b: { y: 1, x: 2 }, a: 1 });
    expect(updatedMeta({ meta: 1 }, { $unset: { meta: '' } })).toStrictEqual({ kind: 'absent' });
    expect(updatedMeta({}, { $set: { 'meta.a': 1 } })).toStrictEqual({ kind: 'present', meta: { a: 1 } });
  });

  it("$inc and $mul compute on BSON numbers with the server's type rules", () => {
    // Arrange: each numeric type, and a field that is missing.
    const doc = {
      _id: 1 as unknown as ObjectId,
      meta: {
        i: 7,
        big: 2147483647,
        l: Long.fromNumber(5),
        d: new Double(2),
        f: 2.5,
        dec: Decimal128.fromString('1.10'),
      },
    };
    const typed = (v: unknown): string =>
      typeof v === 'object' && v !== null
        ? `${(v as { _bsontype: string })._bsontype}(${(v as { toString(): string }).toString()})`
        : String(v);
    // Act
    const inc = updatedMeta(doc, {
      $inc: {
        'meta.i': 1,
        'meta.big': 1,
        'meta.l': 1,
        'meta.d': 1,
        'meta.f': 0.5,
        'meta.dec': 1,
        'meta.new': Long.fromNumber(3),
      },
    });
    const mul = updatedMeta(doc, {
      $mul: { 'meta.i': 2, 'meta.l': 2.5, 'meta.d': Long.fromNumber(3), 'meta.zero': new Double(4) },
    });
    // Assert: int32 stays int32 until it overflows into int64; the wider type wins; a missing field is
    // the operand ($inc) or a zero of its type ($mul).
    if (inc.kind !== 'present' || mul.kind !== 'present') throw new Error('meta expected');
    const incMeta = inc.meta as Record<string, unknown>;
    expect(Object.fromEntries(Object.entries(incMeta).map(([k, v]) => [k, typed(v)]))).toEqual({
      big: 'Long(2147483648)',
      d: 'Double(3)',
      dec: 'Decimal128(2.10)',
      f: 'Double(3)',
      i: '8',
      l: 'Long(6)',
      new: 'Long(3)',
    });
    const mulMeta = mul.meta as Record<string, unknown>;
    expect([mulMeta.i, typed(mulMeta.l), typed(mulMeta.d), typed(mulMeta.zero)]).toEqual([
      14,
      '12.5',
      'Double(6)',
      'Double(0)',
    ]);
    // The stored meta is unchanged.
    expect(typed(doc.meta.l)).toBe('Long(5)');
  });

  it('$min and $max compare in BSON order, across numeric types', () => {
    const doc = {
      _id: 1 as unknown as ObjectId,
      meta: { l: Long.fromNumber(1000), d: new Double(21), s: 'b' },
    };
    const out = updatedMeta(doc, { $max: { 'meta.l': 300, 'meta.d': 100 }, $min: { 'meta.s': 'a' } });
    expect(out).toStrictEqual({ kind: 'present', meta: { d: 100, l: Long.fromNumber(1000), s: 'a' } });
  });

  it('refuses $inc on a value that is not a number, overflowing int64 and overlapping paths, changing nothing', () => {
    const doc = { _id: 'b1' as unknown as ObjectId, meta: { s: 'x', l: Long.MAX_VALUE } };
    const codeOf = (f: () => unknown): [string, string] => {
      try {
        f();
      } catch (error) {
        if (TimeseriesError.isTimeseriesError(error)) return [error.codeName, error.message];
        throw error;
      }
      throw new Error('expected a refusal');
    };
    expect(codeOf(() => updatedMeta(doc, { $inc: { 'meta.s': 1 } }))).toEqual([
      'TypeMismatch',
      `Cannot apply $inc to a value of non-numeric type. {_id: "b1"} has the field 's' of non-numeric type string`,
    ]);
    expect(codeOf(() => updatedMeta(doc, { $mul: { 'meta.l': 'two' } }))).toEqual([
      'TypeMismatch',
      'Cannot multiply with non-numeric argument: {meta.l: "two"}',
    ]);
    expect(codeOf(() => updatedMeta(doc, { $inc: { 'meta.l': 1 } }))).toEqual([
      'BadValue',
      'Failed to apply $inc operations to current value ((NumberLong)9223372036854775807) for document {_id: "b1"}',
    ]);
    expect(codeOf(() => updatedMeta(doc, { $set: { meta: {} }, $inc: { 'meta.n': 1 } }))).toEqual([
      'ConflictingUpdateOperators',
      "Updating the path 'meta.n' would create a conflict at 'meta'",
    ]);
    expect(doc.meta.s).toBe('x');
  });
});
