import { Binary, BSONRegExp, Decimal128, Double, Int32, Long, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import { TimeseriesError } from '../../../src/errors.js';
import { aggregate, countDocuments, find } from '../../../src/reader/reader.js';
import type { FindSort } from '../../../src/util/query-validation.js';
import { iso, setupCollection } from './helpers.js';

describe('find: unpacking', () => {
  it('returns measurements with the time field first, then the metaField, then data columns', async () => {
    // Arrange
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { _id: 1, temp: 20, ts: iso('2024-01-01T00:00:00Z'), sensor: { id: 'a' } },
      { _id: 2, ts: iso('2024-01-01T00:00:01Z'), sensor: { id: 'a' }, hum: 5 },
    ]);
    // Act
    const docs = await find(ctx()).toArray();
    // Assert
    expect(docs).toStrictEqual([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: { id: 'a' }, _id: 1, temp: 20 },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: { id: 'a' }, _id: 2, hum: 5 },
    ]);
    expect(Object.keys(docs[0]!)).toEqual(['ts', 'sensor', '_id', 'temp']);
    expect(Object.keys(docs[1]!)).toEqual(['ts', 'sensor', '_id', 'hum']);
  });

  it('keeps BSON types', async () => {
    const { coll, ctx } = await setupCollection();
    const oid = new ObjectId();
    const doc = {
      ts: iso('2024-01-01T00:00:00Z'),
      sensor: 's',
      i: new Int32(1),
      l: Long.fromString('9007199254740993'),
      d: new Double(2),
      dec: Decimal128.fromString('1.10'),
      o: oid,
      n: 3,
      bin: new Binary(new Uint8Array([1, 2])),
    };
    await coll.insertOne(doc);
    const [out] = await find(ctx()).toArray();
    expect(out).toStrictEqual(doc);
    expect(out!.i).toBeInstanceOf(Int32);
    expect(out!.l).toBeInstanceOf(Long);
    expect(out!.d).toBeInstanceOf(Double);
    expect(typeof out!.n).toBe('number');
  });

  it('include projection: listed fields (time only if listed), metaField only if listed, _id by default', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ _id: 7, ts: iso('2024-01-01T00:00:00Z'), sensor: 's', a: 1, b: 2 });
    expect(await find(ctx(), {}, { projection: { b: 1 } }).toArray()).toStrictEqual([{ _id: 7, b: 2 }]);
    expect(await find(ctx(), {}, { projection: { b: 1, sensor: 1, ts: 1, _id: 0 } }).toArray()).toStrictEqual(
      [{ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', b: 2 }],
    );
  });

  it('exclude projection drops listed fields, including the metaField and the time field', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ _id: 7, ts: iso('2024-01-01T00:00:00Z'), sensor: 's', a: 1, b: 2 });
    expect(await find(ctx(), {}, { projection: { sensor: 0, a: 0 } }).toArray()).toStrictEqual([
      { ts: iso('2024-01-01T00:00:00Z'), _id: 7, b: 2 },
    ]);
    expect(await find(ctx(), {}, { projection: { ts: 0, _id: 0 } }).toArray()).toStrictEqual([
      { sensor: 's', a: 1, b: 2 },
    ]);
  });

  it('projection and filter on different fields: filter fields are unpacked then dropped', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', a: 1, b: 2 },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', a: 5, b: 3 },
    ]);
    expect(await find(ctx(), { a: { $gt: 2 } }, { projection: { b: 1, _id: 0 } }).toArray()).toStrictEqual([
      { b: 3 },
    ]);
    expect(await find(ctx(), { a: { $gt: 2 } }, { projection: { a: 0 } }).toArray()).toStrictEqual([
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', b: 3 },
    ]);
  });

  it('dotted projections go through mingo', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', a: { x: new Int32(1), y: 2 } });
    expect(await find(ctx(), {}, { projection: { 'a.x': 1, _id: 0 } }).toArray()).toStrictEqual([
      { a: { x: new Int32(1) } },
    ]);
  });

  it('a computed projection reads an int64 or an integral double by its value; a field passed through keeps its type', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({
      ts: iso('2024-01-01T00:00:00Z'),
      sensor: 's',
      l: Long.fromNumber(40),
      d: new Double(2),
    });
    const [out] = await find(
      ctx(),
      {},
      {
        projection: { _id: 0, l: 1, d: 1, sum: { $add: ['$l', '$d'] }, bigger: { $gt: ['$l', 5] } },
      },
    ).toArray();
    expect(out).toStrictEqual({ l: Long.fromNumber(40), d: new Double(2), sum: 42, bigger: true });
    expect((out?.l as { _bsontype?: string })._bsontype).toBe('Long');
    expect((out?.d as { _bsontype?: string })._bsontype).toBe('Double');
  });

  it('dotted projections keep the input order of fields, in sub-documents too', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: 5, o: { y: 1, x: 2 } });
    const [a] = await find(ctx(), {}, { projection: { _id: 0, 'o.x': 1, ts: 1 } }).toArray();
    expect(Object.keys(a!)).toEqual(['ts', 'o']);
    const [b] = await find(ctx(), {}, { projection: { _id: 0, 'o.x': 1, 'o.y': 1, sensor: 1 } }).toArray();
    expect(JSON.stringify(b)).toBe('{"sensor":"s","o":{"y":1,"x":2}}');
  });

  it('rejects a projection mixing inclusion and exclusion', async () => {
    const { ctx } = await setupCollection();
    expect(() => find(ctx(), {}, { projection: { a: 1, b: 0 } })).toThrow(TimeseriesError);
  });

  it('filters with exact BSON numeric semantics', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: new Int32(7) },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', v: Long.fromString('9007199254740993') },
      { ts: iso('2024-01-01T00:00:02Z'), sensor: 's', v: Decimal128.fromString('5.5') },
      { ts: iso('2024-01-01T00:00:03Z'), sensor: 's', v: 'seven' },
    ]);
    const v = (docs: Array<Record<string, unknown>>) => docs.map((d) => String(d.v));
    expect(v(await find(ctx(), { v: { $gt: 5 } }).toArray())).toEqual(['7', '9007199254740993', '5.5']);
    expect(v(await find(ctx(), { v: { $gt: 9007199254740992 } }).toArray())).toEqual(['9007199254740993']);
    expect(v(await find(ctx(), { v: 7 }).toArray())).toEqual(['7']);
    expect(v(await find(ctx(), { v: { $lt: 'z' } }).toArray())).toEqual(['seven']);
  });

  it('an $expr mingo evaluates reads an int64 or an integral double by its value', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', a: Long.fromNumber(1000), b: 300 },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', a: new Double(20), b: 100 },
    ]);
    const a = (docs: Array<Record<string, unknown>>) => docs.map((d) => String(d.a));
    expect(a(await find(ctx(), { $expr: { $gt: ['$a', '$b'] } }).toArray())).toEqual(['1000']);
    expect(a(await find(ctx(), { $expr: { $lt: [{ $add: ['$a', 1] }, 50] } }).toArray())).toEqual(['20']);
  });

  it('$expr comparisons order values of different types as the server does (BSON order)', async () => {
    const { coll, ctx } = await setupCollection();
    const values: unknown[] = [1, 'abc', { y: 1 }, [0], null, undefined, new Date(0), true, 2];
    await coll.insertMany(
      values.map((x, i) => ({
        ts: iso('2024-01-01T00:00:00Z'),
        sensor: 's',
        _id: i,
        ...(x === undefined ? {} : { x }),
      })),
    );
    const ids = async (expr: Record<string, unknown>) =>
      (await find(ctx(), { $expr: expr }).toArray()).map((d) => d._id as number).sort((a, b) => a - b);
    // Strings, documents, arrays, dates and booleans are above every number; null and missing below.
    expect(await ids({ $gt: ['$x', 1] })).toEqual([1, 2, 3, 6, 7, 8]);
    expect(await ids({ $lt: ['$x', 1] })).toEqual([4, 5]);
    // A missing field is below null, not equal to it.
    expect(await ids({ $eq: ['$x', null] })).toEqual([4]);
    expect(await ids({ $gte: ['$x', null] })).toEqual([0, 1, 2, 3, 4, 6, 7, 8]);
    const cmp = await aggregate(ctx(), [{ $project: { _id: 0, c: { $cmp: ['$x', 1] } } }]).toArray();
    expect(cmp.map((d) => d.c)).toEqual([0, 1, 1, 1, -1, -1, 1, 1, 1]);
    await expect(find(ctx(), { $expr: { $gt: ['$x'] } }).toArray()).rejects.toMatchObject({
      codeName: 'Location16020',
      message: 'Expression $gt takes exactly 2 arguments. 1 were passed in.',
    });
  });

  it("$regex with the extended option 'x' ignores whitespace and comments, as PCRE does", async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      ['abc', 'ABC', 'a bc', 'a#c'].map((s, i) => ({
        ts: iso('2024-01-01T00:00:00Z'),
        sensor: 's',
        _id: i,
        s,
      })),
    );
    const ids = async (filter: Record<string, unknown>) =>
      (await find(ctx(), filter).toArray()).map((d) => d._id as number).sort((a, b) => a - b);
    expect(await ids({ s: { $regex: '^a b c$', $options: 'x' } })).toEqual([0]);
    expect(await ids({ s: { $regex: '^a b c $ # the whole string\n', $options: 'xi' } })).toEqual([0, 1]);
    // Escaped, or inside a class, whitespace and '#' are literal.
    expect(await ids({ s: { $regex: '^a\\ bc$', $options: 'x' } })).toEqual([2]);
    expect(await ids({ s: { $regex: '^a[#]c$', $options: 'x' } })).toEqual([3]);
  });

  it('a regex matches strings it matches and stored regexes of the same pattern and flags (RegexMatchExpression)', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      [new BSONRegExp('ab', 'i'), 'xABy', new BSONRegExp('ab', 'm'), 'xy'].map((x, i) => ({
        ts: iso('2024-01-01T00:00:00Z'),
        sensor: 's',
        _id: i,
        x,
      })),
    );
    const ids = async (filter: Record<string, unknown>) =>
      (await find(ctx(), filter).toArray()).map((d) => d._id as number).sort((a, b) => a - b);
    expect(await ids({ x: /ab/i })).toEqual([0, 1]);
    expect(await ids({ x: new BSONRegExp('ab', 'i') })).toEqual([0, 1]);
    expect(await ids({ x: { $regex: 'ab', $options: 'i' } })).toEqual([0, 1]);
    expect(await ids({ x: { $in: [/ab/i, 'xy'] } })).toEqual([0, 1, 3]);
    expect(await ids({ x: { $not: /ab/i } })).toEqual([2, 3]);
    // $eq compares the regex as a value.
    expect(await ids({ x: { $eq: /ab/m } })).toEqual([2]);
  });

  it('skip and limit', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      Array.from({ length: 10 }, (_, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', i })),
    );
    const docs = await find(ctx(), {}, { skip: 3, limit: 2 }).toArray();
    expect(docs.map((d) => d.i)).toEqual([3, 4]);
  });

  it('streams: breaking out of iteration stops reading buckets', async () => {
    const { coll, ctx } = await setupCollection({}, { timeseriesBucketMaxCount: 2 });
    await coll.insertMany(
      Array.from({ length: 20 }, (_, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', i })),
    );
    const cursor = find(ctx());
    let seen = 0;
    for await (const _doc of cursor) if (++seen === 3) break;
    expect(seen).toBe(3);
    const { executionStats } = await find(ctx(), {}, { limit: 3 }).explain();
    expect(executionStats.totalBucketsExamined).toBe(2);
    expect(executionStats.totalBucketsInCollection).toBe(10);
  });
});

