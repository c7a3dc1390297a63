/**
 * The storage matrix (STYLE rule 14): the same tests run against every `Storage` backend —
 * `MemoryStorage`, `MongoStorage` over the in-memory driver fake (both modes), and `MongoStorage` over a
 * real server when `MONGODB_URI` is set.
 *
 * Two groups: `describeStorageSuite` exercises the `Storage` contract directly; `describeEngineSuite` runs
 * a `BucketEngine` over the backend (bucket documents identical to the embedded reference, concurrent
 * engines on one collection, id collisions, a bucket changed by another writer).
 */
import { Binary, Decimal128, Double, Long, ObjectId, calculateObjectSize } from 'bson';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { decompressBucket } from '../../src/bucket-format/bucket-compression.js';
import { defaultBucketIdGenerator } from '../../src/bucket-format/bucket-oid.js';
import { MeasurementMap } from '../../src/bucket-format/measurement-map.js';
import { MinMaxSnapshot } from '../../src/bucket-format/min-max-snapshot.js';
import { BucketEngine, TimeseriesError } from '../../src/index.js';
import type { BucketWrite, Storage, StoredBucket, TimeseriesCollection } from '../../src/index.js';
import { makeBucketUpdate } from '../../src/bucket-format/bucket-document.js';
import { FaultyStorage } from '../support/faulty-storage.js';
import { unpackV1 } from '../support/unpack-v1.js';

/** A storage backend under test. */
export interface StorageBackend {
  /**
   * A new handle onto the backend's data, as another process would open it (MemoryStorage: the same
   * instance; MongoStorage: a new storage over the same database).
   */
  open(): Storage;
  /** A collection name unique to this backend instance (real servers share databases between runs). */
  collectionName(base: string): string;
  /** Release what the backend created. */
  dispose(): Promise<void>;
  /**
   * Whether open buckets of the 8.0 format may be version 1 in the backend until they close
   * (`MongoStorage`'s `openBucketForm`): their documents then hold the measurements the reference's do,
   * uncompressed.
   */
  readonly uncompressedWhileOpen?: boolean;
}

/** Creates a fresh backend for one test. */
export type BackendFactory = () => Promise<StorageBackend>;

const kParameters = { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 } as const;
const t0 = Date.parse('2024-10-04T10:00:00Z');
const at = (seconds: number): Date => new Date(t0 + seconds * 1000);

/** Every stored bucket of a namespace, sorted by `_id`. */
export async function allBuckets(storage: Storage, ns: string): Promise<StoredBucket[]> {
  const out: StoredBucket[] = [];
  for await (const b of storage.find(ns, {}, { sort: { _id: 1 } })) out.push(b);
  return out;
}

/**
 * Every measurement stored in a collection: compressed buckets (version 2, 3) are decoded to version 1,
 * then unpacked by the naive reference unpacker.
 */
export async function storedMeasurements(
  storage: Storage,
  ns: string,
  timeField: string,
  metaField?: string,
): Promise<Array<Record<string, unknown>>> {
  return (await allBuckets(storage, ns)).flatMap((b) => unpackV1(decompressBucket(b), timeField, metaField));
}

/** How often each value of `field` occurs. */
export function multiplicity(
  rows: ReadonlyArray<Record<string, unknown>>,
  field: string,
): Map<unknown, number> {
  const counts = new Map<unknown, number>();
  for (const row of rows) counts.set(row[field], (counts.get(row[field]) ?? 0) + 1);
  return counts;
}

/** One insert call drawn by fast-check: ordered or not, measurements of three series at second offsets. */
export interface InsertCall {
  readonly ordered: boolean;
  readonly points: ReadonlyArray<{ readonly series: number; readonly offset: number }>;
}

/**
 * fast-check: an {@link InsertCall} of 1 to `maxLength` measurements, at offsets up to `maxOffset` seconds
 * (beyond an hour: buckets roll over forward and backward).
 */
export function insertCallArb(maxOffset: number, maxLength: number): fc.Arbitrary<InsertCall> {
  return fc.record({
    ordered: fc.boolean(),
    points: fc.array(
      fc.record({ series: fc.integer({ min: 0, max: 2 }), offset: fc.integer({ min: 0, max: maxOffset }) }),
      { minLength: 1, maxLength },
    ),
  });
}

/**
 * Each writer's calls as documents (`sensor: s<series>`, `mid: w<writer>c<call>m<index>`), with the
 * writer's collection.
 */
export function writerCalls<C>(
  colls: ReadonlyArray<C>,
  writers: ReadonlyArray<ReadonlyArray<InsertCall>>,
): Array<{ coll: C; ordered: boolean; docs: Array<{ ts: Date; sensor: string; mid: string }> }> {
  return writers.flatMap((calls, w) =>
    calls.map(({ ordered, points }, c) => ({
      coll: colls[w] as C,
      ordered,
      docs: points.map((p, i) => ({ ts: at(p.offset), sensor: `s${p.series}`, mid: `w${w}c${c}m${i}` })),
    })),
  );
}

/** fast-check: one wave of calls, for two or three writers, each one to three calls. */
export const waveArb = fc.array(fc.array(insertCallArb(4000, 8), { minLength: 1, maxLength: 3 }), {
  minLength: 2,
  maxLength: 3,
});

/**
 * What may follow a first wave: a rename of series s1 to s3, a delete of series s2, a delete of every third
 * measurement of the wave (which rewrites their buckets), and a second wave, either after those writes or
 * at the same time.
 */
