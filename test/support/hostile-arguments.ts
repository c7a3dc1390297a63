/**
 * Hostile arguments and the laws they must obey, shared by the property test (CI size) and the fuzz
 * script (`npm run fuzz`, 10 000 cases).
 *
 * The generators build filters, options and pipelines from MongoDB's operators, unknown ones, malformed
 * arguments and values BSON cannot hold. Two laws:
 * - every read, aggregate, update and delete either succeeds or fails with a TimeseriesError (never a
 *   TypeError, a RangeError or mingo's untyped Error), and a failed delete changes nothing;
 * - a pipeline is refused with the code of its first malformed stage, as the server parses stages in order.
 *
 * The checks throw a plain Error when a law is broken, so they run under vitest and under `tsx` alike.
 */
import fc from 'fast-check';

import { TimeseriesError } from '../../src/index.js';
import type { BucketEngine, TimeseriesCollection } from '../../src/index.js';

const scalar = fc.oneof(
  fc.integer({ min: -3, max: 3 }),
  fc.constantFrom('a', 'b', '(', '', 5n, 2n ** 70n, null, undefined, true, -0, Number.NaN),
  fc.constantFrom(new Date(0), new Date(Number.NaN), /a/, /(?:)/g, Symbol('s'), () => 1, new Map(), [1, 'a']),
);

const fieldName = fc.constantFrom('v', 'm', 'm.site', 't', 'arr', 'arr.0', '__proto__', 'a.b', '$x', '');
const fieldOperator = fc.constantFrom(
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exists',
  '$type',
  '$size',
  '$all',
  '$elemMatch',
  '$not',
  '$regex',
  '$options',
  '$mod',
  '$bitsAllSet',
  '$foo',
  '$where',
  'plain',
);
const topOperator = fc.constantFrom(
  '$and',
  '$or',
  '$nor',
  '$expr',
  '$comment',
  '$jsonSchema',
  '$where',
  '$bar',
  '$text',
);

/** Filters of MongoDB's grammar with hostile leaves; each level may break a rule. */
const filter = fc.letrec<{ filter: Record<string, unknown>; operand: unknown }>((tie) => ({
  operand: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('operand'), { maxLength: 3 }),
    fc.dictionary(fieldOperator, tie('operand'), { maxKeys: 2 }),
    tie('filter'),
  ),
  filter: fc
    .array(
      fc.oneof(
        fc.tuple(fieldName, tie('operand')),
        fc.tuple(topOperator, fc.oneof(fc.array(tie('filter'), { maxLength: 2 }), tie('operand'))),
      ),
      { maxLength: 3 },
    )
    .map((entries) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of entries)
        Object.defineProperty(out, k, { value: v, enumerable: true, writable: true });
      return out;
    }),
}));

/** A filter with hostile leaves, or a value that is no filter at all. */
export const hostileArgument: fc.Arbitrary<unknown> = fc.oneof(
  filter.filter,
  fc.constantFrom('abc', null, 5, [1], new Map(), 5n, Symbol('x')),
);

/** Find options: absent, not an object, or a mix of valid and malformed sort, limit, skip, projection. */
export const hostileFindOptions: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(null, 'x', 5),
  fc.record(
    {
      sort: fc.oneof(fc.constant({ t: 1 }), fc.constant({ v: 2 }), fc.constant('x')),
      limit: fc.constantFrom(0, 1, -1, 'x', 2n),
      skip: fc.constantFrom(0, 1, -1, Number.NaN),
      projection: fc.oneof(
        fc.constant({ v: 1 }),
        fc.constant({ v: 0, t: 1 }),
        fc.constant({ $foo: 1 }),
        fc.constant(3),
      ),
    },
    { requiredKeys: [] },
  ),
);

/** Pipelines of hostile `$match` stages, valid and malformed stages, or a value that is no pipeline. */
export const hostilePipeline: fc.Arbitrary<unknown> = fc.oneof(
  fc.array(
    fc.oneof(
      filter.filter.map((f) => ({ $match: f })),
      fc.constantFrom(
        { $limit: 1 },
        { $foo: {} },
        { $group: { _id: '$m', n: { $sum: 1 } } },
        { $group: { _id: null, x: { $nope: 1 } } },
        { $group: { n: { $sum: 1 } } },
        { $group: { _id: null, x: { $sum: 1, $max: 1 } } },
        { $count: '' },
        { $facet: { a: [{ $match: { $where: 'true' } }] } },
        { $project: { x: { $function: { body: () => 1, args: [], lang: 'js' } } } },
      ),
      fc.constantFrom(
        { $match: 'x' },
        {},
        { $match: {}, $limit: 1 },
        { $sort: { v: 3 } },
        { $project: { v: '$$nope' } },
      ),
    ),
    { maxLength: 3 },
  ),
  fc.constantFrom({}, 'x', null),
);

