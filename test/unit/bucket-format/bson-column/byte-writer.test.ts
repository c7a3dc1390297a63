import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { ByteWriter } from '../../../../src/bucket-format/bson-column/byte-writer.js';

/** One step on a writer and on its model (a plain array of the bytes it holds). */
type Op =
  | { readonly kind: 'bytes'; readonly data: Uint8Array }
  | { readonly kind: 'u64'; readonly lo: number; readonly hi: number }
  | { readonly kind: 'dropFront'; readonly fraction: number; readonly minCapacity: number }
  | { readonly kind: 'release' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((data) => ({ kind: 'bytes' as const, data })),
  fc
    .tuple(fc.nat({ max: 0xffffffff }), fc.nat({ max: 0xffffffff }))
    .map(([lo, hi]) => ({ kind: 'u64' as const, lo, hi })),
  fc
    .tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 16, 64, 256))
    .map(([fraction, minCapacity]) => ({ kind: 'dropFront' as const, fraction, minCapacity })),
  fc.constant({ kind: 'release' as const }),
);

describe('ByteWriter', () => {
  it('each writer holds what was written and not dropped, whatever its storage became (grown, shrunk, released, reused)', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: 64 }),
        fc.array(fc.tuple(fc.nat({ max: 2 }), op), { maxLength: 90 }),
        (capacity, ops) => {
          // Arrange: three writers, so that storage one gives up is taken by another.
          const writers = [0, 1, 2].map(() => new ByteWriter(capacity));
          const models: number[][] = [[], [], []];
          // Act
          for (const [w, o] of ops) {
            const writer = writers[w] as ByteWriter;
            let model = models[w] as number[];
            switch (o.kind) {
              case 'bytes':
                writer.bytes(o.data, 0, o.data.length);
                model.push(...o.data);
                break;
              case 'u64':
                writer.u64Halves(o.lo, o.hi);
                for (const half of [o.lo, o.hi])
                  for (let i = 0; i < 4; i++) model.push((half >>> (8 * i)) & 0xff);
                break;
              case 'dropFront': {
                const n = Math.floor(o.fraction * model.length);
                writer.dropFront(n, 4, o.minCapacity);
                model = model.slice(n);
                break;
              }
              case 'release':
                // Only an empty writer gives up its storage.
                writer.dropFront(writer.length, 4);
                writer.release();
                model = [];
                break;
            }
            models[w] = model;
            // Assert: every writer still holds its bytes, and no two share storage.
            writers.forEach((each, i) => {
              expect(each.length).toBe(models[i]?.length);
              expect([...each.buf.subarray(0, each.length)]).toEqual(models[i]);
            });
            const held = writers.map((each) => each.buf).filter((buf) => buf.length > 0);
            expect(new Set(held).size).toBe(held.length);
          }
          writers.forEach((each, i) => {
            expect([...each.toBytes()]).toEqual(models[i]);
          });
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a released writer holds no storage until the next write', () => {
    // Arrange
    const writer = new ByteWriter(64);
    writer.u8(7);
    writer.dropFront(1, 4);
    // Act
    writer.release();
    // Assert
    expect(writer.buf.length).toBe(0);
    writer.u8(9);
    expect([...writer.toBytes()]).toEqual([9]);
  });
});
