/**
 * Law: for any measurements and any filter, the reader returns exactly the measurements a naive filter
 * over the original documents returns (as a multiset, BSON types exact); with a sort on time and a limit
 * it returns exactly the first `limit` of them in time order, through `find` and through an aggregation that
 * starts with that sort and limit.
 *
 * The reference is mingo over a "plain view" of the original documents and the filter (js-bson numbers
 * mapped to JS numbers). Generated numbers are chosen so that this view is exact: Longs stay within
 * ±2^53, Decimal128 values are small dyadic fractions.
 */
import { Decimal128, Double, Int32, Long, ObjectId, serialize } from 'bson';
import fc from 'fast-check';
import { Query } from 'mingo';
import { describe, expect, it } from 'vitest';

import { BucketEngine } from '../../src/engine/bucket-engine.js';
import { aggregate, countDocuments, find } from '../../src/reader/reader.js';
import type { ReaderContext } from '../../src/reader/reader.js';
import type { TimeseriesOptions } from '../../src/options.js';
import { isBsonValue } from '../../src/util/bson-type.js';

const BASE = Date.UTC(2024, 0, 1);
const OIDS = [0, 1, 2].map((i) => new ObjectId(`65a0000000000000000000${i}${i}`));

const numberArb = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom(-1.5, 0.5, 2.5),
  fc.integer({ min: -3, max: 3 }).map((n) => new Int32(n)),
  fc.integer({ min: -3, max: 3 }).map((n) => Long.fromNumber(n)),
  fc.constantFrom(Long.fromString('9007199254740991'), Long.fromString('-9007199254740991')),
  fc.constantFrom(-2, 0.5, 1, 3).map((n) => new Double(n)),
  fc.constantFrom('-1', '0.5', '2', '2.5').map((s) => Decimal128.fromString(s)),
);
const scalarArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: numberArb },
  { weight: 2, arbitrary: fc.constantFrom('a', 'b', 'c', '') },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constantFrom(...OIDS) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 4 }).map((h) => new Date(BASE + h * 1800_000)) },
);
const valueArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: scalarArb },
  { weight: 1, arbitrary: fc.array(numberArb, { maxLength: 3 }) },
);
/** Meta values are generated normalised (object keys sorted), as the reader returns them. */
const metaArb: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('s1', 's2'),
  fc.constantFrom(1, 2).map((n) => new Int32(n)),
  fc.constant(null),
  fc.record({ id: fc.constantFrom('a', 'b'), loc: fc.record({ x: numberArb }) }),
);

interface Row {
  readonly offset: number;
  readonly sensor: unknown;
  readonly hasSensor: boolean;
  readonly v: unknown;
  readonly w: unknown;
}
const rowArb: fc.Arbitrary<Row> = fc.record({
  offset: fc.integer({ min: 0, max: 4 * 3600 }),
  sensor: metaArb,
  hasSensor: fc.boolean(),
  v: fc.option(valueArb, { nil: undefined }),
  w: fc.option(numberArb, { nil: undefined }),
});

const PATHS = ['sensor', 'sensor.id', 'sensor.loc.x', 'v', 'w', '_id'] as const;
const dateOperand = fc.integer({ min: -600, max: 4 * 3600 + 600 }).map((s) => new Date(BASE + s * 1000));

