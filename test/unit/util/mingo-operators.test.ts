import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import { pipelineAggregator } from '../../../src/util/mingo-pipeline.js';

const run = (docs: Array<Record<string, unknown>>, pipeline: Array<Record<string, unknown>>) =>
  pipelineAggregator(pipeline).run(docs);
const iso = (s: string) => new Date(s);

/** One expression evaluated on one document. */
const value = (expr: unknown, doc: Record<string, unknown> = {}): unknown =>
  (run([doc], [{ $project: { _id: 0, v: expr } }])[0] as { v: unknown }).v;

describe('accumulators with the server semantics', () => {
  const docs = [{ x: 2 }, {}, { x: null }, { x: 4 }];

  it('$push and $addToSet leave a missing value out (a null one stays)', () => {
    expect(run(docs, [{ $group: { _id: null, p: { $push: '$x' }, s: { $addToSet: '$x' } } }])).toEqual([
      { _id: null, p: [2, null, 4], s: expect.arrayContaining([2, null, 4]) as unknown },
    ]);
    expect(
      run(
        [{ t: 1, x: 2 }, { t: 2 }],
        [
          {
            $setWindowFields: {
              sortBy: { t: 1 },
              output: { p: { $push: '$x', window: { documents: [0, 0] } } },
            },
          },
        ],
      ).map((d) => d.p),
    ).toEqual([[2], []]);
  });

  it('$stdDevSamp of fewer than two numbers and $stdDevPop of none are null', () => {
    const out = run(
      [{ x: 3 }, { x: 'a' }],
      [
        {
          $group: {
            _id: null,
            samp: { $stdDevSamp: '$x' },
            pop: { $stdDevPop: '$x' },
            none: { $stdDevPop: '$y' },
          },
        },
      ],
    );
    expect(out).toEqual([{ _id: null, samp: null, pop: 0, none: null }]);
    expect(run([{ x: 1 }, { x: 3 }], [{ $group: { _id: null, s: { $stdDevSamp: '$x' } } }])).toEqual([
      { _id: null, s: Math.SQRT2 },
    ]);
  });

  it('$covariancePop leaves out the pairs with a value that is not a number', () => {
    const out = run(
      [
        { t: 1, x: 1, y: 1 },
        { t: 2, x: 2 },
        { t: 3, x: 3, y: 3 },
      ],
      [{ $setWindowFields: { sortBy: { t: 1 }, output: { c: { $covariancePop: ['$x', '$y'] } } } }],
    );
    // Over (1, 1) and (3, 3): the pair with a missing y is left out.
    expect(out.map((d) => d.c)).toEqual([1, 1, 1]);
  });
});

describe('$bucket', () => {
  const docs = [0, 4, 5, 19, 20, 99].map((x) => ({ x }));

  it('puts a boundary value in the bucket it opens, and outputs only buckets with documents', () => {
    expect(
      run(docs, [
        { $bucket: { groupBy: '$x', boundaries: [0, 5, 20, 100, 200], output: { xs: { $push: '$x' } } } },
      ]),
    ).toEqual([
      { _id: 0, xs: [0, 4] },
      { _id: 5, xs: [5, 19] },
      { _id: 20, xs: [20, 99] },
    ]);
    expect(run(docs, [{ $bucket: { groupBy: '$x', boundaries: [0, 10], default: 'other' } }])).toEqual([
      { _id: 0, count: 3 },
      { _id: 'other', count: 3 },
    ]);
  });

  it('refuses boundaries the server refuses', () => {
    for (const [boundaries, code] of [
      [[0], 'Location40192'],
      [[5, 0], 'Location40194'],
    ] as const) {
      let error: unknown;
      try {
        run(docs, [{ $bucket: { groupBy: '$x', boundaries } }]);
      } catch (e) {
        error = e;
      }
      expect(TimeseriesError.isTimeseriesError(error) && error.codeName).toBe(code);
    }
  });
});

describe('dates with a time zone', () => {
  it('$dateTrunc truncates in local time (date_trunc.js and local dates ahead of or behind UTC)', () => {
    const trunc = (date: string, unit: string, timezone: string, binSize = 1) =>
      value({ $dateTrunc: { date: iso(date), unit, timezone, binSize } });
    expect(trunc('2021-12-01T18:23:36Z', 'hour', 'America/New_York', 4)).toEqual(iso('2021-12-01T17:00:00Z'));
    expect(trunc('2024-06-15T22:30:00Z', 'day', 'Europe/Paris')).toEqual(iso('2024-06-15T22:00:00Z'));
    expect(trunc('2024-06-15T02:00:00Z', 'day', 'America/New_York')).toEqual(iso('2024-06-14T04:00:00Z'));
    expect(trunc('2024-06-30T22:30:00Z', 'month', 'Europe/Paris')).toEqual(iso('2024-06-30T22:00:00Z'));
    expect(trunc('2024-06-15T20:00:00Z', 'day', '+09:00')).toEqual(iso('2024-06-15T15:00:00Z'));
    expect(trunc('2024-06-15T20:00:00Z', 'day', 'UTC')).toEqual(iso('2024-06-15T00:00:00Z'));
    expect(trunc('2024-06-15T20:00:00Z', 'day', 'GMT')).toEqual(iso('2024-06-15T00:00:00Z'));
    // A day across the autumn change in Paris starts at its local midnight (UTC+2 then).
    expect(trunc('2020-10-25T22:30:00Z', 'day', 'Europe/Paris')).toEqual(iso('2020-10-24T22:00:00Z'));
    expect(() => trunc('2024-06-15T20:00:00Z', 'day', 'Mars/Olympus')).toThrow(
      'unrecognized time zone identifier: "Mars/Olympus"',
    );
  });

  it('$dateAdd and $dateSubtract keep the last day of a shorter month and local days across DST', () => {
    const add = (op: string, startDate: string, unit: string, amount: number, timezone?: string) =>
      value({
        [op]: { startDate: iso(startDate), unit, amount, ...(timezone === undefined ? {} : { timezone }) },
      });
    // date_add_subtract.js
    expect(add('$dateAdd', '2020-10-24T18:10:00Z', 'day', 1, 'Europe/Paris')).toEqual(
      iso('2020-10-25T19:10:00Z'),
    );
    expect(add('$dateAdd', '2021-01-30T23:30:00Z', 'month', 1, 'Europe/Paris')).toEqual(
      iso('2021-02-27T23:30:00Z'),
    );
    expect(add('$dateSubtract', '2021-01-31T03:00:00Z', 'month', 2)).toEqual(iso('2020-11-30T03:00:00Z'));
    expect(add('$dateSubtract', '2020-12-31T12:10:05Z', 'month', 1)).toEqual(iso('2020-11-30T12:10:05Z'));
    expect(add('$dateAdd', '2024-02-29T00:00:00Z', 'year', 1)).toEqual(iso('2025-02-28T00:00:00Z'));
    expect(add('$dateAdd', '2020-10-24T18:10:00Z', 'hour', 24, 'Europe/Paris')).toEqual(
      iso('2020-10-25T18:10:00Z'),
    );
    expect(add('$dateAdd', '2024-01-01T00:00:00Z', 'quarter', -1)).toEqual(iso('2023-10-01T00:00:00Z'));
  });
});
