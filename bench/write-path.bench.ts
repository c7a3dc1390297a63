/**
 * The write path of each bucket format, side by side in one process (issue 14):
 *
 * 1. the bulk-loader shape (TSBS cpu-only: 10 float fields, 3 tags as meta; each `insertMany` carries one
 *    measurement per series for 1 000 series; 100 calls), measured until every bucket document has been
 *    read back once, against js-bson `serialize` of each row: MongoDB 8.0 buckets
 *    (`timeseriesAlwaysUseCompressedBuckets: true`, compressed from the first commit) and 5.x–7.x buckets
 *    (`false`, uncompressed while open);
 * 2. `MongoStorage` over the driver-shaped fake: bytes sent per measurement and round trips per call for
 *    each wire form (8.0 `openBucketForm: 'measured'`, the default: whole changed columns until they cost
 *    more than cells, then version 1 until the bucket closes; `'compressed'`: whole changed columns
 *    `$set` all along, guarded on `control.count`; 7.x: one cell `$set` per value, guarded on the time
 *    column's indices), over 10 calls of 1 000 series and over buckets that live until they close.
 *
 * Run alone with `npx tsx bench/write-path.bench.ts` (`--quick` for fewer calls).
 */
import { calculateObjectSize, serialize } from 'bson';

import { BucketEngine } from '../src/index.js';
import type { Storage } from '../src/index.js';
import { MongoStorage } from '../src/mongodb/index.js';
import type { MongoStorageOptions } from '../src/mongodb/index.js';
import type { MongoCollectionLike, MongoDbLike } from '../src/mongodb/driver-shape.js';
import { FakeDb } from '../test/integration/support/fake-mongo.js';
import { tsbsCpuOnly } from './datasets.js';
import type { Doc } from './datasets.js';
import { compare, heading, rate } from './harness.js';

const kSeries = 1000;