export interface AfterWave {
  readonly rename: boolean;
  readonly remove: boolean;
  readonly trim: boolean;
  readonly concurrent: boolean;
  readonly writers: ReadonlyArray<ReadonlyArray<InsertCall>>;
}

/** fast-check: an {@link AfterWave}, or nothing. */
export const afterWaveArb = fc.option(
  fc.record({
    rename: fc.boolean(),
    remove: fc.boolean(),
    trim: fc.boolean(),
    concurrent: fc.boolean(),
    writers: waveArb,
  }),
);

/** fast-check: the format, the bucket count limit, a first wave and what may follow it. */
export const waveRunArb = fc.record({
  compressed: fc.boolean(),
  maxCount: fc.integer({ min: 2, max: 6 }),
  writers: waveArb,
  after: afterWaveArb,
});

/**
 * One engine per writer of `run`'s waves (its own catalog, each over `open()`), on collection `name`,
 * in the run's format and count limit; `first` is made and set up (`init`) before the others.
 */
export async function waveEngines(
  open: () => Storage,
  name: string,
  run: {
    readonly compressed: boolean;
    readonly maxCount: number;
    readonly writers: ReadonlyArray<unknown>;
    readonly after: AfterWave | null;
  },
  init: (coll: TimeseriesCollection) => Promise<unknown> = () => Promise.resolve(),
): Promise<Array<{ engine: BucketEngine; coll: TimeseriesCollection }>> {
  const make = async () => {
    const engine = new BucketEngine({
      storage: open(),
      ttlMonitor: 'disabled',
      parameters: {
        ...kParameters,
        timeseriesBucketMaxCount: run.maxCount,
        timeseriesAlwaysUseCompressedBuckets: run.compressed,
      },
    });
    const coll = await engine.createCollection(name, {
      timeseries: { timeField: 'ts', metaField: 'sensor' },
    });
    return { engine, coll };
  };
  const first = await make();
  await init(first.coll);
  const rest = await Promise.all(
    Array.from({ length: run.writers.length + (run.after?.writers.length ?? 0) - 1 }, make),
  );
  return [first, ...rest];
}

/**
 * What a collection may hold after {@link runWaves}: per measurement id, its possible series, `'gone'`
 * when it may be deleted.
 */
export type WaveModel = Map<string, ReadonlySet<string>>;

/**
 * Run a wave of calls at once (writer `w` on `colls[w]`); then the first collection handle renames series
 * s1 to s3, the last deletes series s2 and the middle one every third measurement of the wave (the other
 * engines' open buckets go stale), one after the other; and a second wave (writer `w` on `colls[w + 1]`,
 * ids prefixed `after-`) runs at once, after those writes or at the same time (then each of its
 * measurements of s1 may be renamed or not, of s2 deleted or not).
 *
 * @returns what the collection may then hold.
 */
export async function runWaves(
  colls: ReadonlyArray<TimeseriesCollection>,
  writers: ReadonlyArray<ReadonlyArray<InsertCall>>,
  after: AfterWave | null,
): Promise<WaveModel> {
  const insertAll = (calls: ReturnType<typeof writerCalls<TimeseriesCollection>>) =>
    Promise.all(calls.map(({ coll, docs, ordered }) => coll.insertMany(docs, { ordered })));
  const calls = writerCalls(colls, writers);
  await insertAll(calls);
  const model: WaveModel = new Map();
  const first = calls.flatMap((c) => c.docs);
  if (after === null) {
    for (const d of first) model.set(d.mid, new Set([d.sensor]));
    return model;
  }
  const doomed = new Set(after.trim ? first.map((d) => d.mid).filter((_, i) => i % 3 === 0) : []);
  for (const d of first) {
    const sensor = after.rename && d.sensor === 's1' ? 's3' : d.sensor;
    model.set(d.mid, new Set([doomed.has(d.mid) || (after.remove && sensor === 's2') ? 'gone' : sensor]));
  }
  const writes = async () => {
    if (after.rename) {
      await (colls[0] as TimeseriesCollection).updateMany({ sensor: 's1' }, { $set: { sensor: 's3' } });
    }
    if (after.remove) await (colls[colls.length - 1] as TimeseriesCollection).deleteMany({ sensor: 's2' });
    if (after.trim) {
      await (colls[Math.floor(colls.length / 2)] as TimeseriesCollection).deleteMany({
        mid: { $in: [...doomed] },
      });
    }
  };
  const more = writerCalls(colls, [[], ...after.writers]).map((call) => ({
    ...call,
    docs: call.docs.map((d) => ({ ...d, mid: `after-${d.mid}` })),
  }));
  for (const d of more.flatMap((c) => c.docs)) {
    const options = new Set<string>([d.sensor]);
    if (after.concurrent && after.rename && d.sensor === 's1') options.add('s3');
    if (after.concurrent && after.remove && d.sensor === 's2') options.add('gone');
    model.set(d.mid, options);
  }
  if (after.concurrent) await Promise.all([writes(), insertAll(more)]);
  else {
    await writes();
    await insertAll(more);
  }
  return model;
}

/**
 * The stored measurements are what `model` allows: each id at most once, in one of its possible series,
 * and every id that cannot be gone present.
 */
export function expectStoredAsModel(rows: ReadonlyArray<Record<string, unknown>>, model: WaveModel): void {
  const seen = new Set<string>();
  for (const row of rows) {
    const mid = String(row.mid);
    expect(seen.has(mid), `${mid} stored twice`).toBe(false);
    seen.add(mid);
    expect([...(model.get(mid) ?? [])], `${mid} as ${String(row.sensor)}`).toContain(String(row.sensor));
  }
  for (const [mid, options] of model)
    if (!options.has('gone')) expect(seen.has(mid), `${mid} missing`).toBe(true);
}

