/**
 * Rollups over every storage backend (MemoryStorage, MongoStorage over the driver fake, a real server
 * with MONGODB_URI): the documents each layout writes, two engines ("processes") writing the same series,
 * recomputation after a delete, persisted definitions, and (fake only) a lost reply on a rollup write.
 */
import { Double, Long } from 'bson';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';

import { BucketEngine, TimeseriesError } from '../../src/index.js';
import type { FindSort, Storage, TimeseriesCollection } from '../../src/index.js';
import { bsonNumberValue, isPlainObject } from '../../src/util/bson-value.js';
import { runWaves, waveEngines, waveRunArb } from './storage-suite.js';
import type { BackendFactory, StorageBackend } from './storage-suite.js';

const h = (hours: number, minutes = 0): Date => new Date(Date.UTC(2024, 9, 4, hours, minutes));

/** The rolling rollup of the suite: temperatures of each sensor over three hours, in steps of one. */
const recentTemperatures = (target: string) =>
  ({ layout: 'rolling', window: '3h', step: '1h', target, key: 'sensor.id', sum: ['temp'] }) as const;

/** A calendar document with hour and minute levels. */
interface Counters {
  readonly count: number;
  readonly temp: { readonly count: number; readonly sum: number };
}
interface DayDocument extends Counters {
  readonly hours: ReadonlyArray<
    Counters & { readonly start: Date; readonly minutes: ReadonlyArray<Counters> }
  >;
}

/** Numbers as JS numbers (backends return BSON number classes or JS numbers), recursively. */
function plain(value: unknown): unknown {
  const n = bsonNumberValue(value);
  if (n !== undefined) return n;
  if (Array.isArray(value)) return value.map(plain);
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

async function rawDocs(storage: Storage, ns: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const doc of storage.find(ns, {})) out.push(plain(doc));
  return out;
}

/**
 * Register the rollup tests for one backend.
 *
 * @param label - the backend's name.
 * @param factory - creates a fresh backend per test.
 * @param faults - for the driver fake: queue a fault on the next operation `op` on `collection`.
 */
