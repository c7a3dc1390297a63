/**
 * Ingest benchmarks, each measured side by side in one process against js-bson `serialize` of each
 * measurement as a row document (the least a driver does for a native time-series insert), and run for
 * every bucket format the build writes (8.x compressed from the first insert, 5.x-7.x version 1 while
 * open):
 *
 * 1. the shapes ingesters send (`insertMany` unordered, `MemoryStorage`, timed until the bucket documents
 *    have been read back once, so work a storage defers to reading is counted):
 *    - bulk loader: TSBS cpu-only, 1 000 series, one measurement per series per call, 100 calls;
 *    - 10 measurements per series per call (100 series), buckets closing during the run;
 *    - 100 000 series, one measurement each per call;
 * 2. scaling: cost per measurement from 10 to 100 000 series (sparse sensors, 1 000 per call);
 * 3. vs the classic hand-written bucket pattern (`$inc`/`$push` through mingo's updater);
 * 4. concurrency: 1, 8 and 64 writers on overlapping series;
 * 5. storage latency: a storage that takes 1 ms per bucket write, committed one at a time or 16 at once.
 *
 * Run alone with `npx tsx bench/ingest.bench.ts [--quick]`.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';

import { serialize } from 'bson';
import { update } from 'mingo/updater';

import { BucketEngine, MemoryStorage } from '../src/index.js';
import type {
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  StoredBucket,
  StorageUpdateResult,
} from '../src/index.js';
import { sparseSensors, tsbsCpuOnly } from './datasets.js';
import type { Doc } from './datasets.js';
import {
  bucketFormats,
  compare,
  engineOptions,
  heading,
  rate,
  ratio,
  record,
  recordHeadline,
} from './harness.js';
import type { BucketFormat, Contender } from './harness.js';

/** Consecutive slices of `docs`, one per insert call. */
function callsOf(docs: ReadonlyArray<Doc>, perCall: number): Doc[][] {
  const calls: Doc[][] = [];
  for (let i = 0; i < docs.length; i += perCall) calls.push(docs.slice(i, i + perCall));
  return calls;
}

/**
 * Ingest `calls` into a fresh engine of `format`, one `insertMany` after the other (or from several
 * writers taking the next call), then read every bucket document back once.
 *
 * @returns the number of bucket documents read back, and the engine's statistics per call.
 */
async function ingest(
  format: BucketFormat,
  calls: ReadonlyArray<ReadonlyArray<Doc>>,
  metaField: string,
  writers = 1,
): Promise<{ buckets: number; stats: string }> {
  const engine = new BucketEngine(engineOptions(format, {}));
  const coll = await engine.createCollection('bench', { timeseries: { timeField: 'ts', metaField } });
  let next = 0;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < calls.length) {
        const batch = calls[next++] as ReadonlyArray<Doc>;
        await coll.insertMany(batch, { ordered: false });
      }
    }),
  );
  let buckets = 0;
  for await (const _bucket of engine.storage.find(coll.bucketsNamespace, {})) buckets++;
  const s = (await coll.stats()).timeseries;
  const stats = `numCommits/call ${(s.numCommits / calls.length).toFixed(1)}, numWaits ${s.numWaits}, numMeasurementsGroupCommitted ${s.numMeasurementsGroupCommitted}`;
  // Closed after each run: an open engine's TTL timer would keep it, and its heap, alive.
  await engine.close();
  return { buckets, stats };
}

let sink = 0;

function serializeEach(docs: ReadonlyArray<Doc>): Contender {
  return {
    name: 'js-bson serialize (row per measurement)',
    run: () => {
      for (const d of docs) sink += serialize(d).length;
      return docs.length;
    },
  };
}

/** One ingest shape: its calls, and the target of its ratio to serialize-each. */
interface IngestShape {
  readonly name: string;
  readonly description: string;
  readonly calls: ReadonlyArray<ReadonlyArray<Doc>>;
  readonly target: string;
}

