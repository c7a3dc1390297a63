/**
 * Hostile arguments (issue #15 §4): filters, options and pipelines built from MongoDB's operators, unknown
 * ones, malformed arguments and values BSON cannot hold. Law: every read and delete either succeeds or
 * fails with a TimeseriesError (never a TypeError, a RangeError or mingo's untyped Error), and a failed
 * call changes nothing.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../src/index.js';

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

const hostileArgument = fc.oneof(
  filter.filter,
  fc.constantFrom('abc', null, 5, [1], new Map(), 5n, Symbol('x')),
);

const findOptions = fc.oneof(
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

const pipeline = fc.oneof(
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

async function outcome(run: () => unknown): Promise<unknown> {
  return await Promise.resolve()
    .then(run)
    .then(
      () => undefined,
      (e: unknown) => e,
    );
}

function expectTyped(error: unknown): void {
  if (error === undefined) return;
  // An untyped error fails the property with its own message and stack.
  expect(
    TimeseriesError.isTimeseriesError(error),
    error instanceof Error ? (error.stack ?? error.message) : 'a value that is not an Error',
  ).toBe(true);
}

describe('hostile arguments', () => {
  it('every read, aggregate and delete succeeds or fails with a TimeseriesError, and a failure changes nothing', async () => {
    const engine = new BucketEngine();
    await fc.assert(
      fc.asyncProperty(hostileArgument, findOptions, pipeline, async (arg, options, stages) => {
        // Arrange
        await engine.collection('c')?.drop();
        const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
        await coll.insertMany([
          { t: new Date(0), m: { site: 'a' }, v: 1, arr: [1, 2] },
          { t: new Date(1000), m: { site: 'b' }, v: 'x', arr: [] },
        ]);
        // Act + Assert
        expectTyped(await outcome(() => coll.find(arg as never, options as never).toArray()));
        expectTyped(await outcome(() => coll.countDocuments(arg as never)));
        expectTyped(await outcome(() => coll.aggregate(stages as never).toArray()));
        expectTyped(await outcome(() => coll.buckets.find(arg as never).toArray()));
        expectTyped(await outcome(() => coll.updateMany(arg as never, { $set: { m: 'z' } })));
        const before = await coll.countDocuments();
        const failed = await outcome(() => coll.deleteMany(arg as never));
        expectTyped(failed);
        if (failed !== undefined) expect(await coll.countDocuments()).toBe(before);
      }),
      { numRuns: 200 },
    );
    await engine.close();
  }, 120_000);

  it('a pipeline is refused with the code of its first malformed stage, as the server parses stages in order', async () => {
    // Each stage with the code the server answers for it alone ('ok': accepted).
    const stages: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
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
    const engine = new BucketEngine();
    const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
    await coll.insertMany([{ t: new Date(0), m: 'a', v: 1 }]);
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...stages), { maxLength: 4 }), async (chosen) => {
        // Arrange
        const expected = chosen.find(([, code]) => code !== 'ok')?.[1] ?? 'ok';
        // Act
        const error = await outcome(() => coll.aggregate(chosen.map(([stage]) => stage)).toArray());
        // Assert
        expectTyped(error);
        expect(error === undefined ? 'ok' : (error as TimeseriesError).codeName).toBe(expected);
      }),
      { numRuns: 100 },
    );
    await engine.close();
  });
});
