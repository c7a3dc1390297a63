import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import { checkStageSpec } from '../../../src/util/pipeline-stages.js';

function refusal(name: string, spec: unknown): string {
  try {
    checkStageSpec(name, spec);
  } catch (error) {
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    const e = error as TimeseriesError;
    return `${String(e.code)} ${e.codeName}: ${e.message}`;
  }
  return 'accepted';
}

describe('checkStageSpec', () => {
  it.each([
    ['$group', 5, "15947 Location15947: a group's fields must be specified in an object"],
    ['$group', [], "15947 Location15947: a group's fields must be specified in an object"],
    ['$group', { n: { $sum: 1 } }, '15955 Location15955: a group specification must include an _id'],
    ['$group', { _id: null, x: { $foo: 1 } }, "15952 Location15952: unknown group operator '$foo'"],
    ['$group', { _id: null, x: { $nope: '$v' } }, "15952 Location15952: unknown group operator '$nope'"],
    ['$group', { _id: null, x: 5 }, "40234 Location40234: The field 'x' must be an accumulator object"],
    ['$group', { _id: null, x: {} }, "40238 Location40238: The field 'x' must specify one accumulator"],
    [
      '$group',
      { _id: null, x: { $sum: 1, $max: 1 } },
      "40238 Location40238: The field 'x' must specify one accumulator",
    ],
    [
      '$group',
      { _id: null, 'a.b': { $sum: 1 } },
      "40235 Location40235: The field name 'a.b' cannot contain '.'",
    ],
    [
      '$group',
      { _id: null, $x: { $sum: 1 } },
      "40236 Location40236: The field name '$x' cannot be an operator name",
    ],
    ['$sort', 5, '15973 Location15973: the $sort key specification must be an object'],
    ['$sort', {}, '15976 Location15976: $sort stage must have at least one sort key'],
    [
      '$sort',
      { v: 3 },
      '15975 Location15975: $sort key ordering must be 1 (for ascending) or -1 (for descending)',
    ],
    [
      '$sort',
      { v: 1, w: 'x' },
      '15975 Location15975: $sort key ordering must be 1 (for ascending) or -1 (for descending)',
    ],
    ['$count', 5, '40156 Location40156: the count field must be a non-empty string'],
    ['$count', '', '40157 Location40157: the count field must be a non-empty string'],
    ['$count', '$n', '40158 Location40158: the count field cannot be a $-prefixed path'],
    ['$count', 'a.b', "40160 Location40160: the count field cannot contain '.'"],
    ['$unwind', '', '28812 Location28812: no path specified to $unwind stage'],
    ['$unwind', 'v', "28818 Location28818: path option to $unwind stage should be prefixed with a '$': v"],
    [
      '$unwind',
      { path: 'a.b', preserveNullAndEmptyArrays: true },
      "28818 Location28818: path option to $unwind stage should be prefixed with a '$': a.b",
    ],
  ])('refuses %s %j with the server code and message', (name, spec, expected) => {
    expect(refusal(name, spec)).toBe(expected);
  });

  it('accepts well-formed arguments and leaves other stages to their parsers', () => {
    const accepted: ReadonlyArray<readonly [string, unknown]> = [
      ['$group', { _id: '$m', n: { $sum: 1 }, a: { $avg: '$v' }, f: { $first: '$v' }, p: { $push: '$v' } }],
      ['$group', { _id: null }],
      ['$sort', { v: 1, w: -1, x: 1n, s: { $meta: 'textScore' } }],
      ['$count', 'n'],
      ['$unwind', '$arr'],
      ['$unwind', { path: '$arr', includeArrayIndex: 'i' }],
      ['$limit', 'x'],
      ['$project', 5],
    ];
    for (const [name, spec] of accepted) expect(refusal(name, spec), name).toBe('accepted');
  });
});
