import { Decimal128, Double, Int32, Long, ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import {
  createMinMax,
  forgetSlotsSnapshot,
  maxDocument,
  minDocument,
  minMaxFromDocuments,
  snapshotMinMax,
  takeUpdates,
  updateMinMax,
  type MinMax,
} from '../../../src/bucket-format/min-max.js';
import { slotsOf, slotsOfRow } from '../../../src/bucket-format/min-max-slots.js';

/** Fold measurements into a fresh MinMax. */
function fold(...docs: Array<Record<string, unknown>>): MinMax {
  const mm = createMinMax();
  for (const d of docs) updateMinMax(mm, d);
  return mm;
}

/** Keys at every level, to pin field order (toEqual ignores it). */
function shape(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(shape);
  if (
    v !== null &&
    typeof v === 'object' &&
    (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null)
  ) {
    return Object.keys(v).map((k) => [k, shape((v as Record<string, unknown>)[k])]);
  }
  return v;
}

describe('updateMinMax: values (docs/mongodb-behaviour.md §3.2)', () => {
  it("follows timeseries_min_max.js: numbers compare across widths and keep the winner's type", () => {
    // Arrange
    const mm = createMinMax();
    // Act + Assert, step by step as in the jstest.
    updateMinMax(mm, { x: 1.5 });
    updateMinMax(mm, { x: Long.fromNumber(2) });
    expect(minDocument(mm).x).toBe(1.5);
    expect(maxDocument(mm).x).toEqual(Long.fromNumber(2));
    expect(maxDocument(mm).x).toBeInstanceOf(Long);

    updateMinMax(mm, { x: new Int32(1) });
    expect(minDocument(mm).x).toBeInstanceOf(Int32);
    expect((minDocument(mm).x as Int32).value).toBe(1);

    updateMinMax(mm, { x: Decimal128.fromString('2.5') });
    expect(maxDocument(mm).x).toBeInstanceOf(Decimal128);
    expect(String(maxDocument(mm).x)).toBe('2.5');

    updateMinMax(mm, { x: 0.5 });
    expect(minDocument(mm).x).toBe(0.5);
    expect(String(maxDocument(mm).x)).toBe('2.5');
  });

  it('does not replace on equal values (the first of equal values stays, with its type)', () => {
    const mm = fold({ x: new Int32(2) }, { x: new Double(2) }, { x: Long.fromNumber(2) });
    expect(minDocument(mm).x).toBeInstanceOf(Int32);
    expect(maxDocument(mm).x).toBeInstanceOf(Int32);
  });

  it('updates arrays positionally', () => {
    const mm = fold({ a: [1, 5] }, { a: [3, 2, 7] });
    expect(minDocument(mm)).toEqual({ a: [1, 2, 7] });
    expect(maxDocument(mm)).toEqual({ a: [3, 5, 7] });
  });

  it('keeps min and max per path, not per document', () => {
    const mm = fold({ a: { x: 1, y: 9 } }, { a: { x: 2, y: 0 } });
    expect(minDocument(mm)).toEqual({ a: { x: 1, y: 0 } });
    expect(maxDocument(mm)).toEqual({ a: { x: 2, y: 9 } });
  });

  it('records empty objects, and later content wins over them', () => {
    const mm = fold({ a: {} });
    expect(minDocument(mm)).toEqual({ a: {} });
    expect(maxDocument(mm)).toEqual({ a: {} });
    updateMinMax(mm, { a: { x: {} } });
    updateMinMax(mm, { a: { x: { y: 1 } } });
    updateMinMax(mm, { a: { x: {} } });
    expect(minDocument(mm)).toEqual({ a: { x: { y: 1 } } });
    expect(maxDocument(mm)).toEqual({ a: { x: { y: 1 } } });
  });

  it('leaves missing and undefined fields untouched, and skips the metaField only at top level', () => {
    const mm = createMinMax();
    updateMinMax(mm, { m: 1, x: 5, o: { m: 2 } }, { skipField: 'm' });
    updateMinMax(mm, { x: undefined, y: 1 }, { skipField: 'm' });
    expect(minDocument(mm)).toEqual({ x: 5, o: { m: 2 }, y: 1 });
  });

  it('treats undefined array elements and holes as null, like js-bson', () => {
    // eslint-disable-next-line no-sparse-arrays
    const mm = fold({ a: [undefined, , 3] });
    expect(minDocument(mm)).toEqual({ a: [null, null, 3] });
  });

  it('switches kinds by canonical type (mixed-schema buckets)', () => {
    const mm = fold({ a: 1 }, { a: 'x' });
    expect(minDocument(mm)).toEqual({ a: 1 });
    expect(maxDocument(mm)).toEqual({ a: 'x' });
    // Objects (20) sort after strings (15): max becomes the object, min keeps the number.
    updateMinMax(mm, { a: { b: 1 } });
    expect(minDocument(mm)).toEqual({ a: 1 });
    expect(maxDocument(mm)).toEqual({ a: { b: 1 } });
    // Arrays (25) after objects: max becomes the array; its children start unset.
    updateMinMax(mm, { a: [7] });
    expect(maxDocument(mm)).toEqual({ a: [7] });
    // A later object cannot beat an array for max.
    updateMinMax(mm, { a: { c: 1 } });
    expect(maxDocument(mm)).toEqual({ a: [7] });
    // A date (45) beats the array for max; null (5) beats the number for min.
    updateMinMax(mm, { a: new Date(3) });
    updateMinMax(mm, { a: null });
    expect(maxDocument(mm)).toEqual({ a: new Date(3) });
    expect(minDocument(mm)).toEqual({ a: null });
  });

  it('lets an object claim array positions for min (arrays sort after objects)', () => {
    const mm = fold({ a: [5, 6] }, { a: { p: 1 } }, { a: { q: 2 } });
    expect(minDocument(mm)).toEqual({ a: { p: 1, q: 2 } });
    expect(maxDocument(mm)).toEqual({ a: [5, 6] });
    expect(shape(minDocument(mm))).toEqual([
      [
        'a',
        [
          ['p', 1],
          ['q', 2],
        ],
      ],
    ]);
    // Positions keep serving the max array.
    updateMinMax(mm, { a: [9, 0, 1] });
    expect(maxDocument(mm)).toEqual({ a: [9, 6, 1] });
    expect(minDocument(mm)).toEqual({ a: { p: 1, q: 2 } });
  });

  it('never creates a duplicate field when claiming positions', () => {
    // min: object {p, q} (claiming positions 0 and 1); max: array of 3 → position 2 is unclaimed.
    const mm = fold({ a: [1, 2, 3] }, { a: { p: 1, q: 1 } });
    // `q` exists at position 1 and must not claim position 2.
    updateMinMax(mm, { a: { q: 0, p: 0 } });
    expect(shape(minDocument(mm))).toEqual([
      [
        'a',
        [
          ['p', 0],
          ['q', 0],
        ],
      ],
    ]);
    expect(maxDocument(mm)).toEqual({ a: [1, 2, 3] });
  });

  it('shifts array positions when a field is inserted for the other slot (server behaviour, mixed schema only)', () => {
    // min becomes an object (objects sort before arrays) and inserts "" before the array's position 0.
    const mm = fold({ a: [new Date(0)] }, { a: { p: -2.5 } }, { a: { '': -1.5 } });
    expect(shape(minDocument(mm))).toEqual([
      [
        'a',
        [
          ['', -1.5],
          ['p', -2.5],
        ],
      ],
    ]);
    expect(maxDocument(mm)).toEqual({ a: [new Date(0)] });
    // The max array now walks the shared positions, the inserted one first.
    updateMinMax(mm, { a: [-1.5] });
    expect(maxDocument(mm)).toEqual({ a: [-1.5, new Date(0)] });
  });

  it('stores hostile field names as plain fields', () => {
    const m = JSON.parse(
      '{"__proto__": {"polluted": 1}, "constructor": {"prototype": 2}, "$x": 3, "a.b": 4}',
    ) as Record<string, unknown>;
    const mm = fold(m);
    const min = minDocument(mm);
    expect(Object.keys(min)).toEqual(['__proto__', 'constructor', '$x', 'a.b']);
    expect(Object.getPrototypeOf(min)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(min, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('updateMinMax: field order (docs/mongodb-behaviour.md §3.3)', () => {
  const t = new Date(0);

  it("keeps the first measurement's order around the seeded time field", () => {
    const id = new ObjectId();
    expect(Object.keys(minDocument(fold({ time: t }, { _id: id, time: t, x: 1 })))).toEqual([
      '_id',
      'time',
      'x',
    ]);
    expect(Object.keys(minDocument(fold({ time: t }, { time: t, _id: id, x: 1 })))).toEqual([
      'time',
      '_id',
      'x',
    ]);
  });

  it('inserts a later new field right after the last matched field', () => {
    const mm = fold({ _id: 1, time: t, x: 1 }, { _id: 1, time: t, y: 1, x: 1 });
    expect(Object.keys(minDocument(mm))).toEqual(['_id', 'time', 'y', 'x']);
  });

  it('appends after skipping, and inserts before the cursor when nothing matched yet', () => {
    const mm = fold({ a: 1, b: 1 }, { b: 1, a: 1 });
    expect(Object.keys(minDocument(mm))).toEqual(['a', 'b']);
    updateMinMax(mm, { b: 1, z: 1 }); // b found by skipping a; z appended at the end
    expect(Object.keys(minDocument(mm))).toEqual(['a', 'b', 'z']);
    updateMinMax(mm, { c: 1, a: 1 }); // c is new and nothing was skipped: inserted before a
    expect(Object.keys(minDocument(mm))).toEqual(['c', 'a', 'b', 'z']);
  });

  it('inserts a new field before the cursor after a skip (linear search)', () => {
    const mm = fold({ f0: 1, f1: 1, f2: 1, f3: 1, f4: 1 }, { f4: 0, f3: 0, g: 0 });
    expect(Object.keys(minDocument(mm))).toEqual(['f0', 'f1', 'f2', 'f3', 'g', 'f4']);
  });

  it('finds fields beyond the linear search window through the name index', () => {
    const names = Array.from({ length: 30 }, (_, i) => `f${i}`);
    const first = Object.fromEntries(names.map((n) => [n, 1]));
    const mm = fold(first, { f29: 0, f28: 0, g: 0 }, { f0: 0, f15: 0, h: 0 });
    // After a skip, a new field goes before the cursor ("the point we know furthest back"):
    // g lands between f28 and f29, h between f15 and f16.
    const expected = [...names.slice(0, 16), 'h', ...names.slice(16, 29), 'g', 'f29'];
    expect(Object.keys(minDocument(mm))).toEqual(expected);
    expect(minDocument(mm).f29).toBe(0);
  });
});

describe('takeUpdates', () => {
  it('lists every field of a fresh MinMax, in order', () => {
    const mm = fold({ time: new Date(0) }, { _id: 1, time: new Date(5), x: 2 });
    const u = takeUpdates(mm);
    expect(u.min.map((op) => op.path)).toEqual([['_id'], ['time'], ['x']]);
    expect(u.max.map((op) => op.path)).toEqual([['_id'], ['time'], ['x']]);
    expect(takeUpdates(mm)).toEqual({ min: [], max: [] });
  });

  it('sets changed scalars and appended fields by path', () => {
    const mm = fold({ a: 5, o: { x: 1 }, arr: [1, 2] });
    takeUpdates(mm);
    updateMinMax(mm, { a: 3, o: { x: 1, y: 0 }, arr: [0, 2, 4], z: 1 });
    const u = takeUpdates(mm);
    expect(u.min).toEqual([
      { path: ['a'], value: 3 },
      { path: ['o', 'y'], value: 0 },
      { path: ['arr', '0'], value: 0 },
      { path: ['arr', '2'], value: 4 },
      { path: ['z'], value: 1 },
    ]);
    expect(u.max).toEqual([
      { path: ['o', 'y'], value: 0 },
      { path: ['arr', '2'], value: 4 },
      { path: ['z'], value: 1 },
    ]);
  });

  it('sets the whole parent when a field is inserted before existing ones', () => {
    const mm = fold({ o: { x: 1, z: 1 }, w: 1 });
    takeUpdates(mm);
    updateMinMax(mm, { o: { x: 1, y: 1, z: 1 } });
    expect(takeUpdates(mm).min).toEqual([{ path: ['o'], value: { x: 1, y: 1, z: 1 } }]);
    // At top level the parent is control.min itself.
    updateMinMax(mm, { n: 1, o: {} });
    expect(takeUpdates(mm).min).toEqual([{ path: [], value: { n: 1, o: { x: 1, y: 1, z: 1 }, w: 1 } }]);
  });

  it('sets a node whose kind changed as a whole', () => {
    const mm = fold({ a: 1 });
    takeUpdates(mm);
    updateMinMax(mm, { a: { b: 1 } });
    expect(takeUpdates(mm)).toEqual({ min: [], max: [{ path: ['a'], value: { b: 1 } }] });
  });

  it('sets the nearest safe ancestor of an unsafe field name', () => {
    const mm = fold({ o: { $x: 5, 'a.b': 5 }, 'top.dot': 5, k: 1 });
    takeUpdates(mm);
    updateMinMax(mm, { o: { $x: 1 } });
    expect(takeUpdates(mm).min).toEqual([{ path: ['o'], value: { $x: 1, 'a.b': 5 } }]);
    updateMinMax(mm, { o: { 'a.b': { deep: 1 } } });
    expect(takeUpdates(mm).max).toEqual([{ path: ['o'], value: { $x: 5, 'a.b': { deep: 1 } } }]);
    updateMinMax(mm, { 'top.dot': 0 });
    expect(takeUpdates(mm).min).toEqual([
      { path: [], value: { o: { $x: 1, 'a.b': 5 }, 'top.dot': 0, k: 1 } },
    ]);
    // Changes elsewhere stay small.
    updateMinMax(mm, { k: 0 });
    expect(takeUpdates(mm).min).toEqual([{ path: ['k'], value: 0 }]);
  });

  it('does not change tracking when documents are only read', () => {
    const mm = fold({ a: 1 });
    minDocument(mm);
    maxDocument(mm);
    expect(takeUpdates(mm).min).toEqual([{ path: ['a'], value: 1 }]);
  });
});

describe('minMaxFromDocuments', () => {
  it('rebuilds min and max and treats them as already written', () => {
    const min = { time: new Date(0), a: { x: 1 }, arr: [1, 2] };
    const max = { time: new Date(9), a: { x: 5 }, arr: [3, 4] };
    const mm = minMaxFromDocuments(min, max);
    expect(shape(minDocument(mm))).toEqual(shape(min));
    expect(shape(maxDocument(mm))).toEqual(shape(max));
    expect(takeUpdates(mm)).toEqual({ min: [], max: [] });
    updateMinMax(mm, { time: new Date(10), a: { x: 0 } });
    expect(takeUpdates(mm)).toEqual({
      min: [{ path: ['a', 'x'], value: 0 }],
      max: [{ path: ['time'], value: new Date(10) }],
    });
  });

  it('replaces a stored document whose field order the tree cannot reproduce', () => {
    const mm = minMaxFromDocuments({ b: 1, a: 1 }, { a: 2, b: 2 });
    expect(Object.keys(maxDocument(mm))).toEqual(['b', 'a']);
    expect(takeUpdates(mm)).toEqual({ min: [], max: [{ path: [], value: { b: 2, a: 2 } }] });
  });
});

describe('takeUpdates and MongoDB $set field order', () => {
  it('sets new fields one by one when they are in name order, the parent whole otherwise', () => {
    const mm = createMinMax();
    updateMinMax(mm, { a: { x: 1 } });
    takeUpdates(mm);
    updateMinMax(mm, { a: { x: 1, b: 3, c: 2 } });
    expect(takeUpdates(mm).min).toEqual([
      { path: ['a', 'b'], value: 3 },
      { path: ['a', 'c'], value: 2 },
    ]);
    const other = createMinMax();
    updateMinMax(other, { a: { x: 1 } });
    takeUpdates(other);
    // The server would apply a.b before a.c whatever the order written: the object goes whole.
    updateMinMax(other, { a: { x: 1, c: 2, b: 3 } });
    expect(takeUpdates(other).min).toEqual([{ path: ['a'], value: { x: 1, c: 2, b: 3 } }]);
  });
});

describe('slotsOfRow', () => {
  it('folds a row of a date and numbers over the date field’s earlier range, as slotsOf of the folded values', () => {
    // Arrange: a row [time, a, b] in a larger array, and earlier ranges of the time below, around and above it.
    const row = [99, 1_000, -0, 2.5];
    const names = ['t', 'a', 'b'];
    for (const [firstMin, firstMax] of [
      [500, 600],
      [900, 1_100],
      [1_200, 1_300],
    ] as const) {
      // Act
      const slots = slotsOfRow(names, row, 1, firstMin, firstMax);
      // Assert
      const expected = slotsOf(
        names,
        [new Date(Math.min(firstMin, 1_000)), -0, 2.5],
        [new Date(Math.max(firstMax, 1_000)), -0, 2.5],
      );
      expect(slots?.values).toEqual(expected?.values);
      expect(Object.is(slots?.values[2], -0)).toBe(true);
      expect([...(slots?.kinds ?? [])]).toEqual([...(expected?.kinds ?? [])]);
      expect(slots?.names).toEqual(names);
    }
  });

  it('refuses a NaN, and does not share the caller’s names array', () => {
    // Arrange
    const names = ['t', 'x'];
    // Act
    const refused = slotsOfRow(names, [0, Number.NaN], 0, 0, 0);
    const slots = slotsOfRow(names, [0, 1], 0, 0, 0);
    names.push('y');
    // Assert
    expect(refused).toBeUndefined();
    expect(slots?.names).toEqual(['t', 'x']);
  });
});

describe('forgetSlotsSnapshot', () => {
  it('makes the next snapshot of typed slots afresh, and leaves a tree’s as it is', () => {
    // Arrange: a MinMax that moved to slots, and one that stays a tree (a string field).
    const slots = fold({ t: new Date(0), v: 1 });
    const tree = fold({ t: new Date(0), s: 'x' });
    const firstSlots = snapshotMinMax(slots);
    const firstTree = snapshotMinMax(tree);
    updateMinMax(slots, { t: new Date(5), v: 2 });
    const kept = snapshotMinMax(slots);
    // Act
    forgetSlotsSnapshot(slots);
    forgetSlotsSnapshot(tree);
    // Assert: nothing changed since, yet the slots' snapshot is a new one with the same documents.
    expect(slots.slots).toBeDefined();
    expect(snapshotMinMax(slots)).not.toBe(kept);
    expect(snapshotMinMax(slots).max).toEqual({ t: new Date(5), v: 2 });
    expect(snapshotMinMax(tree)).toBe(firstTree);
    expect(firstSlots.min).toEqual({ t: new Date(0), v: 1 });
  });
});
