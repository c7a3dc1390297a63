import { Binary, Decimal128, Double, Int32, Long, ObjectId } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BSONColumn, BucketEngine } from '../../../src/index.js';
import { counterUpdateDocument } from '../../../src/storage/counter-update.js';
import type { CounterUpdate } from '../../../src/storage/counter-update.js';
import { MemoryStorage } from '../../../src/storage/memory-storage.js';
import { holdsNoBucketsOf } from '../../../src/storage/storage.js';
import type { StoredBucket } from '../../../src/storage/storage.js';
import { BsonQuery } from '../../../src/util/bson-query.js';

async function all(storage: MemoryStorage, filter: Record<string, unknown>): Promise<StoredBucket[]> {
  const out: StoredBucket[] = [];
  for await (const d of storage.find('ns', filter)) out.push(d);
  return out;
}

describe('MemoryStorage', () => {
  it('inserts, rejects duplicate _id with DuplicateKey, finds by _id', async () => {
    const storage = new MemoryStorage();
    const _id = new ObjectId();
    await storage.insertOne('ns', { _id, meta: 1 });
    await expect(storage.insertOne('ns', { _id, meta: 2 })).rejects.toMatchObject({
      code: 11000,
      codeName: 'DuplicateKey',
    });
    expect(await all(storage, { _id })).toEqual([{ _id, meta: 1 }]);
    expect(await storage.countDocuments('ns')).toBe(1);
  });

  it('applies a guarded $set in place and reports notMatched when the guard fails', async () => {
    const storage = new MemoryStorage();
    const _id = new ObjectId();
    const doc = { _id, data: { t: { '0': 1 } } };
    await storage.insertOne('ns', doc);
    const guard = { _id, 'data.t.0': { $exists: true }, 'data.t.1': { $exists: false } };
    expect(await storage.updateOne('ns', guard, { $set: { 'data.t.1': 2, 'data.u': { '1': 3 } } })).toEqual({
      kind: 'updated',
    });
    expect(doc).toEqual({ _id, data: { t: { '0': 1, '1': 2 }, u: { '1': 3 } } });
    expect(await storage.updateOne('ns', guard, { $set: { 'data.t.1': 9 } })).toEqual({ kind: 'notMatched' });
    expect(doc.data.t['1' as keyof typeof doc.data.t]).toBe(2);
  });

  it('applies $setField pipelines for names that cannot be dotted, in place', async () => {
    const storage = new MemoryStorage();
    const _id = new ObjectId();
    await storage.insertOne('ns', { _id, data: { 'a.b': { '0': 1 } } });
    const stage = {
      $replaceWith: {
        $setField: {
          field: { $literal: 'data' },
          input: '$$ROOT',
          value: {
            $setField: {
              field: { $literal: 'a.b' },
              input: { $getField: { field: { $literal: 'data' }, input: '$$ROOT' } },
              value: {
                $setField: {
                  field: { $literal: '1' },
                  input: {
                    $getField: {
                      field: { $literal: 'a.b' },
                      input: { $getField: { field: { $literal: 'data' }, input: '$$ROOT' } },
                    },
                  },
                  value: { $literal: 2 },
                },
              },
            },
          },
        },
      },
    };
    await storage.updateOne('ns', { _id }, [stage]);
    expect((await all(storage, { _id }))[0]).toEqual({ _id, data: { 'a.b': { '0': 1, '1': 2 } } });
  });

  it('meta-equality filters through the meta index return exactly what a full scan returns, after replaces and deletes, whenever the index is first used', async () => {
    const metaArb = fc.oneof(
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 0, max: 3 }).map((n) => new Int32(n)),
      fc.integer({ min: 0, max: 3 }).map((n) => new Double(n)),
      fc.integer({ min: 0, max: 3 }).map((n) => Long.fromNumber(n)),
      fc.integer({ min: 0, max: 3 }).map((n) => Decimal128.fromString(`${n}.0`)),
      fc.constantFrom(1.5, 'a', 'b', null, true),
      fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 2 }),
      fc.record({ x: fc.integer({ min: 0, max: 2 }) }),
      // Objects of strings (the usual meta: tags), in either field order, beside near misses: a number
      // where a string was, a nested object of strings, such objects inside an array.
      fc.constantFrom(
        { x: 'a', y: 'b' },
        { y: 'b', x: 'a' },
        { x: 'a' },
        { x: 'a', y: 1 },
        { x: 'a', y: new Int32(1) },
        { x: 'a', y: Long.fromNumber(1) },
        { x: 'a', y: Decimal128.fromString('1.0') },
        { x: 'a', y: { z: 'c' } },
        [{ x: 'a' }, 'a'],
        {},
      ),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.option(metaArb, { nil: undefined }), { maxLength: 12 }),
        fc.option(metaArb, { nil: undefined }),
        // Then documents given another meta (or none), and documents deleted, by position.
        fc.array(fc.tuple(fc.nat(), fc.option(metaArb, { nil: undefined })), { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 4 }),
        // A meta filter read before the step of that number builds the index there (none: at the end).
        fc.option(fc.tuple(fc.nat({ max: 22 }), fc.option(metaArb, { nil: undefined })), { nil: undefined }),
        async (metas, probe, replaces, deletes, early) => {
          const storage = new MemoryStorage();
          const docs: StoredBucket[] = [];
          let step = 0;
          const expectIndexedLikeScan = async (meta: unknown): Promise<void> => {
            const filter = meta === undefined ? { meta: { $exists: false } } : { meta };
            const query = new BsonQuery(filter);
            const expected = docs.filter((d) => query.test(d)).map((d) => (d._id as ObjectId).toHexString());
            const actual = (await all(storage, { $and: [filter] })).map((d) =>
              (d._id as ObjectId).toHexString(),
            );
            expect(actual.sort()).toEqual(expected.sort());
          };
          const beforeStep = async (): Promise<void> => {
            if (early !== undefined && early[0] === step) await expectIndexedLikeScan(early[1]);
            step++;
          };
          for (const meta of metas) {
            await beforeStep();
            const d: StoredBucket =
              meta === undefined ? { _id: new ObjectId() } : { _id: new ObjectId(), meta };
            await storage.insertOne('ns', d);
            docs.push(d);
          }
          for (const [at, meta] of replaces) {
            await beforeStep();
            if (docs.length === 0) break;
            const i = at % docs.length;
            const _id = docs[i]?._id as ObjectId;
            const next: StoredBucket = meta === undefined ? { _id } : { _id, meta };
            await storage.replaceOne('ns', { _id }, next);
            docs[i] = next;
          }
          for (const at of deletes) {
            await beforeStep();
            if (docs.length === 0) break;
            const [gone] = docs.splice(at % docs.length, 1);
            await storage.deleteMany('ns', { _id: gone?._id });
          }
          await expectIndexedLikeScan(probe);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps the meta index right across meta updates, replaces and deletes', async () => {
    const storage = new MemoryStorage();
    const a = new ObjectId();
    const b = new ObjectId();
    await storage.insertOne('ns', { _id: a, meta: 'x' });
    await storage.insertOne('ns', { _id: b, meta: 'y' });
    await storage.updateMany('ns', { meta: 'x' }, { $set: { meta: 'z' } });
    expect((await all(storage, { meta: 'x' })).length).toBe(0);
    expect((await all(storage, { meta: 'z' })).map((d) => d._id)).toEqual([a]);
    await storage.replaceOne('ns', { _id: b }, { _id: b, meta: 'z' });
    expect((await all(storage, { meta: 'z' })).length).toBe(2);
    await storage.deleteMany('ns', { meta: 'z' });
    expect(await storage.countDocuments('ns')).toBe(0);
    expect((await all(storage, { meta: 'z' })).length).toBe(0);
  });
});

