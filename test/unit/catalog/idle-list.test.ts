import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { Bucket } from '../../../src/catalog/bucket.js';
import { IdleList } from '../../../src/catalog/idle-list.js';

/** Just the fields the list uses. */
function bucket(): Bucket {
  return { idle: false, idlePrev: undefined, idleNext: undefined } as Bucket;
}

/** The list's buckets from head to tail, following the links (checking the back links on the way). */
function walk(list: IdleList): Bucket[] {
  const out: Bucket[] = [];
  let previous: Bucket | undefined;
  for (let b = list.first(); b !== undefined; b = b.idleNext) {
    expect(b.idlePrev).toBe(previous);
    expect(b.idle).toBe(true);
    out.push(b);
    previous = b;
  }
  return out;
}

describe('IdleList', () => {
  it('keeps buckets in the order they last became idle, as an ordered map of them would', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('push', 'delete'), fc.nat(5)), { maxLength: 60 }),
        (ops) => {
          const buckets = Array.from({ length: 6 }, bucket);
          const list = new IdleList();
          // The model: a Map's insertion order after delete-then-set, as the stripe kept it before.
          const model = new Map<Bucket, true>();
          for (const [op, i] of ops) {
            const b = buckets[i] as Bucket;
            if (op === 'push') {
              list.push(b);
              model.delete(b);
              model.set(b, true);
            } else {
              list.delete(b);
              model.delete(b);
            }
            expect(walk(list)).toEqual([...model.keys()]);
            expect(list.size).toBe(model.size);
            for (const other of buckets) expect(other.idle).toBe(model.has(other));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('clears the links of a bucket it lets go', () => {
    const list = new IdleList();
    const [a, b] = [bucket(), bucket()];
    list.push(a);
    list.push(b);
    list.delete(a);
    expect(a).toMatchObject({ idle: false, idlePrev: undefined, idleNext: undefined });
    expect(list.first()).toBe(b);
    expect(b.idlePrev).toBeUndefined();
    list.delete(a);
    expect(list.size).toBe(1);
  });
});
