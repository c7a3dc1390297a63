import { ObjectId } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { WriteBatch } from '../../../src/catalog/bucket-catalog.js';
import { makeBucketId } from '../../../src/catalog/bucket-identifiers.js';
import { bucketIdOrder } from '../../../src/engine/commit-together.js';

/** A batch carrying only what the ordering reads: its bucket's id. */
function batchOf(bytes: Uint8Array): WriteBatch {
  return { bucket: { id: makeBucketId('db.c', new ObjectId(bytes)) } } as unknown as WriteBatch;
}

describe('bucketIdOrder', () => {
  it('orders batches as their bucket ids compare as hex strings (byte order)', () => {
    // Ids drawn from few byte values, so that ties on the first six bytes are common. Calls of up to 150
    // batches, one after another: past the sort's first scratch (64) and back below it.
    const id = fc
      .uint8Array({ minLength: 12, maxLength: 12 })
      .map((b) => b.map((x) => (x % 3 === 0 ? 0 : x)));
    fc.assert(
      fc.property(
        fc.uniqueArray(id, { maxLength: 150, size: 'max', selector: (b) => Buffer.from(b).toString('hex') }),
        (ids) => {
          // Arrange
          const batches = ids.map(batchOf);
          const hex = batches.map((b) => b.bucket.id.hex);
          // Act
          const order = bucketIdOrder(batches);
          // Assert
          const expected = hex
            .map((_, i) => i)
            .sort((a, b) => ((hex[a] as string) < (hex[b] as string) ? -1 : 1));
          expect(order).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('orders ids that differ only in their first, middle or last bytes, the extremes included', () => {
    // Arrange
    const hexes = [
      'ffffffffffff000000000000',
      '000000000000ffffffffffff',
      'ffffffffffff000000000001',
      '000000000001000000000000',
    ];
    const batches = hexes.map((h) => batchOf(Buffer.from(h, 'hex')));
    // Act
    const order = bucketIdOrder(batches);
    // Assert
    expect(order.map((i) => hexes[i])).toEqual([
      '000000000000ffffffffffff',
      '000000000001000000000000',
      'ffffffffffff000000000000',
      'ffffffffffff000000000001',
    ]);
  });

  it('orders no batch and one batch without sorting', () => {
    // Arrange
    const one = [batchOf(Buffer.from('0123456789abcdef01234567', 'hex'))];
    // Act and assert
    expect(bucketIdOrder([])).toEqual([]);
    expect(bucketIdOrder(one)).toEqual([0]);
  });
});