/** The error a call failed with, or `undefined` when it succeeded. */
async function outcome(run: () => unknown): Promise<unknown> {
  return await Promise.resolve()
    .then(run)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

/** Throws unless `error` is absent or a TimeseriesError; the message carries the untyped error's stack. */
function assertTyped(call: string, error: unknown): void {
  if (error === undefined || TimeseriesError.isTimeseriesError(error)) return;
  const shown = error instanceof Error ? (error.stack ?? error.message) : 'a value that is not an Error';
  throw new Error(`${call} failed with an untyped error: ${shown}`, { cause: error });
}

/**
 * Run every read, aggregate, update and delete with hostile arguments on a fresh collection `c` of
 * `engine` (dropped and recreated, so one engine serves many cases); throws when a law is broken.
 *
 * @param engine - the engine to run on.
 * @param arg - the filter (or non-filter) passed to find, countDocuments, the buckets, updateMany,
 *   deleteOne and deleteMany.
 * @param options - the find options.
 * @param stages - the pipeline passed to aggregate.
 */
export async function checkHostileArguments(
  engine: BucketEngine,
  arg: unknown,
  options: unknown,
  stages: unknown,
): Promise<void> {
  // Arrange
  await engine.collection('c')?.drop();
  const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
  await coll.insertMany([
    { t: new Date(0), m: { site: 'a' }, v: 1, arr: [1, 2] },
    { t: new Date(1000), m: { site: 'b' }, v: 'x', arr: [] },
  ]);
  // Act + Assert
  assertTyped('find', await outcome(() => coll.find(arg as never, options as never).toArray()));
  assertTyped('countDocuments', await outcome(() => coll.countDocuments(arg as never)));
  assertTyped('aggregate', await outcome(() => coll.aggregate(stages as never).toArray()));
  assertTyped('buckets.find', await outcome(() => coll.buckets.find(arg as never).toArray()));
  assertTyped('updateMany', await outcome(() => coll.updateMany(arg as never, { $set: { m: 'z' } })));
  for (const method of ['deleteOne', 'deleteMany'] as const) {
    const before = await coll.countDocuments();
    const failed = await outcome(() => coll[method](arg as never));
    assertTyped(method, failed);
    if (failed !== undefined) {
      const after = await coll.countDocuments();
      if (after !== before)
        throw new Error(`a failed ${method} changed the count from ${before} to ${after}`);
    }
  }
}

/** One pipeline stage and the code the server answers for it alone (`'ok'`: accepted). */
export type StageCode = readonly [stage: Record<string, unknown>, code: string];

/** Valid and malformed stages, each with the code the server answers for it alone. */
export const stageCodes: ReadonlyArray<StageCode> = [
  [{ $match: { m: 'a' } }, 'ok'],
  [{ $group: { _id: '$m', n: { $sum: 1 } } }, 'ok'],
  [{ $sort: { _id: 1 } }, 'ok'],
  [{ $count: 'n' }, 'ok'],
  [{ $limit: 2 }, 'ok'],
  [{ $group: { _id: null, x: { $foo: 1 } } }, 'Location15952'],
  [{ $group: { x: { $sum: 1 } } }, 'Location15955'],
  [{ $group: 'x' }, 'Location15947'],
  [{ $group: { _id: null, x: 1 } }, 'Location40234'],
  [{ $group: { _id: null, x: { $sum: 1, $avg: 1 } } }, 'Location40238'],
  [{ $sort: { v: 0 } }, 'Location15975'],
  [{ $sort: {} }, 'Location15976'],
  [{ $count: 1 }, 'Location40156'],
  [{ $count: 'a.b' }, 'Location40160'],
  [{ $unwind: 'arr' }, 'Location28818'],
  [{ $unwind: '$arr' }, 'ok'],
  [{ $match: { $where: 'true' } }, 'BadValue'],
  [{ $match: 'x' }, 'Location15959'],
  [{ $bogus: 1 }, 'Location40324'],
  [{ $limit: 1, $skip: 1 }, 'Location40323'],
];

/** Pipelines of up to 4 stages drawn from {@link stageCodes}. */
export const stageCodePipeline: fc.Arbitrary<StageCode[]> = fc.array(fc.constantFrom(...stageCodes), {
  maxLength: 4,
});

/**
 * The collection the stage-code law runs on: `c` in `engine`, holding one measurement.
 *
 * @param engine - a fresh engine.
 */
export async function stageCodeCollection(engine: BucketEngine): Promise<TimeseriesCollection> {
  const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
  await coll.insertMany([{ t: new Date(0), m: 'a', v: 1 }]);
  return coll;
}

/**
 * Aggregate `chosen` on `coll` and check it fails with the code of its first malformed stage (or
 * succeeds when every stage is accepted); throws when the law is broken.
 *
 * @param coll - the collection from {@link stageCodeCollection}.
 * @param chosen - the stages, each with the code the server answers for it alone.
 */
export async function checkStageCodes(
  coll: TimeseriesCollection,
  chosen: ReadonlyArray<StageCode>,
): Promise<void> {
  // Arrange
  const expected = chosen.find(([, code]) => code !== 'ok')?.[1] ?? 'ok';
  // Act
  const error = await outcome(() => coll.aggregate(chosen.map(([stage]) => stage)).toArray());
  // Assert
  assertTyped('aggregate', error);
  const actual = error === undefined ? 'ok' : (error as TimeseriesError).codeName;
  if (actual !== expected) {
    const pipeline = JSON.stringify(chosen.map(([stage]) => stage));
    throw new Error(`pipeline ${pipeline} answered ${actual}, expected ${expected}`);
  }
}
