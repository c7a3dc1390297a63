/**
 * Measurements held as rows of their call (`packOrCopy`, `PackedItem`): over the embedded storage, a
 * measurement of numbers and dates whose layout the call's walk has met is validated into a row instead
 * of a copy. Whatever comes (layouts that repeat and change, a field of another kind or name part way
 * through a measurement, invalid dates, metas known or new, getters), the engine must answer each call,
 * store the buckets and read back exactly what an engine that copies every measurement does, and read
 * each field of the caller's documents once.
 */
import { serialize } from 'bson';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { calculateBucketFieldsAndSizeChange, firstRowSizeChange } from '../../src/catalog/bucket.js';
import { makeBucketMetadata } from '../../src/catalog/bucket-metadata.js';
import { PackedItem } from '../../src/catalog/packed-item.js';
import { BucketEngine, MemoryStorage } from '../../src/index.js';
import type { StoredBucket } from '../../src/index.js';
import { makeWalk, packOrCopy } from '../../src/util/bson-validation.js';
import { PackedRows } from '../../src/util/packed-rows.js';
import { eagerColumns } from '../support/eager-columns.js';

/** What a field of a measurement holds: mostly numbers, sometimes what a row cannot hold. */
const fieldValue = fc.oneof(
  { weight: 12, arbitrary: fc.double({ min: -1e6, max: 1e6, noNaN: true }) },
  { weight: 6, arbitrary: fc.integer({ min: -1000, max: 1000 }) },
  { weight: 2, arbitrary: fc.constantFrom(0, -0, Number.NaN, 2 ** 31, -(2 ** 31) - 1) },
  { weight: 1, arbitrary: fc.constantFrom<unknown>('s', true, null, { n: 1 }, [1], new Date(5)) },
);

/**
 * How a measurement's meta is given: `nested` metas hold an object, and a `bad` one is, for series 0, an
 * object BSON cannot hold (a function, a BigInt beyond int64).
 */
const metaKind = fc.constantFrom('same object', 'fresh object', 'nested', 'bad', 'string', 'number', 'none');

/** A layout: the order of the time, the meta and up to four number fields. */
const layout = fc
  .tuple(fc.shuffledSubarray(['v', 'w', '__proto__', '0'], { minLength: 1 }), fc.nat(5), fc.nat(5))
  .map(([fields, timeAt, metaAt]) => {
    const names = [...fields];
    names.splice(Math.min(timeAt, names.length), 0, 't');
    names.splice(Math.min(metaAt, names.length), 0, 'm');
    return names;
  });