describe('MemoryStorage: a write to an open bucket that is not a commit', () => {
  const t = (s: number) => new Date(Date.UTC(2021, 0, 1, 0, 0, s));
  const rewrites: Array<
    [string, (storage: MemoryStorage, ns: string, doc: StoredBucket) => Promise<unknown>]
  > = [
    [
      'replaceOne',
      (storage, ns, doc) =>
        storage.replaceOne(
          ns,
          { _id: doc._id },
          {
            ...doc,
            control: { ...(doc.control as object), max: { t: t(1), v: 900 } },
            data: {
              t: new Binary(BSONColumn.encode([t(0), t(1)]), 7),
              v: new Binary(BSONColumn.encode([1, 900]), 7),
            },
          },
        ),
    ],
    [
      'updateOne',
      (storage, ns, doc) =>
        storage.updateOne(
          ns,
          { _id: doc._id },
          {
            $set: { 'control.max.v': 900, 'data.v': new Binary(BSONColumn.encode([1, 900]), 7) },
          },
        ),
    ],
  ];
  it.each(rewrites)(
    'is not overwritten by the next commit of the catalog that held the bucket (%s, same count)',
    async (_, rewrite) => {
      // Arrange: an open bucket of two measurements, its values rewritten outside the catalog.
      const storage = new MemoryStorage();
      const engine = new BucketEngine({ storage });
      const coll = await engine.createCollection('w', { timeseries: { timeField: 't', metaField: 'm' } });
      await coll.insertMany([
        { t: t(0), m: 'a', v: 1 },
        { t: t(1), m: 'a', v: 2 },
      ]);
      const [doc] = await coll.buckets.find({}).toArray();
      await rewrite(storage, coll.bucketsNamespace, doc as StoredBucket);
      // Act: the series' next measurement.
      await coll.insertOne({ t: t(2), m: 'a', v: 3 });
      // Assert: the rewrite stands (the catalog forgot the bucket and reopened it from what is stored).
      const values = (await coll.find({}, { sort: { t: 1 } }).toArray()).map((d) => d.v);
      expect(values).toEqual([1, 900, 3]);
      expect(await coll.countDocuments({ v: { $gte: 100 } })).toBe(1);
      await engine.close();
    },
  );
});

