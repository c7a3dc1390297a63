/**
 * Reader benchmark (issue 4):
 *
 * 1. Full-scan unpack throughput of the reader vs js-bson `deserialize` of one row document per
 *    measurement (what a plain collection would pay to read the same data), side by side, alternating
 *    runs, median of each.
 * 2. Buckets examined vs total for a 1% time-range query.
 *
 * Run alone with `npx tsx bench/reader.bench.ts` (`--quick` for a short run).
 */
import { deserialize, serialize } from 'bson';

import { BucketEngine } from '../src/engine/bucket-engine.js';
import { find } from '../src/reader/reader.js';
import type { ReaderContext } from '../src/reader/reader.js';

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/**
 * Run the reader benchmark and print its results.
 *
 * @param quick - fewer measurements and runs (CI smoke run).
 */
export async function runReaderBench(quick: boolean): Promise<void> {
  const n = quick ? 20_000 : 200_000;
  const runs = quick ? 3 : 7;
  const series = 10;
  const start = Date.UTC(2024, 0, 1);
  const engine = new BucketEngine({
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
  });
  const coll = await engine.createCollection('bench', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  const docs = Array.from({ length: n }, (_, i) => ({
    ts: new Date(start + Math.floor(i / series) * 1000),
    sensor: { id: `s${i % series}`, site: 'north' },
    temp: 20 + (i % 17) * 0.25,
    hum: i % 100,
    status: i % 50 === 0 ? 'warn' : 'ok',
  }));
  for (let i = 0; i < n; i += 10_000) await coll.insertMany(docs.slice(i, i + 10_000), { ordered: false });
  const ctx: ReaderContext = {
    storage: engine.storage,
    bucketsNs: coll.bucketsNamespace,
    options: coll.options,
  };
  const rows = docs.map((d) => serialize(d));

  const readerMs: number[] = [];
  const bsonMs: number[] = [];
  let sink = 0;
  for (let r = 0; r < runs; r++) {
    // Alternate the two so that warm-up and GC pressure affect both equally.
    let t = performance.now();
    for await (const m of find(ctx)) sink += (m.hum as number) & 1;
    readerMs.push(performance.now() - t);
    t = performance.now();
    for (const row of rows) sink += (deserialize(row).hum as number) & 1;
    bsonMs.push(performance.now() - t);
  }
  const reader = median(readerMs);
  const bson = median(bsonMs);
  const bucketCount = await engine.storage.countDocuments(coll.bucketsNamespace);
  console.log(`reader: ${n} measurements in ${bucketCount} buckets (sink ${sink % 2})`);
  console.log(
    `  full-scan unpack   ${(n / reader / 1000).toFixed(2)} M measurements/s  (median ${reader.toFixed(1)} ms of ${runs})`,
  );
  console.log(
    `  js-bson deserialize ${(n / bson / 1000).toFixed(2)} M docs/s          (median ${bson.toFixed(1)} ms of ${runs})`,
  );
  console.log(`  ratio unpack/deserialize throughput: ${(bson / reader).toFixed(2)}x`);

  // 1% of the time range.
  const span = Math.floor(n / series) * 1000;
  const from = new Date(start + span / 2);
  const to = new Date(start + span / 2 + span / 100);
  const cursor = find(ctx, { ts: { $gte: from, $lt: to } });
  const { executionStats } = await cursor.explain();
  console.log(
    `  1% time range: ${executionStats.nReturned} returned, ${executionStats.totalBucketsExamined} of ${executionStats.totalBucketsInCollection} buckets examined (${((100 * executionStats.totalBucketsExamined) / executionStats.totalBucketsInCollection).toFixed(2)}%)`,
  );
  await engine.close();
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  await runReaderBench(process.argv.includes('--quick'));
}
