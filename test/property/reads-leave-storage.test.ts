/**
 * Reads never change stored data: whatever a reader asks (projections of any shape, aggregations,
 * explain, stats, TTL passes that delete nothing) and whatever it then does with the documents it got
 * (changing, deleting and adding fields, moving dates, overwriting binary bytes), the stored bucket
 * documents stay byte for byte what they were.
 */
import { serialize } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../src/index.js';
import type { StorageFindOptions, TimeseriesCollection } from '../../src/index.js';

const base = Date.UTC(2024, 0, 1);

/** Change everything reachable in a value handed out by a read. */
function vandalise(value: unknown, depth = 0): void {
  if (typeof value !== 'object' || value === null || depth > 12) return;
  if (value instanceof Date) {
    value.setTime(0);
    return;
  }
  if (value instanceof Uint8Array) {
    value.fill(0xee);
    return;
  }
  const tag = (value as { _bsontype?: unknown })._bsontype;
  if (tag === 'Binary') {
    (value as { buffer: Uint8Array }).buffer.fill(0xee);
    return;
  }
  // js-bson value classes are immutable, frozen stats snapshots cannot be changed.
  if (tag !== undefined || Object.isFrozen(value)) return;
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    vandalise(record[key], depth + 1);
    if (key.length % 2 === 0) Reflect.deleteProperty(record, key);
    else record[key] = 'changed';
  }
  record.added = { by: 'reader' };
}

/** Every stored bucket as BSON bytes, read through a fresh handle on the storage. */
async function storedBytes(storage: MemoryStorage, ns: string): Promise<string[]> {
  const out: string[] = [];
  for await (const doc of storage.find(ns, {}, { sort: { _id: 1 } })) {
    out.push(Buffer.from(serialize(doc)).toString('hex'));
  }
  return out;
}

const bucketFields = [
  '_id',
  'meta',
  'meta.site',
  'control',
  'control.min',
  'control.max',
  'control.min.t',
  'control.max.t',
  'control.max.v',
  'control.version',
  'data',
  'data.v',
  'data.t',
  'data.tags',
] as const;

/** A projection over bucket fields: inclusion or exclusion (MongoDB refuses a mix besides `_id`). */
const projectionArb: fc.Arbitrary<NonNullable<StorageFindOptions['projection']>> = fc
  .tuple(
    fc.uniqueArray(fc.constantFrom(...bucketFields.filter((f) => f !== '_id')), {
      minLength: 1,
      maxLength: 4,
      // MongoDB refuses a path and its prefix in one projection.
      comparator: (a, b) => a.startsWith(`${b}.`) || b.startsWith(`${a}.`) || a === b,
    }),
    fc.constantFrom<0 | 1>(0, 1),
    fc.option(fc.constantFrom<0 | 1>(0, 1), { nil: undefined }),
  )
  .map(([fields, mode, id]) => {
    const projection: Record<string, 0 | 1> = {};
    // `_id: 1` is an inclusion: MongoDB refuses it next to excluded fields.
    if (id !== undefined && !(mode === 0 && id === 1)) projection._id = id;
    for (const f of fields) projection[f] = mode;
    return projection;
  });

type Read =
  | { readonly kind: 'buckets'; readonly projection: NonNullable<StorageFindOptions['projection']> }
  | { readonly kind: 'storage'; readonly projection: NonNullable<StorageFindOptions['projection']> }
  | { readonly kind: 'find'; readonly projection: Record<string, 0 | 1> | undefined }
  | { readonly kind: 'aggregate' }
  | { readonly kind: 'explain' }
  | { readonly kind: 'stats' }
  | { readonly kind: 'ttl' }
  | { readonly kind: 'count' };

const readArb: fc.Arbitrary<Read> = fc.oneof(
  projectionArb.map((projection) => ({ kind: 'buckets' as const, projection })),
  projectionArb.map((projection) => ({ kind: 'storage' as const, projection })),
  fc
    .option(
      fc.constantFrom<Record<string, 0 | 1>>({ v: 1 }, { site: 0 }, { t: 1, tags: 1 }, { _id: 0, v: 0 }),
      { nil: undefined },
    )
    .map((projection) => ({ kind: 'find' as const, projection })),
  fc.constantFrom<Read>(
    { kind: 'aggregate' },
    { kind: 'explain' },
    { kind: 'stats' },
    { kind: 'ttl' },
    { kind: 'count' },
  ),
);

