/**
 * Model-based test of the engine's write path (fc.commands): random interleavings of concurrent
 * `insertMany` calls (ordered and unordered), storage write failures and held writes, checked against a
 * simple model — the set of acknowledged measurements.
 *
 * Laws checked after every command:
 * - every acknowledged measurement is in storage exactly once, and nothing unacknowledged is;
 * - each bucket respects the count limit, its time window and its `_id` timestamp;
 * - `control.min`/`control.max` equal a brute-force recomputation for the numeric field;
 * - `numMeasurementsCommitted` equals the measurements stored, `numBucketInserts` the buckets created.
 */
import fc from 'fast-check';
import type { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { BucketEngine, BulkWriteError } from '../../src/index.js';
import type { TimeseriesCollection } from '../../src/index.js';
import { Deferred } from '../../src/util/deferred.js';
import { eagerColumns } from '../support/eager-columns.js';
import { FaultyStorage } from '../support/faulty-storage.js';
import { unpackV1 } from '../support/unpack-v1.js';

const kMaxCount = 4;
const kSpanSeconds = 60;
const base = Date.UTC(2024, 0, 1);

interface Model {
  /** ids of acknowledged measurements. */
  readonly acknowledged: Set<number>;
  /** ids attempted but not acknowledged (failed). */
  readonly failed: Set<number>;
  nextId: number;
}

interface Real {
  readonly engine: BucketEngine;
  readonly coll: TimeseriesCollection;
  readonly storage: FaultyStorage;
}

/** A generated measurement: series, time offset (seconds) and value. */
interface Point {
  readonly series: number;
  readonly offset: number;
  readonly v: number;
}

const pointArb = fc.record({
  series: fc.integer({ min: 0, max: 2 }),
  offset: fc.integer({ min: 0, max: 200 }),
  v: fc.integer({ min: -50, max: 50 }),
});

/** One or more concurrent insertMany calls, with optional storage faults queued before them. */
class ConcurrentInserts implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly calls: ReadonlyArray<{ readonly points: ReadonlyArray<Point>; readonly ordered: boolean }>,
    readonly faults: ReadonlyArray<'fail' | 'hold' | 'none' | 'readFail'>,
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: Model, real: Real): Promise<void> {
    const gates: Array<Deferred<void>> = [];
    for (const f of this.faults) {
      if (f === 'readFail') real.storage.readFaults.push(new Error('injected read failure'));
      else if (f === 'fail') real.storage.faults.push({ kind: 'fail', error: new Error('injected failure') });
      else if (f === 'hold') {
        const gate = new Deferred<void>();
        gates.push(gate);
        real.storage.faults.push({ kind: 'block', gate: gate.promise });
      } else real.storage.faults.push({ kind: 'block', gate: Promise.resolve() });
    }
    const calls = this.calls.map(({ points, ordered }) => {
      const docs = points.map((p) => ({
        ts: new Date(base + p.offset * 1000),
        tag: p.series,
        id: model.nextId++,
        v: p.v,
      }));
      return { docs, ordered, promise: real.coll.insertMany(docs, { ordered }).catch((e: unknown) => e) };
    });
    // Release held writes only after every call has started staging.
    await new Promise((resolve) => setImmediate(resolve));
    for (const g of gates) g.resolve();
    for (const { docs, promise, ordered } of calls) {
      const outcome = await promise;
      const failedIndexes = new Set<number>();
      let notAttemptedFrom = docs.length;
      if (outcome instanceof Error) {
        expect(BulkWriteError.isBulkWriteError(outcome)).toBe(true);
        if (BulkWriteError.isBulkWriteError(outcome)) {
          for (const w of outcome.writeErrors) failedIndexes.add(w.index);
          if (ordered) {
            // MongoDB's ordered contract: one error, at the first failed measurement; nothing after it
            // is written or acknowledged.
            expect(outcome.writeErrors).toHaveLength(1);
            notAttemptedFrom = (outcome.writeErrors[0]?.index ?? 0) + 1;
          }
          expect(outcome.insertedCount).toBe(Math.min(docs.length, notAttemptedFrom) - failedIndexes.size);
        }
      }
      // Nothing after an ordered call's failure is stored, whether the storage writes an ordered call all
      // or nothing or keeps the writes before a failed one (the engine then writes in rounds).
      docs.forEach((d, i) => {
        if (i < notAttemptedFrom && !failedIndexes.has(i)) model.acknowledged.add(d.id);
        else model.failed.add(d.id);
      });
    }
    real.storage.faults.length = 0;
    real.storage.readFaults.length = 0;
    await checkLaws(model, real);
  }

  toString(): string {
    return `ConcurrentInserts(${JSON.stringify(this.calls.map((c) => [c.ordered, c.points.length]))}, ${this.faults.join(',')})`;
  }
}

