/**
 * Lifecycles are safe: `drop()` and `close()` wait for the calls in flight and refuse every later call,
 * nothing is written after they resolve, a collection created again starts empty; `collMod` raising the
 * granularity applies to open buckets, and two at once both apply; a drop waits for a creation in flight.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage, TimeseriesError } from '../../../src/index.js';
import type { StoredBucket, TimeseriesCollection } from '../../../src/index.js';
import type { BucketCommit } from '../../../src/bucket-format/bucket-document.js';
import type { StorageUpdateResult } from '../../../src/storage/storage.js';

const base = Date.UTC(2024, 0, 1);
const at = (minute: number) => new Date(base + minute * 60_000);

/** A MemoryStorage whose bucket writes each wait for the fast-check scheduler, and which logs them. */
class ScheduledStorage extends MemoryStorage {
  readonly #s: fc.Scheduler;
  /** Bucket writes applied, in order, with the namespace and whether a drop or close had resolved. */
  readonly log: Array<{ readonly ns: string; readonly after: 'nothing' | 'drop' | 'close' }> = [];
  after: 'nothing' | 'drop' | 'close' = 'nothing';
  constructor(s: fc.Scheduler) {
    super();
    this.#s = s;
  }
  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    await this.#s.schedule(Promise.resolve(), 'insertOne');
    this.log.push({ ns, after: this.after });
    return super.insertOne(ns, doc);
  }
  override async applyCommit(ns: string, commit: BucketCommit): Promise<StorageUpdateResult> {
    await this.#s.schedule(Promise.resolve(), 'applyCommit');
    this.log.push({ ns, after: this.after });
    return super.applyCommit(ns, commit);
  }
}

async function codeOf(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
  } catch (error) {
    return TimeseriesError.isTimeseriesError(error) ? error.codeName : `untyped: ${String(error)}`;
  }
  return 'resolved';
}

/** Every public call of a collection handle, each as a thunk. */
function everyCall(coll: TimeseriesCollection): ReadonlyArray<() => Promise<unknown>> {
  return [
    () => coll.insertOne({ t: at(0), m: 'x' }),
    () => coll.insertMany([{ t: at(0), m: 'x' }], { ordered: false }),
    () => coll.find({}).toArray(),
    () => coll.aggregate([]).toArray(),
    () => coll.countDocuments({}),
    () => coll.buckets.find({}).toArray(),
    () => coll.buckets.countDocuments({}),
    () => coll.stats(),
    () => coll.updateMany({ m: 'x' }, { $set: { m: 'y' } }),
    () => coll.deleteMany({}),
    () => coll.createIndex({ v: 1 }),
    () => coll.listIndexes(),
    () => coll.dropIndex('v_1'),
    () => coll.collMod({ expireAfterSeconds: 60 }),
  ];
}

const callsArb = fc.array(
  fc.record({
    ordered: fc.boolean(),
    docs: fc.array(fc.record({ m: fc.constantFrom('a', 'b'), minute: fc.integer({ min: 0, max: 180 }) }), {
      minLength: 1,
      maxLength: 4,
    }),
  }),
  { minLength: 1, maxLength: 4 },
);

