import { Decimal128, Double, Int32, Long, ObjectId } from 'bson';
import fc from 'fast-check';
import { update as mingoUpdate } from 'mingo/updater';
import { describe, expect, it } from 'vitest';

import {
  createMinMax,
  maxDocument,
  minDocument,
  minMaxFromDocuments,
  snapshotMinMax,
  viewMinMax,
  takeDocuments,
  takeUpdates,
  updateMinMax,
  type SetOp,
} from '../../src/bucket-format/min-max.js';
import { MinMaxSnapshot } from '../../src/bucket-format/min-max-snapshot.js';
import { bsonTypeOf, canonicalTypeOf, compareBsonValues, isPlainObject } from '../../src/util/bson-value.js';
import { defineField } from '../../src/util/safe-record.js';
import { isBsonValue } from '../../src/util/bson-type.js';

// ---------------------------------------------------------------------------------------------------
// Arbitraries
// ---------------------------------------------------------------------------------------------------

const scalar: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -5, max: 5 }).map((i) => new Int32(i)),
  fc.integer({ min: -5, max: 5 }).map((i) => Long.fromNumber(i)),
  fc.constantFrom(-2.5, 0.5, 1.5, -0, NaN).map((d) => new Double(d)),
  fc.constantFrom(-2.5, 0.5, 1, 3),
  fc.constantFrom('-1.5', '0.5', '2', 'NaN').map((s) => Decimal128.fromString(s)),
  fc.integer({ min: -3, max: 3 }).map((t) => new Date(t)),
  fc.integer({ min: 0, max: 3 }).map((i) => new ObjectId(i.toString(16).padStart(24, '0'))),
  fc.constantFrom('', 'a', 'b', 'é', '😀'),
  fc.boolean(),
  fc.constant(null),
);

/**
 * Field names that exercise dotted-path safety and JS-specific keys. mingo cannot take `__proto__` (it
 * declines to set it) nor `toString` (its equality check calls `toString()`): those are covered by (d)
 * with an own-property applier.
 */
const names = fc.constantFrom('a', 'b', 'c', 'time', '0', '12', 'constructor', 'a.b', '$x', '');

/**
 * A MinMax with `time` folded in, and a twin that only folds (the reference): `commit` folds a batch
 * into both (the metaField `c` left out) and gives the twin's documents.
 */
function withTwin() {
  const mm = createMinMax();
  const twin = createMinMax();
  updateMinMax(mm, { time: new Date(0) }, { skipField: undefined });
  updateMinMax(twin, { time: new Date(0) }, { skipField: undefined });
  const commit = (batch: ReadonlyArray<Record<string, unknown>>) => {
    for (const m of batch) {
      updateMinMax(mm, m, { skipField: 'c' });
      updateMinMax(twin, m, { skipField: 'c' });
    }
    return { min: minDocument(twin), max: maxDocument(twin) };
  };
  return { mm, twin, commit };
}

/**
 * Up to `maxLength` batches of one to three flat measurements, of numbers and dates mostly, so that a
 * bucket stays in typed min/max slots and leaves them now and then.
 */
function slottedBatchesArb(maxLength: number) {
  const slotted = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(-2.5, 0.5, 1, 3, 0, -0, NaN) },
    { weight: 8, arbitrary: fc.integer({ min: -3, max: 3 }).map((t) => new Date(t)) },
    { weight: 1, arbitrary: scalar },
  );
  return fc.array(fc.array(fc.dictionary(names, slotted, { maxKeys: 5 }), { minLength: 1, maxLength: 3 }), {
    minLength: 1,
    maxLength,
  });
}

function valueArb(names: fc.Arbitrary<string>): fc.Arbitrary<unknown> {
  return fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      scalar,
      fc.array(tie('value'), { maxLength: 3 }),
      fc.dictionary(names, tie('value'), { maxKeys: 4 }),
    ),
  })).value;
}

/**
 * Values where no path is ever an array in one measurement and an object in another: fields named `l…`
 * hold arrays or scalars, other fields objects or scalars, array elements scalars or objects. The server
 * shares tree positions between an object slot and an array slot of the same node, so a field inserted
 * for the object shifts the array's positions (see the unit test "shifts array positions ..."); the
 * simple reference below does not model that mixed-schema-only effect.
 */