async function runShape(
  shape: IngestShape,
  formats: ReadonlyArray<BucketFormat>,
  runs: number,
  budgetMs: number,
): Promise<void> {
  heading(`ingest: ${shape.description}`);
  const docs = shape.calls.flat();
  const buckets = new Map<string, number>();
  const results = await compare(
    [
      ...formats.map((format): Contender => ({
        name: `tsbuckets ${format.name}`,
        run: async () => {
          buckets.set(format.name, (await ingest(format, shape.calls, 'tags')).buckets);
          return docs.length;
        },
      })),
      serializeEach(docs),
    ],
    runs,
    { budgetMs },
  );
  const bson = results[formats.length]!;
  console.log(`  ${bson.name}: ${rate(bson.perSecond)}`);
  formats.forEach((format, i) => {
    const r = results[i]!;
    recordHeadline({
      name: shape.name,
      format: format.name,
      ratio: r.perSecond / bson.perSecond,
      target: shape.target,
      detail: `${rate(r.perSecond)} vs ${rate(bson.perSecond)}, ${((r.medianMs * 1000) / docs.length).toFixed(2)} µs per measurement, ${buckets.get(format.name)} buckets`,
    });
  });
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
  const formats = await bucketFormats();
  console.log(`bucket formats: ${formats.map((f) => f.name).join(', ')}`);
  const runs = quick ? 2 : 3;

  // 1. The shapes ingesters send.
  const loaderCalls = quick ? 20 : 100;
  await runShape(
    {
      name: 'bulk loader',
      description: `bulk-loader shape: TSBS cpu-only, 1 000 series, one measurement per series per call, ${loaderCalls} calls`,
      calls: callsOf(tsbsCpuOnly(1000, 1000 * loaderCalls), 1000),
      target: '>= 0.75x',
    },
    formats,
    runs,
    20_000,
  );
  const tenCalls = quick ? 40 : 100;
  await runShape(
    {
      name: '10 per series per call',
      description: `TSBS cpu-only, 100 series, 10 measurements per series per call, ${tenCalls} calls (buckets close on their 1 h span)`,
      calls: callsOf(tsbsCpuOnly(100, 1000 * tenCalls), 1000),
      target: '>= 1.0x',
    },
    formats,
    runs,
    20_000,
  );
  const manySeries = quick ? 20_000 : 100_000;
  await runShape(
    {
      name: `${manySeries.toLocaleString('en')} series`,
      description: `TSBS cpu-only, ${manySeries} series, one measurement each per call, 2 calls`,
      calls: callsOf(tsbsCpuOnly(manySeries, manySeries * 2), manySeries),
      target: '>= 0.5x',
    },
    formats,
    quick ? 1 : 2,
    20_000,
  );

  // 2. Scaling over the number of series.
  heading(
    'scaling: cost per measurement by number of series (sparse sensors, 8 optional fields, 1 000 per call)',
  );
  const m = quick ? 50_000 : 200_000;
  const seriesCounts = [10, 100, 1_000, 10_000, 100_000];
  const perFormat = new Map<string, number[]>(formats.map((f) => [f.name, []]));
  for (const series of seriesCounts) {
    const calls = callsOf(sparseSensors(series, m), 1000);
    const docs = calls.flat();
    const results = await compare(
      [
        ...formats.map((format): Contender => ({
          name: format.name,
          run: async () => {
            await ingestSensors(format, calls);
            return m;
          },
        })),
        serializeEach(docs),
      ],
      // The median of three: the spread divides two of these figures, and a single run at 100 000
      // series moved by a third from one bench run to the next.
      quick ? 1 : 3,
      { warmUp: 'no' },
    );
    const bson = results[formats.length]!;
    const line = formats.map((format, i) => {
      const nsPer = (results[i]!.medianMs * 1e6) / m;
      perFormat.get(format.name)!.push(nsPer);
      record({ chart: 'scaling', series: format.name, x: series, y: nsPer, unit: 'ns per measurement' });
      return `${format.name} ${nsPer.toFixed(0)} ns (${ratio(results[i]!.perSecond / bson.perSecond)} serialize)`;
    });
    record({
      chart: 'scaling',
      series: 'js-bson serialize',
      x: series,
      y: (bson.medianMs * 1e6) / m,
      unit: 'ns per measurement',
    });
    console.log(`  ${String(series).padStart(6)} series: ${line.join(', ')}`);
  }
  for (const format of formats) {
    const costs = perFormat.get(format.name)!;
    const spread = Math.max(...costs) / Math.min(...costs);
    recordHeadline({
      name: 'spread 10..100 000 series',
      format: format.name,
      ratio: spread,
      target: '<= 3x',
      detail: `highest / lowest cost per measurement (${costs.map((c) => c.toFixed(0)).join(' / ')} ns)`,
    });
  }

  // 2b. Call size: the same measurements in larger calls (the default format only).
  heading('call size: TSBS cpu-only, 1 000 series, 100 000 measurements in calls of 1 000 to 20 000');
  const sizedDocs = tsbsCpuOnly(1000, quick ? 40_000 : 100_000);
  const sizedFormat = formats[0]!;
  for (const size of [1_000, 5_000, 10_000, 20_000]) {
    const calls = callsOf(sizedDocs, size);
    const [ours, bson] = await compare(
      [
        {
          name: sizedFormat.name,
          run: async () => {
            await ingest(sizedFormat, calls, 'tags');
            return sizedDocs.length;
          },
        },
        serializeEach(sizedDocs),
      ],
      quick ? 1 : 3,
    );
    const nsPer = (ours!.medianMs * 1e6) / sizedDocs.length;
    record({ chart: 'callSize', series: sizedFormat.name, x: size, y: nsPer, unit: 'ns per measurement' });
    console.log(
      `  calls of ${String(size).padStart(6)}: ${sizedFormat.name} ${nsPer.toFixed(0)} ns (${ratio(ours!.perSecond / bson!.perSecond)} serialize)`,
    );
  }

  // 3. vs the classic bucket pattern.
  heading('vs the classic $inc/$push bucket pattern (TSBS, 100 hosts)');
  const classicDocs = tsbsCpuOnly(100, quick ? 5_000 : 20_000);
  const classicCalls = callsOf(classicDocs, 1000);
  const [ts2, classic] = await compare(
    [
      {
        name: `tsbuckets ${formats[0]!.name}`,
        run: async () => {
          await ingest(formats[0]!, classicCalls, 'tags');
          return classicDocs.length;
        },
      },
      { name: 'classic $inc/$push bucket pattern (mingo)', run: () => classicBucketPattern(classicDocs) },
    ],
    runs,
    { budgetMs: 10_000 },
  );
  recordHeadline({
    name: 'vs classic $inc/$push',
    format: formats[0]!.name,
    ratio: ts2!.perSecond / classic!.perSecond,
    target: '',
    detail: `${rate(ts2!.perSecond)} vs ${rate(classic!.perSecond)}`,
  });

  // 4. Concurrency.
  heading('concurrency: writers on overlapping series (TSBS, 100 hosts, 10 per series per call)');
  const concurrencyCalls = callsOf(tsbsCpuOnly(100, quick ? 20_000 : 50_000), 1000);
  const writerCounts = [1, 8, 64];
  for (const format of formats) {
    const lastStats = new Map<number, string>();
    const byWriters = await compare(
      writerCounts.map((writers) => ({
        name: `${String(writers).padStart(2)} writers`,
        run: async () => {
          lastStats.set(writers, (await ingest(format, concurrencyCalls, 'tags', writers)).stats);
          return concurrencyCalls.length * 1000;
        },
      })),
      quick ? 1 : 3,
      { budgetMs: 10_000 },
    );
    byWriters.forEach((result, i) => {
      const writers = writerCounts[i] as number;
      record({
        chart: 'concurrency',
        series: format.name,
        x: writers,
        y: result.perSecond,
        unit: 'measurements/s',
      });
      console.log(`  ${format.name} ${result.name}: ${rate(result.perSecond)}, ${lastStats.get(writers)}`);
    });
  }

  // 5. Storage latency.
  heading('storage latency: 1 ms per storage write call (a storage across a network), TSBS, 100 hosts');
  const slowCalls = callsOf(tsbsCpuOnly(100, quick ? 5_000 : 20_000), 1000);
  for (const writeConcurrency of [1, 16, 'together'] as const) {
    const storage = new SlowStorage(writeConcurrency);
    const engine = new BucketEngine(engineOptions(formats[0]!, { storage }));
    const coll = await engine.createCollection('slow', {
      timeseries: { timeField: 'ts', metaField: 'tags' },
    });
    const t = performance.now();
    for (const call of slowCalls) await coll.insertMany(call, { ordered: false });
    const ms = performance.now() - t;
    console.log(
      `  ${writeConcurrency === 'together' ? 'one commitWrites per call' : `writeConcurrency ${String(writeConcurrency).padStart(2)}`}: ${rate((slowCalls.length * 1000 * 1000) / ms)}, ${storage.writes} storage write calls, ${(ms / slowCalls.length).toFixed(0)} ms per insertMany of 1000`,
    );
    await engine.close();
  }
  if (sink === 0) console.log('');
}