export function describeRollupSuite(
  label: string,
  factory: BackendFactory,
  faults?: (backend: StorageBackend, op: 'updateOne', collection: string, when: 'after') => void,
): void {
  describe(`rollups over ${label}`, () => {
    let backend: StorageBackend | undefined;
    const engines: BucketEngine[] = [];
    afterEach(async () => {
      for (const e of engines.splice(0)) await e.close();
      await backend?.dispose();
      backend = undefined;
    });

    async function open(): Promise<{
      engine: BucketEngine;
      coll: TimeseriesCollection;
      name: string;
      storage: Storage;
    }> {
      backend ??= await factory();
      const storage = backend.open();
      const engine = new BucketEngine({ storage, clock: () => h(3).getTime(), ttlMonitor: 'disabled' });
      engines.push(engine);
      const name = backend.collectionName('w');
      const coll = await engine.createCollection(name, {
        timeseries: { timeField: 'ts', metaField: 'sensor' },
      });
      return { engine, coll, name, storage };
    }

    it('slots: one document per group and hour, backfilled then maintained (late data included)', async () => {
      const { coll, storage, name } = await open();
      await coll.insertMany([
        { ts: h(1, 10), sensor: { id: 'a' }, temp: 20 },
        { ts: h(1, 20), sensor: { id: 'a' }, temp: 24 },
      ]);
      const progress: unknown[] = [];
      await coll.createRollup(
        'hourly',
        { every: 'hour', groupBy: 'sensor.id', fields: { temp: ['min', 'max', 'first', 'last', 'avg'] } },
        { onProgress: (p) => progress.push(p) },
      );
      expect(progress).toEqual([
        { measurements: 2, done: false },
        { measurements: 2, done: true },
      ]);
      await coll.insertMany([{ ts: h(2, 5), sensor: { id: 'a' }, temp: 30 }]);
      await coll.insertMany([{ ts: h(1, 0), sensor: { id: 'a' }, temp: 22 }]); // late
      const docs = await rawDocs(storage, `tsbuckets.${name}.rollup.hourly`);
      const groupKey = (docs[0] as { _id: string })._id.split(':')[0];
      expect(docs).toHaveLength(2);
      expect(docs).toEqual(
        expect.arrayContaining([
          {
            _id: `${groupKey}:${h(1).getTime()}`,
            group: 'a',
            start: h(1),
            count: 3,
            temp: {
              count: 3,
              sum: 66,
              min: 20,
              max: 24,
              first: { t: h(1, 0), v: 22 },
              last: { t: h(1, 20), v: 24 },
            },
          },
          {
            _id: `${groupKey}:${h(2).getTime()}`,
            group: 'a',
            start: h(2),
            count: 1,
            temp: {
              count: 1,
              sum: 30,
              min: 30,
              max: 30,
              first: { t: h(2, 5), v: 30 },
              last: { t: h(2, 5), v: 30 },
            },
          },
        ]),
      );
      const read = await coll.rollup('hourly').find({ start: h(1) });
      expect(plain((read[0]?.temp as Record<string, unknown>).avg)).toBe(22);
      expect((await coll.stats()).rollups?.hourly).toMatchObject({
        measurementsFolded: 2,
        slotsUpdated: 2,
        writeFailures: 0,
      });
    });

    it("find sorts as the collection's find: direction words and pairs, and refuses other directions", async () => {
      const { coll } = await open();
      await coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor.id', fields: { temp: ['sum'] } });
      await coll.insertMany([1, 2, 3].map((hour) => ({ ts: h(hour, 10), sensor: { id: 'a' }, temp: hour })));
      const starts = async (sort: FindSort) =>
        (await coll.rollup('hourly').find({}, { sort })).map((d) => (d.start as Date).getUTCHours());
      expect(await starts({ start: 'desc' })).toEqual([3, 2, 1]);
      expect(await starts([['start', -1]])).toEqual([3, 2, 1]);
      expect(await starts({ start: 1 })).toEqual([1, 2, 3]);
      const refused = await coll
        .rollup('hourly')
        .find({}, { sort: { start: 2 as 1 } })
        .then(
          () => 'sorted',
          (e: unknown) => (TimeseriesError.isTimeseriesError(e) ? e.codeName : e),
        );
      expect(refused).toBe('BadValue');
    });

    it('find hands out copies: changing what a read returned changes no later read', async () => {
      const { coll } = await open();
      await coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor.id', fields: { temp: ['max'] } });
      await coll.insertMany([{ ts: h(1, 10), sensor: { id: 'a' }, temp: 20 }]);
      const [first] = await coll.rollup('hourly').find({});
      (first?.temp as Record<string, unknown>).max = 99;
      (first?.start as Date).setTime(0);
      if (first !== undefined) first.count = 99;
      const [again] = await coll.rollup('hourly').find({}, { projection: { _id: 0 } });
      expect(plain(again)).toEqual({
        group: 'a',
        start: h(1),
        count: 1,
        temp: { count: 1, sum: 20, max: 20 },
      });
    });

    it('calendar: two engines on the same storage initialise one document and count every measurement', async () => {
      const first = await open();
      await first.coll.createRollup('days', {
        layout: 'calendar',
        period: 'day',
        levels: ['hour', 'minute'],
        groupBy: 'sensor.id',
        fields: { temp: ['sum'] },
      });
      // A second engine (another process) finds the persisted definition.
      const storage = (backend as StorageBackend).open();
      const second = new BucketEngine({ storage, ttlMonitor: 'disabled' });
      engines.push(second);
      const other = await second.createCollection(first.name, {
        timeseries: { timeField: 'ts', metaField: 'sensor' },
      });
      expect((await other.listRollups()).map((r) => r.name)).toEqual(['days']);
      const batch = (k: number) =>
        Array.from({ length: 5 }, (_, i) => ({ ts: h(4, i), sensor: { id: 'a' }, temp: k + i }));
      await Promise.all([first.coll.insertMany(batch(0)), other.insertMany(batch(100))]);
      const [doc] = (await rawDocs(first.storage, `tsbuckets.${first.name}.rollup.days`)) as DayDocument[];
      expect(doc?.count).toBe(10);
      expect(doc?.temp).toEqual({ count: 10, sum: 520 });
      expect(doc?.hours).toHaveLength(24);
      const hour = doc?.hours[4];
      expect(hour?.count).toBe(10);
      expect(hour?.minutes).toHaveLength(60);
      expect(hour?.minutes.slice(0, 6).map((m) => m.count)).toEqual([2, 2, 2, 2, 2, 0]);
      expect(hour?.minutes[2]).toEqual({ start: h(4, 2), count: 2, temp: { count: 2, sum: 104 } });
      const initialised =
        ((await first.coll.stats()).rollups?.days?.documentsInitialized ?? 0) +
        ((await other.stats()).rollups?.days?.documentsInitialized ?? 0);
      expect(initialised).toBe(1);
      expect((await first.coll.stats()).rollups?.days?.writeFailures).toBe(0);
      expect((await other.stats()).rollups?.days?.writeFailures).toBe(0);
    });

    it('rolling: totals on the entity document, other fields kept, old steps dropped, late data exact', async () => {
      const { coll, storage, name } = await open();
      const target = (backend as StorageBackend).collectionName('sensors');
      await storage.upsertOne?.(`tsbuckets.${target}`, { _id: 'a' }, { $set: { title: 'Sensor A' } });
      await coll.createRollup('recent', recentTemperatures(target));
      await coll.insertMany([
        { ts: h(0, 30), sensor: { id: 'a' }, temp: 1 },
        { ts: h(1, 30), sensor: { id: 'a' }, temp: 2 },
      ]);
      await coll.insertMany([{ ts: h(3, 10), sensor: { id: 'a' }, temp: 4 }]);
      await coll.insertMany([{ ts: h(0, 40), sensor: { id: 'a' }, temp: 8 }]); // older than the window: not kept
      await coll.insertMany([{ ts: h(1, 40), sensor: { id: 'a' }, temp: 16 }]); // late, inside the window
      const [doc] = (await rawDocs(storage, `tsbuckets.${target}`)) as Array<Record<string, unknown>>;
      expect(doc?.title).toBe('Sensor A');
      const totals = [...(doc?.totals as Array<{ timestamp: Date }>)].sort(
        (x, y) => x.timestamp.getTime() - y.timestamp.getTime(),
      );
      expect(totals).toEqual([
        { timestamp: h(1), count: 2, temp: 18 },
        { timestamp: h(3), count: 1, temp: 4 },
      ]);
      // Read as of the clock (03:00): the window is 01:00..03:00.
      expect(plain(await coll.rollup('recent').find({}, { projection: { totals: 0 } }))).toEqual([
        { _id: 'a', title: 'Sensor A', count: 3, temp: 22 },
      ]);
      expect((await coll.stats()).rollups?.recent?.writeFailures).toBe(0);
      expect(name).toBeDefined();
    });

    it('deleteMany and updateMany recompute the affected slots', async () => {
      const { coll } = await open();
      await coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor.id', fields: { temp: ['sum'] } });
      await coll.insertMany([
        { ts: h(1, 10), sensor: { id: 'a' }, temp: 1 },
        { ts: h(1, 20), sensor: { id: 'a' }, temp: 2 },
        { ts: h(2, 20), sensor: { id: 'b' }, temp: 4 },
      ]);
      await coll.deleteMany({ temp: 2 });
      await coll.updateMany({ 'sensor.id': 'b' }, { $set: { 'sensor.id': 'a' } });
      const docs = plain(
        await coll.rollup('hourly').find({}, { sort: { start: 1 }, projection: { _id: 0 } }),
      );
      expect(docs).toEqual([
        { group: 'a', start: h(1), count: 1, temp: { count: 1, sum: 1 } },
        { group: 'a', start: h(2), count: 1, temp: { count: 1, sum: 4 } },
      ]);
      expect((await coll.stats()).rollups?.hourly?.recomputations).toBe(2);
      expect(await coll.dropRollup('hourly')).toBe(true);
      expect(await coll.listRollups()).toEqual([]);
    });

    it("groups as $group does: equal numbers of any type one group; a null group's array metas kept by a delete", async () => {
      const { coll } = await open();
      await coll.createRollup('hourly', {
        every: 'hour',
        groupBy: 'sensor.id',
        fields: { temp: ['min', 'max'] },
      });
      await coll.insertMany([
        { ts: h(1, 1), sensor: { id: 1 }, temp: 1 },
        { ts: h(1, 2), sensor: { id: new Double(1) }, temp: 2 },
        { ts: h(1, 3), sensor: { id: Long.fromNumber(1) }, temp: 4 },
        // Group null: a path through an array is not traversed, a missing id is null.
        { ts: h(1, 4), sensor: [{ id: 'x' }], temp: 8 },
        { ts: h(1, 5), sensor: { k: 1 }, temp: 16 },
        { ts: h(1, 6), sensor: { k: 2 }, temp: 32 },
      ]);
      await coll.deleteMany({ 'sensor.k': 1 });
      const docs = plain(
        await coll.rollup('hourly').find({}, { projection: { _id: 0, group: 1, count: 1, temp: 1 } }),
      );
      expect(docs).toEqual(
        expect.arrayContaining([
          { group: 1, count: 3, temp: { count: 3, sum: 7, min: 1, max: 4 } },
          { group: null, count: 2, temp: { count: 2, sum: 40, min: 8, max: 32 } },
        ]),
      );
      expect(docs).toHaveLength(2);
    });

    it('rolling: a key value no _id may be (an array) is skipped, as a missing one', async () => {
      const { coll } = await open();
      const target = (backend as StorageBackend).collectionName('entities');
      await coll.createRollup('recent', recentTemperatures(target));
      await coll.insertMany([
        { ts: h(2, 10), sensor: { id: ['a', 'b'] }, temp: 1 },
        { ts: h(2, 20), sensor: { id: 'a' }, temp: 2 },
      ]);
      expect(plain(await coll.rollup('recent').find({}, { projection: { totals: 0 } }))).toEqual([
        { _id: 'a', count: 1, temp: 2 },
      ]);
      expect((await coll.stats()).rollups?.recent?.writeFailures).toBe(0);
      expect(await coll.deleteMany({ temp: 2 })).toMatchObject({ deletedCount: 1 });
    });

    it('property: engines writing in waves, renames and deletes between them, keep the rollup equal to what is stored', async () => {
      // runWaves (storage-suite.ts) with an hourly count per series defined before any data: whatever
      // the engines, formats, limits, waves and direct writes, each slot counts exactly the stored
      // measurements of its series and hour.
      backend ??= await factory();
      const current = backend;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(waveRunArb, async (drawn) => {
          // The direct writes before the second wave, not during it: a recomputation replaces slots and
          // assumes no other process writes the same groups meanwhile (docs/rollups.md, several
          // processes); run during the wave, the property finds that race at once.
          const writers = drawn.writers;
          const after = drawn.after === null ? null : { ...drawn.after, concurrent: false };
          const name = current.collectionName(`rolled${run++}`);
          const ingesters = await waveEngines(
            () => current.open(),
            name,
            drawn,
            (coll) => coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor' }),
          );
          const first = ingesters[0] as (typeof ingesters)[number];
          try {
            await runWaves(
              ingesters.map((ingester) => ingester.coll),
              writers,
              after,
            );
            const stored = new Map<string, number>();
            for (const m of await first.coll.find({}).toArray()) {
              const key = `${String(m.sensor)}@${Math.floor((m.ts as Date).getTime() / 3_600_000)}`;
              stored.set(key, (stored.get(key) ?? 0) + 1);
            }
            const rolled = new Map<string, number>();
            for (const slot of plain(await first.coll.rollup('hourly').find({})) as Array<{
              group: string;
              start: Date;
              count: number;
            }>) {
              if (slot.count !== 0)
                rolled.set(`${slot.group}@${slot.start.getTime() / 3_600_000}`, slot.count);
            }
            expect(rolled).toEqual(stored);
          } finally {
            for (const { engine } of ingesters) await engine.close();
          }
        }),
        { numRuns: 50 },
      );
    });

    if (faults !== undefined) {
      it('a rollup write whose reply is lost is not retried: the slot is recomputed, counted once', async () => {
        const { coll, name } = await open();
        await coll.createRollup('hourly', { every: 'hour', groupBy: 'sensor.id' });
        faults(backend as StorageBackend, 'updateOne', `${name}.rollup.hourly`, 'after');
        await coll.insertMany([{ ts: h(1, 10), sensor: { id: 'a' } }]);
        const docs = plain(await coll.rollup('hourly').find({}, { projection: { _id: 0 } }));
        expect(docs).toEqual([{ group: 'a', start: h(1), count: 1 }]);
        expect((await coll.stats()).rollups?.hourly).toMatchObject({ writeFailures: 1, recomputations: 1 });
      });
    }
  });
}
