/**
 * Ingest benchmarks (issue 8), each measured side by side in one process:
 *
 * 1. `insertMany` (batches of 1000, unordered) into BucketEngine + MemoryStorage vs js-bson `serialize`
 *    of each measurement as a row document (the least a driver does for a native time-series insert);
 * 2. vs the classic hand-written bucket pattern: per measurement, an `$inc`/`$push` update of a
 *    pre-allocated bucket document through mingo's updater;
 * 3. concurrency: 1, 8 and 64 writers on overlapping series;
 * 4. storage latency: a storage that takes 1 ms per bucket write, committed one at a time or 16 at once;
 * 5. scaling: cost per measurement at 10, 1 000 and 100 000 series, memory per open bucket.
 */
import { setTimeout as delay } from 'node:timers/promises';

import { calculateObjectSize, serialize } from 'bson';
import { update } from 'mingo/updater';

import { compressBucket, decompressBucket } from '../src/bucket-format/bucket-compression.js';
import { BucketEngine, MemoryStorage } from '../src/index.js';
import type { BucketCommit, StoredBucket, StorageUpdateResult, TimeseriesCollection } from '../src/index.js';
import { tsbsCpuOnly, sparseSensors } from './datasets.js';
import type { Doc } from './datasets.js';
import { collectGarbage, compare, heading, rate } from './harness.js';

async function freshCollection(): Promise<{ engine: BucketEngine; coll: TimeseriesCollection }> {
  const engine = new BucketEngine({
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
  });
  const coll = await engine.createCollection('bench', { timeseries: { timeField: 'ts', metaField: 'tags' } });
  return { engine, coll };
}

async function ingest(
  docs: ReadonlyArray<Doc>,
  writers = 1,
): Promise<{ engine: BucketEngine; coll: TimeseriesCollection; calls: number }> {
  const { engine, coll } = await freshCollection();
  let next = 0;
  let calls = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < docs.length) {
        const batch = docs.slice(next, next + 1000);
        next += 1000;
        calls++;
        await coll.insertMany(batch, { ordered: false });
      }
    }),
  );
  return { engine, coll, calls };
}

/** The closed buckets of an ingest of `docs`, as the version-1 documents they were before compression. */
async function closedBucketsOf(docs: ReadonlyArray<Doc>): Promise<Array<Record<string, unknown>>> {
  const { engine, coll } = await ingest(docs);
  const out: Array<Record<string, unknown>> = [];
  for await (const bucket of coll.buckets.find({ 'control.version': 2 })) out.push(decompressBucket(bucket));
  await engine.close();
  return out;
}

function classicBucketPattern(docs: ReadonlyArray<Doc>): number {
  // What hand-written ingesters do: one document per (series, hour), grown with $inc/$push.
  const buckets = new Map<string, Record<string, unknown>>();
  for (const doc of docs) {
    const tags = doc.tags as { hostname: string };
    const hour = Math.floor((doc.ts as Date).getTime() / 3_600_000);
    const key = `${tags.hostname}:${hour}`;
    let bucket = buckets.get(key);
    if (bucket === undefined) {
      bucket = { _id: key, tags, hour, count: 0, samples: [] };
      buckets.set(key, bucket);
    }
    update(bucket, { $inc: { count: 1 }, $push: { samples: doc } }, undefined, undefined, {
      cloneMode: 'none',
    });
  }
  return docs.length;
}

/**
 * Run the ingest benchmarks and print their results.
 *
 * @param quick - smaller datasets and fewer runs.
 */
