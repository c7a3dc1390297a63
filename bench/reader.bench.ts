/**
 * Reader benchmark, for every bucket format the build writes:
 *
 * 1. Full-scan read through `find()` vs js-bson `deserialize` of one row document per measurement (what a
 *    plain collection would pay to read the same data), side by side, alternating runs, median of each.
 * 2. Buckets examined vs total for a 1% time-range query.
 *
 * Run alone with `npx tsx bench/reader.bench.ts` (`--quick` for a short run).
 */
import { pathToFileURL } from 'node:url';

import { deserialize, serialize } from 'bson';

import { BucketEngine } from '../src/index.js';
import { find } from '../src/reader/reader.js';
import type { ReaderContext } from '../src/reader/reader.js';
import { bucketFormats, compare, engineOptions, heading, rate, recordHeadline } from './harness.js';
import type { Contender } from './harness.js';

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
  heading(`reader: full scan of ${n} measurements (${series} series, 3 data fields, meta of 2 fields)`);
  const docs = Array.from({ length: n }, (_, i) => ({
    ts: new Date(start + Math.floor(i / series) * 1000),
    sensor: { id: `s${i % series}`, site: 'north' },
    temp: 20 + (i % 17) * 0.25,
    hum: i % 100,
    status: i % 50 === 0 ? 'warn' : 'ok',
  }));
  const formats = await bucketFormats();
  const engines: BucketEngine[] = [];
  const contexts: ReaderContext[] = [];
  for (const format of formats) {
    const engine = new BucketEngine(engineOptions(format, {}));
    const coll = await engine.createCollection('bench', {
      timeseries: { timeField: 'ts', metaField: 'sensor' },
    });
    for (let i = 0; i < n; i += 10_000) await coll.insertMany(docs.slice(i, i + 10_000), { ordered: false });
    engines.push(engine);
    contexts.push({ storage: engine.storage, bucketsNs: coll.bucketsNamespace, options: coll.options });
  }
  const rows = docs.map((d) => serialize(d));

  let sink = 0;
  const results = await compare(
    [
      ...formats.map((format, i): Contender => ({
        name: `find() ${format.name}`,
        run: async () => {
          for await (const m of find(contexts[i]!)) sink += (m.hum as number) & 1;
          return n;
        },
      })),
      {
        name: 'js-bson deserialize (row per measurement)',
        run: () => {
          for (const row of rows) sink += (deserialize(row).hum as number) & 1;
          return n;
        },
      },
    ],
    runs,
    { budgetMs: 15_000 },
  );
  const bson = results[formats.length]!;
  console.log(`  ${bson.name}: ${rate(bson.perSecond)} (sink ${sink % 2})`);
  for (const [i, format] of formats.entries()) {
    const r = results[i]!;
    const buckets = await contexts[i]!.storage.countDocuments(contexts[i]!.bucketsNs);
    recordHeadline({
      name: 'full-scan read',
      format: format.name,
      ratio: r.perSecond / bson.perSecond,
      target: '>= 2x',
      detail: `${rate(r.perSecond)} vs deserialize ${rate(bson.perSecond)}, ${buckets} buckets`,
    });
  }

  // 1% of the time range.
  const span = Math.floor(n / series) * 1000;
  const from = new Date(start + span / 2);
  const to = new Date(start + span / 2 + span / 100);
  const cursor = find(contexts[0]!, { ts: { $gte: from, $lt: to } });
  const { executionStats } = await cursor.explain();
  console.log(
    `  1% time range: ${executionStats.nReturned} returned, ${executionStats.totalBucketsExamined} of ${executionStats.totalBucketsInCollection} buckets examined (${((100 * executionStats.totalBucketsExamined) / executionStats.totalBucketsInCollection).toFixed(2)}%)`,
  );
  for (const engine of engines) await engine.close();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runReaderBench(process.argv.includes('--quick'));
}
