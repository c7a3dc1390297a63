import { createRequire } from 'node:module';

import * as esm from 'bson';
import { describe, expect, it } from 'vitest';

import { isBsonValue } from '../../../src/util/bson-type.js';

// The CommonJS build of js-bson, as the mongodb driver loads it: a second copy of every class.
const cjs = createRequire(import.meta.url)('bson') as typeof esm;

describe('isBsonValue', () => {
  it('recognises values of either copy of bson by their tag, where instanceof sees only its own copy', () => {
    // Arrange
    const copies = [esm, cjs];
    // Act / Assert
    expect(cjs.ObjectId).not.toBe(esm.ObjectId);
    for (const bson of copies) {
      expect(isBsonValue(new bson.ObjectId(), 'ObjectId')).toBe(true);
      expect(isBsonValue(new bson.Binary(new Uint8Array([1]), 7), 'Binary')).toBe(true);
      expect(isBsonValue(new bson.Int32(1), 'Int32')).toBe(true);
      expect(isBsonValue(new bson.Double(1), 'Double')).toBe(true);
      expect(isBsonValue(bson.Long.fromNumber(1), 'Long')).toBe(true);
      expect(isBsonValue(new bson.Int32(1), 'Double')).toBe(false);
    }
  });

  it('refuses everything that is not a js-bson value of the tag', () => {
    for (const v of [null, undefined, 1, 'ObjectId', {}, { _bsontype: 'Int32' }, new Date(0), [1]]) {
      expect(isBsonValue(v, 'ObjectId')).toBe(false);
    }
  });
});
