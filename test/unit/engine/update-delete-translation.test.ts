import { describe, expect, it } from 'vitest';

import { ErrorCodes, TimeseriesError } from '../../../src/index.js';
import {
  translateQuery,
  translateUpdate,
  upsertRefusal,
} from '../../../src/engine/update-delete-translation.js';

function refusal(fn: () => unknown): { code: number; codeName: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error)) throw error;
    return { code: error.code, codeName: error.codeName, message: error.message };
  }
  throw new Error('expected a refusal');
}

const notMetaQuery = {
  code: ErrorCodes.InvalidOptions,
  codeName: 'InvalidOptions',
  message:
    "Cannot perform an update or delete on a time-series collection when querying on a field that is not the metaField 'tag'",
};
const notMetaUpdate = {
  code: ErrorCodes.InvalidOptions,
  codeName: 'InvalidOptions',
  message:
    "Cannot perform an update on a time-series collection which updates a field that is not the metaField 'tag'",
};

describe('translateQuery', () => {
  it('renames the metaField and its dotted paths to meta, also inside $and/$or/$nor', () => {
    // Arrange
    const query = {
      tag: { a: 'A' },
      'tag.b.c': { $gt: 1 },
      $and: [{ $or: [{ tag: { $ne: 'B' } }, { 'tag.a': { $eq: 'B' } }] }, { tag: { a: 'A' } }],
      $nor: [{ 'tag.x': null }],
    };
    // Act
    const translated = translateQuery(query, 'tag');
    // Assert
    expect(translated).toStrictEqual({
      meta: { a: 'A' },
      'meta.b.c': { $gt: 1 },
      $and: [{ $or: [{ meta: { $ne: 'B' } }, { 'meta.a': { $eq: 'B' } }] }, { meta: { a: 'A' } }],
      $nor: [{ 'meta.x': null }],
    });
    expect(Object.keys(translated)).toEqual(['meta', 'meta.b.c', '$and', '$nor']);
  });

  it('keeps embedded documents and values that look like field names unchanged', () => {
    expect(translateQuery({ tag: { b: '$tag', tag: 1 } }, 'tag')).toStrictEqual({
      meta: { b: '$tag', tag: 1 },
    });
  });

  it('renames $jsonSchema required entries and properties that are the metaField', () => {
    expect(
      translateQuery(
        { $jsonSchema: { required: ['tag'], properties: { tag: { required: ['tag'] } } } },
        'tag',
      ),
    ).toStrictEqual({ $jsonSchema: { required: ['meta'], properties: { meta: { required: ['tag'] } } } });
  });

  it.each([
    [{ measurement: 'cpu' }],
    [{ 'measurement.A': 'cpu' }],
    [{ tag: 'a', measurement: 'cpu' }],
    [{ $or: [{ tag: 'a' }, { x: 1 }] }],
    [{ tagged: 1 }],
    [{ $jsonSchema: { required: ['tag.a'] } }],
    [{ $jsonSchema: { required: ['tag', 'time'] } }],
    [{ $jsonSchema: { required: ['tag'], properties: { measurement: {} } } }],
    // MongoDB treats objects inside any array as top-level clauses, `$in` lists included.
    [{ tag: { $in: [{ a: 1 }] } }],
  ])('refuses a query on a field that is not the metaField: %j', (query) => {
    expect(refusal(() => translateQuery(query, 'tag'))).toStrictEqual(notMetaQuery);
  });

  it.each([
    [{ $expr: { $eq: ['$tag', 1] } }, '$expr'],
    [{ $where: 'true' }, '$where'],
    [{ $and: [{ tag: 1 }, { $expr: true }] }, '$expr'],
    [{ tag: { $elemMatch: { $where: 'x' } } }, '$where'],
  ])('refuses %j', (query, operator) => {
    expect(refusal(() => translateQuery(query, 'tag'))).toStrictEqual({
      code: ErrorCodes.InvalidOptions,
      codeName: 'InvalidOptions',
      message: `Cannot use ${operator} when performing an update or delete on a time-series collection`,
    });
  });
});

describe('translateUpdate', () => {
  it('renames every updated path and $rename target', () => {
    expect(
      translateUpdate(
        { $set: { tag: { c: 'C' }, 'tag.d': 1 }, $inc: { 'tag.n': 2 }, $rename: { 'tag.a': 'tag.z' } },
        'tag',
      ),
    ).toStrictEqual({
      $set: { meta: { c: 'C' }, 'meta.d': 1 },
      $inc: { 'meta.n': 2 },
      $rename: { 'meta.a': 'meta.z' },
    });
  });

  it.each([
    [{ $set: { f2: 'f2' } }],
    [{ $set: { tag: { e: 'E' }, f3: 'f3' } }],
    [{ $rename: { tag: 'Z' } }],
    [{ $rename: { 'tag.a': 'notMetaField.a' } }],
    [{ $unset: { tagged: '' } }],
    [{ $foo: { x: 1 } }],
  ])('refuses an update of a field that is not the metaField: %j', (update) => {
    expect(refusal(() => translateUpdate(update, 'tag'))).toStrictEqual(notMetaUpdate);
  });

  it.each([
    [
      [{ $addFields: { 'tag.c': 'C' } }],
      'Cannot perform an update on a time-series collection using a pipeline update',
    ],
    [
      { f2: { e: 'E' }, f3: 7 },
      'Cannot perform an update on a time-series collection using a replacement document',
    ],
    [{}, 'Cannot perform an update on a time-series collection using a replacement document'],
  ])('refuses %j', (update, message) => {
    expect(refusal(() => translateUpdate(update, 'tag'))).toStrictEqual({
      code: ErrorCodes.InvalidOptions,
      codeName: 'InvalidOptions',
      message,
    });
  });

  it('refuses any update on a collection without metaField', () => {
    expect(refusal(() => translateUpdate({ $set: { f: 'FF' } }, undefined))).toStrictEqual({
      code: ErrorCodes.InvalidOptions,
      codeName: 'InvalidOptions',
      message: 'Cannot perform an update on a time-series collection that does not have a metaField',
    });
  });

  it('refuses unknown operators and operators without a field document with FailedToParse', () => {
    expect(refusal(() => translateUpdate({ $foo: { tag: 1 } }, 'tag'))).toStrictEqual({
      code: ErrorCodes.FailedToParse,
      codeName: 'FailedToParse',
      message:
        'Unknown modifier: $foo. Expected a valid update modifier or pipeline-style update specified as an array',
    });
    expect(refusal(() => translateUpdate({ $set: 1 }, 'tag'))).toStrictEqual({
      code: ErrorCodes.FailedToParse,
      codeName: 'FailedToParse',
      message:
        'Modifiers operate on fields but we found type int instead. For example: {$mod: {<field>: ...}} not {$set: 1}',
    });
  });

  it('refuses upserts with MongoDB message', () => {
    const error = upsertRefusal();
    expect([error.codeName, error.message]).toEqual([
      'InvalidOptions',
      'Cannot perform an upsert on a time-series collection',
    ]);
  });
});
