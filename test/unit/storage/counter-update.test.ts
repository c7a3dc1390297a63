import fc from 'fast-check';
import { update as mingoUpdate } from 'mingo/updater';
import { describe, expect, it } from 'vitest';

import { applyCounterUpdate, counterUpdateDocument } from '../../../src/storage/counter-update.js';
import type { CounterOperator, CounterUpdate, FieldPath } from '../../../src/storage/counter-update.js';

const valueArb = fc.integer({ min: -20, max: 20 });
const pairArb = fc.record({ t: fc.integer({ min: 0, max: 5 }).map((n) => new Date(n * 1000)), v: valueArb });
const counterArb = fc.record(
  { count: valueArb, sum: valueArb, min: valueArb, max: valueArb, first: pairArb, last: pairArb },
  { requiredKeys: [] },
);

/** Distinct paths, none a prefix of another: the top, an array of slots, and a missing sub-document. */
const kPaths: ReadonlyArray<readonly [FieldPath, 'number' | 'pair']> = [
  ['n', 'count'],
  ['temp', 'count'],
  ['temp', 'sum'],
  ['temp', 'min'],
  ['temp', 'first'],
  ['hours', 0, 'count'],
  ['hours', 1, 'temp', 'sum'],
  ['hours', 1, 'temp', 'max'],
  ['hours', 2, 'temp', 'last'],
  ['other', 'deep', 'x'],
].map((p) => [p, p[p.length - 1] === 'first' || p[p.length - 1] === 'last' ? 'pair' : 'number'] as const);

const updateArb: fc.Arbitrary<CounterUpdate> = fc
  .uniqueArray(fc.nat({ max: kPaths.length - 1 }), { minLength: 1, maxLength: kPaths.length })
  .chain((picked) =>
    fc
      .tuple(
        ...picked.map((i) => {
          const kind = (kPaths[i] as readonly [FieldPath, 'number' | 'pair'])[1];
          return kind === 'pair'
            ? fc.tuple(
                fc.constantFrom<CounterOperator>('$min', '$max'),
                fc.option(pairArb, { nil: undefined }),
              )
            : fc.tuple(
                fc.constantFrom<CounterOperator>('$inc', '$min', '$max'),
                fc.option(valueArb, { nil: undefined }),
              );
        }),
      )
      .map((ops) => ({
        paths: picked.map((i) => (kPaths[i] as readonly [FieldPath, unknown])[0]),
        operators: ops.map(([op]) => op),
        values: ops.map(([, v]) => v),
      })),
  );

describe('applyCounterUpdate', () => {
  it('gives what mingo gives for the update document (dotted and positional paths, skipped values)', () => {
    fc.assert(
      fc.property(
        counterArb,
        fc.array(counterArb, { minLength: 3, maxLength: 3 }),
        updateArb,
        (top, slots, u) => {
          // Arrange: counters at the top and in an array of slots (one slot without its sub-document).
          const doc = {
            _id: 'k',
            n: { count: 1 },
            temp: top,
            hours: [{}, { temp: slots[1] }, { temp: slots[2] }],
          };
          // Act
          const fast = structuredClone(doc);
          expect(applyCounterUpdate(fast, u, 'updating')).toBe('applied');
          const slow = structuredClone(doc);
          mingoUpdate(slow, counterUpdateDocument(u));
          // Assert
          expect(fast).toEqual(slow);
        },
      ),
    );
  });

  it('sets setOnInsert only when inserting', () => {
    const u: CounterUpdate = {
      setOnInsert: { group: 'a', start: new Date(0) },
      paths: [['count']],
      operators: ['$inc'],
      values: [2],
    };
    const inserted: Record<string, unknown> = { _id: 'k' };
    expect(applyCounterUpdate(inserted, u, 'inserting')).toBe('applied');
    expect(inserted).toEqual({ _id: 'k', group: 'a', start: new Date(0), count: 2 });
    const updated: Record<string, unknown> = { _id: 'k', count: 1 };
    expect(applyCounterUpdate(updated, u, 'updating')).toBe('applied');
    expect(updated).toEqual({ _id: 'k', count: 3 });
  });

  it('refuses, unchanged, what it cannot write in place', () => {
    const doc: Record<string, unknown> = {
      _id: 'k',
      n: 5,
      s: 'text',
      when: new Date(0),
      list: [{ a: 1 }],
      obj: { a: 1 },
    };
    const before = structuredClone(doc);
    const refused: Array<[FieldPath, CounterOperator, unknown]> = [
      [['n', 'x'], '$inc', 1], // through a scalar
      [['when', 'x'], '$inc', 1], // through a Date
      [['list', 3, 'a'], '$inc', 1], // a missing array element
      [['list', 1], '$inc', 1], // past the array's end
      [['list', 'a'], '$inc', 1], // an array by a name
      [['obj', 0], '$inc', 1], // an object by an index (MongoDB takes it as a field name)
      [['obj', '$x'], '$inc', 1], // a $-prefixed name
      [['', 'x'], '$inc', 1], // an empty name
      [['s'], '$inc', 1], // $inc of a string
      [['n'], '$inc', 'one'], // $inc by a string
    ];
    for (const [path, op, value] of refused) {
      // The first path is fine: nothing is written before every path is checked.
      const u: CounterUpdate = { paths: [['obj', 'a'], path], operators: ['$inc', op], values: [1, value] };
      expect(applyCounterUpdate(doc, u, 'updating')).toBe('refused');
      expect(doc).toEqual(before);
    }
  });
});

describe('counterUpdateDocument', () => {
  it('writes $setOnInsert, $inc, $min, $max in that order, dotted paths in update order, skipping undefined', () => {
    const doc = counterUpdateDocument({
      setOnInsert: { group: 'a' },
      paths: [['t', 'max'], ['count'], ['days', 3, 't', 'sum'], ['t', 'min'], ['t', 'count']],
      operators: ['$max', '$inc', '$inc', '$min', '$inc'],
      values: [9, 2, 4.5, undefined, 0],
    });
    expect(doc).toEqual({
      $setOnInsert: { group: 'a' },
      $inc: { count: 2, 'days.3.t.sum': 4.5, 't.count': 0 },
      $max: { 't.max': 9 },
    });
    expect(Object.keys(doc)).toEqual(['$setOnInsert', '$inc', '$max']);
    expect(Object.keys(doc.$inc as object)).toEqual(['count', 'days.3.t.sum', 't.count']);
  });
});
