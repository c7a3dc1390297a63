/**
 * Law: the column-selective reader (only the columns a query needs are decoded, the filter's columns first,
 * only matching rows built) returns exactly what a full unpack returns after the filter and the projection
 * are applied to whole measurements with mingo: the same documents, with the same fields in the same order,
 * for any filter (on one field, several, or on the whole document) and any top-level projection; and
 * `countDocuments` agrees.
 *
 * Buckets come from the engine in the format it writes by default, and are then rewritten, by a generated
 * choice per bucket, as version 1, version 2 (rows in time order) or version 3 (rows in reverse order), so
 * every format is read whatever the engine wrote.
 *
 * The reference is deliberately naive: every bucket is decompressed back into a version-1 document, every
 * row of it is built with every field, and mingo decides which rows match and which fields stay. Values are
 * plain JS values (numbers, strings, dates, booleans, null, arrays, sub-documents) so that mingo's semantics
 * are MongoDB's for them, in the reference and wherever the reader falls back to mingo (`$expr`); mingo runs
 * with the comparison expressions tsbuckets gives it (`kMingoContext`), since mingo's own find a `false`
 * and a missing field unordered where MongoDB orders every pair of types.
 */
import { Binary, serialize } from 'bson';
import fc from 'fast-check';
import { Query } from 'mingo/query';
import { describe, expect, it } from 'vitest';

import { BSONColumn } from '../../src/bucket-format/bson-column/bson-column.js';
import { decompressBucket } from '../../src/bucket-format/bucket-compression.js';
import { BucketEngine } from '../../src/engine/bucket-engine.js';
import type { TimeseriesOptions } from '../../src/index.js';
import { countDocuments, find } from '../../src/reader/reader.js';
import type { ReaderContext } from '../../src/reader/reader.js';
import type { StoredBucket } from '../../src/storage/storage.js';
import { kMingoContext } from '../../src/util/mingo-pipeline.js';

const BASE = Date.UTC(2024, 0, 1);
const FIELDS = ['a', 'b', 'c', '_id'] as const;

const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.integer({ min: -3, max: 3 }) },
  { weight: 2, arbitrary: fc.constantFrom(-1.5, 0.5, 2.25) },
  { weight: 2, arbitrary: fc.constantFrom('x', 'y', '') },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }).map((h) => new Date(BASE + h * 1800_000)) },
);
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: -2, max: 2 }), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.record({ p: fc.integer({ min: 0, max: 2 }), q: fc.constantFrom('x', 'y') }) },
);
// Few series, so that buckets fill up and close (compressed) within a case.
const metaArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: fc.constant('s1') },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.constant({ id: 'a', site: 'n' }) },
);

interface Row {
  readonly offset: number;
  readonly sensor: unknown;
  readonly hasSensor: boolean;
  /** Values of FIELDS in a generated order; `undefined` = missing. */
  readonly values: ReadonlyArray<unknown>;
  readonly order: ReadonlyArray<number>;
}
const rowArb: fc.Arbitrary<Row> = fc.record({
  offset: fc.integer({ min: 0, max: 2 * 3600 }),
  sensor: metaArb,
  hasSensor: fc.integer({ min: 0, max: 3 }).map((n) => n > 0),
  values: fc.tuple(...FIELDS.map(() => fc.option(valueArb, { nil: undefined, freq: 3 }))),
  order: fc.shuffledSubarray([0, 1, 2, 3], { minLength: 4, maxLength: 4 }),
});

function toDocs(rows: ReadonlyArray<Row>): Array<Record<string, unknown>> {
  return rows.map((r, i) => {
    const doc: Record<string, unknown> = { ts: new Date(BASE + r.offset * 1000 + i) };
    if (r.hasSensor) doc.sensor = r.sensor;
    for (const f of r.order) if (r.values[f] !== undefined) doc[FIELDS[f] as string] = r.values[f];
    return doc;
  });
}

const PATHS = ['a', 'b', 'c', '_id', 'sensor', 'sensor.id', 'a.p'] as const;
const timeOperand = fc.integer({ min: -600, max: 3 * 3600 + 600 }).map((s) => new Date(BASE + s * 1000));