export async function runIngestBench(quick: boolean): Promise<void> {
  const n = quick ? 50_000 : 200_000;
  const runs = quick ? 3 : 5;
  const docs = tsbsCpuOnly(100, n);

  heading(`ingest: TSBS cpu-only, 100 hosts, ${n} measurements, batches of 1000`);
  let sink = 0;
  // The floor of any ingest that follows SPEC §4 (version 1 while open, compressed on close): the
  // compression of the closed buckets alone, with the server's round-trip check (its default). The
  // version-1 documents are exactly those the engine compressed: its closed buckets, decompressed.
  const closed = await closedBucketsOf(docs);
  const closedMeasurements = closed.reduce(
    (sum, doc) => sum + Object.keys((doc.data as { ts: object }).ts).length,
    0,
  );
  const [ts, bson, compression, unvalidated] = await compare(
    [
      {
        name: 'tsbuckets insertMany',
        run: async () => {
          // Closed after each run: an open engine's TTL timer would keep it, and its heap, alive.
          await (await ingest(docs)).engine.close();
          return docs.length;
        },
      },
      {
        name: 'js-bson serialize (row per measurement)',
        run: () => {
          for (const d of docs) sink += serialize(d).length;
          return docs.length;
        },
      },
      {
        name: 'compression on close alone (validated)',
        run: () => {
          for (const doc of closed) sink += compressBucket(doc, 'ts').kind.length;
          return closedMeasurements;
        },
      },
      {
        name: 'without the check (timeseriesValidateCompressedBuckets: false)',
        run: () => {
          for (const doc of closed) sink += compressBucket(doc, 'ts', { validate: false }).kind.length;
          return closedMeasurements;
        },
      },
    ],
    runs,
  );
  console.log(`${ts!.name}: ${rate(ts!.perSecond)}   ${bson!.name}: ${rate(bson!.perSecond)}`);
  console.log(
    `ratio tsbuckets / serialize = ${(ts!.perSecond / bson!.perSecond).toFixed(2)}x (target >= 2x)`,
  );
  console.log(
    `${compression!.name}: ${rate(compression!.perSecond)} (${closed.length} buckets) = ${(compression!.perSecond / bson!.perSecond).toFixed(2)}x serialize: the most any ingest that compresses on close can reach, were everything else free`,
  );
  console.log(
    `${unvalidated!.name}: ${rate(unvalidated!.perSecond)} = ${(unvalidated!.perSecond / bson!.perSecond).toFixed(2)}x serialize`,
  );

  const classicDocs = docs.slice(0, quick ? 5_000 : 20_000);
  const [ts2, classic] = await compare(
    [
      {
        name: 'tsbuckets insertMany',
        run: async () => {
          await (await ingest(classicDocs)).engine.close();
          return classicDocs.length;
        },
      },
      { name: 'classic $inc/$push bucket pattern (mingo)', run: () => classicBucketPattern(classicDocs) },
    ],
    runs,
  );
  console.log(`${ts2!.name}: ${rate(ts2!.perSecond)}   ${classic!.name}: ${rate(classic!.perSecond)}`);
  console.log(
    `ratio tsbuckets / classic = ${(ts2!.perSecond / classic!.perSecond).toFixed(1)}x (target >= 100x)`,
  );

  heading('concurrency: writers on overlapping series (TSBS, 100 hosts)');
  // Alternating runs and medians like every comparison here; the statistics are those of each one's last
  // run.
  const writerCounts = [1, 8, 64];
  const lastStats = new Map<number, string>();
  const byWriters = await compare(
    writerCounts.map((writers) => ({
      name: `${String(writers).padStart(2)} writers`,
      run: async () => {
        const { engine, coll, calls } = await ingest(docs, writers);
        const s = (await coll.stats()).timeseries;
        lastStats.set(
          writers,
          `numCommits/call ${(s.numCommits / calls).toFixed(1)}, numWaits ${s.numWaits}, numMeasurementsGroupCommitted ${s.numMeasurementsGroupCommitted}`,
        );
        await engine.close();
        return docs.length;
      },
    })),
    runs,
  );
  byWriters.forEach((result, i) => {
    console.log(`${result.name}: ${rate(result.perSecond)}, ${lastStats.get(writerCounts[i] as number)}`);
  });

  heading('storage latency: 1 ms per bucket write (a storage across a network), TSBS, 100 hosts');
  const slowDocs = docs.slice(0, quick ? 5_000 : 20_000);
  for (const writeConcurrency of [1, 16]) {
    const storage = new SlowStorage(writeConcurrency);
    const engine = new BucketEngine({ storage });
    const coll = await engine.createCollection('slow', {
      timeseries: { timeField: 'ts', metaField: 'tags' },
    });
    const t = performance.now();
    for (let i = 0; i < slowDocs.length; i += 1000)
      await coll.insertMany(slowDocs.slice(i, i + 1000), { ordered: false });
    const ms = performance.now() - t;
    console.log(
      `writeConcurrency ${String(writeConcurrency).padStart(2)}: ${rate((slowDocs.length / ms) * 1000)}, ${storage.writes} bucket writes, ${(ms / (slowDocs.length / 1000)).toFixed(0)} ms per insertMany of 1000`,
    );
    await engine.close();
  }

  heading('scaling: cost per measurement by number of series (sparse sensors, 8 optional fields)');
  const perSeries: number[] = [];
  for (const series of [10, 1_000, 100_000]) {
    const m = quick ? 100_000 : 300_000;
    const data = sparseSensors(series, m);
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    const t = performance.now();
    const { engine, coll } = await ingestSensors(data);
    const ms = performance.now() - t;
    const status = engine.serverStatus().bucketCatalog;
    collectGarbage();
    const heap = process.memoryUsage().heapUsed - before;
    let bucketBytes = 0;
    let buckets = 0;
    for await (const b of coll.buckets.find()) {
      bucketBytes += calculateObjectSize(b);
      buckets++;
    }
    const nsPer = (ms * 1e6) / m;
    perSeries.push(nsPer);
    console.log(
      `${String(series).padStart(6)} series: ${nsPer.toFixed(0)} ns/measurement, ${status.numOpenBuckets} open buckets, catalog memoryUsage ${(status.memoryUsage / status.numOpenBuckets).toFixed(0)} B/open bucket, heap growth ${(heap / m).toFixed(0)} B/measurement vs ${(bucketBytes / m).toFixed(0)} B/measurement of bucket BSON (${buckets} buckets)`,
    );
    await engine.close();
  }
  const spread = (Math.max(...perSeries) / Math.min(...perSeries) - 1) * 100;
  console.log(
    `spread of cost per measurement across 10..100000 series: ${spread.toFixed(0)}% (target <= 20%)`,
  );
  if (sink === 0) console.log('');
}

/** MemoryStorage with a 1 ms wait before each bucket write, like a round trip to a server. */
class SlowStorage extends MemoryStorage {
  writes = 0;
  readonly writeConcurrency: number;

  constructor(writeConcurrency: number) {
    super();
    this.writeConcurrency = writeConcurrency;
  }

  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    this.writes++;
    await delay(1);
    return super.insertOne(ns, doc);
  }

  override async applyCommit(ns: string, commit: BucketCommit): Promise<StorageUpdateResult> {
    this.writes++;
    await delay(1);
    return super.applyCommit(ns, commit);
  }
}

async function ingestSensors(
  docs: ReadonlyArray<Doc>,
): Promise<{ engine: BucketEngine; coll: TimeseriesCollection }> {
  const engine = new BucketEngine({
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
  });
  const coll = await engine.createCollection('sensors', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  for (let i = 0; i < docs.length; i += 1000)
    await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
  return { engine, coll };
}