const objectNames = fc.constantFrom('a', 'b', 'time', '0', 'constructor', 'a.b', '$x', '');
const arrayNames = fc.constantFrom('l', 'l.m', '$l');
const consistentObject: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{
  obj: Record<string, unknown>;
  arr: unknown[];
}>((tie) => ({
  obj: fc
    .tuple(
      fc.dictionary(objectNames, fc.oneof({ depthSize: 'small' }, scalar, tie('obj')), { maxKeys: 3 }),
      fc.dictionary(arrayNames, fc.oneof({ depthSize: 'small' }, scalar, tie('arr')), { maxKeys: 2 }),
    )
    .map(([o, a]) => ({ ...o, ...a })),
  arr: fc.array(fc.oneof({ depthSize: 'small' }, scalar, tie('obj')), { maxLength: 3 }),
})).obj;

function measurementArb(names: fc.Arbitrary<string>): fc.Arbitrary<Record<string, unknown>> {
  return fc.dictionary(names, valueArb(names), { maxKeys: 5 });
}

/** Batches of measurements, one batch per commit. */
function batchesArb(names: fc.Arbitrary<string>) {
  return fc.array(fc.array(measurementArb(names), { minLength: 1, maxLength: 3 }), {
    minLength: 1,
    maxLength: 5,
  });
}

// ---------------------------------------------------------------------------------------------------
// Independent reference: fold JS values directly, path by path (§3.2), ignoring field order
// ---------------------------------------------------------------------------------------------------

const UNSET = Symbol('unset');
/** A reference slot: `UNSET` or a value (the symbol keeps "unset" apart from every BSON value). */
type Ref = unknown;

function refFold(cur: Ref, v: unknown, dir: number): Ref {
  if (isPlainObject(v))
    return refContainer(
      cur,
      20,
      dir,
      isPlainObject,
      () => refFoldObject({}, v, dir),
      () => refFoldObject(cur as Record<string, Ref>, v, dir),
    );
  if (Array.isArray(v))
    return refContainer(
      cur,
      25,
      dir,
      Array.isArray,
      () => refFoldArray([], v, dir),
      () => refFoldArray(cur as Ref[], v, dir),
    );
  if (cur === UNSET) return v;
  if (isPlainObject(cur)) return dir * (canonicalTypeOf(v) - 20) > 0 ? v : cur;
  if (Array.isArray(cur)) return dir * (canonicalTypeOf(v) - 25) > 0 ? v : cur;
  return dir * compareBsonValues(v, cur) > 0 ? v : cur;
}

function refContainer(
  cur: Ref,
  canonical: number,
  dir: number,
  same: (x: unknown) => boolean,
  fresh: () => Ref,
  merge: () => Ref,
): Ref {
  if (cur === UNSET) return fresh();
  if (same(cur)) return merge();
  const curCanonical = isPlainObject(cur) ? 20 : Array.isArray(cur) ? 25 : canonicalTypeOf(cur);
  return dir * (canonical - curCanonical) > 0 ? fresh() : cur;
}

function refFoldObject(
  cur: Record<string, Ref>,
  v: Record<string, unknown>,
  dir: number,
): Record<string, Ref> {
  const out: Record<string, Ref> = Object.create(null) as Record<string, Ref>;
  for (const k of Object.keys(cur)) out[k] = cur[k];
  for (const k of Object.keys(v)) {
    if (v[k] === undefined) continue;
    out[k] = refFold(k in out ? out[k] : UNSET, v[k], dir);
  }
  return out;
}

function refFoldArray(cur: Ref[], v: unknown[], dir: number): Ref[] {
  const out = [...cur];
  for (let i = 0; i < v.length; i++) out[i] = refFold(i < cur.length ? cur[i] : UNSET, v[i] ?? null, dir);
  return out;
}

/** Same BSON values, ignoring field order (the reference does not model §3.3). */
function expectSameIgnoringOrder(actual: unknown, expected: unknown, path = '$'): void {
  if (isPlainObject(expected)) {
    expect(isPlainObject(actual), path).toBe(true);
    const a = actual as Record<string, unknown>;
    expect(Object.keys(a).sort(), path).toEqual(Object.keys(expected).sort());
    for (const k of Object.keys(expected)) expectSameIgnoringOrder(a[k], expected[k], `${path}.${k}`);
  } else if (Array.isArray(expected)) {
    expect(Array.isArray(actual), path).toBe(true);
    expect((actual as unknown[]).length, path).toBe(expected.length);
    expected.forEach((e, i) => {
      expectSameIgnoringOrder((actual as unknown[])[i], e, `${path}.${i}`);
    });
  } else {
    expect(bsonTypeOf(actual), path).toBe(bsonTypeOf(expected));
    expect(compareBsonValues(actual, expected), path).toBe(0);
  }
}