describe('find: malformed buckets', () => {
  async function withBucket(bucket: Record<string, unknown>, timeseries: Record<string, unknown> = {}) {
    const setup = await setupCollection(timeseries);
    await setup.engine.storage.insertOne(setup.coll.bucketsNamespace, { _id: new ObjectId(), ...bucket });
    return setup;
  }
  const cases: Array<[string, Record<string, unknown>, number, Record<string, unknown>?]> = [
    ['no control', { data: { ts: { '0': new Date(0) } } }, 5857902],
    ['no control.version', { control: { min: {}, max: {} }, data: { ts: { '0': new Date(0) } } }, 5857903],
    ['unknown version', { control: { version: 4, min: {}, max: {} }, data: {} }, 5857900],
    ['no time column', { control: { version: 1, min: {}, max: {} }, data: { x: { '0': 1 } } }, 5346700],
    [
      'meta without metaField',
      { control: { version: 1, min: {}, max: {} }, meta: 1, data: { ts: { '0': new Date(0) } } },
      5369601,
      { metaField: undefined },
    ],
  ];
  for (const [name, bucket, code, ts] of cases) {
    it(`${name} → ${code}`, async () => {
      const { ctx } = await withBucket(bucket, ts);
      const error: unknown = await find(ctx())
        .toArray()
        .catch((e: unknown) => e);
      expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
      expect((error as TimeseriesError).code).toBe(code);
    });
  }

  it('an empty data object has no measurements', async () => {
    const { ctx } = await withBucket({ control: { version: 1, min: {}, max: {} }, data: {} });
    expect(await find(ctx()).toArray()).toEqual([]);
  });
});