/**
 * Each (decompressed) bucket holds at most `maxCount` measurements, all within the hour its
 * `control.min` time starts, its latest time its `control.max` time.
 */
export function expectBucketsWithinLimits(
  buckets: ReadonlyArray<Record<string, unknown>>,
  maxCount: number,
): void {
  for (const bucket of buckets) {
    const times = Object.values((bucket.data as { ts: Record<string, Date> }).ts).map((d) => d.getTime());
    const control = bucket.control as { min: { ts: Date }; max: { ts: Date } };
    const start = control.min.ts.getTime();
    expect(times.length).toBeLessThanOrEqual(maxCount);
    expect(Math.max(...times)).toBe(control.max.ts.getTime());
    expect(Math.min(...times)).toBeGreaterThanOrEqual(start);
    expect(Math.max(...times)).toBeLessThan(start + 3600 * 1000);
  }
}

function bucketDoc(id: ObjectId, meta: unknown, n: number): StoredBucket {
  const ts: Record<string, Date> = {};
  const v: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    ts[String(i)] = at(i);
    v[String(i)] = i;
  }
  return {
    _id: id,
    control: { version: 1, min: { ts: at(0), v: 0 }, max: { ts: at(n - 1), v: n - 1 } },
    meta,
    data: { ts, v },
  };
}

/**
 * The `Storage` contract, on one backend.
 *
 * @param label - backend name for the describe block.
 * @param factory - creates a fresh backend per test.
 */
