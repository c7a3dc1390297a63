/**
 * The live columns of `MemoryStorage`'s compressed buckets: commits (packed column tails and a min/max
 * snapshot) spliced in, guarded on the count and the columns' lengths, the document rebuilt when read.
 */
import { Binary, ObjectId } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import type { CompressedBucketCommit } from '../../../src/bucket-format/compressed-bucket.js';
import { MeasurementMap } from '../../../src/bucket-format/measurement-map.js';
import { MinMaxSnapshot } from '../../../src/bucket-format/min-max-snapshot.js';
import { LiveColumns } from '../../../src/storage/live-columns.js';
import type { StoredBucket } from '../../../src/storage/storage.js';
import { defineField } from '../../../src/util/safe-record.js';

const column = (values: ReadonlyArray<unknown>) =>
  new Binary(BSONColumn.encode(values), Binary.SUBTYPE_COLUMN);

/** A bucket's first document, as the catalog inserts it: the map's first diffs are its columns. */
function firstDocument(map: MeasurementMap, id: ObjectId): StoredBucket {
  const data: Record<string, Binary> = {};
  for (const d of map.intermediate().diffs)
    defineField(data, d.field, new Binary(d.bytes, Binary.SUBTYPE_COLUMN));
  return { _id: id, control: { version: 2, min: {}, max: {}, count: map.count }, data };
}

/** What a deferred first commit carries aside: its columns' source and its min/max. */
function deferredFirst(
  map: MeasurementMap,
  min: Record<string, unknown> = {},
  max: Record<string, unknown> = {},
): { columns: MeasurementMap; minMax: MinMaxSnapshot } {
  return { columns: map, minMax: MinMaxSnapshot.ofDocuments(min, max) };
}

function commitOf(map: MeasurementMap, id: ObjectId, before: number, n: number): CompressedBucketCommit {
  return {
    format: 'compressed',
    bucketId: id,
    bucketIdHex: id.toHexString(),
    numPreviouslyCommittedMeasurements: before,
    count: before + n,
    version: undefined,
    minMax: MinMaxSnapshot.ofDocuments({ n: before }, { n: before + n }),
    tails: map.intermediateTails(),
  };
}

/** Each column's bytes as base64, by field. */
function columnBytes(doc: StoredBucket): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, b] of Object.entries(doc.data as Record<string, Binary>)) {
    defineField(out, field, Buffer.from(b.buffer.subarray(0, b.position)).toString('base64'));
  }
  return out;
}