describe('MemoryStorage.commitWrites', () => {
  const ns = 'db.system.buckets.c';
  const bucket = (id: ObjectId, meta: string): StoredBucket => ({
    _id: id,
    control: { version: 1, min: { t: new Date(0) }, max: { t: new Date(0) } },
    meta,
    data: { t: { '0': new Date(0) } },
  });

  it('ordered: writes nothing when any write would not apply, and names the first that would not', async () => {
    const storage = new MemoryStorage();
    await storage.createNamespace(ns);
    const existing = new ObjectId();
    await storage.insertOne(ns, bucket(existing, 'e'));
    const [a, b] = [new ObjectId(), new ObjectId()];
    const outcomes = await storage.commitWrites(
      ns,
      [
        { kind: 'insert', document: bucket(a, 'a') },
        { kind: 'insert', document: bucket(existing, 'dup') },
        { kind: 'insert', document: bucket(b, 'b') },
      ],
      { ordered: true },
    );
    expect(outcomes.map((o) => o.kind)).toEqual(['notApplied', 'failed', 'notApplied']);
    expect(await storage.countDocuments(ns)).toBe(1);
    // The same writes unordered: each on its own.
    const unordered = await storage.commitWrites(
      ns,
      [
        { kind: 'insert', document: bucket(a, 'a') },
        { kind: 'insert', document: bucket(existing, 'dup') },
        { kind: 'insert', document: bucket(b, 'b') },
      ],
      { ordered: false },
    );
    expect(unordered.map((o) => o.kind)).toEqual(['applied', 'failed', 'applied']);
    expect(await storage.countDocuments(ns)).toBe(3);
  });

  it('ordered: applies every write when all apply, and refuses two inserts of one _id in a call', async () => {
    const storage = new MemoryStorage();
    await storage.createNamespace(ns);
    const [a, b] = [new ObjectId(), new ObjectId()];
    const twice = await storage.commitWrites(
      ns,
      [
        { kind: 'insert', document: bucket(a, 'a') },
        { kind: 'insert', document: bucket(a, 'again') },
      ],
      { ordered: true },
    );
    expect(twice.map((o) => o.kind)).toEqual(['notApplied', 'failed']);
    expect(await storage.countDocuments(ns)).toBe(0);
    const all = await storage.commitWrites(
      ns,
      [
        { kind: 'insert', document: bucket(a, 'a') },
        { kind: 'insert', document: bucket(b, 'b') },
      ],
      { ordered: true },
    );
    expect(all.map((o) => o.kind)).toEqual(['applied', 'applied']);
    expect(await storage.countDocuments(ns)).toBe(2);
  });
});