/**
 * MemoryStorage with a 1 ms wait before each storage write call, like a round trip to a server: each
 * bucket on its own (`writeConcurrency` at once), or every bucket of a call in one `commitWrites`
 * (`'together'`, one `bulkWrite`).
 */
class SlowStorage extends MemoryStorage {
  writes = 0;
  readonly writeConcurrency: number;

  constructor(writeConcurrency: number | 'together') {
    super();
    this.writeConcurrency = writeConcurrency === 'together' ? 1 : writeConcurrency;
    if (writeConcurrency !== 'together') Object.defineProperty(this, 'commitWrites', { value: undefined });
  }

  override async commitWrites(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]> {
    this.writes++;
    await delay(1);
    return super.commitWrites(ns, writes, options);
  }

  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    this.writes++;
    await delay(1);
    return super.insertOne(ns, doc);
  }

  override async applyCommit(
    ns: string,
    commit: Parameters<MemoryStorage['applyCommit']>[1],
  ): Promise<StorageUpdateResult> {
    this.writes++;
    await delay(1);
    return super.applyCommit(ns, commit);
  }
}

async function ingestSensors(format: BucketFormat, calls: ReadonlyArray<ReadonlyArray<Doc>>): Promise<void> {
  const engine = new BucketEngine(engineOptions(format, {}));
  const coll = await engine.createCollection('sensors', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  for (const call of calls) await coll.insertMany(call, { ordered: false });
  for await (const _bucket of engine.storage.find(coll.bucketsNamespace, {})) sink++;
  await engine.close();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runIngestBench(process.argv.includes('--quick'));
}
