import { Aggregator, Query } from 'mingo';
import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import {
  checkFilter,
  checkNesting,
  checkPipeline,
  kMingoOptions,
  mingoCall,
  toMongoError,
  wrongType,
} from '../../../src/util/query-validation.js';

function refusal(run: () => unknown): { codeName: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    const e = error as TimeseriesError;
    return { codeName: e.codeName, message: e.message };
  }
  throw new Error('expected a refusal');
}

function andChain(depth: number): Record<string, unknown> {
  let filter: Record<string, unknown> = { v: 1 };
  for (let i = 0; i < depth; i++) filter = { $and: [filter] };
  return filter;
}

describe('checkFilter', () => {
  it.each([
    ['abc', "BSON field 'find.filter' is the wrong type 'string', expected type 'object'"],
    [null, "BSON field 'find.filter' is the wrong type 'null', expected type 'object'"],
    [[1], "BSON field 'find.filter' is the wrong type 'array', expected type 'object'"],
    [5, "BSON field 'find.filter' is the wrong type 'int', expected type 'object'"],
    [5n, "BSON field 'find.filter' is the wrong type 'long', expected type 'object'"],
    [new Map(), "BSON field 'find.filter' is the wrong type 'object of class Map', expected type 'object'"],
  ])('refuses a filter that is not a document (case %#)', (filter, message) => {
    expect(
      refusal(() => {
        checkFilter(filter, 'find.filter');
      }),
    ).toEqual({ codeName: 'TypeMismatch', message });
  });

  it.each([
    [{ v: { $foo: 1 } }, 'unknown operator: $foo'],
    [{ v: { $gt: 1, $foo: 5n } }, 'unknown operator: $foo'],
    [{ v: { $gt: 1, plain: 1 } }, 'unknown operator: plain'],
    [{ v: { $not: { $foo: 1 } } }, 'unknown operator: $foo'],
    [{ v: { $elemMatch: { $foo: 1 } } }, 'unknown operator: $foo'],
    [{ v: { $elemMatch: { a: { $foo: 1 } } } }, 'unknown operator: $foo'],
    [{ $or: [{ v: { $foo: 1 } }] }, 'unknown operator: $foo'],
    [
      { $foo: 1 },
      "unknown top level operator: $foo. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.",
    ],
    [{ $and: [] }, '$and must be a nonempty array'],
    [{ $or: {} }, '$or must be a nonempty array'],
    [{ $nor: [1] }, "$nor argument's entries must be objects"],
    [{ v: { $in: 5 } }, '$in needs an array'],
    [{ v: { $nin: 'x' } }, '$nin needs an array'],
    [{ v: { $all: {} } }, '$all needs an array'],
    [{ v: { $not: 5 } }, '$not needs a regex or a document'],
    [{ v: { $not: {} } }, '$not cannot be empty'],
    [{ v: { $elemMatch: 5 } }, '$elemMatch needs an Object'],
    [{ v: { $mod: [1] } }, 'malformed mod, not enough elements'],
    [{ v: { $size: 'x' } }, '$size needs a number'],
  ])('refuses case %# with BadValue', (filter, message) => {
    expect(
      refusal(() => {
        checkFilter(filter, 'find.filter');
      }),
    ).toEqual({ codeName: 'BadValue', message });
  });

  it('accepts the operators MongoDB knows, and documents compared as values', () => {
    const filters = [
      {},
      { v: 1, 'a.b': { x: 1, $y: 2 } },
      { v: { $gte: 1, $lt: 5n }, w: { $in: [1, /a/] }, x: { $not: /a/ }, y: { $not: { $gt: 1 } } },
      { $and: [{ v: 1 }], $or: [{ w: 2 }], $nor: [{ x: 3 }], $comment: 'c', $expr: { $eq: ['$a', 1] } },
      { $jsonSchema: { required: ['v'] } },
      { v: { $elemMatch: { $gt: 1 } }, w: { $elemMatch: { a: 1, b: { $lt: 2 } } } },
      { v: { $exists: true, $type: 'int', $size: 2, $mod: [2, 0], $regex: 'a', $options: 'i' } },
    ];
    for (const filter of filters)
      expect(() => {
        checkFilter(filter, 'find.filter');
      }).not.toThrow();
  });

  it('refuses operators nested past 200 BSON levels (99 $and levels pass) with Overflow, BigInts inside', () => {
    expect(() => {
      checkFilter(andChain(99), 'find.filter');
    }).not.toThrow();
    const deep = andChain(100);
    (deep.$and as Record<string, unknown>[]).push({ n: 5n });
    expect(
      refusal(() => {
        checkFilter(deep, 'find.filter');
      }).codeName,
    ).toBe('Overflow');
  });

  it('refuses values nested past 200 levels with Overflow, and circular values, without recursing further', () => {
    let value: unknown = 1;
    for (let i = 0; i < 100_000; i++) value = { a: value };
    expect(
      refusal(() => {
        checkFilter({ v: value }, 'find.filter');
      }),
    ).toEqual({
      codeName: 'Overflow',
      message: 'BSONObj exceeded maximum nested object depth: 200',
    });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(
      refusal(() => {
        checkFilter({ v: circular }, 'find.filter');
      }).codeName,
    ).toBe('BadValue');
  });
});