describe('MemoryStorage.applyCounters', () => {
  const slot: CounterUpdate = {
    setOnInsert: { group: 'a', start: new Date(0) },
    paths: [['count'], ['t', 'sum'], ['t', 'max']],
    operators: ['$inc', '$inc', '$max'],
    values: [2, 4.5, 3],
  };

  it('upserts as upsertOne does with the update document, and updates only existing documents without upsert', async () => {
    // Arrange: the same updates structured on one storage, as documents on the other.
    const structured = new MemoryStorage();
    const documents = new MemoryStorage();
    const later: CounterUpdate = { ...slot, values: [1, 1, 7] };
    // Act
    expect(await structured.applyCounters('ns', 'k', slot, 'upsert')).toBe('inserted');
    expect(await structured.applyCounters('ns', 'k', later, 'upsert')).toBe('updated');
    expect(await structured.applyCounters('ns', 'k', later, 'noUpsert')).toBe('updated');
    expect(await structured.applyCounters('ns', 'missing', later, 'noUpsert')).toBe('notMatched');
    await documents.upsertOne('ns', { _id: 'k' }, counterUpdateDocument(slot));
    await documents.upsertOne('ns', { _id: 'k' }, counterUpdateDocument(later));
    await documents.updateOne('ns', { _id: 'k' }, counterUpdateDocument(later));
    // Assert
    const expected = { _id: 'k', group: 'a', start: new Date(0), count: 4, t: { sum: 6.5, max: 7 } };
    expect(await all(structured, {})).toEqual([expected]);
    expect(await all(documents, {})).toEqual([expected]);
  });

  it('sends a shape it cannot apply in place through the update document (an index into an object)', async () => {
    const storage = new MemoryStorage();
    await storage.insertOne('ns', { _id: 'k', obj: { a: 1 } });
    const byIndex: CounterUpdate = { paths: [['obj', 0]], operators: ['$inc'], values: [1] };
    expect(await storage.applyCounters('ns', 'k', byIndex, 'noUpsert')).toBe('updated');
    expect(await all(storage, {})).toEqual([{ _id: 'k', obj: { a: 1, '0': 1 } }]);
  });
});

describe('MemoryStorage.visitDocuments', () => {
  it('visits the stored documents matching the filter, in place, and counts them', async () => {
    const storage = new MemoryStorage();
    await storage.insertOne('ns', { _id: 'a', kind: 'x', n: 1 });
    await storage.insertOne('ns', { _id: 'b', kind: 'y', n: 2 });
    await storage.insertOne('ns', { _id: 'c', kind: 'x', n: 3 });
    const seen: Array<Readonly<StoredBucket>> = [];
    expect(await storage.visitDocuments('ns', { kind: 'x' }, (doc) => seen.push(doc))).toBe(2);
    expect(seen).toEqual(await all(storage, { kind: 'x' }));
    // The stored documents themselves (find hands out copies).
    const [stored] = seen;
    (stored as StoredBucket).n = 10;
    expect(await all(storage, { _id: 'a' })).toEqual([{ _id: 'a', kind: 'x', n: 10 }]);
    expect(await storage.visitDocuments('ns', { _id: 'zz' }, () => undefined)).toBe(0);
  });
});