export function describeStorageSuite(label: string, factory: BackendFactory): void {
  describe(`Storage contract: ${label}`, () => {
    let backend: StorageBackend | undefined;
    afterEach(async () => {
      await backend?.dispose();
      backend = undefined;
    });

    async function setup(meta: 'withMeta' | 'withoutMeta' = 'withMeta') {
      backend = await factory();
      const storage = backend.open();
      const ns = `tsbuckets.system.buckets.${backend.collectionName('c')}`;
      await storage.createNamespace(ns, {
        timeseries: {
          timeField: 'ts',
          ...(meta === 'withMeta' ? { metaField: 'sensor' } : {}),
          granularity: 'seconds',
          bucketMaxSpanSeconds: 3600,
        },
      });
      return { storage, ns };
    }

    it('inserts and reads back bucket documents with BSON types and field order kept', async () => {
      const { storage, ns } = await setup();
      const doc: StoredBucket = {
        _id: new ObjectId(),
        control: { version: 1, min: { ts: at(0), a: 1 }, max: { ts: at(5), a: 2.5 } },
        meta: { b: 'x', a: Long.fromNumber(7) },
        data: {
          ts: { '0': at(0), '1': at(5) },
          a: { '0': 1, '1': 2.5 },
          d: { '0': new Double(3), '1': Decimal128.fromString('1.25') },
          l: { '0': Long.fromString('9007199254740993') },
          s: { '1': 'text' },
          o: { '0': { z: [1, 'two', null], y: true } },
          bin: { '0': new Binary(new Uint8Array([1, 2, 3])) },
        },
      };
      await storage.insertOne(ns, structuredCloneBson(doc));
      const [read] = await allBuckets(storage, ns);
      expect(read).toStrictEqual(doc);
      expect(Object.keys(read!)).toEqual(['_id', 'control', 'meta', 'data']);
      expect(Object.keys(read!.data as object)).toEqual(['ts', 'a', 'd', 'l', 's', 'o', 'bin']);
      expect(Object.keys(read!.meta as object)).toEqual(['b', 'a']);
    });

    it('rejects a duplicate _id with TimeseriesError DuplicateKey', async () => {
      const { storage, ns } = await setup();
      const id = new ObjectId();
      await storage.insertOne(ns, bucketDoc(id, 'a', 1));
      const error: unknown = await storage.insertOne(ns, bucketDoc(id, 'b', 1)).catch((e: unknown) => e);
      expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
      expect((error as TimeseriesError).codeName).toBe('DuplicateKey');
      expect((error as TimeseriesError).code).toBe(11000);
      expect(await storage.countDocuments(ns)).toBe(1);
    });

    it('applies a guarded update once and reports notMatched when the guard fails', async () => {
      const { storage, ns } = await setup();
      const id = new ObjectId();
      await storage.insertOne(ns, bucketDoc(id, 'a', 2));
      const guard = { _id: id, 'data.ts.1': { $exists: true }, 'data.ts.2': { $exists: false } };
      const update = {
        $set: { 'data.ts.2': at(2), 'data.v.2': 2, 'control.max.ts': at(2), 'control.max.v': 2 },
      };
      expect(await storage.updateOne(ns, guard, update)).toEqual({ kind: 'updated' });
      expect(await storage.updateOne(ns, guard, update)).toEqual({ kind: 'notMatched' });
      expect(await storage.updateOne(ns, { _id: new ObjectId() }, update)).toEqual({ kind: 'notMatched' });
      const [read] = await allBuckets(storage, ns);
      expect(read).toStrictEqual(bucketDoc(id, 'a', 3));
    });

    it('commits the writes of one call together, with one outcome per write', async () => {
      const { storage, ns } = await setup();
      const [kept, changed, taken] = [new ObjectId(), new ObjectId(), new ObjectId()];
      await storage.insertOne(ns, bucketDoc(kept, 'a', 2));
      // Another writer appended its own third measurement to `changed` (not the one committed below).
      const other = bucketDoc(changed, 'b', 3);
      (other.data as { v: Record<string, number> }).v['2'] = 99;
      await storage.insertOne(ns, structuredCloneBson(other));
      await storage.insertOne(ns, bucketDoc(taken, 'c', 1));
      // The third measurement of a two-measurement bucket: `changed` holds three already (guard miss).
      const third = (bucketId: ObjectId) => ({
        bucketId,
        timeField: 'ts',
        numPreviouslyCommittedMeasurements: 2,
        update: makeBucketUpdate({
          measurements: [{ ts: at(2), v: 2 }],
          numPreviouslyCommittedMeasurements: 2,
          existingColumns: new Set(['ts', 'v']),
          minUpdates: [],
          maxUpdates: [
            { path: ['ts'], value: at(2) },
            { path: ['v'], value: 2 },
          ],
          metaField: 'sensor',
        }),
      });
      const fresh = new ObjectId();
      const writes: BucketWrite[] = [
        { kind: 'update', commit: third(kept) },
        { kind: 'update', commit: third(changed) },
        { kind: 'insert', document: bucketDoc(taken, 'x', 1) },
        { kind: 'insert', document: bucketDoc(fresh, 'd', 1) },
      ];
      const outcomes = await storage.commitWrites?.(ns, writes, { ordered: false });
      expect(outcomes?.map((o) => o.kind)).toEqual(['applied', 'notMatched', 'failed', 'applied']);
      const failed = outcomes?.[2] as { error: unknown };
      expect(TimeseriesError.isTimeseriesError(failed.error) && failed.error.codeName).toBe('DuplicateKey');
      expect(await allBuckets(storage, ns)).toStrictEqual(
        [bucketDoc(kept, 'a', 3), other, bucketDoc(taken, 'c', 1), bucketDoc(fresh, 'd', 1)].sort((x, y) =>
          (x._id as ObjectId).toHexString() < (y._id as ObjectId).toHexString() ? -1 : 1,
        ),
      );
    });

    it('applies pipeline updates that set dotted and $-prefixed field names', async () => {
      const { storage, ns } = await setup();
      const id = new ObjectId();
      await storage.insertOne(ns, bucketDoc(id, 'a', 1));
      const setField = (input: unknown, field: string, value: unknown) => ({
        $setField: { field: { $literal: field }, input, value },
      });
      const pipeline = [
        {
          $replaceWith: setField(
            '$$ROOT',
            'data',
            setField({ $getField: { field: { $literal: 'data' }, input: '$$ROOT' } }, 'a.b', {
              $literal: { '0': 5, '1': '$notAnExpression' },
            }),
          ),
        },
      ];
      expect(await storage.updateOne(ns, { _id: id }, pipeline)).toEqual({ kind: 'updated' });
      const [read] = await allBuckets(storage, ns);
      expect((read!.data as Record<string, unknown>)['a.b']).toStrictEqual({
        '0': 5,
        '1': '$notAnExpression',
      });
      expect(Object.keys(read!.data as object)).toEqual(['ts', 'v', 'a.b']);
    });

    it('replaces a document only when the filter matches', async () => {
      const { storage, ns } = await setup();
      const id = new ObjectId();
      await storage.insertOne(ns, bucketDoc(id, 'a', 3));
      const replacement = bucketDoc(id, 'b', 2);
      expect(await storage.replaceOne(ns, { _id: id, meta: 'zzz' }, replacement)).toEqual({
        kind: 'notMatched',
      });
      expect(await storage.replaceOne(ns, { _id: id }, replacement)).toEqual({ kind: 'updated' });
      expect(await allBuckets(storage, ns)).toStrictEqual([bucketDoc(id, 'b', 2)]);
    });

    it('updates many, deletes many and counts by filter', async () => {
      const { storage, ns } = await setup();
      for (const meta of ['a', 'a', 'b', 'c'])
        await storage.insertOne(ns, bucketDoc(new ObjectId(), meta, 2));
      expect(await storage.countDocuments(ns)).toBe(4);
      expect(await storage.countDocuments(ns, { meta: 'a' })).toBe(2);
      expect(await storage.updateMany(ns, { meta: 'a' }, { $set: { meta: 'A' } })).toBe(2);
      expect(await storage.countDocuments(ns, { meta: 'A' })).toBe(2);
      expect(await storage.deleteMany(ns, { meta: { $in: ['A', 'c'] } })).toBe(3);
      expect((await allBuckets(storage, ns)).map((b) => b.meta)).toEqual(['b']);
      expect(await storage.deleteMany(ns, { meta: 'nothing' })).toBe(0);
    });

    it('finds with filter, projection, sort and limit', async () => {
      const { storage, ns } = await setup();
      const ids = [0, 1, 2, 3].map(() => new ObjectId());
      for (const [i, id] of ids.entries()) await storage.insertOne(ns, bucketDoc(id, `m${i % 2}`, i + 1));
      const collect = async (filter: Record<string, unknown>, options = {}) => {
        const out: StoredBucket[] = [];
        for await (const d of storage.find(ns, filter, options)) out.push(d);
        return out;
      };
      const onlyMeta = await collect({ meta: 'm1' }, { projection: { meta: 1 }, sort: { _id: 1 } });
      expect(onlyMeta).toStrictEqual([
        { _id: ids[1], meta: 'm1' },
        { _id: ids[3], meta: 'm1' },
      ]);
      const nested = await collect(
        { 'control.max.v': { $gte: 2 } },
        { projection: { 'control.max': 1, _id: 0 }, sort: { 'control.max.v': -1 }, limit: 2 },
      );
      expect(nested).toStrictEqual([
        { control: { max: { ts: at(3), v: 3 } } },
        { control: { max: { ts: at(2), v: 2 } } },
      ]);
      const withoutData = await collect({ _id: ids[0] }, { projection: { data: 0 } });
      expect(withoutData).toStrictEqual([
        { _id: ids[0], control: bucketDoc(ids[0]!, 'm0', 1).control, meta: 'm0' },
      ]);
      expect(await collect({ meta: 'none' })).toEqual([]);
    });

    it('stops a find early without error', async () => {
      const { storage, ns } = await setup();
      for (let i = 0; i < 5; i++) await storage.insertOne(ns, bucketDoc(new ObjectId(), 'a', 1));
      let n = 0;
      for await (const _ of storage.find(ns, {})) {
        if (++n === 2) break;
      }
      expect(n).toBe(2);
      expect(await storage.countDocuments(ns)).toBe(5);
    });

    it('reports the total BSON size of the namespace', async () => {
      const { storage, ns } = await setup();
      const docs = [
        bucketDoc(new ObjectId(), 'a', 3),
        bucketDoc(new ObjectId(), { x: Long.fromNumber(1) }, 10),
      ];
      for (const d of docs) await storage.insertOne(ns, structuredCloneBson(d));
      expect(await storage.totalSize(ns)).toBe(docs.reduce((s, d) => s + calculateObjectSize(d), 0));
    });

    it('creates, lists and drops indexes', async () => {
      const { storage, ns } = await setup('withoutMeta');
      await storage.createIndex(ns, { name: 'v_1', key: { 'control.min.v': 1, 'control.max.v': 1 } });
      await storage.createIndex(ns, { name: 'v_1', key: { 'control.min.v': 1, 'control.max.v': 1 } });
      const names = (await storage.listIndexes(ns)).map((i) => i.name);
      expect(names).toContain('v_1');
      expect(names).not.toContain('_id_');
      const index = (await storage.listIndexes(ns)).find((i) => i.name === 'v_1');
      expect(index?.key).toEqual({ 'control.min.v': 1, 'control.max.v': 1 });
      expect(await storage.dropIndex(ns, 'v_1')).toBe(true);
      expect(await storage.dropIndex(ns, 'v_1')).toBe(false);
      expect((await storage.listIndexes(ns)).map((i) => i.name)).not.toContain('v_1');
    });

    it('creates namespaces idempotently and drops them with their documents', async () => {
      const { storage, ns } = await setup();
      await storage.insertOne(ns, bucketDoc(new ObjectId(), 'a', 1));
      await storage.createNamespace(ns, {
        timeseries: {
          timeField: 'ts',
          metaField: 'sensor',
          granularity: 'seconds',
          bucketMaxSpanSeconds: 3600,
        },
      });
      expect(await storage.countDocuments(ns)).toBe(1);
      await storage.dropNamespace(ns);
      expect(await storage.countDocuments(ns)).toBe(0);
      await storage.dropNamespace(ns);
    });
  });
}

