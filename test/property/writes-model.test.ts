/**
 * Concurrent writes on stored data against a model (docs/mongodb-behaviour.md §12, docs/mongodb-behaviour.md §8): waves of concurrent
 * `insertMany` calls race with metaField updates and deletes, every storage call's completion order chosen
 * by fast-check's scheduler (so the catalog's commits interleave with the direct writes at every await).
 *
 * Law: the collection is always what some order of the operations would give, measurement by
 * measurement. A measurement that existed before a wave is updated or deleted exactly as the model says
 * (nothing acknowledged is lost, nothing deleted comes back, no stale bucket takes a measurement of the
 * wrong series); a measurement inserted during the wave is either before or after each concurrent
 * operation.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine, BulkWriteError, MemoryStorage } from '../../src/index.js';
import { Deferred } from '../../src/util/deferred.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  StoredBucket,
  StorageFindOptions,
} from '../../src/index.js';
import type { BucketCommit } from '../../src/bucket-format/bucket-document.js';
import { eagerColumns } from '../support/eager-columns.js';

const kMetas = ['a', 'b', 'c'] as const;
type Meta = (typeof kMetas)[number];
const base = Date.UTC(2024, 0, 1);

/** A MemoryStorage whose every call completes when the fast-check scheduler says so. */
class ScheduledStorage extends MemoryStorage {
  readonly #s: fc.Scheduler;
  constructor(s: fc.Scheduler) {
    super();
    this.#s = s;
  }
  #turn(label: string): Promise<void> {
    return this.#s.schedule(Promise.resolve(), label);
  }
  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    await this.#turn('insertOne');
    return super.insertOne(ns, doc);
  }
  override async applyCommit(ns: string, commit: BucketCommit) {
    await this.#turn('applyCommit');
    return super.applyCommit(ns, commit);
  }
  override async updateOne(ns: string, filter: BucketFilter, update: BucketUpdateDocument) {
    await this.#turn('updateOne');
    return super.updateOne(ns, filter, update);
  }
  override async replaceOne(ns: string, filter: BucketFilter, doc: StoredBucket) {
    await this.#turn('replaceOne');
    return super.replaceOne(ns, filter, doc);
  }
  override async deleteMany(ns: string, filter: BucketFilter): Promise<number> {
    await this.#turn('deleteMany');
    return super.deleteMany(ns, filter);
  }
  override async *find(
    ns: string,
    filter: BucketFilter,
    options?: StorageFindOptions,
  ): AsyncIterable<StoredBucket> {
    await this.#turn('find');
    yield* super.find(ns, filter, options);
  }
}

interface Measurement {
  readonly id: number;
  readonly meta: Meta;
  readonly minute: number;
}

/** A direct write racing the wave's inserts. */
type DirectOp =
  | { readonly kind: 'updateMeta'; readonly from: Meta; readonly to: Meta }
  | { readonly kind: 'deleteMeta'; readonly meta: Meta }
  | { readonly kind: 'deleteBelow'; readonly id: number };

interface Wave {
  readonly inserts: ReadonlyArray<{
    readonly ordered: boolean;
    /** Starts once the wave's direct writes are done: none of them may affect it. */
    readonly afterDirectWrites: boolean;
    readonly docs: ReadonlyArray<Omit<Measurement, 'id'>>;
  }>;
  /** One update, or up to two deletes (deletes commute; an update and a delete would not). */
  readonly direct: ReadonlyArray<DirectOp>;
}

const metaArb = fc.constantFrom(...kMetas);
const insertArb = fc.record({
  ordered: fc.boolean(),
  afterDirectWrites: fc.boolean(),
  docs: fc.array(fc.record({ meta: metaArb, minute: fc.integer({ min: 0, max: 150 }) }), {
    minLength: 1,
    maxLength: 4,
  }),
});
const deleteArb: fc.Arbitrary<DirectOp> = fc.oneof(
  metaArb.map((meta) => ({ kind: 'deleteMeta' as const, meta })),
  fc.integer({ min: 0, max: 60 }).map((id) => ({ kind: 'deleteBelow' as const, id })),
);
const directArb: fc.Arbitrary<ReadonlyArray<DirectOp>> = fc.oneof(
  fc.constant([]),
  fc
    .tuple(metaArb, metaArb)
    .filter(([from, to]) => from !== to)
    .map(([from, to]) => [{ kind: 'updateMeta' as const, from, to }]),
  fc.array(deleteArb, { minLength: 1, maxLength: 2 }),
);
const waveArb: fc.Arbitrary<Wave> = fc.record({
  inserts: fc.array(insertArb, { minLength: 0, maxLength: 3 }),
  direct: directArb,
});