describe('drop() racing inserts', () => {
  it('waits for the inserts in flight, leaves nothing behind, and the re-created collection starts empty', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), callsArb, fc.nat({ max: 3 }), async (s, calls, dropAfter) => {
        // Arrange: small buckets so that inserts close and compress buckets while the drop runs.
        const storage = new ScheduledStorage(s);
        const engine = new BucketEngine({
          storage,
          ttlMonitor: 'disabled',
          parameters: { timeseriesBucketMaxCount: 2 },
        });
        const options = { timeseries: { timeField: 't', metaField: 'm', granularity: 'minutes' as const } };
        const coll = await engine.createCollection('d', options);
        // Act: the inserts start, the drop starts after some of them, more inserts try after it.
        const early = calls.slice(0, dropAfter).map(({ ordered, docs }) =>
          coll.insertMany(
            docs.map((d) => ({ t: at(d.minute), m: d.m })),
            { ordered },
          ),
        );
        const dropped = coll.drop().then((result) => {
          storage.after = 'drop';
          return result;
        });
        const late = calls.slice(dropAfter).map(({ ordered, docs }) =>
          codeOf(() =>
            coll.insertMany(
              docs.map((d) => ({ t: at(d.minute), m: d.m })),
              { ordered },
            ),
          ),
        );
        const settled = await s.waitFor(Promise.allSettled([...early, dropped]));
        // Assert: calls started before the drop complete; calls after it are refused; nothing was written
        // after the drop resolved, and the namespace is empty.
        for (const outcome of settled) expect(outcome.status).toBe('fulfilled');
        for (const code of await Promise.all(late)) expect(code).toBe('NamespaceNotFound');
        expect(storage.log.filter((w) => w.after !== 'nothing')).toEqual([]);
        expect(await storage.countDocuments(coll.bucketsNamespace)).toBe(0);
        const again = await s.waitFor(engine.createCollection('d', options));
        expect(again).not.toBe(coll);
        expect(await again.find({}).toArray()).toEqual([]);
        expect(engine.serverStatus().bucketCatalog.numOpenBuckets).toBe(0);
        await engine.close();
      }),
      { numRuns: 150 },
    );
  }, 60_000);

  it('a handle kept after drop() refuses every call with NamespaceNotFound', async () => {
    // Arrange
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('k', { timeseries: { timeField: 't', metaField: 'm' } });
    await coll.insertOne({ t: at(0), m: 'x', v: 1 });
    // Act
    await coll.drop();
    const codes = await Promise.all(everyCall(coll).map(codeOf));
    // Assert
    expect(codes).toEqual(everyCall(coll).map(() => 'NamespaceNotFound'));
    expect(await coll.drop()).toBe(true);
    expect(engine.collection('k')).toBeUndefined();
    await engine.close();
  });
});

describe('close()', () => {
  it('waits for the calls in flight, then nothing is written, and every later call is refused with Interrupted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), callsArb, async (s, calls) => {
        // Arrange
        const storage = new ScheduledStorage(s);
        const engine = new BucketEngine({
          storage,
          ttlMonitor: 'disabled',
          parameters: { timeseriesBucketMaxCount: 2 },
        });
        const coll = await engine.createCollection('c', {
          timeseries: { timeField: 't', metaField: 'm', granularity: 'minutes' as const },
        });
        // Act
        const inserts = calls.map(({ ordered, docs }) =>
          coll.insertMany(
            docs.map((d) => ({ t: at(d.minute), m: d.m })),
            { ordered },
          ),
        );
        const closed = engine.close().then(() => {
          storage.after = 'close';
        });
        const settled = await s.waitFor(Promise.allSettled([...inserts, closed]));
        // Assert
        for (const outcome of settled) expect(outcome.status).toBe('fulfilled');
        const stored = await storage.countDocuments(coll.bucketsNamespace);
        expect(storage.log.filter((w) => w.after === 'close')).toEqual([]);
        for (const code of await Promise.all(everyCall(coll).map(codeOf))) expect(code).toBe('Interrupted');
        expect(await codeOf(() => engine.createCollection('other', { timeseries: { timeField: 't' } }))).toBe(
          'Interrupted',
        );
        expect(await codeOf(() => engine.runTTLMonitor())).toBe('Interrupted');
        expect(await storage.countDocuments(coll.bucketsNamespace)).toBe(stored);
      }),
      { numRuns: 100 },
    );
  }, 60_000);
});