/** Same BSON document, field order included. */
function expectIdentical(actual: unknown, expected: unknown, path = '$'): void {
  if (isPlainObject(expected)) {
    expect(isPlainObject(actual), path).toBe(true);
    const a = actual as Record<string, unknown>;
    expect(Object.keys(a), path).toEqual(Object.keys(expected));
    for (const k of Object.keys(expected)) expectIdentical(a[k], expected[k], `${path}.${k}`);
  } else if (Array.isArray(expected)) {
    expect(Array.isArray(actual), path).toBe(true);
    expect((actual as unknown[]).length, path).toBe(expected.length);
    expected.forEach((e, i) => {
      expectIdentical((actual as unknown[])[i], e, `${path}.${i}`);
    });
  } else {
    expect(bsonTypeOf(actual), path).toBe(bsonTypeOf(expected));
    expect(compareBsonValues(actual, expected), path).toBe(0);
  }
}

/** Apply `$set` operations with mingo, as MongoDB would apply them to control.min / control.max. */
function applyWithMingo(doc: Record<string, unknown>, ops: ReadonlyArray<SetOp>): Record<string, unknown> {
  for (const op of ops) {
    if (op.path.length === 0) {
      doc = op.value as Record<string, unknown>;
      continue;
    }
    mingoUpdate(doc, { $set: { [op.path.join('.')]: op.value } }, undefined, undefined, {
      cloneMode: 'none',
    });
  }
  return doc;
}

/** A `$set` applier that writes own properties only (for `__proto__`, which mingo declines to set). */
function applySafely(doc: Record<string, unknown>, ops: ReadonlyArray<SetOp>): Record<string, unknown> {
  for (const op of ops) {
    if (op.path.length === 0) {
      doc = op.value as Record<string, unknown>;
      continue;
    }
    let target: Record<string, unknown> = doc;
    for (const seg of op.path.slice(0, -1)) {
      const own = Object.getOwnPropertyDescriptor(target, seg);
      target = own?.value as Record<string, unknown>;
    }
    const last = op.path[op.path.length - 1] as string;
    if (Array.isArray(target)) target[Number(last)] = op.value;
    else defineField(target, last, op.value);
  }
  return doc;
}

// ---------------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------------

