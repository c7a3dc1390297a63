import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/index.js';
import {
  defaultIndexName,
  reopeningIndexStatus,
  translateIndexFromBuckets,
  translateIndexToBuckets,
} from '../../../src/engine/index-translation.js';

const options = { timeField: 'tm', metaField: 'mm', bucketMaxSpanSeconds: 3600 };

function refusal(fn: () => unknown): [string, string] {
  try {
    fn();
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error)) throw error;
    return [error.codeName, error.message];
  }
  throw new Error('expected a refusal');
}

describe('translateIndexToBuckets', () => {
  it.each([
    [{ tm: 1 }, { 'control.min.tm': 1, 'control.max.tm': 1 }],
    [{ tm: -1 }, { 'control.max.tm': -1, 'control.min.tm': -1 }],
    [
      { mm: 1, tm: 1 },
      { meta: 1, 'control.min.tm': 1, 'control.max.tm': 1 },
    ],
    [
      { 'mm.tag1': 'hashed', tm: -1 },
      { 'meta.tag1': 'hashed', 'control.max.tm': -1, 'control.min.tm': -1 },
    ],
    [{ 'mm.loc': '2dsphere' }, { 'meta.loc': '2dsphere' }],
    [
      { x: 1, y: -1 },
      { 'control.min.x': 1, 'control.max.x': 1, 'control.max.y': -1, 'control.min.y': -1 },
    ],
    [{ loc: '2dsphere' }, { 'data.loc': '2dsphere_bucket' }],
  ])('translates %j to %j and back', (key, bucketKey) => {
    // Act
    const index = translateIndexToBuckets(options, key, {});
    // Assert
    expect(index).toStrictEqual({
      name: defaultIndexName(key),
      key: bucketKey,
      options: { originalSpec: { key, name: defaultIndexName(key) } },
    });
    expect(Object.keys(index.key)).toEqual(Object.keys(bucketKey));
    expect(translateIndexFromBuckets(options, index)).toStrictEqual({
      v: 2,
      key,
      name: defaultIndexName(key),
    });
    // Without originalSpec, the key is mapped back (indexes created before MongoDB 6.0).
    expect(translateIndexFromBuckets(options, { name: 'n', key: bucketKey })).toStrictEqual({
      v: 2,
      key,
      name: 'n',
    });
  });

  it('keeps user options in originalSpec and renames a metaField-only partial filter', () => {
    const index = translateIndexToBuckets(
      options,
      { mm: 1 },
      {
        name: 'p',
        partialFilterExpression: { 'mm.a': { $gt: 5 } },
        sparse: true,
      },
    );
    expect(index).toStrictEqual({
      name: 'p',
      key: { meta: 1 },
      options: {
        partialFilterExpression: { 'meta.a': { $gt: 5 } },
        sparse: true,
        originalSpec: {
          key: { mm: 1 },
          name: 'p',
          partialFilterExpression: { 'mm.a': { $gt: 5 } },
          sparse: true,
        },
      },
    });
    expect(translateIndexFromBuckets(options, index)).toStrictEqual({
      v: 2,
      key: { mm: 1 },
      name: 'p',
      partialFilterExpression: { 'mm.a': { $gt: 5 } },
      sparse: true,
    });
  });

  it.each([
    [
      { tm: 'hashed' },
      {},
      [
        'CannotCreateIndex',
        'BadValue: Invalid index spec for time-series collection: { tm: "hashed" }. Indexes on the time field must be ascending or descending (numbers only): tm: "hashed"',
      ],
    ],
    [
      { x: 'hashed' },
      {},
      [
        'CannotCreateIndex',
        `BadValue: Invalid index spec for time-series collection: { x: "hashed" }. Indexes on measurement fields must be ascending or descending (numbers only), or '2dsphere': x: "hashed"`,
      ],
    ],
    [{}, {}, ['CannotCreateIndex', 'BadValue: Empty object is not a valid index spec']],
    [{ x: 'text' }, {}, ['InvalidOptions', 'Text indexes are not supported on time-series collections']],
    [
      { mm: 1 },
      { unique: true },
      ['InvalidOptions', 'Unique indexes are not supported on time-series collections'],
    ],
    [
      { x: 1 },
      { sparse: true },
      ['InvalidOptions', 'Sparse indexes are not supported on time-series measurements'],
    ],
    [
      { mm: 1 },
      { partialFilterExpression: { mm: 1 }, collation: { locale: 'fr' } },
      [
        'IndexOptionsConflict',
        'On a time-series collection, partialFilterExpression and collation arguments are incompatible',
      ],
    ],
  ])('refuses %j with %j', (key, indexOptions, expected) => {
    expect(refusal(() => translateIndexToBuckets(options, key, indexOptions))).toEqual(expected);
  });
});

describe('reopeningIndexStatus', () => {
  it('needs a non-partial index starting with meta then control.min.<time>', () => {
    const index = (key: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
      name: 'i',
      key,
      options: extra,
    });
    expect(
      reopeningIndexStatus(options, [index({ meta: 1, 'control.min.tm': 1, 'control.max.tm': 1 })]),
    ).toBe('present');
    expect(reopeningIndexStatus(options, [index({ meta: 1, 'control.min.tm': 1, x: 1 })])).toBe('present');
    expect(
      reopeningIndexStatus(options, [index({ meta: 1, 'control.max.tm': -1, 'control.min.tm': -1 })]),
    ).toBe('absent');
    expect(reopeningIndexStatus(options, [index({ 'control.min.tm': 1 })])).toBe('absent');
    expect(
      reopeningIndexStatus(options, [
        index({ meta: 1, 'control.min.tm': 1 }, { partialFilterExpression: { meta: 1 } }),
      ]),
    ).toBe('absent');
    expect(
      reopeningIndexStatus({ timeField: 'tm', metaField: undefined }, [index({ 'control.min.tm': 1 })]),
    ).toBe('present');
  });
});
