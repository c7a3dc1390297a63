import fc from 'fast-check';
import { update } from 'mingo/updater';
import { describe, expect, it } from 'vitest';

import { applyOperatorUpdate } from '../../../src/storage/operator-update.js';

const valueArb = fc.integer({ min: -20, max: 20 });
const pairArb = fc.record({ t: fc.integer({ min: 0, max: 5 }).map((n) => new Date(n * 1000)), v: valueArb });
const counterArb = fc.record(
  { count: valueArb, sum: valueArb, min: valueArb, max: valueArb, first: pairArb, last: pairArb },
  { requiredKeys: [] },
);

describe('applyOperatorUpdate', () => {
  it('gives what mingo gives for $inc/$min/$max over dotted and positional paths', () => {
    fc.assert(
      fc.property(
        counterArb,
        fc.array(counterArb, { minLength: 3, maxLength: 3 }),
        counterArb,
        fc.integer({ min: 0, max: 2 }),
        (top, slots, change, i) => {
          // Arrange: a document with counters at the top and in an array of slots.
          const doc = { _id: 'k', temp: top, hours: slots.map((s) => ({ temp: s })) };
          const inc: Record<string, unknown> = {};
          const min: Record<string, unknown> = {};
          const max: Record<string, unknown> = {};
          for (const prefix of ['temp.', `hours.${i}.temp.`, 'other.']) {
            if (change.count !== undefined) inc[`${prefix}count`] = change.count;
            if (change.sum !== undefined) inc[`${prefix}sum`] = change.sum;
            if (change.min !== undefined) min[`${prefix}min`] = change.min;
            if (change.first !== undefined) min[`${prefix}first`] = change.first;
            if (change.max !== undefined) max[`${prefix}max`] = change.max;
            if (change.last !== undefined) max[`${prefix}last`] = change.last;
          }
          const u = { $inc: { n: 1, ...inc }, $min: min, $max: max };
          // Act
          const fast = structuredClone(doc);
          expect(applyOperatorUpdate(fast, u, 'updating')).toBe('applied');
          const slow = structuredClone(doc);
          update(slow, u);
          // Assert
          expect(fast).toEqual(slow);
        },
      ),
    );
  });

  it('applies $setOnInsert only on insert, and refuses other operators or impossible paths unchanged', () => {
    const doc: Record<string, unknown> = { _id: 1, a: 5, list: [1] };
    expect(applyOperatorUpdate(doc, { $setOnInsert: { g: 1 }, $inc: { a: 1 } }, 'updating')).toBe('applied');
    expect(doc).toEqual({ _id: 1, a: 6, list: [1] });
    expect(applyOperatorUpdate(doc, { $setOnInsert: { g: 1 } }, 'inserting')).toBe('applied');
    expect(doc.g).toBe(1);
    for (const refused of [
      { $push: { list: 2 } },
      { $inc: { 'a.b': 1 } },
      { $inc: { 'list.3': 1 } },
      { $inc: { n: 1, g: 'x' } },
    ]) {
      expect(applyOperatorUpdate(doc, refused, 'updating')).toBe('refused');
    }
    expect(doc).toEqual({ _id: 1, a: 6, list: [1], g: 1 });
  });
});