describe('MinMax properties', () => {
  it('(a) min/max equal a brute-force per-path fold', () => {
    fc.assert(
      fc.property(fc.array(consistentObject, { minLength: 1, maxLength: 8 }), (measurements) => {
        // Arrange
        const mm = createMinMax();
        let refMin: Ref = {};
        let refMax: Ref = {};
        // Act
        for (const m of measurements) {
          updateMinMax(mm, m);
          refMin = refFold(refMin, m, -1);
          refMax = refFold(refMax, m, 1);
        }
        // Assert
        expectSameIgnoringOrder(minDocument(mm), refMin);
        expectSameIgnoringOrder(maxDocument(mm), refMax);
      }),
      { numRuns: 1500 },
    );
  });

  it('(b) takeUpdates applied with mingo $set reproduces the documents, field order included', () => {
    fc.assert(
      fc.property(batchesArb(names), (batches) => {
        // Arrange: the previously written documents start empty.
        const mm = createMinMax();
        updateMinMax(mm, { time: new Date(0) }, { skipField: undefined });
        let min: Record<string, unknown> = {};
        let max: Record<string, unknown> = {};
        for (const batch of batches) {
          // Act: one commit.
          for (const m of batch) updateMinMax(mm, m, { skipField: 'c' });
          const ops = takeUpdates(mm);
          min = applyWithMingo(min, ops.min);
          max = applyWithMingo(max, ops.max);
          // Assert
          expectIdentical(min, minDocument(mm));
          expectIdentical(max, maxDocument(mm));
          expect(takeUpdates(mm)).toEqual({ min: [], max: [] });
        }
      }),
      { numRuns: 1500 },
    );
  });

  it('(b) also when the first commit writes whole documents (takeDocuments)', () => {
    fc.assert(
      fc.property(batchesArb(names), batchesArb(names), (first, later) => {
        // Arrange: a bucket's first commit writes control.min and control.max whole; a twin takes the
        // same first commit as per-field updates instead.
        const mm = createMinMax();
        const twin = createMinMax();
        for (const batch of first) {
          for (const m of batch) {
            updateMinMax(mm, m, { skipField: 'c' });
            updateMinMax(twin, m, { skipField: 'c' });
          }
        }
        const taken = takeDocuments(mm);
        takeUpdates(twin);
        expectIdentical(taken.min, minDocument(mm));
        expectIdentical(taken.max, maxDocument(mm));
        expect(takeUpdates(mm)).toEqual({ min: [], max: [] });
        let min = taken.min;
        let max = taken.max;
        for (const batch of later) {
          // Act: later commits.
          for (const m of batch) {
            updateMinMax(mm, m, { skipField: 'c' });
            updateMinMax(twin, m, { skipField: 'c' });
          }
          const ops = takeUpdates(mm);
          min = applyWithMingo(min, ops.min);
          max = applyWithMingo(max, ops.max);
          // Assert: the documents, and the same (minimal) updates as after a per-field first commit.
          expectIdentical(min, minDocument(mm));
          expectIdentical(max, maxDocument(mm));
          expect(ops).toEqual(takeUpdates(twin));
        }
      }),
      { numRuns: 1000 },
    );
  });

  it('(b) takeDocuments on every commit (MongoDB 8.0) gives the current documents and leaves earlier ones as they were', () => {
    fc.assert(
      fc.property(batchesArb(names), (batches) => {
        // Arrange
        const mm = createMinMax();
        updateMinMax(mm, { time: new Date(0) }, { skipField: undefined });
        const taken: Array<{ min: Record<string, unknown>; max: Record<string, unknown> }> = [];
        const snapshots: Array<{ min: Record<string, unknown>; max: Record<string, unknown> }> = [];
        for (const batch of batches) {
          // Act: one commit, whose documents may share unchanged parts with the previous commit's.
          for (const m of batch) updateMinMax(mm, m, { skipField: 'c' });
          const docs = takeDocuments(mm);
          taken.push(docs);
          snapshots.push({ min: minDocument(mm), max: maxDocument(mm) });
          // Assert
          expectIdentical(docs.min, minDocument(mm));
          expectIdentical(docs.max, maxDocument(mm));
          expect(takeUpdates(mm)).toEqual({ min: [], max: [] });
          // takeUpdates drops what was published: the next takeDocuments starts over.
          if (batch.length % 2 === 1) takeUpdates(mm);
        }
        // Assert: later commits changed nothing that earlier ones published.
        taken.forEach((docs, i) => {
          expectIdentical(docs.min, (snapshots[i] as { min: unknown }).min);
          expectIdentical(docs.max, (snapshots[i] as { max: unknown }).max);
        });
      }),
      { numRuns: 1500 },
    );
  });

  it('(b) snapshotMinMax on every commit (compressed buckets) holds the documents of its commit, read at any time', () => {
    const flatBatches = fc.array(
      fc.array(fc.dictionary(names, scalar, { maxKeys: 5 }), { minLength: 1, maxLength: 3 }),
      {
        minLength: 1,
        maxLength: 8,
      },
    );
    const slottedBatches = slottedBatchesArb(10);
    fc.assert(
      fc.property(
        fc.oneof(flatBatches, slottedBatches, batchesArb(names)),
        fc.array(fc.constantFrom('now', 'later', 'takeDocuments'), { minLength: 1, maxLength: 8 }),
        (batches, reads) => {
          // Arrange: a twin that only folds is the reference.
          const { mm, commit } = withTwin();
          const taken: Array<{ snapshot: ReturnType<typeof snapshotMinMax>; min: unknown; max: unknown }> =
            [];
          batches.forEach((batch, i) => {
            // Act: one commit; its documents read at once or at the end, or a takeDocuments (what a
            // version-1 first commit uses) spending the change tracking before the snapshot.
            const { min, max } = commit(batch);
            const read = reads[i % reads.length];
            if (read === 'takeDocuments') {
              const docs = takeDocuments(mm);
              expectIdentical(docs.min, min);
              expectIdentical(docs.max, max);
            }
            const snapshot = snapshotMinMax(mm);
            taken.push({ snapshot, min, max });
            if (read === 'now') {
              expectIdentical(snapshot.min, min);
              expectIdentical(snapshot.max, max);
            }
          });
          // Assert: every snapshot still holds its own commit's documents.
          for (const { snapshot, min, max } of taken) {
            expectIdentical(snapshot.min, min);
            expectIdentical(snapshot.max, max);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  it("(c) what a storage keeps of views (viewMinMax, MinMaxSnapshot.kept) holds the last commit's documents; documents read earlier keep theirs", () => {
    fc.assert(
      fc.property(
        slottedBatchesArb(12),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
        (commits, readAfter) => {
          // Arrange: a twin that only folds is the reference.
          const { mm, commit, twin } = withTwin();
          let kept: MinMaxSnapshot | undefined;
          const read: Array<{ min: unknown; max: unknown; expectedMin: unknown; expectedMax: unknown }> = [];
          commits.forEach((batch, i) => {
            const { min, max } = commit(batch);
            // Act: the catalog's commit (a snapshot first, views after), kept by the storage.
            const handed = i === 0 ? snapshotMinMax(mm) : viewMinMax(mm);
            expectIdentical(handed.min, min);
            expectIdentical(handed.max, max);
            kept = MinMaxSnapshot.kept(handed, kept);
            // A view is never kept as it is: its values change with the bucket's next fold.
            if (handed === mm.view) expect(kept).not.toBe(handed);
            if (readAfter[i % readAfter.length] === true) {
              read.push({ min: kept.min, max: kept.max, expectedMin: min, expectedMax: max });
            }
          });
          // Assert: what is kept is the last commit's; whatever was read earlier did not change.
          expectIdentical((kept as MinMaxSnapshot).min, minDocument(twin));
          expectIdentical((kept as MinMaxSnapshot).max, maxDocument(twin));
          for (const r of read) {
            expectIdentical(r.min, r.expectedMin);
            expectIdentical(r.max, r.expectedMax);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  it('a storage keeping views of a bucket in typed slots reuses one snapshot until it is read', () => {
    const mm = createMinMax();
    updateMinMax(mm, { time: new Date(0), a: 1 }, { skipField: undefined });
    snapshotMinMax(mm);
    updateMinMax(mm, { time: new Date(1), a: 2 }, { skipField: undefined });
    const view = viewMinMax(mm);
    const kept = MinMaxSnapshot.kept(view, undefined);
    expect(kept).not.toBe(view);
    updateMinMax(mm, { time: new Date(2), a: 3 }, { skipField: undefined });
    expect(viewMinMax(mm)).toBe(view);
    expect(MinMaxSnapshot.kept(view, kept)).toBe(kept);
    expect(kept.max).toEqual({ time: new Date(2), a: 3 });
    // Read: its documents are built, so the next commit keeps a new snapshot and the read ones stay.
    updateMinMax(mm, { time: new Date(3), a: 4 }, { skipField: undefined });
    const next = MinMaxSnapshot.kept(viewMinMax(mm), kept);
    expect(next).not.toBe(kept);
    expect(kept.max).toEqual({ time: new Date(2), a: 3 });
    expect(next.max).toEqual({ time: new Date(3), a: 4 });
  });

  it('snapshotMinMax moves a flat MinMax of numbers and dates to typed slots, and back to the tree for other values', () => {
    // Arrange
    const mm = createMinMax();
    updateMinMax(mm, { t: new Date(0), a: 1, b: 5 });
    const first = snapshotMinMax(mm);
    // Act: a later time and an `a` within the range (only maxima change), nothing, then a string field.
    updateMinMax(mm, { t: new Date(10), a: 2, b: 5 });
    const second = snapshotMinMax(mm);
    const third = snapshotMinMax(mm);
    updateMinMax(mm, { t: new Date(20), a: 3, b: 5, c: 'x' });
    const fourth = snapshotMinMax(mm);
    updateMinMax(mm, { t: new Date(30), a: 0 });
    const fifth = snapshotMinMax(mm);
    // Assert: the first snapshot is made from the tree and starts the slots; the string field ends them.
    expect(first.minValues).toEqual([new Date(0), 1, 5]);
    expect(mm.slots).toBeUndefined();
    expect(second.numbers).toEqual([0, 10, 1, 2, 5, 5]);
    expect(second.names).toBe(first.names);
    expect(third).toBe(second);
    expect(fourth.names).toEqual(['t', 'a', 'b', 'c']);
    expect(fifth.names).toBe(fourth.names);
    expect(first.max).toEqual({ t: new Date(0), a: 1, b: 5 });
    expect(second.max).toEqual({ t: new Date(10), a: 2, b: 5 });
    expect(fourth.min).toEqual({ t: new Date(0), a: 1, b: 5, c: 'x' });
    expect(fifth.min).toEqual({ t: new Date(0), a: 0, b: 5, c: 'x' });
    expect(fifth.max).toEqual({ t: new Date(30), a: 3, b: 5, c: 'x' });
    expect(Object.keys(fourth.max)).toEqual(['t', 'a', 'b', 'c']);
  });

  it('typed slots keep a hostile field name an own field of the snapshot documents', () => {
    // Arrange: a measurement with an own `__proto__` field, folded into slots after the first snapshot.
    const mm = createMinMax();
    const hostile = (t: number, v: number) => {
      const m: Record<string, unknown> = { t: new Date(t) };
      defineField(m, '__proto__', v);
      return m;
    };
    updateMinMax(mm, hostile(0, 1));
    snapshotMinMax(mm);
    // Act
    updateMinMax(mm, hostile(5, 7));
    const snapshot = snapshotMinMax(mm);
    // Assert
    expect(snapshot.numbers).toEqual([0, 5, 1, 7]);
    expect(Object.getPrototypeOf(snapshot.max)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(snapshot.max, '__proto__')?.value).toBe(7);
    expect(Object.keys(snapshot.min)).toEqual(['t', '__proto__']);
  });

  it('(b) also after reopening from the written documents', () => {
    fc.assert(
      fc.property(batchesArb(names), batchesArb(names), (before, after) => {
        // Arrange: a bucket written by one catalog, reopened by another.
        const first = createMinMax();
        for (const batch of before) for (const m of batch) updateMinMax(first, m);
        let min = minDocument(first);
        let max = maxDocument(first);
        // The rebuilt tree may order a mixed-kind path differently (min folded first, as on the server);
        // then the first takeUpdates replaces that side whole, which the loop below checks.
        const mm = minMaxFromDocuments(min, max);
        for (const batch of after) {
          // Act
          for (const m of batch) updateMinMax(mm, m);
          const ops = takeUpdates(mm);
          min = applyWithMingo(min, ops.min);
          max = applyWithMingo(max, ops.max);
          // Assert
          expectIdentical(min, minDocument(mm));
          expectIdentical(max, maxDocument(mm));
        }
      }),
      { numRuns: 500 },
    );
  });

  it('(d) hostile field names never reach a prototype', () => {
    const hostile = fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'a',
      '$where',
      'x.y',
      'hasOwnProperty',
    );
    fc.assert(
      fc.property(batchesArb(hostile), (batches) => {
        // Arrange: JSON.parse makes `__proto__` an own field, as a driver-decoded document would have it.
        const mm = createMinMax();
        let min: Record<string, unknown> = {};
        for (const batch of batches) {
          for (const m of batch)
            updateMinMax(mm, JSON.parse(JSON.stringify(m, replacer)) as Record<string, unknown>);
          min = applySafely(min, takeUpdates(mm).min);
          // Assert
          expectIdentical(min, minDocument(mm));
          expect(Object.getPrototypeOf(minDocument(mm))).toBe(Object.prototype);
          expect(Object.keys(Object.prototype)).toEqual([]);
          expect((Object.prototype as Record<string, unknown>).polluted).toBeUndefined();
        }
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the order of fields when every measurement lists the same fields in the same order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd', 'e', 'time'), { minLength: 1 }),
        fc.array(fc.array(scalar, { minLength: 6, maxLength: 6 }), { minLength: 1, maxLength: 5 }),
        (keys, rows) => {
          const mm = createMinMax();
          updateMinMax(mm, { time: new Date(0) });
          for (const row of rows) {
            const m: Record<string, unknown> = {};
            keys.forEach((k, i) => (m[k] = row[i]));
            updateMinMax(mm, m);
          }
          // The seeded time field is the cursor's first stop: new fields go before it (§3.3).
          const expected = keys.includes('time') ? keys : [...keys, 'time'];
          expect(Object.keys(minDocument(mm))).toEqual(expected);
          expect(Object.keys(maxDocument(mm))).toEqual(expected);
        },
      ),
    );
  });
});

/** JSON round trip that keeps the arbitrary's own `__proto__` keys (values are JSON-safe strings/numbers). */
function replacer(_key: string, value: unknown): unknown {
  if (isBsonValue(value, 'Int32') || isBsonValue(value, 'Double')) return value.value;
  if (isBsonValue(value, 'Long')) return value.toNumber();
  if (isBsonValue(value, 'Decimal128')) return value.toString();
  if (isBsonValue(value, 'ObjectId')) return value.toHexString();
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value;
}