describe('MemoryStorage: whether it holds no bucket of a series (kHoldsNoBucketsOf)', () => {
  const metaValue = fc.oneof(
    fc.constantFrom<unknown>(1, 2, 1.5, 2.5, 'a', 'b', null, true, new Date(0)),
    fc.constantFrom<unknown>(new Int32(1), new Long(1), new Double(1), new Decimal128('1')),
    fc.constantFrom<unknown>({ a: 1, b: 2 }, { b: 2, a: 1 }, { a: 1.5 }, [1, 2], [1], ['a']),
    // Documents whose field names look like operators: values like any other.
    fc.constantFrom<unknown>({ $exists: false }, { $gt: 1 }, { $eq: 'a' }),
  );
  // A stored document: a meta value, or none.
  const storedMeta = fc.option(metaValue, { nil: undefined });

  it('says so only when a query on that meta finds nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(storedMeta, { maxLength: 6 }), storedMeta, async (stored, probe) => {
        const storage = new MemoryStorage();
        for (const meta of stored) {
          await storage.insertOne(
            'ns',
            meta === undefined ? { _id: new ObjectId() } : { _id: new ObjectId(), meta },
          );
        }
        const none = holdsNoBucketsOf(storage, 'ns', probe !== undefined, probe);
        // The reopening query's condition: equality, the value compared whole.
        const filter = probe === undefined ? { meta: { $exists: false } } : { meta: { $eq: probe } };
        if (none) expect(await all(storage, filter)).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('knows a series never stored, one whose buckets were deleted, and any series of an empty namespace', async () => {
    const storage = new MemoryStorage();
    expect(holdsNoBucketsOf(storage, 'ns', true, { host: 'h1' })).toBe(true);
    expect(holdsNoBucketsOf(storage, 'ns', false, undefined)).toBe(true);
    // Without any document, even metas the index cannot answer for (an array, null) have none.
    expect(holdsNoBucketsOf(storage, 'ns', true, [1, 2])).toBe(true);
    expect(holdsNoBucketsOf(storage, 'ns', true, null)).toBe(true);
    await storage.insertOne('ns', { _id: new ObjectId(), meta: { host: 'h1' } });
    await storage.insertOne('ns', { _id: new ObjectId() });
    expect(holdsNoBucketsOf(storage, 'ns', true, { host: 'h1' })).toBe(false);
    expect(holdsNoBucketsOf(storage, 'ns', false, undefined)).toBe(false);
    expect(holdsNoBucketsOf(storage, 'ns', true, [1, 2])).toBe(false);
    expect(holdsNoBucketsOf(storage, 'ns', true, { host: 'h2' })).toBe(true);
    expect(holdsNoBucketsOf(storage, 'other', true, { host: 'h1' })).toBe(true);
    await storage.deleteMany('ns', { meta: { host: 'h1' } });
    expect(holdsNoBucketsOf(storage, 'ns', true, { host: 'h1' })).toBe(true);
  });

  it('cannot tell for a subclass that reads differently', () => {
    class Injecting extends MemoryStorage {
      // eslint-disable-next-line @typescript-eslint/require-await -- an async stream of one document.
      override async *find(): AsyncIterable<StoredBucket> {
        yield { _id: new ObjectId(), meta: { host: 'h1' } };
      }
    }
    const storage = new Injecting();
    expect(holdsNoBucketsOf(storage, 'ns', true, { host: 'h1' })).toBe(false);
    expect(holdsNoBucketsOf(new MemoryStorage(), 'ns', true, { host: 'h1' })).toBe(true);
  });
});