async function runRead(
  engine: BucketEngine,
  storage: MemoryStorage,
  coll: TimeseriesCollection,
  read: Read,
): Promise<unknown[]> {
  switch (read.kind) {
    case 'buckets':
      return await coll.buckets.find({}, { projection: read.projection }).toArray();
    case 'storage': {
      const out: unknown[] = [];
      for await (const doc of storage.find(coll.bucketsNamespace, {}, { projection: read.projection }))
        out.push(doc);
      return out;
    }
    case 'find':
      return await coll
        .find(
          { t: { $gte: new Date(base) } },
          read.projection === undefined ? {} : { projection: read.projection },
        )
        .toArray();
    case 'aggregate':
      return await coll
        .aggregate([{ $match: { 'site.name': { $exists: true } } }, { $sort: { t: 1 } }])
        .toArray();
    case 'explain':
      return [await coll.find({ site: { name: 'a' } }).explain()];
    case 'stats':
      return [await coll.stats(), engine.serverStatus()];
    case 'ttl':
      return [await engine.runTTLMonitor()];
    case 'count':
      return [await coll.countDocuments({ v: { $gt: 0 } })];
    default: {
      const never: never = read;
      return never;
    }
  }
}

describe('reads leave storage unchanged', () => {
  it('any sequence of reads, with every returned document changed afterwards, leaves stored buckets byte-identical', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            site: fc.constantFrom('a', 'b', 'c'),
            minute: fc.integer({ min: 0, max: 300 }),
            v: fc.oneof(fc.integer(), fc.double({ noNaN: true })),
            tags: fc.option(fc.array(fc.string(), { maxLength: 3 }), { nil: undefined }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        fc.array(readArb, { minLength: 1, maxLength: 8 }),
        async (measurements, reads) => {
          // Arrange: buckets both open (version 1) and closed (compressed), with a TTL nothing reaches.
          const storage = new MemoryStorage();
          const engine = new BucketEngine({
            storage,
            parameters: { timeseriesBucketMaxCount: 5 },
            ttlMonitor: 'disabled',
            clock: () => base,
          });
          const coll = await engine.createCollection('r', {
            timeseries: { timeField: 't', metaField: 'site', granularity: 'minutes' },
            expireAfterSeconds: 10 ** 9,
          });
          await coll.insertMany(
            measurements.map((m) => ({
              t: new Date(base + m.minute * 60_000),
              site: { name: m.site },
              v: m.v,
              ...(m.tags === undefined ? {} : { tags: m.tags }),
            })),
          );
          const before = await storedBytes(storage, coll.bucketsNamespace);
          // Act
          for (const read of reads) {
            for (const doc of await runRead(engine, storage, coll, read)) vandalise(doc);
          }
          // Assert
          expect(await storedBytes(storage, coll.bucketsNamespace)).toEqual(before);
          await engine.close();
        },
      ),
      { numRuns: 100 },
    );
  }, 60_000);

  it('an exclusion projection on the buckets view only shapes the result (measurements stay findable)', async () => {
    // Arrange
    const engine = new BucketEngine({ ttlMonitor: 'disabled' });
    const coll = await engine.createCollection('p', { timeseries: { timeField: 't', metaField: 'm' } });
    await coll.insertOne({ t: new Date(base), m: 1, v: 1 });
    // Act
    const projected = await coll.buckets
      .find({}, { projection: { 'control.min.t': 0, 'control.max.t': 0 } })
      .toArray();
    // Assert
    expect(projected).toHaveLength(1);
    expect((projected[0]?.control as { min: Record<string, unknown> }).min).toEqual({ v: 1 });
    expect(await coll.find({ t: new Date(base) }, { projection: { _id: 0 } }).toArray()).toEqual([
      { t: new Date(base), m: 1, v: 1 },
    ]);
    await engine.close();
  });
});