function leafArb(): fc.Arbitrary<Record<string, unknown>> {
  const onValue = fc.tuple(
    fc.constantFrom(...PATHS),
    scalarArb.filter((x) => x !== null),
    fc.constantFrom('$eq', '$gt', '$gte', '$lt', '$lte', '$ne'),
  );
  const ranges = onValue.map(([p, x, op]) => ({ [p]: op === '$eq' ? x : { [op]: x } }));
  const nulls = fc
    .tuple(fc.constantFrom(...PATHS), fc.constantFrom('$eq', '$ne'))
    .map(([p, op]) => ({ [p]: { [op]: null } }));
  const ins = fc
    .tuple(fc.constantFrom(...PATHS), fc.array(scalarArb, { minLength: 1, maxLength: 3 }))
    .map(([p, xs]) => ({ [p]: { $in: xs } }));
  const exists = fc.tuple(fc.constantFrom(...PATHS), fc.boolean()).map(([p, b]) => ({ [p]: { $exists: b } }));
  const time = fc
    .tuple(fc.constantFrom('$eq', '$gt', '$gte', '$lt', '$lte'), dateOperand)
    .map(([op, d]) => ({ ts: { [op]: d } }));
  const timeRange = fc.tuple(dateOperand, dateOperand).map(([a, b]) => ({ ts: { $gte: a, $lt: b } }));
  const timeIn = fc.array(dateOperand, { minLength: 1, maxLength: 2 }).map((ds) => ({ ts: { $in: ds } }));
  const timeNonDate = fc.constant({ ts: { $gt: 5 } });
  return fc.oneof(
    { weight: 5, arbitrary: ranges },
    { weight: 1, arbitrary: nulls },
    { weight: 2, arbitrary: ins },
    { weight: 1, arbitrary: exists },
    { weight: 3, arbitrary: time },
    { weight: 2, arbitrary: timeRange },
    { weight: 1, arbitrary: timeIn },
    { weight: 1, arbitrary: timeNonDate },
  );
}

const filterArb: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ f: Record<string, unknown> }>((tie) => ({
  f: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 4, arbitrary: leafArb() },
    { weight: 1, arbitrary: fc.array(tie('f'), { minLength: 1, maxLength: 3 }).map((fs) => ({ $and: fs })) },
    { weight: 1, arbitrary: fc.array(tie('f'), { minLength: 1, maxLength: 3 }).map((fs) => ({ $or: fs })) },
    { weight: 1, arbitrary: fc.tuple(leafArb(), leafArb()).map(([a, b]) => ({ ...a, ...b })) },
  ),
})).f;

interface Config {
  readonly timeseries: TimeseriesOptions;
  readonly maxCount: number;
}
const configArb: fc.Arbitrary<Config> = fc.constantFrom<Config>(
  { timeseries: { timeField: 'ts', metaField: 'sensor' }, maxCount: 4 },
  {
    timeseries: {
      timeField: 'ts',
      metaField: 'sensor',
      bucketMaxSpanSeconds: 1800,
      bucketRoundingSeconds: 1800,
    },
    maxCount: 1000,
  },
  { timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'minutes' }, maxCount: 3 },
);