/** A measurement: its layout (one of the call's few), its series, values, and what may go wrong. */
const measurement = fc.record({
  // Mostly the call's first layout: runs of one layout, as ingest sends, broken now and then.
  layout: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(2) }),
  series: fc.nat(3),
  values: fc.array(fieldValue, { minLength: 4, maxLength: 4 }),
  badTime: fc.oneof(
    { weight: 30, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  getter: fc.oneof({ weight: 4, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat(5) }),
  extra: fc.oneof({ weight: 12, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});

const call = fc.record({
  layouts: fc.array(layout, { minLength: 3, maxLength: 3 }),
  meta: metaKind,
  measurements: fc.array(measurement, { minLength: 1, maxLength: 30 }),
  ordered: fc.boolean(),
});

type Call = typeof call extends fc.Arbitrary<infer T> ? T : never;

/** The documents without their `_id`s, in one canonical order. */
function canonical(docs: ReadonlyArray<StoredBucket>): string[] {
  return docs.map(({ _id: _ignored, ...rest }) => Buffer.from(serialize(rest)).toString('base64')).sort();
}

/**
 * The call's documents, fresh for one engine; `reads` counts each getter's reads. Series metas given as
 * the same object reuse one object per series for the engine's whole run (`metas`).
 */
function documentsOf(
  c: Call,
  tick: { t: number },
  metas: Map<number, object>,
  reads: number[],
): Array<Record<string, unknown>> {
  return c.measurements.map((m) => {
    const names = c.layouts[m.layout] as string[];
    const doc: Record<string, unknown> = {};
    let v = 0;
    names.forEach((name, at) => {
      let value: unknown;
      if (name === 't')
        value = m.badTime ? new Date(Number.NaN) : new Date(Date.UTC(2024, 0, 1) + 1000 * tick.t++);
      else if (name === 'm') {
        if (c.meta === 'none') return;
        if (c.meta === 'same object') {
          let meta = metas.get(m.series);
          if (meta === undefined) metas.set(m.series, (meta = { sensor: m.series, site: 'x' }));
          value = meta;
        } else if (c.meta === 'fresh object') value = { sensor: m.series, site: 'x' };
        else if (c.meta === 'nested') value = { sensor: m.series, at: { x: m.series % 2, tags: ['a'] } };
        else if (c.meta === 'bad') {
          value =
            m.series !== 0
              ? { sensor: m.series, site: 'x' }
              : m.values[0] === 0
                ? { sensor: 0, big: 2n ** 70n }
                : { sensor: 0, f: () => 1 };
        } else value = c.meta === 'string' ? `s${m.series}` : m.series;
      } else value = m.values[v++];
      if (at === m.getter) {
        const index = reads.push(0) - 1;
        Object.defineProperty(doc, name, {
          enumerable: true,
          configurable: true,
          get: () => {
            reads[index] = (reads[index] as number) + 1;
            return value;
          },
        });
      } else
        Object.defineProperty(doc, name, { value, enumerable: true, configurable: true, writable: true });
    });
    if (m.extra) doc.extra = 'a string';
    return doc;
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('measurements held as rows of their call', () => {
  it('refuses a meta too large for a document as a copy does, after a run of its layout', async () => {
    for (const storage of [new MemoryStorage(), eagerColumns(new MemoryStorage())]) {
      // Arrange: a run of one layout, then the same layout with a meta over 16 MiB.
      const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
      const coll = await engine.createCollection('big', { timeseries: { timeField: 't', metaField: 'm' } });
      const docs = [0, 1, 2, 3].map((i) => ({
        t: new Date(i * 1000),
        m: i === 3 ? 'x'.repeat(17 * 2 ** 20) : 's',
        v: i,
      }));
      // Act
      const error = await coll.insertMany(docs, { ordered: false }).then(
        () => undefined,
        (e: unknown) =>
          e as { insertedCount: number; writeErrors: Array<{ index: number; codeName: string }> },
      );
      // Assert
      expect(error?.insertedCount).toBe(3);
      expect(error?.writeErrors.map(({ index, codeName }) => [index, codeName])).toEqual([
        [3, 'BSONObjectTooLarge'],
      ]);
      await engine.close();
    }
  });

  it('refuses a new series meta nested too deep as a copy does, each time it is sent', async () => {
    // One meta object past the nesting limit, sent in three measurements after a run of their layout.
    let deep: Record<string, unknown> = { end: 1 };
    for (let i = 0; i < 200; i++) deep = { next: deep };
    const answers: unknown[] = [];
    for (const storage of [new MemoryStorage(), eagerColumns(new MemoryStorage())]) {
      const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
      const coll = await engine.createCollection('deep', { timeseries: { timeField: 't', metaField: 'm' } });
      const docs = [0, 1, 2, 3, 4].map((i) => ({ t: new Date(i * 1000), m: i < 2 ? { s: i } : deep, v: i }));
      // Act
      const error = await coll.insertMany(docs, { ordered: false }).then(
        () => undefined,
        (e: unknown) => e as { writeErrors: Array<{ index: number; codeName: string }> },
      );
      answers.push(error?.writeErrors.map(({ index, codeName }) => [index, codeName]));
      await engine.close();
    }
    // Assert: held as rows or copied, each is refused for its depth (not taken for a cycle).
    expect(answers[0]).toEqual([
      [2, 'Overflow'],
      [3, 'Overflow'],
      [4, 'Overflow'],
    ]);
    expect(answers[1]).toEqual(answers[0]);
  });

  it('size a new compressed bucket from its first row as from the measurement built from it', () => {
    const number = fc.oneof(
      fc.double({ noNaN: false }),
      fc.integer(),
      fc.constantFrom(0, -0, 2 ** 31 - 1, 2 ** 31, -(2 ** 31), -(2 ** 31) - 1, Number.NaN, Infinity),
    );
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.constantFrom('v', 'é', '__proto__', '0', 'a longer field name', '😀'), {
          minLength: 1,
        }),
        fc.nat(6),
        fc.nat(6),
        fc.array(fc.array(number, { minLength: 6, maxLength: 6 }), { minLength: 3, maxLength: 5 }),
        (fields, timeAt, metaAt, rowsOf) => {
          const names: string[] = [...fields];
          names.splice(Math.min(timeAt, names.length), 0, 't');
          names.splice(Math.min(metaAt, names.length), 0, 'm');
          const docs = rowsOf.map((numbers, k) => {
            const doc: Record<string, unknown> = {};
            let v = 0;
            for (const name of names) {
              const value = name === 't' ? new Date(k * 1000) : name === 'm' ? 'series' : numbers[v++];
              Object.defineProperty(doc, name, {
                value,
                enumerable: true,
                writable: true,
                configurable: true,
              });
            }
            return doc;
          });
          const walk = makeWalk();
          const rows = new PackedRows(docs.length);
          let packed = 0;
          for (const doc of docs) {
            // Act: the walk holds a measurement as a row once the layout repeats; each is sized both ways.
            if (packOrCopy(doc, walk, rows, 'm', 't') !== undefined) continue;
            packed++;
            const layout = walk.layout!;
            const item = new PackedItem(
              rows,
              walk.row,
              walk.rowTimeMs,
              makeBucketMetadata('series'),
              layout,
              layout.rowPlan('m', 't')!,
            );
            const empty = {
              fieldNames: new Set<string>(),
              uncommittedFieldNames: undefined,
              numMeasurements: 0,
              measurementMap: {} as never,
            };
            // Assert
            expect(firstRowSizeChange(item)).toEqual(
              calculateBucketFieldsAndSizeChange(empty, item.measurement, 'm'),
            );
          }
          expect(packed).toBeGreaterThan(0);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('answer, store and read back what copies do, reading each field once', async () => {
    const reserve = vi.spyOn(PackedRows.prototype, 'reserve');
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 6 }), async (calls) => {
        const run = async (storage: MemoryStorage) => {
          const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
          const coll = await engine.createCollection('p', { timeseries: { timeField: 't', metaField: 'm' } });
          const tick = { t: 0 };
          const metas = new Map<number, object>();
          const reads: number[] = [];
          const answers: unknown[] = [];
          for (const c of calls) {
            const docs = documentsOf(c, tick, metas, reads);
            try {
              answers.push((await coll.insertMany(docs, { ordered: c.ordered })).insertedCount);
            } catch (error) {
              const e = error as {
                insertedCount?: number;
                writeErrors?: Array<{ index: number; code: number }>;
              };
              answers.push({
                insertedCount: e.insertedCount,
                errors: e.writeErrors?.map(({ index, code }) => [index, code]),
              });
            }
          }
          const buckets = canonical(await coll.buckets.find().toArray());
          const rows = await coll.find({}, { sort: { t: 1 } }).toArray();
          await engine.close();
          return { answers, buckets, rows: rows.map(({ _id: _ignored, ...r }) => r), reads };
        };
        // Act
        const packed = await run(new MemoryStorage());
        const copied = await run(eagerColumns(new MemoryStorage()));
        // Assert
        expect(packed.answers).toEqual(copied.answers);
        expect(packed.buckets).toEqual(copied.buckets);
        expect(packed.rows).toEqual(copied.rows);
        // Each getter read once (none of a measurement an ordered call did not reach), as copying reads it.
        expect(packed.reads).toEqual(copied.reads);
        expect(packed.reads.every((n) => n <= 1)).toBe(true);
      }),
      { numRuns: 150 },
    );
    // Rows were tried (only the embedded storage's engine packs), many times (1 000 to 1 200 in 150 runs).
    expect(reserve.mock.calls.length).toBeGreaterThan(500);
  });
});