function leafArb(): fc.Arbitrary<Record<string, unknown>> {
  const cmp = fc
    .tuple(
      fc.constantFrom(...PATHS),
      scalarArb.filter((x) => x !== null),
      fc.constantFrom('$eq', '$gt', '$gte', '$lt', '$lte', '$ne'),
    )
    .map(([p, x, op]) => ({ [p]: op === '$eq' ? x : { [op]: x } }));
  const exists = fc.tuple(fc.constantFrom(...PATHS), fc.boolean()).map(([p, b]) => ({ [p]: { $exists: b } }));
  const ins = fc
    .tuple(fc.constantFrom(...PATHS), fc.array(scalarArb, { minLength: 1, maxLength: 3 }))
    .map(([p, xs]) => ({ [p]: { $in: xs } }));
  const time = fc
    .tuple(fc.constantFrom('$gt', '$gte', '$lt', '$lte'), timeOperand)
    .map(([op, d]) => ({ ts: { [op]: d } }));
  // Evaluated by mingo (BsonQuery falls back to it): two columns compared, then the whole document.
  const exprFields = fc
    .tuple(fc.constantFrom('a', 'b', 'c'), fc.constantFrom('a', 'b', 'c'))
    .map(([x, y]) => ({ $expr: { $gt: [`$${x}`, `$${y}`] } }));
  const exprRoot = fc
    .integer({ min: 2, max: 5 })
    .map((n) => ({ $expr: { $gte: [{ $size: { $objectToArray: '$$ROOT' } }, n] } }));
  return fc.oneof(
    { weight: 5, arbitrary: cmp },
    { weight: 1, arbitrary: exists },
    { weight: 2, arbitrary: ins },
    { weight: 2, arbitrary: time },
    { weight: 1, arbitrary: exprFields },
    { weight: 1, arbitrary: exprRoot },
  );
}

const filterArb: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({}) },
  { weight: 4, arbitrary: leafArb() },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('$and', '$or'), fc.array(leafArb(), { minLength: 1, maxLength: 3 }))
      .map(([op, fs]) => ({ [op]: fs })),
  },
);

const TOP = ['ts', 'sensor', 'a', 'b', 'c'] as const;
const projectionArb: fc.Arbitrary<Record<string, 0 | 1> | undefined> = fc.oneof(
  fc.constant(undefined),
  fc
    .tuple(fc.subarray([...TOP], { minLength: 1 }), fc.constantFrom<0 | 1 | undefined>(0, 1, undefined))
    .map(([fields, id]) => ({
      ...Object.fromEntries(fields.map((f) => [f, 1 as const])),
      ...(id === undefined ? {} : { _id: id }),
    })),
  fc
    .tuple(fc.subarray([...TOP, '_id'], { minLength: 1 }))
    .map(([fields]) => Object.fromEntries(fields.map((f) => [f, 0 as const]))),
);

interface Config {
  readonly timeseries: TimeseriesOptions;
  readonly maxCount: number;
}
const configArb = fc.constantFrom<Config>(
  { timeseries: { timeField: 'ts', metaField: 'sensor' }, maxCount: 3 },
  { timeseries: { timeField: 'ts', metaField: 'sensor' }, maxCount: 1000 },
  { timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'minutes' }, maxCount: 5 },
);

type Format = 'as written' | 'v1' | 'v2' | 'v3';
const formatsArb = fc.array(fc.constantFrom<Format>('as written', 'v1', 'v2', 'v3'), {
  minLength: 1,
  maxLength: 6,
});

/** A version-1 bucket as version 2 (rows as stored) or 3 (rows reversed); every column a BSONColumn. */
function compressed(v1: StoredBucket, format: 'v2' | 'v3'): StoredBucket {
  const data = v1.data as Record<string, Record<string, unknown>>;
  const keys = Object.keys(data.ts ?? {});
  if (format === 'v3') keys.reverse();
  const columns: Record<string, Binary> = {};
  for (const [name, column] of Object.entries(data)) {
    const values = keys.map((k) => (Object.prototype.hasOwnProperty.call(column, k) ? column[k] : undefined));
    columns[name] = new Binary(BSONColumn.encode(values), 7);
  }
  const control = { ...(v1.control as object), version: format === 'v2' ? 2 : 3, count: keys.length };
  return { ...v1, control, data: columns };
}

