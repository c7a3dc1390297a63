/**
 * Late data (issue 6): the same out-of-order stream — many series, 10% of measurements late by up to one
 * bucket span — ingested with bucket reopening (MongoDB 6.3+) and without; how many buckets result and
 * how full they are.
 */
import { pathToFileURL } from 'node:url';

import { BucketEngine } from '../src/index.js';
import { prng } from './datasets.js';
import type { Doc } from './datasets.js';
import { compare, heading, rate } from './harness.js';

/** Measurements every 10 s per series, in arrival order: 10% arrive up to one span (1 h) late. */
function lateStream(series: number, perSeries: number): Doc[] {
  const random = prng(99);
  const start = Date.UTC(2026, 0, 1);
  const onTime: Array<{ arrival: number; doc: Doc }> = [];
  for (let i = 0; i < perSeries; i++) {
    for (let s = 0; s < series; s++) {
      const t = start + i * 10_000;
      const late = random() < 0.1 ? Math.floor(random() * 3_600_000) : 0;
      onTime.push({ arrival: t + late, doc: { ts: new Date(t), sensor: s, v: Math.round(random() * 1000) } });
    }
  }
  onTime.sort((a, b) => a.arrival - b.arrival);
  return onTime.map((x) => x.doc);
}

async function ingest(docs: ReadonlyArray<Doc>, reopening: 'enabled' | 'disabled') {
  const engine = new BucketEngine({
    reopening,
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
  });
  const coll = await engine.createCollection('late', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  for (let i = 0; i < docs.length; i += 1000)
    await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
  const s = (await coll.stats()).timeseries;
  await engine.close();
  return { buckets: s.bucketCount, fill: docs.length / s.bucketCount, reopened: s.numBucketsReopened };
}

/**
 * Run the late-data comparison and print it.
 *
 * @param quick - a smaller stream.
 */
export async function runReopeningBench(quick: boolean): Promise<void> {
  const series = quick ? 50 : 200;
  const perSeries = quick ? 720 : 1_440; // 2 h or 4 h of 10 s data per series
  const docs = lateStream(series, perSeries);
  heading(`late data: ${series} series, ${docs.length} measurements, 10% late by up to 1 h`);
  const modes = ['disabled', 'enabled'] as const;
  const outcome = new Map<string, Awaited<ReturnType<typeof ingest>>>();
  const results = await compare(
    modes.map((mode) => ({
      name: mode,
      run: async () => {
        outcome.set(mode, await ingest(docs, mode));
        return docs.length;
      },
    })),
    quick ? 2 : 3,
  );
  for (const result of results) {
    const r = outcome.get(result.name)!;
    console.log(
      `reopening ${result.name.padEnd(8)}: ${r.buckets} buckets, average fill ${r.fill.toFixed(1)} measurements/bucket, ${r.reopened} reopened, ${rate(result.perSecond)}`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runReopeningBench(process.argv.includes('--quick'));
}