function matches(op: DirectOp, m: Measurement): boolean {
  switch (op.kind) {
    case 'updateMeta':
      return m.meta === op.from;
    case 'deleteMeta':
      return m.meta === op.meta;
    case 'deleteBelow':
      return m.id < op.id;
    default: {
      const never: never = op;
      return never;
    }
  }
}

describe('writes model', () => {
  it('concurrent inserts, meta updates and deletes lose nothing acknowledged and resurrect nothing deleted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(waveArb, { minLength: 1, maxLength: 6 }),
        fc.constantFrom('deferred', 'eager', 'v1'),
        async (s, waves, format) => {
          // Arrange: small buckets so they close (and are compressed), archive and reopen often; either
          // bucket format (8.0+ compressed from the first commit, its columns taken by the storage or sent
          // with each commit; or 5.x–7.x compressed on close).
          const storage = new ScheduledStorage(s);
          if (format === 'eager') eagerColumns(storage);
          const engine = new BucketEngine({
            storage,
            parameters: {
              timeseriesAlwaysUseCompressedBuckets: format !== 'v1',
              timeseriesBucketMaxCount: 3,
              timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
            },
            ttlMonitor: 'disabled',
          });
          const coll = await s.waitFor(
            engine.createCollection('w', {
              timeseries: { timeField: 't', metaField: 'm', granularity: 'minutes' },
            }),
          );
          const model = new Map<number, Measurement>();
          let nextId = 0;
          for (const wave of waves) {
            // Act: the wave's inserts and direct writes all at once.
            const concurrent = new Map<number, Measurement>();
            const later = new Set<number>();
            const acknowledged = new Set<number>();
            const directsDone = new Deferred<void>();
            const inserts = wave.inserts.map(async ({ ordered, afterDirectWrites, docs }) => {
              const batch = docs.map((d) => ({ ...d, id: nextId++ }));
              for (const m of batch) {
                concurrent.set(m.id, m);
                if (afterDirectWrites) later.add(m.id);
              }
              if (afterDirectWrites) await directsDone.promise;
              try {
                await coll.insertMany(
                  batch.map((m) => ({ t: new Date(base + m.minute * 60_000), m: m.meta, id: m.id })),
                  { ordered },
                );
                for (const m of batch) acknowledged.add(m.id);
              } catch (error) {
                if (!BulkWriteError.isBulkWriteError(error)) throw error;
                const failed = new Set(error.writeErrors.map((e) => e.index));
                batch.forEach((m, i) => {
                  if (!failed.has(i)) acknowledged.add(m.id);
                });
              }
            });
            const directs = wave.direct.map((op) => {
              switch (op.kind) {
                case 'updateMeta':
                  return coll.updateMany({ m: op.from }, { $set: { m: op.to } });
                case 'deleteMeta':
                  return coll.deleteMany({ m: op.meta });
                case 'deleteBelow':
                  return coll.deleteMany({ id: { $lt: op.id } });
                default: {
                  const never: never = op;
                  return never;
                }
              }
            });
            void Promise.all(directs).then(() => {
              directsDone.resolve();
            });
            await s.waitFor(Promise.all([...inserts, ...directs]));
            const stored = await s.waitFor(coll.find({}, { projection: { _id: 0, id: 1, m: 1 } }).toArray());
            // Assert
            const actual = new Map<number, Meta>();
            for (const doc of stored) {
              expect(actual.has(doc.id as number)).toBe(false);
              actual.set(doc.id as number, doc.m as Meta);
            }
            const next = new Map<number, Measurement>();
            for (const m of model.values()) {
              // Existing measurements: exactly the model (the wave has one update or only deletes).
              let expected: Measurement | undefined = m;
              for (const op of wave.direct) {
                if (expected === undefined || !matches(op, expected)) continue;
                expected = op.kind === 'updateMeta' ? { ...expected, meta: op.to } : undefined;
              }
              expect([m.id, actual.get(m.id)]).toEqual([m.id, expected?.meta]);
              if (expected !== undefined) next.set(m.id, expected);
            }
            for (const m of concurrent.values()) {
              const got = actual.get(m.id);
              const allowed = new Set<Meta | undefined>([m.meta]);
              for (const op of wave.direct) {
                if (!matches(op, m) || later.has(m.id)) continue;
                allowed.add(op.kind === 'updateMeta' ? op.to : undefined);
              }
              if (!acknowledged.has(m.id)) allowed.add(undefined);
              expect([m.id, allowed.has(got)]).toEqual([m.id, true]);
              if (got !== undefined) next.set(m.id, { ...m, meta: got });
            }
            expect(actual.size).toBe(next.size);
            model.clear();
            for (const [id, m] of next) model.set(id, m);
          }
          await engine.close();
        },
      ),
      { numRuns: 300 },
    );
  });
});