describe('$where', () => {
  const kRead = '$where is not allowed in this context';
  const kWrite = 'Cannot use $where when performing an update or delete on a time-series collection';
  const filters = [
    { $where: 'true' },
    { $where: () => true },
    { v: 1, $or: [{ w: 2 }, { $where: 'this.v > 1' }] },
    { $nor: [{ $and: [{ $where: 'x' }] }] },
    { arr: { $elemMatch: { $where: 'x' } } },
  ];

  it.each(filters)(
    'is refused in a read filter with BadValue, in an update or delete with InvalidOptions (%#)',
    (filter) => {
      expect(
        refusal(() => {
          checkFilter(filter, 'find.filter');
        }),
      ).toEqual({ codeName: 'BadValue', message: kRead });
      expect(
        refusal(() => {
          checkFilter(filter, 'delete.q', 'write');
        }),
      ).toEqual({ codeName: 'InvalidOptions', message: kWrite });
      expect(
        refusal(() => {
          checkPipeline([{ $match: filter }]);
        }),
      ).toEqual({ codeName: 'BadValue', message: kRead });
    },
  );

  it('mingo runs no script: a $where, $function or $accumulator that reaches it is refused with BadValue', () => {
    let ran = false;
    const script = () => {
      ran = true;
      return true;
    };
    const docs = [{ v: 1 }];
    const runs: ReadonlyArray<() => unknown> = [
      () => new Query({ $where: script }, kMingoOptions).test({ v: 1 }),
      () => new Aggregator([{ $facet: { a: [{ $match: { $where: script } }] } }], kMingoOptions).run(docs),
      () =>
        new Aggregator(
          [{ $project: { x: { $function: { body: script, args: [], lang: 'js' } } } }],
          kMingoOptions,
        ).run(docs),
    ];
    const refusals = runs.map((run) => refusal(() => mingoCall(run)));
    expect(refusals).toEqual([
      { codeName: 'BadValue', message: '$where is not allowed in this context' },
      { codeName: 'BadValue', message: '$where is not allowed in this context' },
      { codeName: 'BadValue', message: '$function is not allowed in this context' },
    ]);
    expect(ran).toBe(false);
  });
});

describe('checkNesting', () => {
  it('allows 200 levels', () => {
    let value: unknown = 1;
    for (let i = 0; i < 200; i++) value = [value];
    expect(() => {
      checkNesting(value);
    }).not.toThrow();
    expect(
      refusal(() => {
        checkNesting([value]);
      }).codeName,
    ).toBe('Overflow');
  });
});

describe('checkPipeline', () => {
  it.each([
    [{}, 'TypeMismatch', "BSON field 'aggregate.pipeline' is the wrong type 'object', expected type 'array'"],
    [[5], 'TypeMismatch', "Each element of the 'pipeline' array must be an object"],
    [[{}], 'Location40323', 'A pipeline stage specification object must contain exactly one field.'],
    [
      [{ $match: {}, $limit: 1 }],
      'Location40323',
      'A pipeline stage specification object must contain exactly one field.',
    ],
    [[{ $foo: {} }], 'Location40324', "Unrecognized pipeline stage name: '$foo'"],
    [[{ $match: 'x' }], 'Location15959', 'the match filter must be an expression in an object'],
    [[{ $match: { v: { $foo: 1 } } }], 'BadValue', 'unknown operator: $foo'],
    [
      [{ $match: {} }, { $group: { _id: null, x: { $foo: 1 } } }],
      'Location15952',
      "unknown group operator '$foo'",
    ],
    [
      [{ $sort: { v: 3 } }],
      'Location15975',
      '$sort key ordering must be 1 (for ascending) or -1 (for descending)',
    ],
  ])('refuses %j', (pipeline, codeName, message) => {
    expect(
      refusal(() => {
        checkPipeline(pipeline);
      }),
    ).toEqual({ codeName, message });
  });

  it('accepts known stages', () => {
    expect(() => {
      checkPipeline([{ $match: { v: 1 } }, { $group: { _id: null } }, { $sort: { v: 1 } }]);
    }).not.toThrow();
  });

  it("refuses names of Object.prototype's members in the stages mingo evaluates, not in a leading $match", () => {
    const refused = (pipeline: unknown[]) =>
      refusal(() => {
        checkPipeline(pipeline);
      }).codeName;
    for (const stage of [
      { $setWindowFields: { sortBy: { t: 1 }, output: { toString: { $sum: '$v' } } } },
      { $group: { _id: { constructor: '$m' } } },
      { $addFields: { 'constructor.b': 1 } },
      JSON.parse('{"$replaceRoot": {"newRoot": {"__proto__": {"polluted": 1}}}}') as object,
      JSON.parse('{"$facet": {"__proto__": [{"$limit": 1}]}}') as object,
    ]) {
      expect(refused([stage])).toBe('BadValue');
    }
    expect(refused([{ $limit: 1 }, { $match: { constructor: 1 } }])).toBe('BadValue');
    expect(() => {
      checkPipeline([{ $match: { constructor: 1 } }, { $group: { _id: '$constructor' } }]);
    }).not.toThrow();
  });
});

describe('mingo errors', () => {
  it('become typed errors with MongoDB wording; tsbuckets errors pass unchanged', () => {
    expect(toMongoError(new Error('unknown query operator $foo'))).toMatchObject({
      codeName: 'BadValue',
      message: 'unknown operator: $foo',
    });
    expect(toMongoError(new Error('unregistered pipeline operator $bar.'))).toMatchObject({
      codeName: 'Location40324',
      message: "Unrecognized pipeline stage name: '$bar'",
    });
    expect(toMongoError(new Error('Use of undefined variable: nope'))).toMatchObject({
      codeName: 'Location17276',
      message: 'Use of undefined variable: nope',
    });
    expect(toMongoError(new Error('other'))).toMatchObject({ codeName: 'BadValue', message: 'other' });
    const own = wrongType('x', 1, 'string');
    expect(toMongoError(own)).toBe(own);
    expect(
      refusal(() =>
        mingoCall(() => {
          throw new TypeError('boom');
        }),
      ),
    ).toEqual({ codeName: 'BadValue', message: 'boom' });
    expect(mingoCall(() => 5)).toBe(5);
  });
});