describe('find: compressed buckets (v2, v3)', () => {
  it('unpacks BSONColumn columns through BSONColumn.decode, skips stay missing', async () => {
    const { engine, coll, ctx } = await setupCollection();
    const times = [iso('2024-01-01T00:00:00Z'), iso('2024-01-01T00:00:01Z'), iso('2024-01-01T00:00:02Z')];
    for (const version of [2, 3]) {
      await engine.storage.insertOne(coll.bucketsNamespace, {
        _id: new ObjectId(),
        control: {
          version,
          min: { ts: times[0], x: 1, s: 'a' },
          max: { ts: times[2], x: 3, s: 'b' },
          count: 3,
        },
        meta: `v${version}`,
        data: {
          ts: new Binary(BSONColumn.encode(times), 7),
          x: new Binary(BSONColumn.encode([1, undefined, 3]), 7),
          s: new Binary(BSONColumn.encode(['a', 'b', undefined]), 7),
        },
      });
    }
    const docs = await find(ctx(), { sensor: 'v2' }).toArray();
    expect(docs).toStrictEqual([
      { ts: times[0], sensor: 'v2', x: 1, s: 'a' },
      { ts: times[1], sensor: 'v2', s: 'b' },
      { ts: times[2], sensor: 'v2', x: 3 },
    ]);
    expect(await countDocuments(ctx(), { sensor: 'v3' })).toBe(3);
    expect(await countDocuments(ctx(), { x: { $gte: 2 } })).toBe(2);
  });

  it('uses an injected column decoder', async () => {
    const { engine, coll, ctx } = await setupCollection({ metaField: undefined });
    await engine.storage.insertOne(coll.bucketsNamespace, {
      _id: new ObjectId(),
      control: { version: 2, min: {}, max: {}, count: 1 },
      data: { ts: new Binary(new Uint8Array([0]), 7) },
    });
    const decoder = { decode: () => [iso('2024-01-01T00:00:00Z')] };
    expect(await find({ ...ctx(), columnDecoder: decoder }).toArray()).toStrictEqual([
      { ts: iso('2024-01-01T00:00:00Z') },
    ]);
  });
});