describe('collMod', () => {
  it('raising the granularity widens the span of open buckets too', async () => {
    // Arrange: a bucket opened at granularity 'seconds' (span 1 hour).
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('g', {
      timeseries: { timeField: 't', metaField: 'm', granularity: 'seconds' },
    });
    await coll.insertOne({ t: at(0), m: 'x', v: 0 });
    // Act: 'minutes' spans 24 hours; a measurement 2 hours later fits the open bucket now.
    await coll.collMod({ granularity: 'minutes' });
    await coll.insertOne({ t: at(120), m: 'x', v: 1 });
    // Assert
    const buckets = await coll.buckets.find().toArray();
    expect(buckets).toHaveLength(1);
    expect((buckets[0]?.control as { max: { t: Date } }).max.t).toEqual(at(120));
    expect((await coll.stats()).timeseries.numBucketsClosedDueToTimeForward).toBe(0);
    await engine.close();
  });

  it('two at once both apply, in the collection and in the options the storage keeps', async () => {
    // Arrange: a storage whose option writes finish in the other order than they started.
    const gates: Array<() => void> = [];
    class SlowOptions extends MemoryStorage {
      override async setNamespaceOptions(...args: Parameters<MemoryStorage['setNamespaceOptions']>) {
        await new Promise<void>((resolve) => gates.push(resolve));
        return super.setNamespaceOptions(...args);
      }
    }
    const storage = new SlowOptions();
    const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('g', { timeseries: { timeField: 't', metaField: 'm' } });
    // Act
    const both = Promise.all([
      coll.collMod({ granularity: 'minutes' }),
      coll.collMod({ expireAfterSeconds: 3600 }),
    ]);
    for (let i = 0; i < 2; i++) {
      while (gates.length === 0) await new Promise((resolve) => setImmediate(resolve));
      gates
        .splice(0)
        .reverse()
        .forEach((open) => {
          open();
        });
    }
    await both;
    // Assert
    expect(coll.options).toMatchObject({ granularity: 'minutes', expireAfterSeconds: 3600 });
    expect(await storage.namespaceOptions(coll.bucketsNamespace)).toMatchObject({
      timeseries: { granularity: 'minutes' },
      expireAfterSeconds: 3600,
    });
    await engine.close();
  });
});

describe('drop() racing createCollection', () => {
  it('waits for the creation to reach storage: the namespace it created is gone, a new one holds its options', async () => {
    // Arrange: a storage that takes a while to create a namespace.
    class SlowCreate extends MemoryStorage {
      override async createNamespace(...args: Parameters<MemoryStorage['createNamespace']>) {
        for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
        return super.createNamespace(...args);
      }
    }
    const storage = new SlowCreate();
    const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
    const creating = engine.createCollection('w', { timeseries: { timeField: 't', metaField: 'm' } });
    while (engine.collection('w') === undefined) await new Promise((resolve) => setImmediate(resolve));
    // Act: drop the collection the engine lists while its creation is still writing.
    await engine.collection('w')?.drop();
    await creating;
    const again = await engine.createCollection('w', {
      timeseries: { timeField: 't', granularity: 'hours' },
    });
    // Assert
    expect(await storage.namespaceOptions(again.bucketsNamespace)).toMatchObject({
      timeseries: { timeField: 't', granularity: 'hours' },
    });
    await engine.close();
  });
});

/** A MemoryStorage that logs every bucket it reads, with whether a drop or close had resolved. */
class ReadLoggingStorage extends MemoryStorage {
  readonly reads: Array<'nothing' | 'drop' | 'close'> = [];
  after: 'nothing' | 'drop' | 'close' = 'nothing';
  override async *find(
    ...args: Parameters<MemoryStorage['find']>
  ): AsyncGenerator<StoredBucket, void, undefined> {
    for await (const doc of super.find(...args)) {
      this.reads.push(this.after);
      yield doc;
    }
  }
}

/** Cursors of each kind over `coll`, each with the code its next batch gets once the collection is gone. */
function everyCursor(coll: TimeseriesCollection): ReadonlyArray<{
  readonly name: string;
  readonly open: () => AsyncIterator<unknown>;
}> {
  return [
    { name: 'find', open: () => coll.find({})[Symbol.asyncIterator]() },
    { name: 'find sorted by time', open: () => coll.find({}, { sort: { t: 1 } })[Symbol.asyncIterator]() },
    {
      name: 'aggregate',
      open: () => coll.aggregate([{ $match: { m: { $ne: 'z' } } }])[Symbol.asyncIterator](),
    },
    { name: 'buckets view', open: () => coll.buckets.find({})[Symbol.asyncIterator]() },
  ];
}