/** Ingest `docs` in calls of one measurement per series, then read every bucket back once. */
async function bulkLoad(
  docs: ReadonlyArray<Doc>,
  alwaysCompressed: boolean,
  storage?: Storage,
  series: number = kSeries,
): Promise<number> {
  const engine = new BucketEngine({
    ...(storage === undefined ? {} : { storage }),
    parameters: {
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
      timeseriesAlwaysUseCompressedBuckets: alwaysCompressed,
    },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('bulk', { timeseries: { timeField: 'ts', metaField: 'tags' } });
  for (let start = 0; start < docs.length; start += series) {
    await coll.insertMany(docs.slice(start, start + series), { ordered: false });
  }
  let buckets = 0;
  for await (const _bucket of coll.buckets.find()) buckets++;
  await engine.close();
  return buckets;
}

/** The collection methods whose calls are counted as round trips (each is one, and sends its arguments). */
const kRoundTrips: ReadonlySet<string | symbol> = new Set([
  'insertOne',
  'updateOne',
  'bulkWrite',
  'find',
  'aggregate',
  'replaceOne',
]);

/** A driver `Db` that counts the operations and BSON bytes sent to the buckets collection. */
function countingDb(db: MongoDbLike): { db: MongoDbLike; sent: { calls: number; bytes: number } } {
  const sent = { calls: 0, bytes: 0 };
  const size = (value: unknown): number =>
    Array.isArray(value)
      ? value.reduce<number>((n, v) => n + calculateObjectSize(v as object), 0)
      : calculateObjectSize(value as object);
  const wrap = (coll: MongoCollectionLike): MongoCollectionLike =>
    new Proxy(coll, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        if (!kRoundTrips.has(prop)) return value.bind(target) as unknown;
        return (...args: unknown[]) => {
          sent.calls++;
          for (const arg of args.slice(0, 2)) if (arg !== undefined) sent.bytes += size(arg);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  const proxy = new Proxy(db, {
    get(target, prop, receiver) {
      if (prop === 'collection') return (name: string) => wrap(target.collection(name));
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value.bind(target) as unknown) : value;
    },
  });
  return { db: proxy, sent };
}

/**
 * Run the write-path benchmarks.
 *
 * @param quick - fewer calls.
 */
export async function runWritePathBench(quick: boolean): Promise<void> {
  const calls = quick ? 20 : 100;
  const docs = tsbsCpuOnly(kSeries, kSeries * calls);

  heading(
    `Bulk-loader shape: ${kSeries} series, 1 measurement per series per call, ${calls} calls, read back once`,
  );
  const results = await compare(
    [
      {
        name: 'js-bson serialize each row',
        run: () => {
          for (const d of docs) serialize(d);
          return docs.length;
        },
      },
      {
        name: '8.0 format (compressed from the first commit)',
        run: async () => (await bulkLoad(docs, true), docs.length),
      },
      {
        name: '5.x–7.x format (version 1 while open)',
        run: async () => (await bulkLoad(docs, false), docs.length),
      },
    ],
    quick ? 2 : 3,
  );
  const base = results[0]!.perSecond;
  for (const r of results)
    console.log(
      `${r.name.padEnd(48)} ${rate(r.perSecond).padStart(10)}  ${(r.perSecond / base).toFixed(3)}x`,
    );

  heading(`MongoStorage over the driver-shaped fake: ${kSeries} series, ${quick ? 5 : 10} calls`);
  const few = docs.slice(0, kSeries * (quick ? 5 : 10));
  // The same calls again through a new engine (a restart): every series has a bucket to reopen.
  const later = docs.slice(kSeries * (quick ? 5 : 10), kSeries * (quick ? 10 : 20));
  for (const { name, alwaysCompressed, options } of kWireForms) {
    const { db, sent } = countingDb(new FakeDb('bench'));
    await bulkLoad(few, alwaysCompressed, new MongoStorage(db, { mode: 'buckets', ...options }));
    console.log(
      `${name.padEnd(40)} ${(sent.bytes / few.length).toFixed(0).padStart(6)} bytes sent per measurement, ` +
        `${(sent.calls / (few.length / kSeries)).toFixed(1)} round trips per call`,
    );
    sent.calls = 0;
    sent.bytes = 0;
    await bulkLoad(later, alwaysCompressed, new MongoStorage(db, { mode: 'buckets', ...options }));
    console.log(
      `${'  after a restart'.padEnd(40)} ${(sent.bytes / later.length).toFixed(0).padStart(6)} bytes sent per measurement, ` +
        `${(sent.calls / (later.length / kSeries)).toFixed(1)} round trips per call`,
    );
  }

  // Buckets that live long: one measurement per series per call until they close on their 1 h span
  // (360 measurements of TSBS's 10 s interval), then 40 more calls.
  const longSeries = 20;
  const longCalls = quick ? 120 : 400;
  const long = tsbsCpuOnly(longSeries, longSeries * longCalls);
  heading(
    `MongoStorage over the driver-shaped fake: ${longSeries} series, ${longCalls} calls (buckets close on their 1 h span)`,
  );
  for (const { name, alwaysCompressed, options } of kWireForms) {
    const { db, sent } = countingDb(new FakeDb('bench'));
    await bulkLoad(long, alwaysCompressed, new MongoStorage(db, { mode: 'buckets', ...options }), longSeries);
    console.log(
      `${name.padEnd(40)} ${(sent.bytes / long.length).toFixed(0).padStart(6)} bytes sent per measurement, ` +
        `${(sent.calls / longCalls).toFixed(2)} round trips per call`,
    );
  }
}

/** The wire forms compared: the 8.0 format's `openBucketForm` choices, and the 7.x format. */
const kWireForms: ReadonlyArray<{
  readonly name: string;
  readonly alwaysCompressed: boolean;
  readonly options: MongoStorageOptions;
}> = [
  { name: "8.0, openBucketForm 'measured' (default)", alwaysCompressed: true, options: {} },
  {
    name: "8.0, 'compressed': whole changed columns",
    alwaysCompressed: true,
    options: { openBucketForm: 'compressed' },
  },
  { name: '7.x: one cell $set per value', alwaysCompressed: false, options: {} },
];

if (import.meta.url === `file://${process.argv[1] ?? ''}`)
  await runWritePathBench(process.argv.includes('--quick'));