describe('find: bucket-level predicates and explain', () => {
  it('metaField predicates become exact bucket predicates on meta', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: { id: 'a' }, v: 1 },
      { ts: iso('2024-01-01T00:00:00Z'), sensor: { id: 'b' }, v: 2 },
    ]);
    const cursor = find(ctx(), { 'sensor.id': 'a' });
    expect((await cursor.toArray()).map((d) => d.v)).toEqual([1]);
    const explain = await cursor.explain();
    expect(explain.bucketFilter).toStrictEqual({ 'meta.id': 'a' });
    expect(explain.eventFilter).toBeUndefined();
    expect(explain.executionStats).toStrictEqual({
      totalBucketsInCollection: 2,
      totalBucketsExamined: 1,
      nReturned: 1,
    });
  });

  it('a meta condition only mingo evaluates sits beside the time bounds, which it does not know', async () => {
    // The bucket filter pairs `meta.flags: {$bitsAllSet: 4}` with `$_internalExpr*` bounds on control.
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:01Z'), sensor: { flags: 5 }, v: 1 },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: { flags: 2 }, v: 2 },
      { ts: iso('2023-01-01T00:00:01Z'), sensor: { flags: 5 }, v: 3 },
    ]);
    const filter = {
      'sensor.flags': { $bitsAllSet: 4 },
      ts: { $gte: iso('2024-01-01T00:00:00Z') },
      v: { $lt: 9 },
    };
    expect((await find(ctx(), filter).toArray()).map((d) => d.v)).toEqual([1]);
    expect((await aggregate(ctx(), [{ $match: filter }]).toArray()).map((d) => d.v)).toEqual([1]);
    expect(await countDocuments(ctx(), filter)).toBe(1);
  });

  it('a 1% time range examines about 1% of the buckets', async () => {
    const { coll, ctx } = await setupCollection({ granularity: 'seconds' }, { timeseriesBucketMaxCount: 10 });
    const start = Date.UTC(2024, 0, 1);
    // 100 hours, one measurement a minute: 600 buckets of 10.
    await coll.insertMany(
      Array.from({ length: 6000 }, (_, i) => ({ ts: new Date(start + i * 60_000), sensor: 's', i })),
    );
    const from = new Date(start + 50 * 3600_000);
    const to = new Date(start + 51 * 3600_000);
    const cursor = find(ctx(), { ts: { $gte: from, $lt: to } });
    expect(await cursor.toArray()).toHaveLength(60);
    const { executionStats, bucketFilter } = await cursor.explain();
    expect(executionStats.totalBucketsInCollection).toBe(600);
    expect(executionStats.totalBucketsExamined).toBeLessThanOrEqual(8);
    expect(JSON.stringify(bucketFilter)).toContain('_id');
  });

  it('omits _id bounds when buckets before 1970 exist, and still finds them', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('1960-01-01T00:00:00Z'), sensor: 's', v: 1 },
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: 2 },
    ]);
    const cursor = find(ctx(), { ts: { $lt: iso('1980-01-01T00:00:00Z') } });
    expect((await cursor.toArray()).map((d) => d.v)).toEqual([1]);
    expect(JSON.stringify((await cursor.explain()).bucketFilter)).not.toContain('_id');
  });

  it('time bounds at the ends of the Date range ("no bound" sentinels) prune nothing that matches', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('1950-01-01T00:00:00Z'), sensor: 's', v: 1 },
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: 2 },
    ]);
    const latest = new Date(8.64e15);
    const earliest = new Date(-8.64e15);
    for (const filter of [
      { ts: { $lt: latest } },
      { ts: { $lte: latest } },
      { ts: { $gt: earliest } },
      { ts: { $gte: earliest } },
    ]) {
      const cursor = find(ctx(), filter);
      expect((await cursor.toArray()).map((d) => d.v).sort()).toEqual([1, 2]);
      expect(await countDocuments(ctx(), filter)).toBe(2);
      // No Invalid Date in the bucket filter (JSON writes one as null).
      expect(JSON.stringify((await cursor.explain()).bucketFilter)).not.toContain('null');
    }
  });

  it('data-field comparisons use control.min/max with the mixed-type guard', async () => {
    const { coll, ctx } = await setupCollection({}, { timeseriesBucketMaxCount: 5 });
    await coll.insertMany(
      Array.from({ length: 50 }, (_, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', v: i })),
    );
    const cursor = find(ctx(), { v: { $gte: 45 } });
    expect(await cursor.toArray()).toHaveLength(5);
    const { bucketFilter, executionStats } = await cursor.explain();
    expect(bucketFilter).toStrictEqual({
      $or: [
        { 'control.max.v': { $_internalExprGte: 45 } },
        { $expr: { $ne: [{ $type: '$control.min.v' }, { $type: '$control.max.v' }] } },
      ],
    });
    expect(executionStats.totalBucketsExamined).toBe(1);
  });

  it('arrays in data fields are never pruned wrongly', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: [1, 100] },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', v: [50] },
    ]);
    expect(await find(ctx(), { v: 50 }).toArray()).toHaveLength(1);
    expect(await find(ctx(), { v: { $gt: 60 } }).toArray()).toHaveLength(1);
  });
});

describe('find: null and $exists through arrays (null_query_semantics.js, newest)', () => {
  it('an array adds no missing value: only its document elements are walked into', async () => {
    const { coll, ctx } = await setupCollection();
    const values: Record<string, unknown> = {
      emptySubobject: {},
      null: null,
      number: 4,
      subobjectBNotNull: { b: 'hi' },
      subobjectBNull: { b: null },
      missing: undefined,
      doubleArray: [[]],
      emptyArray: [],
      objectArrayNoBNulls: [{ b: 1 }, { b: 3 }, { b: 'string' }],
      objectArraySomeBMissing: [{ b: 3 }, {}],
      valueArrayAllNulls: [null, null],
      valueArrayNoNulls: [1, 'string', 4],
    };
    await coll.insertMany(
      Object.entries(values).map(([name, v], i) => ({
        ts: new Date(1e12 + i * 1000),
        sensor: 's',
        name,
        ...(v === undefined ? {} : { v }),
      })),
    );
    const names = async (filter: Record<string, unknown>) =>
      (await find(ctx(), filter).toArray()).map((d) => d.name as string).sort();
    const sorted = (list: string[]) => [...list].sort();
    const eqNull = [
      'emptySubobject',
      'null',
      'number',
      'subobjectBNull',
      'missing',
      'objectArraySomeBMissing',
    ];
    expect(await names({ 'v.b': { $eq: null } })).toEqual(sorted(eqNull));
    const neNull = Object.keys(values).filter((n) => !eqNull.includes(n));
    expect(await names({ 'v.b': { $ne: null } })).toEqual(sorted(neNull));
    expect(await names({ 'v.b': { $nin: [null, 75] } })).toEqual(sorted(neNull));
    expect(await countDocuments(ctx(), { 'v.b': { $ne: null } })).toBe(neNull.length);
    // $exists: false is NOT($exists: true): one element with the field fails it.
    expect(await names({ 'v.b': { $exists: false } })).toEqual(
      sorted([
        'emptySubobject',
        'null',
        'number',
        'missing',
        'doubleArray',
        'emptyArray',
        'valueArrayAllNulls',
        'valueArrayNoNulls',
      ]),
    );
    expect(await names({ 'v.1': { $exists: false } })).toEqual(
      sorted([
        'emptySubobject',
        'null',
        'number',
        'subobjectBNotNull',
        'subobjectBNull',
        'missing',
        'doubleArray',
        'emptyArray',
      ]),
    );
  });
});