async function load(
  config: Config,
  docs: Array<Record<string, unknown>>,
  formats: ReadonlyArray<Format>,
): Promise<{ ctx: ReaderContext; engine: BucketEngine }> {
  const engine = new BucketEngine({
    parameters: {
      timeseriesBucketMaxCount: config.maxCount,
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
    },
  });
  const coll = await engine.createCollection('p', { timeseries: config.timeseries });
  // Two calls: the second reopens, overlaps or closes buckets of the first; small counts close buckets
  // (compressed) while others stay open.
  const half = Math.floor(docs.length / 2);
  if (half > 0) await coll.insertMany(docs.slice(0, half), { ordered: false });
  if (docs.length > half) await coll.insertMany(docs.slice(half), { ordered: false });
  const buckets: StoredBucket[] = [];
  for await (const bucket of engine.storage.find(coll.bucketsNamespace, {})) buckets.push(bucket);
  for (const [i, stored] of buckets.entries()) {
    const format = formats[i % formats.length] as Format;
    if (format === 'as written') continue;
    const v1 = decompressBucket(stored) as StoredBucket;
    const rewritten = format === 'v1' ? v1 : compressed(v1, format);
    await engine.storage.replaceOne(coll.bucketsNamespace, { _id: v1._id }, rewritten);
  }
  return {
    engine,
    ctx: { storage: engine.storage, bucketsNs: coll.bucketsNamespace, options: coll.options },
  };
}

/** Every measurement of every bucket, built whole from the bucket decompressed to version 1. */
async function fullUnpack(ctx: ReaderContext): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for await (const stored of ctx.storage.find(ctx.bucketsNs, {})) {
    const bucket = decompressBucket(stored);
    const data = bucket.data as Record<string, Record<string, unknown>>;
    const times = data.ts ?? {};
    for (const key of Object.keys(times)) {
      const doc: Record<string, unknown> = { ts: times[key] };
      if (bucket.meta !== undefined) doc.sensor = bucket.meta;
      for (const [name, column] of Object.entries(data)) {
        if (name !== 'ts' && Object.prototype.hasOwnProperty.call(column, key)) doc[name] = column[key];
      }
      out.push(doc);
    }
  }
  return out;
}

/** mingo's filter, then mingo's projection; fields kept in the measurement's order, as MongoDB does. */
function reference(
  all: Array<Record<string, unknown>>,
  filter: Record<string, unknown>,
  projection: Record<string, 0 | 1> | undefined,
): Array<Record<string, unknown>> {
  const matching = new Query(filter, { context: kMingoContext }).find<Record<string, unknown>>(all).all();
  if (projection === undefined) return matching;
  return matching.map((doc) => {
    const [projected] = new Query({}, { context: kMingoContext })
      .find<Record<string, unknown>>([doc], projection)
      .all();
    return Object.fromEntries(Object.keys(doc).flatMap((k) => (k in (projected ?? {}) ? [[k, doc[k]]] : [])));
  });
}

/** Exact BSON bytes, field order included. */
function key(doc: Record<string, unknown>): string {
  return Buffer.from(serialize(doc)).toString('hex');
}

describe('reader property: column-selective reading equals full unpack + mingo', () => {
  it('find(filter, {projection}) and countDocuments(filter) agree with the naive reading', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArb,
        fc.array(rowArb, { maxLength: 30 }),
        filterArb,
        projectionArb,
        formatsArb,
        async (config, rows, filter, projection, formats) => {
          // Arrange
          const { ctx, engine } = await load(config, toDocs(rows), formats);
          const expected = reference(await fullUnpack(ctx), filter, projection);
          // Act
          const actual = await find(ctx, filter, projection === undefined ? {} : { projection }).toArray();
          const count = await countDocuments(ctx, filter);
          // Assert
          expect(actual.map(key).sort()).toEqual(expected.map(key).sort());
          expect(count).toBe(expected.length);
          await engine.close();
        },
      ),
      { numRuns: 1500 },
    );
  }, 120_000);
});