async function checkLaws(model: Model, real: Real): Promise<void> {
  const buckets = await real.coll.buckets.find().toArray();
  const seen = new Map<number, number>();
  let stored = 0;
  for (const bucket of buckets) {
    const rows = unpackV1(bucket, 'ts', 'tag');
    stored += rows.length;
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThanOrEqual(kMaxCount);
    const control = bucket.control as { min: { ts: Date; v: number }; max: { ts: Date; v: number } };
    const start = control.min.ts.getTime();
    expect(start % (kSpanSeconds * 1000)).toBe(0);
    expect((bucket._id as ObjectId).getTimestamp().getTime()).toBe(start);
    let maxTime = -Infinity;
    for (const row of rows) {
      const t = (row.ts as Date).getTime();
      expect(t).toBeGreaterThanOrEqual(start);
      expect(t).toBeLessThan(start + kSpanSeconds * 1000);
      maxTime = Math.max(maxTime, t);
      expect(row.tag).toBe(bucket.meta);
      const id = row.id as number;
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    expect(control.max.ts.getTime()).toBe(maxTime);
    expect(control.min.v).toBe(Math.min(...rows.map((r) => r.v as number)));
    expect(control.max.v).toBe(Math.max(...rows.map((r) => r.v as number)));
  }
  for (const [id, n] of seen) {
    expect(n, `measurement ${id} stored ${n} times`).toBe(1);
    expect(model.acknowledged.has(id), `measurement ${id} stored but not acknowledged`).toBe(true);
  }
  for (const id of model.acknowledged)
    expect(seen.has(id), `measurement ${id} acknowledged, not stored`).toBe(true);
  const stats = (await real.coll.stats()).timeseries;
  expect(stats.numMeasurementsCommitted).toBe(stored);
  expect(stats.numBucketInserts).toBe(buckets.length);
}

const commandArb = fc
  .record({
    calls: fc.array(
      fc.record({ points: fc.array(pointArb, { minLength: 1, maxLength: 8 }), ordered: fc.boolean() }),
      { minLength: 1, maxLength: 4 },
    ),
    faults: fc.array(
      fc.constantFrom<'fail' | 'hold' | 'none' | 'readFail'>('fail', 'hold', 'none', 'none', 'readFail'),
      {
        maxLength: 3,
      },
    ),
  })
  .map(({ calls, faults }) => new ConcurrentInserts(calls, faults));

describe('engine write path against a model', () => {
  it('acknowledges exactly what it stores, under concurrency and storage failures', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.commands([commandArb], { maxCommands: 12 }),
        fc.constantFrom<1 | 3 | 'together' | 'bulk'>(1, 3, 'together', 'bulk'),
        fc.constantFrom('deferred', 'eager', 'v1'),
        async (cmds, writes, format) => {
          // writeConcurrency 3: each call commits up to three batches at once, as over a network;
          // 'together': each call's batches in one commitWrites, ordered ones all or nothing; 'bulk': in
          // one commitWrites that keeps the writes before a failed one (MongoDB's ordered bulkWrite), so
          // ordered calls are written in rounds. Either bucket format: 8.0+ (compressed
          // from the first commit; its columns taken by the storage when it needs them, or sent with
          // each commit as to MongoDB) or 5.x–7.x (compressed on close).
          const together = writes === 'together' || writes === 'bulk';
          const storage = new FaultyStorage(typeof writes === 'number' ? writes : 1, {
            commitWrites: together,
            atomicOrderedCommits: writes !== 'bulk',
          });
          if (format === 'eager') eagerColumns(storage);
          const alwaysCompressed = format !== 'v1';
          const engine = new BucketEngine({
            storage,
            parameters: {
              timeseriesAlwaysUseCompressedBuckets: alwaysCompressed,
              timeseriesBucketMaxCount: kMaxCount,
              timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
            },
          });
          const coll = await engine.createCollection('m', {
            timeseries: {
              timeField: 'ts',
              metaField: 'tag',
              bucketMaxSpanSeconds: kSpanSeconds,
              bucketRoundingSeconds: kSpanSeconds,
            },
          });
          // The collection object reads its rollup definitions once, before the first write: done here so
          // the injected read faults land on the reads of the write path itself.
          expect(await coll.listRollups()).toEqual([]);
          const model: Model = {
            acknowledged: new Set(),
            failed: new Set(),
            nextId: 0,
          };
          await fc.asyncModelRun(() => ({ model, real: { engine, coll, storage } }), cmds);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("commits up to the storage's writeConcurrency batches of one call at once, and one at a time by default", async () => {
    for (const writeConcurrency of [1, 4]) {
      const storage = new FaultyStorage(writeConcurrency, { commitWrites: false });
      const engine = new BucketEngine({ storage });
      const coll = await engine.createCollection('c', { timeseries: { timeField: 'ts', metaField: 'tag' } });
      const docs = Array.from({ length: 30 }, (_, i) => ({ ts: new Date(base + i * 1000), tag: i % 10, i }));
      await coll.insertMany(docs, { ordered: false });
      expect(storage.maxInFlight).toBe(writeConcurrency);
      // Ordered with each series contiguous: one round, one commit per series.
      const bySeries = [...docs].sort((a, b) => a.tag - b.tag);
      await coll.insertMany(bySeries.map((d) => ({ ...d, ts: new Date(d.ts.getTime() + 60_000) })));
      expect(await coll.countDocuments()).toBe(60);
      expect((await coll.stats()).timeseries.numCommits).toBe(20);
      // Ordered with series interleaved (0..9, 0..9, 0..9), written one bucket at a time: three rounds.
      await coll.insertMany(docs.map((d) => ({ ...d, ts: new Date(d.ts.getTime() + 120_000) })));
      expect((await coll.stats()).timeseries.numCommits).toBe(50);
      await engine.close();
    }
  });

  it('with several writers overlapping, group commit makes fewer commits than calls', async () => {
    const storage = new FaultyStorage();
    const engine = new BucketEngine({ storage });
    const coll = await engine.createCollection('g', { timeseries: { timeField: 'ts', metaField: 'tag' } });
    const gate = new Deferred<void>();
    storage.faults.push({ kind: 'block', gate: gate.promise });
    const calls = Array.from({ length: 20 }, (_, i) =>
      coll.insertMany([{ ts: new Date(base + i * 1000), tag: 'x', i }], { ordered: false }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    gate.resolve();
    await Promise.all(calls);
    const stats = (await coll.stats()).timeseries;
    expect(stats.numMeasurementsCommitted).toBe(20);
    expect(stats.numCommits).toBeLessThan(20);
    expect(stats.numWaits).toBeGreaterThan(0);
  });
});