describe('cursors of a dropped or closed collection', () => {
  async function threeBuckets(storage: MemoryStorage) {
    const engine = new BucketEngine({ storage });
    const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
    await coll.insertMany([
      { t: at(0), m: 'a' },
      { t: at(1), m: 'b' },
      { t: at(2), m: 'c' },
    ]);
    return { engine, coll };
  }

  it('a cursor started before drop() is killed (QueryPlanKilled) at its next batch and reads nothing after', async () => {
    for (const kind of ['started', 'not started'] as const) {
      // Arrange: one cursor of each kind, each bucket a batch; the started ones have read one batch.
      const storage = new ReadLoggingStorage();
      const { engine, coll } = await threeBuckets(storage);
      const cursors = everyCursor(coll).map((c) => ({ name: c.name, it: c.open() }));
      if (kind === 'started') for (const c of cursors) expect((await c.it.next()).done, c.name).toBe(false);
      const explained = coll.find({});
      // Act
      await coll.drop();
      storage.after = 'drop';
      // Assert
      for (const c of cursors)
        expect(`${c.name}: ${await codeOf(() => c.it.next())}`).toBe(`${c.name}: QueryPlanKilled`);
      expect(await codeOf(() => explained.explain())).toBe('QueryPlanKilled');
      expect(storage.reads.filter((r) => r === 'drop')).toEqual([]);
      await engine.close();
    }
  });

  it('a cursor started before close() is refused (Interrupted) at its next batch and reads nothing after', async () => {
    // Arrange
    const storage = new ReadLoggingStorage();
    const { engine, coll } = await threeBuckets(storage);
    const cursors = everyCursor(coll).map((c) => ({ name: c.name, it: c.open() }));
    for (const c of cursors) expect((await c.it.next()).done, c.name).toBe(false);
    const unstarted = coll.aggregate([{ $group: { _id: '$m' } }]);
    // Act
    await engine.close();
    storage.after = 'close';
    // Assert
    for (const c of cursors)
      expect(`${c.name}: ${await codeOf(() => c.it.next())}`).toBe(`${c.name}: Interrupted`);
    expect(await codeOf(() => unstarted.toArray())).toBe('Interrupted');
    expect(storage.reads.filter((r) => r === 'close')).toEqual([]);
  });

  it('drop() waits for a batch being read, and the documents of a batch already read are still handed out', async () => {
    // Arrange: a blocking sort reads every bucket in its first batch.
    const storage = new ReadLoggingStorage();
    const { engine, coll } = await threeBuckets(storage);
    const it = coll.find({}, { sort: { m: -1 } })[Symbol.asyncIterator]();
    // Act: the drop starts while the first batch is being read.
    const first = it.next();
    const dropped = coll.drop().then(() => {
      storage.after = 'drop';
    });
    // Assert
    expect(((await first).value as { m: string }).m).toBe('c');
    expect(((await it.next()).value as { m: string }).m).toBe('b');
    await dropped;
    expect(storage.reads).toEqual(['nothing', 'nothing', 'nothing']);
    expect(((await it.next()).value as { m: string }).m).toBe('a');
    // Exhausted without another read: no error, as a getMore that need not read the dropped collection
    // succeeds (jstests/noPassthrough/aggregation_cursor_invalidations.js).
    expect(await it.next()).toEqual({ done: true, value: undefined });
    await engine.close();
  });

  it('a cursor that must still read buckets fails after drop() and close(); one that need not, ends', async () => {
    for (const end of ['drop', 'close'] as const) {
      // Arrange: buckets of one measurement each.
      const storage = new ReadLoggingStorage();
      const { engine, coll } = await threeBuckets(storage);
      const stop = () => (end === 'drop' ? coll.drop() : engine.close());
      // Act / Assert: a streaming find with buckets left to read is killed...
      const streaming = coll.find({})[Symbol.asyncIterator]();
      await streaming.next();
      const limited = coll.find({}, { limit: 1 })[Symbol.asyncIterator]();
      await limited.next();
      const grouped = coll.aggregate([{ $group: { _id: '$m' } }])[Symbol.asyncIterator]();
      await grouped.next();
      await stop();
      expect(await codeOf(() => streaming.next())).toBe(end === 'drop' ? 'QueryPlanKilled' : 'Interrupted');
      // ...while a find at its limit and a $group that read everything end normally.
      expect(await limited.next()).toEqual({ done: true, value: undefined });
      let rest = 0;
      while ((await grouped.next()).done !== true) rest++;
      expect(rest).toBe(2);
      if (end === 'drop') await engine.close();
    }
  });
});