describe('find: $elemMatch over nested arrays (elemmatch_value.js, elemmatch_object.js)', () => {
  it('the value form tests each element itself; the document form reads arrays as documents', async () => {
    const { coll, ctx } = await setupCollection();
    const values = [
      5,
      [5],
      [3, 7],
      [[5]],
      [[3, 7]],
      [[[5]]],
      { b: 5 },
      [{ b: 5 }],
      [[{ b: 5 }]],
      [],
      [[]],
      [1, {}],
    ];
    await coll.insertMany(
      values.map((a, i) => ({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', _id: i, a })),
    );
    const ids = async (filter: Record<string, unknown>) =>
      (await find(ctx(), filter).toArray()).map((d) => d._id as number).sort((x, y) => x - y);
    // An element [5] is not looked into, and is not a number.
    expect(await ids({ a: { $elemMatch: { $lt: 6, $gt: 4 } } })).toEqual([1]);
    expect(await ids({ a: { $elemMatch: { $type: 'number' } } })).toEqual([1, 2, 11]);
    expect(await ids({ a: { $elemMatch: { $elemMatch: { $lt: 6, $gt: 4 } } } })).toEqual([3]);
    // Documents and arrays are elements `{}` matches; an array's fields are its indexes.
    expect(await ids({ a: { $elemMatch: {} } })).toEqual([3, 4, 5, 7, 8, 10, 11]);
    expect(await ids({ a: { $elemMatch: { b: 5 } } })).toEqual([7]);
    // ([[[5]]]: its element read as {0: [5]}, whose field 0 holds 5 in an array, which equality looks into.)
    expect(await ids({ a: { $elemMatch: { '0': 5 } } })).toEqual([3, 5]);
  });
});

describe('find: sort on a data field', () => {
  it('puts an empty array below missing and null, in either direction (DOCS-2760)', async () => {
    const { coll, ctx } = await setupCollection();
    const t = (i: number) => new Date(1e12 + i * 1000);
    await coll.insertMany([
      { ts: t(0), sensor: 's', name: 'one', a: 1 },
      { ts: t(1), sensor: 's', name: 'arr01', a: [0, 1] },
      { ts: t(2), sensor: 's', name: 'missing' },
      { ts: t(3), sensor: 's', name: 'emptyArray', a: [] },
      { ts: t(4), sensor: 's', name: 'arr1', a: [1] },
    ]);
    const names = async (direction: 1 | -1, limit?: number) =>
      (
        await find(
          ctx(),
          {},
          { sort: { a: direction, ts: 1 }, ...(limit === undefined ? {} : { limit }) },
        ).toArray()
      ).map((d) => d.name);
    expect(await names(1)).toEqual(['emptyArray', 'missing', 'arr01', 'one', 'arr1']);
    expect(await names(1, 1)).toEqual(['emptyArray']);
    // Descending by the largest element: 1, 1, 1 (ties by time), then missing, then the empty array.
    expect(await names(-1)).toEqual(['one', 'arr01', 'arr1', 'missing', 'emptyArray']);
  });

  it("takes the driver's forms of a sort: direction words in any case, pairs, names, a Map", async () => {
    const { coll } = await setupCollection();
    const t = (i: number) => new Date(1e12 + i * 1000);
    await coll.insertMany([3, 1, 2].map((v, i) => ({ ts: t(i), sensor: 's', v })));
    const vs = async (sort: FindSort) => (await coll.find({}, { sort }).toArray()).map((d) => d.v);
    expect(await vs({ v: 'desc' })).toEqual([3, 2, 1]);
    expect(await vs({ v: 'ASCENDING' as 'ascending' })).toEqual([1, 2, 3]);
    expect(await vs([['v', 'descending']])).toEqual([3, 2, 1]);
    expect(await vs(['v', -1])).toEqual([3, 2, 1]);
    expect(await vs('v')).toEqual([1, 2, 3]);
    expect(await vs(['sensor', 'v'])).toEqual([1, 2, 3]);
    expect(await vs(new Map([['v', 'desc' as const]]))).toEqual([3, 2, 1]);
    // On the time field: the read in time order (latest first), as with -1.
    expect(await vs({ ts: 'desc' })).toEqual([2, 1, 3]);
    const codes = await Promise.all(
      [{ v: 'down' }, ['v', 2], [['v']], 5].map((sort) =>
        Promise.resolve()
          .then(() => coll.find({}, { sort: sort as FindSort }).toArray())
          .then(
            () => 'ok',
            (e: unknown) => (TimeseriesError.isTimeseriesError(e) ? e.codeName : e),
          ),
      ),
    );
    expect(codes).toEqual(['BadValue', 'BadValue', 'TypeMismatch', 'TypeMismatch']);
  });
});

describe('find and $sort: dotted paths through arrays (jstests/core/query/sort/sort_dotted_paths.js)', () => {
  // Sorted by the index keys the server would make for the sort's paths: the first array a path meets is
  // expanded, paths through one array pair its elements' values, a positional component picks an element.
  async function order(docs: Array<Record<string, unknown>>, sort: Record<string, 1 | -1>) {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(docs.map((d) => ({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', ...d })));
    const found = (await find(ctx(), {}, { sort }).toArray()).map((d) => d._id);
    const sorted = (await aggregate(ctx(), [{ $sort: sort }]).toArray()).map((d) => d._id);
    expect(sorted).toEqual(found);
    return found;
  }

  it('a path through an array of documents sorts by the smallest (largest) value it reaches', async () => {
    const docs = [
      { _id: 1, a: { b: 2 } },
      { _id: 2, a: { b: [] } },
      { _id: 3, a: { b: [2, 3] } },
      { _id: 4, a: { c: 1 } },
      { _id: 5, a: [] },
      { _id: 6, a: [{ b: [5] }] },
      { _id: 7, a: [{ b: [4, 5] }, { b: 7 }] },
      { _id: 8, a: [{ b: [1, 3] }, { b: [2, 5] }] },
      { _id: 9, a: [{ b: [] }, { b: [1, 3] }] },
    ];
    expect(await order(docs, { 'a.b': 1, _id: 1 })).toEqual([2, 9, 4, 5, 8, 1, 3, 7, 6]);
    expect(await order(docs, { 'a.b': -1, _id: -1 })).toEqual([7, 8, 6, 9, 3, 1, 5, 4, 2]);
  });

  it('a positional component picks an element, which is not expanded', async () => {
    const docs = [
      { _id: 1, a: 1 },
      { _id: 3, a: null },
      { _id: 4, a: {} },
      { _id: 5, a: [] },
      { _id: 6, a: [1] },
      { _id: 7, a: [[1]] },
      { _id: 8 },
    ];
    expect(await order(docs, { 'a.0': 1, _id: 1 })).toEqual([1, 3, 4, 5, 8, 6, 7]);
    expect(await order(docs, { 'a.0': -1, _id: 1 })).toEqual([7, 6, 1, 3, 4, 5, 8]);
  });

  it("paths through one array pair each element's values; paths through two arrays are refused", async () => {
    // Per document, its two elements' b and c: [b0, c0, b1, c1].
    const rows = [
      [4, 1, 1, 2],
      [2, 1, 4, 2],
      [6, 1, 9, 2],
      [4, 1, 5, 3],
      [2, 1, 7, 3],
      [5, 1, 3, 3],
      [7, 2, 2, 3],
      [3, 2, 8, 3],
      [8, 2, 6, 3],
    ];
    const docs = rows.map(([b0, c0, b1, c1], i) => ({
      _id: i + 1,
      a: [
        { b: b0, c: c0 },
        { b: b1, c: c1 },
      ],
    }));
    expect(await order(docs, { 'a.c': 1, 'a.b': -1, _id: 1 })).toEqual([3, 6, 1, 4, 2, 5, 9, 7, 8]);
    expect(await order(docs, { 'a.c': 1, a: 1, _id: 1 })).toEqual([2, 5, 1, 4, 6, 3, 8, 7, 9]);
    await expect(order([{ _id: 1, a: [1, 2], b: [3, 4] }, { _id: 2 }], { a: 1, b: 1 })).rejects.toMatchObject(
      {
        codeName: 'BadValue',
        message: 'cannot sort with keys that are parallel arrays',
      },
    );
  });
});

describe('find: sort on time with limit', () => {
  it('latest value per series reads a handful of buckets', async () => {
    // Arrange: 3 series, 100 buckets each.
    const { coll, ctx } = await setupCollection({}, { timeseriesBucketMaxCount: 10 });
    const docs = [];
    for (let i = 0; i < 1000; i++)
      for (const s of ['a', 'b', 'c']) docs.push({ ts: new Date(1e12 + i * 1000), sensor: s, i });
    await coll.insertMany(docs);
    for (const s of ['a', 'b', 'c']) {
      // Act
      const cursor = find(ctx(), { sensor: s }, { sort: { ts: -1 }, limit: 1 });
      const result = await cursor.toArray();
      const { executionStats } = await cursor.explain();
      // Assert
      expect(result).toStrictEqual([{ ts: new Date(1e12 + 999 * 1000), sensor: s, i: 999 }]);
      expect(executionStats.totalBucketsInCollection).toBe(300);
      expect(executionStats.totalBucketsExamined).toBeLessThanOrEqual(2);
    }
  });

  it('an aggregation that starts with that sort and a $limit reads a handful of buckets too', async () => {
    // Arrange: 3 series, 100 buckets each.
    const { coll, ctx } = await setupCollection({}, { timeseriesBucketMaxCount: 10 });
    const docs = [];
    for (let i = 0; i < 1000; i++)
      for (const s of ['a', 'b', 'c']) docs.push({ ts: new Date(1e12 + i * 1000), sensor: s, i });
    await coll.insertMany(docs);
    // Act
    const cursor = aggregate(ctx(), [
      { $match: { sensor: 'b' } },
      { $sort: { ts: -1 } },
      { $limit: 2 },
      { $project: { _id: 0, i: 1 } },
    ]);
    const result = await cursor.toArray();
    const { executionStats } = await cursor.explain();
    // Assert
    expect(result).toStrictEqual([{ i: 999 }, { i: 998 }]);
    expect(executionStats.totalBucketsExamined).toBeLessThanOrEqual(2);
  });

  it('merges overlapping buckets into a correct order (ascending and descending)', async () => {
    const { coll, ctx } = await setupCollection({}, { timeseriesBucketMaxCount: 3 });
    // Out-of-order inserts across calls create overlapping buckets.
    const times = [5, 1, 9, 3, 7, 2, 8, 4, 6, 0, 11, 10];
    for (const t of times) await coll.insertOne({ ts: new Date(1e12 + t * 1000), sensor: 's', t });
    const asc = await find(ctx(), {}, { sort: { ts: 1 } }).toArray();
    expect(asc.map((d) => d.t)).toEqual([...times].sort((a, b) => a - b));
    const desc = await find(ctx(), { t: { $ne: 4 } }, { sort: { ts: -1 }, limit: 5, skip: 1 }).toArray();
    expect(desc.map((d) => d.t)).toEqual([10, 9, 8, 7, 6]);
  });

  it('other sorts are blocking sorts with BSON order', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: new Int32(3) },
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', v: 1.5 },
      { ts: iso('2024-01-01T00:00:02Z'), sensor: 's', v: Long.fromNumber(2) },
    ]);
    const out = await find(ctx(), {}, { sort: { v: -1 }, limit: 2 }).toArray();
    expect(out.map((d) => String(d.v))).toEqual(['3', '2']);
  });
});

describe('arguments given as js-bson numbers (relaxed-false EJSON, unpromoted BSON)', () => {
  it('read as the numbers they hold: sort directions, $exists, $mod, $size and projection flags', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([
      { ts: iso('2024-01-01T00:00:01Z'), sensor: 's', _id: 1, x: 5, a: [1] },
      { ts: iso('2024-01-01T00:00:02Z'), sensor: 's', _id: 2, x: 7, a: [1, 2] },
    ]);
    const ids = async (filter: Record<string, unknown>, options: Record<string, unknown> = {}) =>
      (await find(ctx(), filter, options).toArray()).map((d) => d._id);
    // Descending, on the time field (the merge of buckets) and on a data field (a blocking sort).
    expect(await ids({}, { sort: { ts: new Int32(-1) } })).toEqual([2, 1]);
    expect(await ids({}, { sort: { x: new Double(-1) } })).toEqual([2, 1]);
    expect(await ids({ x: { $exists: new Int32(0) } })).toEqual([]);
    expect(await ids({ x: { $exists: new Int32(1) } })).toEqual([1, 2]);
    expect(await ids({ x: { $mod: [Long.fromNumber(2), Long.fromNumber(1)] } })).toEqual([1, 2]);
    expect(await ids({ a: { $size: new Int32(2) } })).toEqual([2]);
    // A flag, not a literal 1; an exclusion, not a computed 0.
    expect(await find(ctx(), { _id: 1 }, { projection: { x: new Int32(1) } }).toArray()).toStrictEqual([
      { _id: 1, x: 5 },
    ]);
    expect(
      await find(ctx(), { _id: 1 }, { projection: { x: new Int32(0), a: new Int32(0) } }).toArray(),
    ).toStrictEqual([{ ts: iso('2024-01-01T00:00:01Z'), sensor: 's', _id: 1 }]);
    expect(
      await aggregate(ctx(), [{ $project: { _id: new Int32(0), x: new Int32(1) } }]).toArray(),
    ).toStrictEqual([{ x: 5 }, { x: 7 }]);
  });
});

describe('countDocuments', () => {
  it('counts metaField-only matches without unpacking, and others by filtering', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      Array.from({ length: 30 }, (_, i) => ({ ts: new Date(1e12 + i * 1000), sensor: i % 3, v: i })),
    );
    expect(await countDocuments(ctx())).toBe(30);
    expect(await countDocuments(ctx(), { sensor: 1 })).toBe(10);
    expect(await countDocuments(ctx(), { sensor: 1, v: { $lt: 10 } })).toBe(3);
  });
});