/** The view mingo understands: js-bson numbers as JS numbers (exact for the generated values). */
function plain(v: unknown): unknown {
  if (isBsonValue(v, 'Int32') || isBsonValue(v, 'Double')) return v.value;
  if (isBsonValue(v, 'Long') || isBsonValue(v, 'Decimal128')) return Number(v.toString());
  if (Array.isArray(v)) return v.map(plain);
  if (
    v !== null &&
    typeof v === 'object' &&
    [Object.prototype, null].includes(Object.getPrototypeOf(v) as object | null)
  ) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

/** A BSON-type-exact key for multiset comparison; top-level field order is not significant. */
function key(doc: Record<string, unknown>): string {
  const sorted = Object.fromEntries(
    Object.keys(doc)
      .sort()
      .map((k) => [k, doc[k]]),
  );
  return Buffer.from(serialize(sorted)).toString('hex');
}

function toDocs(rows: ReadonlyArray<Row>): Array<Record<string, unknown>> {
  // Distinct times (offset + index ms) make time-ordered results unique.
  return rows.map((r, i) => {
    const doc: Record<string, unknown> = { ts: new Date(BASE + r.offset * 1000 + i), _id: i };
    if (r.hasSensor) doc.sensor = r.sensor;
    if (r.v !== undefined) doc.v = r.v;
    if (r.w !== undefined) doc.w = r.w;
    return doc;
  });
}

async function load(config: Config, docs: Array<Record<string, unknown>>) {
  const engine = new BucketEngine({
    parameters: {
      timeseriesBucketMaxCount: config.maxCount,
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
    },
  });
  const coll = await engine.createCollection('p', { timeseries: config.timeseries });
  // Several insert calls: later ones reopen or overlap earlier buckets.
  const half = Math.floor(docs.length / 2);
  if (half > 0) await coll.insertMany(docs.slice(0, half), { ordered: false });
  if (docs.length > half) await coll.insertMany(docs.slice(half), { ordered: false });
  const ctx: ReaderContext = {
    storage: engine.storage,
    bucketsNs: coll.bucketsNamespace,
    options: coll.options,
  };
  return { ctx, engine };
}

function reference(docs: Array<Record<string, unknown>>, filter: Record<string, unknown>) {
  const query = new Query(plain(filter) as Record<string, unknown>, {});
  return docs.filter((d) => query.test(plain(d) as Record<string, unknown>));
}

describe('reader property: find equals naive filtering', () => {
  it('find(filter) is the multiset of matching measurements, and countDocuments agrees', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArb,
        fc.array(rowArb, { maxLength: 40 }),
        filterArb,
        async (config, rows, filter) => {
          // Arrange
          const docs = toDocs(rows);
          const { ctx, engine } = await load(config, docs);
          // Act
          const actual = await find(ctx, filter).toArray();
          const count = await countDocuments(ctx, filter);
          await engine.close();
          // Assert
          const expected = reference(docs, filter);
          expect(actual.map(key).sort()).toEqual(expected.map(key).sort());
          expect(count).toBe(expected.length);
        },
      ),
      { numRuns: 2500 },
    );
  });

  it('find(filter, {sort: {ts: ±1}, limit}) is the first `limit` matches in time order', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArb,
        fc.array(rowArb, { maxLength: 40 }),
        filterArb,
        fc.constantFrom(1, -1),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 2 }),
        async (config, rows, filter, direction, limit, skip) => {
          // Arrange
          const docs = toDocs(rows);
          const { ctx, engine } = await load(config, docs);
          // Act
          const actual = await find(ctx, filter, {
            sort: { ts: direction },
            limit,
            skip,
          }).toArray();
          await engine.close();
          // Assert
          const sorted = reference(docs, filter).sort(
            (a, b) => direction * ((a.ts as Date).getTime() - (b.ts as Date).getTime()),
          );
          const expected = sorted.slice(skip, limit === 0 ? undefined : skip + limit);
          expect(actual.map(key)).toEqual(expected.map(key));
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('aggregate([$match, {$sort: {ts: ±1}}, {$limit}, ...]) is the first `limit` matches in time order', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArb,
        fc.array(rowArb, { maxLength: 40 }),
        filterArb,
        fc.constantFrom(1, -1),
        fc.integer({ min: 1, max: 6 }),
        fc.boolean(),
        async (config, rows, filter, direction, limit, project) => {
          // Arrange
          const docs = toDocs(rows);
          const { ctx, engine } = await load(config, docs);
          // Act: read in time order and stopped at the limit; a stage after it runs on what is left.
          const pipeline = [
            { $match: filter },
            { $sort: { ts: direction } },
            { $limit: limit },
            ...(project ? [{ $project: { _id: 1, ts: 1 } }] : []),
          ];
          const actual = await aggregate(ctx, pipeline).toArray();
          await engine.close();
          // Assert
          const sorted = reference(docs, filter).sort(
            (a, b) => direction * ((a.ts as Date).getTime() - (b.ts as Date).getTime()),
          );
          const expected = sorted.slice(0, limit).map((d) => (project ? { _id: d._id, ts: d.ts } : d));
          expect(actual.map(key)).toEqual(expected.map(key));
        },
      ),
      { numRuns: 800 },
    );
  });
});
