import { Decimal128, Int32, Long, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { compileJsonSchema } from '../../../src/util/json-schema.js';

describe('compileJsonSchema', () => {
  it.each([
    [{ bsonType: 'int' }, [1, new Int32(2)], [1.5, 'x', Long.fromNumber(1)]],
    [{ bsonType: ['long', 'decimal'] }, [5n, Long.fromNumber(1), Decimal128.fromString('1')], [1]],
    [{ bsonType: 'objectId' }, [new ObjectId()], ['x']],
    [{ type: 'number' }, [1, 1.5, Long.fromNumber(1)], ['1', null]],
    [{ type: ['string', 'null'] }, ['a', null], [1]],
    [{ enum: [1, 'a'] }, [1, 1.0, Long.fromNumber(1), 'a'], [2, 'b']],
    [{ minimum: 5 }, [5, 6, 'not a number'], [4]],
    [{ minimum: 5, exclusiveMinimum: true }, [6], [5]],
    [{ maximum: 5, exclusiveMaximum: true }, [4], [5]],
    [{ multipleOf: 3 }, [9, 'x'], [10]],
    [{ minLength: 2, maxLength: 3 }, ['ab', 'abc', '😀😀', 7], ['a', 'abcd']],
    [{ pattern: '^a' }, ['ab', 1], ['ba']],
    [{ minItems: 1, maxItems: 2, uniqueItems: true }, [[1], [1, 2], 'x'], [[], [1, 2, 3], [1, 1]]],
    [{ items: { bsonType: 'int' } }, [[1, 2]], [[1, 'x']]],
    [{ items: [{ bsonType: 'int' }], additionalItems: false }, [[1]], [[1, 2]]],
    [{ allOf: [{ minimum: 1 }, { maximum: 3 }] }, [2], [4]],
    [{ anyOf: [{ bsonType: 'string' }, { minimum: 10 }] }, ['a', 11], [5]],
    [{ oneOf: [{ minimum: 1 }, { minimum: 5 }] }, [2], [6]],
    [{ not: { bsonType: 'string' } }, [1], ['a']],
  ])('%j', (schema, accepted, refused) => {
    const check = compileJsonSchema(schema);
    for (const v of accepted) expect(check(v)).toBe(true);
    for (const v of refused) expect(check(v)).toBe(false);
  });

  it('checks documents: required, properties, additional and pattern properties, counts, dependencies', () => {
    const check = compileJsonSchema({
      bsonType: 'object',
      required: ['sensor'],
      properties: { sensor: { bsonType: 'string' }, v: { minimum: 0 } },
      patternProperties: { '^x_': { bsonType: 'int' } },
      additionalProperties: false,
      maxProperties: 3,
      dependencies: { v: ['sensor'] },
    });
    expect(check({ sensor: 'a', v: 1, x_1: 2 })).toBe(true);
    expect(check({ v: 1 })).toBe(false);
    expect(check({ sensor: 1 })).toBe(false);
    expect(check({ sensor: 'a', v: -1 })).toBe(false);
    expect(check({ sensor: 'a', x_1: 'no' })).toBe(false);
    expect(check({ sensor: 'a', other: 1 })).toBe(false);
    expect(check({ sensor: 'a', x_1: 1, x_2: 2, x_3: 3 })).toBe(false);
    const own = JSON.parse('{"__proto__": 1, "sensor": "a"}') as unknown;
    expect(compileJsonSchema({ required: ['__proto__'] })(own)).toBe(true);
  });

  it.each([
    [{ foo: 1 }, 'Unknown $jsonSchema keyword: foo'],
    [{ type: 'integer' }, "$jsonSchema type 'integer' is not currently supported."],
    [{ bsonType: 'nope' }, 'Unknown type name alias: nope'],
    [{ required: [] }, "$jsonSchema keyword 'required' must be a nonempty array of strings"],
    [{ minimum: 'x' }, "$jsonSchema keyword 'minimum' must be a number"],
    [{ properties: { a: 1 } }, "$jsonSchema keyword 'a' must be an object"],
    [{ pattern: '(' }, "$jsonSchema keyword 'pattern' is not a valid regex: ("],
  ])('refuses %j with FailedToParse', (schema, message) => {
    expect(() => compileJsonSchema(schema)).toThrow(
      expect.objectContaining({ codeName: 'FailedToParse', message }),
    );
  });
});