describe('LiveColumns', () => {
  it('commits applied one after another give the columns of encoding every measurement at once, read at any time', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.dictionary(
            fc.constantFrom('a', '7', 'b', '2', '__proto__'),
            fc.oneof(fc.integer(), fc.string()),
            {
              maxKeys: 4,
            },
          ),
          { minLength: 2, maxLength: 30 },
        ),
        fc.array(fc.tuple(fc.integer({ min: 1, max: 4 }), fc.boolean()), { minLength: 1, maxLength: 10 }),
        (rows, steps) => {
          // Arrange: the first measurement inserted as a document (integer-like names make its columns'
          // order differ from the bucket's).
          const measurements = rows.map((r, i) => ({ t: new Date(i * 1000), ...r }));
          const id = new ObjectId();
          const key = id.toHexString();
          const map = new MeasurementMap('t');
          map.insertOne(measurements[0]!, undefined);
          const docs = new Map<string, StoredBucket>([[key, firstDocument(map, id)]]);
          const live = new LiveColumns();
          let i = 1;
          let before = 0;
          const readDocs: Array<{ doc: StoredBucket; bytes: Record<string, string> }> = [];
          for (let s = 0; i < measurements.length; s++) {
            const [size, read] = steps[s % steps.length]!;
            before = i;
            const end = Math.min(measurements.length, i + size);
            for (; i < end; i++) map.insertOne(measurements[i]!, undefined);
            // Act
            const applied = live.apply(key, docs, commitOf(map, id, before, end - before));
            // Assert: every commit applies; a read rebuilds the document.
            expect(applied).toBe(true);
            if (read) {
              live.materialize(docs);
              const doc = docs.get(key)!;
              readDocs.push({ doc, bytes: columnBytes(doc) });
            }
          }
          // Assert: documents read earlier were not changed by later commits.
          for (const { doc, bytes } of readDocs) expect(columnBytes(doc)).toEqual(bytes);
          live.materialize(docs);
          // Assert: the columns, and the last commit's control fields.
          const doc = docs.get(key)!;
          const expected: Record<string, Binary> = {};
          for (const field of Object.keys(doc.data as object)) {
            const values = measurements.map((m): unknown => Object.getOwnPropertyDescriptor(m, field)?.value);
            defineField(expected, field, column(values));
          }
          expect(doc.data).toStrictEqual(expected);
          expect(Object.keys(doc.data as object).sort()).toEqual(
            [...new Set(measurements.flatMap((m) => Object.keys(m)))].sort(),
          );
          expect(doc.control).toStrictEqual({
            version: 2,
            min: { n: before },
            max: { n: measurements.length },
            count: measurements.length,
          });
        },
      ),
    );
  });

  it("a reader's document is the one the storage would build, owns its bytes and values, and is not kept", () => {
    // Arrange: a bucket with a meta value and two commits since its first document.
    const id = new ObjectId();
    const key = id.toHexString();
    const map = new MeasurementMap('t');
    map.insertOne({ t: new Date(0), a: 1 }, undefined);
    const first = { ...firstDocument(map, id), meta: { host: 'a' } };
    const docs = new Map<string, StoredBucket>([[key, first]]);
    const live = new LiveColumns();
    for (const n of [1, 2]) {
      map.insertOne({ t: new Date(n), a: n + 1 }, undefined);
      expect(live.apply(key, docs, commitOf(map, id, n, 1))).toBe(true);
    }
    // Act: a reader changes everything it got.
    const read = live.readerDocument(key, docs) as {
      meta: { host: string };
      control: { min: { n: number } };
      data: Record<string, Binary>;
    };
    for (const binary of Object.values(read.data)) binary.buffer.fill(0);
    read.meta.host = 'changed';
    read.control.min.n = 99;
    const again = live.readerDocument(key, docs);
    // Assert: nothing kept, nothing stored changed; the next reader's document is the storage's.
    expect(docs.get(key)).toBe(first);
    live.materialize(docs);
    const stored = docs.get(key) as StoredBucket;
    expect(again).toStrictEqual(stored);
    expect(stored).toMatchObject({ meta: { host: 'a' }, control: { min: { n: 2 }, count: 3 } });
    expect(stored.data).toStrictEqual({
      t: column([new Date(0), new Date(1), new Date(2)]),
      a: column([1, 2, 3]),
    });
    // A bucket whose stored document is current gives none.
    expect(live.readerDocument(key, docs)).toBeUndefined();
  });

  it('applies nothing when the count or a column does not match the commit', () => {
    // Arrange: a bucket of two measurements, and a commit of a third prepared against it.
    const id = new ObjectId();
    const key = id.toHexString();
    const map = new MeasurementMap('t');
    map.insertOne({ t: new Date(0), a: 1 }, undefined);
    map.insertOne({ t: new Date(1), a: 2 }, undefined);
    const stored = firstDocument(map, id);
    map.insertOne({ t: new Date(2), a: 3, b: 'new' }, undefined);
    const commit = commitOf(map, id, 2, 1);
    const live = new LiveColumns();
    // Act / Assert: a count that differs, then a column shorter than where the commit cuts it.
    const recount = new Map([[key, { ...stored, control: { version: 2, min: {}, max: {}, count: 3 } }]]);
    expect(live.matches(key, recount, commit)).toBe(false);
    expect(live.apply(key, recount, commit)).toBe(false);
    live.forget(key);
    const short = new Map([
      [key, { ...stored, data: { ...(stored.data as object), a: new Binary(new Uint8Array(1), 7) } }],
    ]);
    expect(live.apply(key, short, commit)).toBe(false);
    live.materialize(short);
    expect(short.get(key)!.data).toStrictEqual({
      ...(stored.data as object),
      a: new Binary(new Uint8Array(1), 7),
    });
    // The stored bucket as the commit expects it: applied, the new column last.
    live.forget(key);
    const docs = new Map([[key, stored]]);
    expect(live.matches(key, docs, commit)).toBe(true);
    expect(live.apply(key, docs, commit)).toBe(true);
    live.materialize(docs);
    expect(docs.get(key)!.data).toStrictEqual({
      t: column([new Date(0), new Date(1), new Date(2)]),
      a: column([1, 2, 3]),
      b: column([undefined, undefined, 'new']),
    });
    expect(Object.keys(docs.get(key)!.data as object)).toEqual(['t', 'a', 'b']);
  });

  it('a read of a bucket whose map has encoded nothing previews its columns, leaving the map no encoder', () => {
    // Arrange: two buckets whose first commits carry deferred maps of three measurements each.
    const live = new LiveColumns();
    const docs = new Map<string, StoredBucket>();
    const maps = [0, 1].map(() => new MeasurementMap('t', 'deferred'));
    const keys = maps.map((map, b) => {
      for (let i = 0; i < 3; i++) map.insertOne({ t: new Date(i * 1000), v: 10 * b + i }, undefined);
      const id = new ObjectId();
      const doc: StoredBucket = {
        _id: id,
        control: { version: 2, min: null, max: null, count: 3 },
        data: {},
      };
      docs.set(id.toHexString(), doc);
      live.adopt(id.toHexString(), doc, deferredFirst(map, { t: new Date(0), v: 10 * b }, { v: 10 * b + 2 }));
      return id.toHexString();
    });
    const decoded = (key: string, field: string): unknown[] => {
      const binary = (docs.get(key) as { data: Record<string, Binary> }).data[field] as Binary;
      return BSONColumn.decode(binary.buffer.subarray(0, binary.position));
    };
    // Act
    live.materializeOne(keys[0]!, docs);
    // Assert: the first bucket's document has its columns and its map still keeps its measurements,
    // without an encoder; the second bucket was not read.
    expect(decoded(keys[0]!, 't')).toEqual([new Date(0), new Date(1000), new Date(2000)]);
    expect(decoded(keys[0]!, 'v')).toEqual([0, 1, 2]);
    expect(docs.get(keys[0]!)!.control).toEqual({
      version: 2,
      min: { t: new Date(0), v: 0 },
      max: { v: 2 },
      count: 3,
    });
    expect([maps[0]!.keptCount, maps[0]!.encodedColumns]).toEqual([3, 0]);
    expect((docs.get(keys[1]!) as { data: object }).data).toEqual({});
    // A full materialization previews the other one the same way.
    live.materialize(docs);
    expect(decoded(keys[1]!, 'v')).toEqual([10, 11, 12]);
    expect([maps[1]!.keptCount, maps[1]!.encodedColumns]).toEqual([3, 0]);
    // Each document owns its bytes: a preview made after it (for the store or a reader) changes nothing.
    expect(live.readerDocument(keys[0]!, docs)).toBeUndefined();
    expect(decoded(keys[0]!, 'v')).toEqual([0, 1, 2]);
  });

  it('keeps an unread bucket as a skeleton: its control values and data shared by every skeleton, frozen', () => {
    // Arrange: two first documents of deferred buckets, as the catalog makes them.
    const live = new LiveColumns();
    const skeletons = [0, 1].map((b) => {
      const map = new MeasurementMap('t', 'deferred');
      map.insertOne({ t: new Date(b), v: b }, undefined);
      const id = new ObjectId();
      const doc = {
        _id: id,
        control: { version: 2, min: null, max: null, count: 1 },
        meta: b,
        data: {},
      };
      // Act
      return live.adopt(id.toHexString(), doc, deferredFirst(map, { v: b }, { v: b }));
    });
    // Assert: the fields in order, nothing of the first commit's control values kept, one shared control.
    const [a, b] = skeletons as [StoredBucket, StoredBucket];
    expect(Object.keys(a)).toEqual(['_id', 'control', 'meta', 'data']);
    expect(a.control).toEqual({ version: null, min: null, max: null, count: null });
    expect(a.control).toBe(b.control);
    expect(a.data).toBe(b.data);
    expect(Object.isFrozen(a.control) && Object.isFrozen(a.data)).toBe(true);
    expect([a.meta, b.meta]).toEqual([0, 1]);
  });

  it('keeps the control of a document whose control fields are not the four, in order, as its own', () => {
    // Arrange: first documents whose control has a field more, or its fields in another order.
    const live = new LiveColumns();
    const controls = [
      { version: 2, min: null, max: null, count: 1, extra: 'kept' },
      { version: 2, min: null, max: null },
      { min: null, version: 2, max: null, count: 1 },
    ];
    // Act
    const skeletons = controls.map((control) => {
      const map = new MeasurementMap('t', 'deferred');
      map.insertOne({ t: new Date(0), v: 1 }, undefined);
      const id = new ObjectId();
      return live.adopt(id.toHexString(), { _id: id, control, data: {} }, deferredFirst(map));
    });
    // Assert: each keeps its own control fields, in its order (the values the live bucket holds aside).
    expect(skeletons.map((d) => Object.keys(d.control as object))).toEqual([
      ['version', 'min', 'max', 'count', 'extra'],
      ['version', 'min', 'max'],
      ['min', 'version', 'max', 'count'],
    ]);
    expect((skeletons[0]!.control as { extra: unknown }).extra).toBe('kept');
  });

  it("a reader's previewed document owns its bytes: later previews do not change it", () => {
    // Arrange: two unread buckets of a few measurements each (their columns are previewed when read).
    const live = new LiveColumns();
    const docs = new Map<string, StoredBucket>();
    const keys = [0, 1].map((b) => {
      const map = new MeasurementMap('t', 'deferred');
      for (let i = 0; i < 3; i++) map.insertOne({ t: new Date(i * 1000), v: 10 * b + i }, undefined);
      const id = new ObjectId();
      docs.set(id.toHexString(), {
        _id: id,
        control: { version: 2, min: null, max: null, count: 3 },
        data: {},
      });
      live.adopt(id.toHexString(), docs.get(id.toHexString())!, deferredFirst(map));
      return id.toHexString();
    });
    const values = (doc: StoredBucket | undefined): unknown[] => {
      const binary = (doc as { data: Record<string, Binary> }).data.v as Binary;
      return BSONColumn.decode(binary.buffer.subarray(0, binary.position));
    };
    // Act: a reader reads the first, then the second, then the first again.
    const first = live.readerDocument(keys[0]!, docs);
    const second = live.readerDocument(keys[1]!, docs);
    const again = live.readerDocument(keys[0]!, docs);
    // Assert
    expect(values(first)).toEqual([0, 1, 2]);
    expect(values(second)).toEqual([10, 11, 12]);
    expect(again).toStrictEqual(first);
  });
});