describe('fields read through $getField', () => {
  it('are unpacked for filters, projections and pipelines', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([1, 5, 9].map((v, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', v })));
    const shorthand = { $expr: { $gt: [{ $getField: 'v' }, 4] } };
    const full = { $expr: { $gt: [{ $getField: { field: 'v' } }, 4] } };
    const literal = { $expr: { $gt: [{ $getField: { field: { $literal: 'v' } } }, 4] } };
    for (const filter of [shorthand, full, literal]) {
      expect(await countDocuments(ctx(), filter)).toBe(2);
      expect(await find(ctx(), filter, { projection: { _id: 0, ts: 1 } }).toArray()).toHaveLength(2);
    }
    const sum = await aggregate(ctx(), [
      { $group: { _id: null, s: { $sum: { $getField: 'v' } } } },
    ]).toArray();
    expect(sum).toEqual([{ _id: null, s: 15 }]);
  });
});

describe('aggregate', () => {
  it('pushes the leading $match down and unpacks only the needed fields', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      Array.from({ length: 30 }, (_, i) => ({
        ts: new Date(1e12 + i * 1000),
        sensor: i % 3,
        v: i,
        big: 'x'.repeat(10),
      })),
    );
    const cursor = aggregate(ctx(), [
      { $match: { sensor: 1 } },
      { $match: { v: { $gte: 10 } } },
      { $group: { _id: '$sensor', total: { $sum: '$v' }, n: { $sum: 1 } } },
    ]);
    expect(await cursor.toArray()).toStrictEqual([{ _id: 1, total: 10 + 13 + 16 + 19 + 22 + 25 + 28, n: 7 }]);
    const explain = await cursor.explain();
    expect(explain.eventFilter).toStrictEqual({ v: { $gte: 10 } });
    expect(explain.bucketFilter).toMatchObject({ $and: [{ meta: 1 }, expect.anything()] });
  });

  it('per-document pipelines stream', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      Array.from({ length: 3000 }, (_, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', v: i })),
    );
    const out = await aggregate(ctx(), [
      { $match: { v: { $lt: 2500 } } },
      { $project: { _id: 0, w: { $multiply: ['$v', 2] } } },
    ]).toArray();
    expect(out).toHaveLength(2500);
    expect(out[2499]).toStrictEqual({ w: 4998 });
  });

  it('stages after the $match see an int64 or an integral double by its value', async () => {
    // Arrange: values that read back as Long and Double (their BSON types kept), next to plain numbers.
    const { coll, ctx } = await setupCollection();
    const values = [Long.fromNumber(300), 20, Long.fromNumber(1000), 5.5, new Double(21), new Double(100)];
    await coll.insertMany(values.map((n, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', n })));
    // Act
    const sorted = await aggregate(ctx(), [{ $sort: { n: -1 } }, { $project: { _id: 0, n: 1 } }]).toArray();
    const grouped = await aggregate(ctx(), [
      {
        $group: {
          _id: null,
          max: { $max: '$n' },
          min: { $min: '$n' },
          sum: { $sum: '$n' },
          avg: { $avg: '$n' },
        },
      },
    ]).toArray();
    const matched = await aggregate(ctx(), [
      { $project: { n: 1 } },
      { $match: { n: { $gt: 50 } } },
    ]).toArray();
    // Assert: by value, as the server orders and adds them up; numbers as the driver promotes them.
    expect(sorted.map((d) => d.n)).toEqual([1000, 300, 100, 21, 20, 5.5]);
    expect(grouped).toEqual([{ _id: null, max: 1000, min: 5.5, sum: 1446.5, avg: 1446.5 / 6 }]);
    expect(matched.map((d) => d.n)).toEqual([300, 1000, 100]);
    // The stored values are as they were.
    const stored = await find(ctx(), {}, { projection: { _id: 0, n: 1 } }).toArray();
    expect(stored.map((d) => (d.n as { _bsontype?: string })._bsontype ?? typeof d.n)).toEqual([
      'Long',
      'number',
      'Long',
      'number',
      'Double',
      'Double',
    ]);
  });

  it("a $sort stage orders as find does: decimals, large int64s and strings in the server's order", async () => {
    // Arrange: values mingo orders by their strings (a Decimal128, a Long beyond 2^53), and strings whose
    // UTF-16 order differs from their UTF-8 order (U+FF5E before U+1F600 in bytes, after in code units).
    const { coll, ctx } = await setupCollection();
    const values = [
      Decimal128.fromString('7'),
      Long.fromString('9007199254740993'),
      20,
      Decimal128.fromString('100.5'),
      '\u{1F600}',
      '\uFF5E',
      'a',
    ];
    await coll.insertMany(values.map((n, i) => ({ ts: new Date(1e12 + i * 1000), sensor: 's', n, i })));
    const order = (docs: Array<Record<string, unknown>>) => docs.map((d) => d.i);
    // Act
    const found = order(await find(ctx(), {}, { sort: { n: 1 } }).toArray());
    const sorted = order(await aggregate(ctx(), [{ $sort: { n: 1 } }]).toArray());
    const limited = order(
      await aggregate(ctx(), [
        { $project: { n: 1, i: 1 } },
        { $sort: { n: new Int32(-1) } },
        { $limit: 3 },
      ]).toArray(),
    );
    // Assert
    expect(found).toEqual([0, 2, 3, 1, 6, 5, 4]);
    expect(sorted).toEqual(found);
    expect(limited).toEqual([4, 5, 6]);
  });

  it('an int64 beyond 2^53 stays a Long for the stages after the $match', async () => {
    const { coll, ctx } = await setupCollection();
    const big = Long.fromString('9007199254740993');
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', n: big });
    const [out] = await aggregate(ctx(), [{ $project: { _id: 0, n: 1 } }]).toArray();
    expect((out?.n as Long).toString()).toBe('9007199254740993');
  });

  it('$setWindowFields computes running totals and moving averages per series', async () => {
    // Arrange: two series, one reading a minute each.
    const { coll, ctx } = await setupCollection();
    await coll.insertMany(
      [1, 2, 3, 4].flatMap((v, i) => [
        { ts: new Date(1e12 + i * 60_000), sensor: 'a', v },
        { ts: new Date(1e12 + i * 60_000), sensor: 'b', v: 10 * v },
      ]),
    );
    // Act
    const out = await aggregate(ctx(), [
      {
        $setWindowFields: {
          partitionBy: '$sensor',
          sortBy: { ts: 1 },
          output: {
            total: { $sum: '$v', window: { documents: ['unbounded', 'current'] } },
            last2m: { $avg: '$v', window: { range: [-60, 0], unit: 'second' } },
          },
        },
      },
      { $match: { sensor: 'a' } },
      { $project: { _id: 0, v: 1, total: 1, last2m: 1 } },
    ]).toArray();
    // Assert
    expect(out).toEqual([
      { v: 1, total: 1, last2m: 1 },
      { v: 2, total: 3, last2m: 1.5 },
      { v: 3, total: 6, last2m: 2.5 },
      { v: 4, total: 10, last2m: 3.5 },
    ]);
  });

  it('unpacks the fields $top-like accumulators sort by; $top and $bottom give the output itself', async () => {
    // The time field appears only as a sortBy key, not as a "$ts" expression.
    const { coll, ctx } = await setupCollection();
    await coll.insertMany([3, 0, 7, 1].map((v, i) => ({ ts: new Date(1e12 + v * 1000), sensor: 's', v, i })));
    const out = await aggregate(ctx(), [
      {
        $group: {
          _id: '$sensor',
          latest: { $topN: { n: 2, sortBy: { ts: -1 }, output: '$v' } },
          earliest: { $bottomN: { n: 1, sortBy: { ts: -1 }, output: '$i' } },
          last: { $top: { sortBy: { ts: -1 }, output: ['$v', '$i'] } },
          first: { $bottom: { sortBy: { ts: -1 }, output: '$v' } },
        },
      },
    ]).toArray();
    // $topN and $bottomN give arrays; $top and $bottom the output itself, as the server does.
    expect(out).toEqual([{ _id: 's', latest: [7, 3], earliest: [1], last: [7, 2], first: 0 }]);
  });

  it('a $project in nested-document syntax reads the fields it names, as its dotted form does', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', _id: 1, a: { b: 1, c: 2 }, z: 3 });
    const run = async (stage: Record<string, unknown>) =>
      await aggregate(ctx(), [{ $project: stage }]).toArray();
    // An inclusion: `a` must be unpacked (it came out as `{_id: 1}`).
    expect(await run({ a: { b: 1 } })).toStrictEqual([{ a: { b: 1 }, _id: 1 }]);
    expect(await run({ a: { b: 1 } })).toStrictEqual(await run({ 'a.b': 1 }));
    // An exclusion: every other field stays (it was taken for an inclusion of nothing).
    expect(await run({ a: { b: 0 } })).toStrictEqual([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', _id: 1, a: { c: 2 }, z: 3 },
    ]);
    // Any non-zero number includes, as `1` does (the field was never unpacked).
    for (const flag of [2, -1, new Int32(3), new Double(1)]) {
      expect(await run({ _id: 0, z: flag })).toStrictEqual([{ z: 3 }]);
    }
  });

  it('a pipeline without stages after $match returns whole measurements', async () => {
    const { coll, ctx } = await setupCollection();
    await coll.insertOne({ ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: 1 });
    expect(await aggregate(ctx(), [{ $match: { v: 1 } }]).toArray()).toStrictEqual([
      { ts: iso('2024-01-01T00:00:00Z'), sensor: 's', v: 1 },
    ]);
  });
});