/**
 * A `BucketEngine` over one backend.
 *
 * @param label - backend name for the describe block.
 * @param factory - creates a fresh backend per test.
 */
export function describeEngineSuite(label: string, factory: BackendFactory): void {
  describe(`BucketEngine over ${label}`, () => {
    let backend: StorageBackend | undefined;
    const engines: BucketEngine[] = [];
    afterEach(async () => {
      vi.restoreAllMocks();
      for (const e of engines.splice(0)) await e.close();
      await backend?.dispose();
      backend = undefined;
    });

    async function engineOn(
      storage: Storage,
      name: string,
      parameters: Record<string, number | boolean> = {},
    ) {
      const engine = new BucketEngine({ storage, parameters: { ...kParameters, ...parameters } });
      engines.push(engine);
      const coll = await engine.createCollection(name, {
        timeseries: { timeField: 'ts', metaField: 'sensor' },
      });
      return { engine, coll };
    }

    /** A fresh backend with two engines on one collection, in the given format. */
    async function twoEngines(base: string, compressed: boolean) {
      backend = await factory();
      const name = backend.collectionName(base);
      const parameters = { timeseriesAlwaysUseCompressedBuckets: compressed };
      const a = { ...(await engineOn(backend.open(), name, parameters)), storage: backend.open() };
      const b = await engineOn(backend.open(), name, parameters);
      return { a, b };
    }

    function measurements(writer: string, n: number, series = 3): Array<Record<string, unknown>> {
      return Array.from({ length: n }, (_, i) => ({
        ts: at((i * 7) % 600),
        sensor: { site: `s${i % series}`, n: i % series },
        mid: `${writer}-${i}`,
        temp: i % 4 === 0 ? 20 : 20.5 + i,
        ...(i % 5 === 0 ? { note: `n${i}` } : {}),
      }));
    }

    it('writes exactly the bucket documents the embedded reference writes', async () => {
      backend = await factory();
      const name = backend.collectionName('weather');
      const storage = backend.open();
      const { coll } = await engineOn(storage, name, { timeseriesBucketMaxCount: 4 });
      // The reference cuts ordered calls whose series interleave into the same rounds as the backend (a
      // round's measurements are bucketed together, so rounds change where late measurements go).
      const referenceStorage = new FaultyStorage(1, {
        atomicOrderedCommits: storage.atomicOrderedCommits === true,
      });
      const reference = await engineOn(referenceStorage, name, { timeseriesBucketMaxCount: 4 });
      const docs = [
        ...measurements('w', 20),
        {
          ts: at(1),
          sensor: { site: 's0', n: 0 },
          'a.b': 1,
          big: Long.fromNumber(5),
          d: new Double(2),
          dec: Decimal128.fromString('0.1'),
        },
        { ts: at(2), sensor: { site: 's0', n: 0 }, 'a.b': 2.5, big: Long.fromNumber(6), d: new Double(3) },
      ];
      for (const ordered of [true, false]) {
        await coll.insertMany(docs.slice(0, 11), { ordered });
        await reference.coll.insertMany(docs.slice(0, 11), { ordered });
        await coll.insertMany(docs.slice(11), { ordered });
        await reference.coll.insertMany(docs.slice(11), { ordered });
      }
      // A backend that may hold open buckets uncompressed is compared on what they hold.
      const form = (b: StoredBucket): StoredBucket => {
        if (backend?.uncompressedWhileOpen !== true) return b;
        const v1 = decompressBucket(b);
        const { version: _version, count: _count, ...control } = v1.control as Record<string, unknown>;
        return { ...v1, control };
      };
      const normalise = (buckets: StoredBucket[]) =>
        buckets
          .map(form)
          .map((b): Record<string, unknown> => ({
            ...b,
            _id: (b._id as ObjectId).getTimestamp().toISOString(),
          }))
          .sort((a, b) =>
            JSON.stringify([a._id, a.meta, a.control]) < JSON.stringify([b._id, b.meta, b.control]) ? -1 : 1,
          );
      const stored = normalise(await coll.buckets.find().toArray());
      const expected = normalise(await reference.coll.buckets.find().toArray());
      expect(stored.length).toBeGreaterThan(4);
      expect(stored).toStrictEqual(expected);
      const rows = await storedMeasurements(backend.open(), coll.bucketsNamespace, 'ts', 'sensor');
      expect(rows).toHaveLength(docs.length * 2);
      expect(await coll.buckets.countDocuments()).toBe(stored.length);
      const stats = await coll.stats();
      expect(stats.timeseries.bucketCount).toBe(stored.length);
    });

    it('two engines writing into one collection concurrently store every measurement exactly once', async () => {
      backend = await factory();
      const name = backend.collectionName('shared');
      const a = await engineOn(backend.open(), name, { timeseriesBucketMaxCount: 5 });
      const b = await engineOn(backend.open(), name, { timeseriesBucketMaxCount: 5 });
      const inserts: Array<Promise<unknown>> = [];
      const all = [...measurements('a', 120), ...measurements('b', 120)];
      for (let i = 0; i < 12; i++) {
        inserts.push(
          a.coll.insertMany(measurements('a', 120).slice(i * 10, i * 10 + 10), { ordered: i % 2 === 0 }),
        );
        inserts.push(
          b.coll.insertMany(measurements('b', 120).slice(i * 10, i * 10 + 10), { ordered: i % 3 === 0 }),
        );
      }
      await Promise.all(inserts);
      const rows = await storedMeasurements(backend.open(), a.coll.bucketsNamespace, 'ts', 'sensor');
      const counts = multiplicity(rows, 'mid');
      expect(counts.size).toBe(all.length);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    });

    it('several ingester engines on one buckets collection: unique _ids, every measurement once, buckets within limits', async () => {
      // docs/scaling.md: each process runs its own engine (its own catalog) over the same buckets
      // collection. Nothing is shared but the storage: bucket _ids are unique because the storage refuses
      // a duplicate (the engine draws another id), and appends are guarded updates that match only the
      // bucket state the engine last wrote (another writer's append makes the guard fail: retried).
      backend = await factory();
      const name = backend.collectionName('ingesters');
      const maxCount = 6;
      const ingesters = await Promise.all(
        Array.from({ length: 4 }, () =>
          engineOn(backend!.open(), name, { timeseriesBucketMaxCount: maxCount }),
        ),
      );
      // Every ingester writes the same series, out of order and late, in concurrent calls.
      const batches = ingesters.flatMap((ingester, w) =>
        Array.from({ length: 6 }, (_, call) =>
          Array.from({ length: 9 }, (_, i) => ({
            ts: at(((call * 9 + i) * 37 + w * 11) % 1800),
            sensor: `s${(i + w) % 3}`,
            mid: `w${w}-${call}-${i}`,
          })),
        ).map((docs, call) => ({ ingester, docs, ordered: call % 2 === 0 })),
      );
      await Promise.all(
        batches.map(({ ingester, docs, ordered }) => ingester.coll.insertMany(docs, { ordered })),
      );
      const written = batches.flatMap((b) => b.docs);

      const storage = backend.open();
      const ns = ingesters[0]!.coll.bucketsNamespace;
      const buckets = (await allBuckets(storage, ns)).map((b) => decompressBucket(b));
      const ids = buckets.map((b) => (b._id as ObjectId).toHexString());
      expect(new Set(ids).size).toBe(ids.length);
      const rows = await storedMeasurements(storage, ns, 'ts', 'sensor');
      const counts = multiplicity(rows, 'mid');
      expect(counts.size).toBe(written.length);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
      // Each bucket holds one series, at most maxCount measurements, all in its window and its min/max.
      expectBucketsWithinLimits(buckets, maxCount);
      for (const bucket of buckets) {
        const start = (bucket.control as { min: { ts: Date } }).min.ts.getTime();
        expect((bucket._id as ObjectId).getTimestamp().getTime()).toBe(start);
      }
      // What the ingesters acknowledged is what is stored.
      const committed = ingesters.reduce(
        (sum, { engine }) => sum + engine.serverStatus().bucketCatalog.numMeasurementsCommitted,
        0,
      );
      expect(committed).toBe(written.length);
    });

    it('property: engines writing one buckets collection concurrently store each measurement once, in buckets within limits', async () => {
      // The example above, with the engines, their calls (ordered or not, series out of order and late),
      // the format and the bucket count limit drawn by fast-check; all calls of all engines run at once.
      // Then, maybe, one engine renames series s1 to s3 and another deletes series s2 (the others' open
      // buckets go stale), and a second wave of calls runs at once.
      backend = await factory();
      const current = backend;
      let run = 0;
      await fc.assert(
        fc.asyncProperty(waveRunArb, async (drawn) => {
          const { maxCount, writers, after } = drawn;
          const name = current.collectionName(`concurrent${run++}`);
          // Not kept for afterEach, as engineOn's are: a run's engines are closed when it ends.
          const ingesters = await waveEngines(() => current.open(), name, drawn);
          try {
            const colls = ingesters.map((ingester) => ingester.coll);
            const first = colls[0] as (typeof colls)[number];
            const model = await runWaves(colls, writers, after);
            const storage = current.open();
            const buckets = (await allBuckets(storage, first.bucketsNamespace)).map((b) =>
              decompressBucket(b),
            );
            const ids = buckets.map((b) => (b._id as ObjectId).toHexString());
            expect(new Set(ids).size).toBe(ids.length);
            const rows = await storedMeasurements(storage, first.bucketsNamespace, 'ts', 'sensor');
            expectStoredAsModel(rows, model);
            expectBucketsWithinLimits(buckets, maxCount);
          } finally {
            for (const { engine } of ingesters) await engine.close();
          }
        }),
        { numRuns: 100 },
      );
    });

    it.each([true, false])(
      "an engine does not append to its bucket once another engine changed the bucket's meta (compressed: %s)",
      async (compressed) => {
        // Engine a's open bucket of series s2 is renamed to s3 by engine b (an update of the metaField):
        // a's next measurement of s2 must not land in it, where it would read as s3.
        const { a, b } = await twoEngines(`renamed${compressed ? 'C' : 'U'}`, compressed);
        await a.coll.insertMany([{ ts: at(0), sensor: 's2', mid: 'a0' }]);
        await b.coll.updateMany({ sensor: 's2' }, { $set: { sensor: 's3' } });
        await a.coll.insertMany([{ ts: at(1), sensor: 's2', mid: 'a1' }]);
        const rows = await storedMeasurements(a.storage, a.coll.bucketsNamespace, 'ts', 'sensor');
        expect(rows.map((r) => `${String(r.mid)}:${String(r.sensor)}`).sort()).toEqual(['a0:s3', 'a1:s2']);
      },
    );

    it.each([true, false])(
      'an engine does not append to its bucket once another engine deleted some of its measurements (compressed: %s)',
      async (compressed) => {
        // Engine b appends to a's bucket and deletes one of a's measurements: the bucket holds as many
        // measurements as a knows of, but not the ones it knows. a's next commit once went through on
        // the count: spliced into rewritten columns (garbage values), or, uncompressed, with a max that
        // no longer covered b's measurement (a query for it then skipped the bucket).
        const { a, b } = await twoEngines(`trimmed${compressed ? 'C' : 'U'}`, compressed);
        await a.coll.insertMany([
          { ts: at(0), sensor: 's', v: 1 },
          { ts: at(1), sensor: 's', v: 2 },
        ]);
        await b.coll.insertMany([{ ts: at(2), sensor: 's', v: 100 }]);
        expect(await b.coll.deleteMany({ v: 1 })).toStrictEqual({ acknowledged: true, deletedCount: 1 });
        await a.coll.insertMany([{ ts: at(3), sensor: 's', v: 3 }]);
        const rows = await storedMeasurements(a.storage, a.coll.bucketsNamespace, 'ts', 'sensor');
        expect(rows.map((r) => r.v).sort((x, y) => Number(x) - Number(y))).toEqual([2, 3, 100]);
        expect(await a.coll.find({ v: { $gt: 50 } }).toArray()).toStrictEqual([
          { ts: at(2), sensor: 's', v: 100 },
        ]);
      },
    );

    it('retries a bucket whose _id another engine already inserted (id collision)', async () => {
      backend = await factory();
      const name = backend.collectionName('collide');
      // Both catalogs draw from the process-wide generator: make every id come out twice in a row, so the
      // second engine's first bucket collides with the first engine's.
      const real = defaultBucketIdGenerator.next.bind(defaultBucketIdGenerator);
      let last: ObjectId | undefined;
      let calls = 0;
      vi.spyOn(defaultBucketIdGenerator, 'next').mockImplementation((startMs: number) => {
        calls++;
        if (calls % 2 === 0 && last !== undefined) return last;
        last = real(startMs);
        return last;
      });
      const a = await engineOn(backend.open(), name);
      const b = await engineOn(backend.open(), name);
      // Different series: b cannot reuse a's bucket, it must open its own and gets a's _id.
      await a.coll.insertOne({ ts: at(0), sensor: 'x', mid: 'a0' });
      await b.coll.insertOne({ ts: at(1), sensor: 'y', mid: 'b0' });
      await a.coll.insertOne({ ts: at(2), sensor: 'x', mid: 'a1' });
      await b.coll.insertOne({ ts: at(3), sensor: 'y', mid: 'b1' });
      const rows = await storedMeasurements(backend.open(), a.coll.bucketsNamespace, 'ts', 'sensor');
      expect(rows.map((r) => r.mid).sort()).toEqual(['a0', 'a1', 'b0', 'b1']);
      expect(await a.coll.buckets.countDocuments()).toBe(2);
      // a: 1 id; b: the colliding id, then a new one after DuplicateKey.
      expect(calls).toBe(3);
    });

    it('two engines alternating on the same series store every measurement exactly once', async () => {
      backend = await factory();
      const name = backend.collectionName('alternate');
      const a = await engineOn(backend.open(), name);
      const b = await engineOn(backend.open(), name);
      for (let i = 0; i < 12; i++) {
        const writer = i % 2 === 0 ? a : b;
        await writer.coll.insertMany(
          [
            { ts: at(i * 10), sensor: 'x', mid: `m${i}a` },
            { ts: at(i * 10 + 1), sensor: 'x', mid: `m${i}b` },
          ],
          { ordered: i % 3 === 0 },
        );
      }
      const rows = await storedMeasurements(backend.open(), a.coll.bucketsNamespace, 'ts', 'sensor');
      const counts = multiplicity(rows, 'mid');
      expect(counts.size).toBe(24);
      expect([...counts.values()].every((n) => n === 1)).toBe(true);
    });

    it('a measurement with the values another writer appended first is stored too (no id tells them apart)', async () => {
      for (const compressed of [true, false]) {
        // Arrange: A opens a bucket; B reopens it and appends { v: 2 } at t1.
        const { a, b } = await twoEngines(`same-values-${String(compressed)}`, compressed);
        await a.coll.insertMany([{ ts: at(0), sensor: 'x', v: 1 }]);
        await b.coll.insertMany([{ ts: at(1), sensor: 'x', v: 2 }]);
        // Act: A appends the same values; its guard on the bucket misses (B changed it).
        const result = await a.coll.insertMany([{ ts: at(1), sensor: 'x', v: 2 }]);
        // Assert: acknowledged, so stored, beside B's.
        expect(result.insertedCount).toBe(1);
        const rows = await storedMeasurements(backend!.open(), a.coll.bucketsNamespace, 'ts', 'sensor');
        expect(rows.map((r) => r.v).sort()).toEqual([1, 2, 2]);
      }
    });

    it('re-stages a batch whose bucket another writer appended to first (5.x–7.x format)', async () => {
      backend = await factory();
      const name = backend.collectionName('reopened');
      const { coll } = await engineOn(backend.open(), name, { timeseriesAlwaysUseCompressedBuckets: false });
      await coll.insertOne({ ts: at(0), sensor: 'x', mid: 'm0' });
      const [bucket] = await coll.buckets.find().toArray();
      // Another process (which reopened the bucket) appends measurement 1 with the guarded protocol.
      const other = backend.open();
      const result = await other.updateOne(
        coll.bucketsNamespace,
        { _id: bucket!._id, 'data.ts.0': { $exists: true }, 'data.ts.1': { $exists: false } },
        {
          $set: {
            'data.ts.1': at(1),
            'data.mid.1': 'other',
            'control.max.ts': at(1),
            'control.max.mid': 'other',
          },
        },
      );
      expect(result).toEqual({ kind: 'updated' });
      await coll.insertMany([
        { ts: at(2), sensor: 'x', mid: 'm1' },
        { ts: at(3), sensor: 'x', mid: 'm2' },
      ]);
      const rows = await storedMeasurements(backend.open(), coll.bucketsNamespace, 'ts', 'sensor');
      expect(rows.map((r) => r.mid).sort()).toEqual(['m0', 'm1', 'm2', 'other']);
      // A new bucket, or the same one reopened from storage with 'other' in it (engines with reopening).
      expect(await coll.buckets.countDocuments()).toBeLessThanOrEqual(2);
    });

    it('re-stages a batch whose compressed bucket another writer appended to first', async () => {
      backend = await factory();
      const name = backend.collectionName('reopened8');
      const { coll } = await engineOn(backend.open(), name);
      await coll.insertOne({ ts: at(0), sensor: 'x', mid: 'm0' });
      const [bucket] = await coll.buckets.find().toArray();
      // Another process (which reopened the bucket) appends measurement 1 with a compressed commit.
      const columns = MeasurementMap.fromBinaries('ts', bucket!.data as Record<string, unknown>, 1, 0);
      columns.insertOne({ ts: at(1), mid: 'other' }, 'sensor');
      const control = bucket!.control as { min: Record<string, unknown>; max: Record<string, unknown> };
      const result = await backend.open().applyCommit(coll.bucketsNamespace, {
        format: 'compressed',
        bucketId: bucket!._id as ObjectId,
        bucketIdHex: (bucket!._id as ObjectId).toHexString(),
        numPreviouslyCommittedMeasurements: 1,
        count: 2,
        version: undefined,
        minMax: MinMaxSnapshot.ofDocuments(control.min, { ...control.max, ts: at(1), mid: 'other' }),
        tails: columns.intermediateTails(),
      });
      expect(result).toEqual({ kind: 'updated' });
      await coll.insertMany([
        { ts: at(2), sensor: 'x', mid: 'm1' },
        { ts: at(3), sensor: 'x', mid: 'm2' },
      ]);
      const rows = await storedMeasurements(backend.open(), coll.bucketsNamespace, 'ts', 'sensor');
      expect(rows.map((r) => r.mid).sort()).toEqual(['m0', 'm1', 'm2', 'other']);
      expect(await coll.buckets.countDocuments()).toBeLessThanOrEqual(2);
    });
  });
}

/** A deep copy keeping bson class instances (a storage takes ownership of inserted documents). */
export function structuredCloneBson<T>(value: T): T {
  if (Array.isArray(value)) return value.map((v: unknown) => structuredCloneBson(v)) as T;
  if (value instanceof Date) return new Date(value.getTime()) as T;
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = structuredCloneBson(v);
    return out as T;
  }
  return value;
}
