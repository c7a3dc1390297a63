/**
 * Rollup benchmarks (issue 16), measured side by side in one process:
 *
 * 1. ingest cost: `insertMany` (TSBS cpu-only, 100 hosts, batches of 1000, unordered) into a collection
 *    with one slots rollup (hourly count/sum/min/max of one field per host) and one calendar rollup (a
 *    month document per region with day and hour slots) vs the same ingest without rollups (goal: <= 1.3x);
 * 2. read: "total of the last 24 h for each of 1 000 sensors" from a rolling rollup (24 hourly entries on
 *    each sensor's document, one keyed read of 1 000 documents) vs the same `$group` over the raw
 *    measurements of the last 24 h (goal: >= 100x faster).
 */
import { BucketEngine } from '../src/index.js';
import type { TimeseriesCollection } from '../src/index.js';
import { tsbsCpuOnly } from './datasets.js';
import type { Doc } from './datasets.js';
import { collectGarbage, compare, heading, rate } from './harness.js';

async function ingest(docs: ReadonlyArray<Doc>, rollups: 'none' | 'slots+calendar'): Promise<number> {
  const engine = new BucketEngine({
    parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40 },
  });
  const coll = await engine.createCollection('bench', { timeseries: { timeField: 'ts', metaField: 'tags' } });
  if (rollups === 'slots+calendar') {
    await coll.createRollup('hourly', {
      every: 'hour',
      groupBy: 'tags.hostname',
      fields: { usage_user: ['count', 'sum', 'min', 'max'] },
    });
    await coll.createRollup('calendar', {
      layout: 'calendar',
      period: 'month',
      levels: ['day', 'hour'],
      groupBy: 'tags.region',
      fields: { usage_user: ['sum'] },
    });
  }
  for (let i = 0; i < docs.length; i += 1000)
    await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
  await engine.close();
  return docs.length;
}

/** 1 000 sensors, one measurement every `everyMinutes` for 26 hours, with a rolling rollup. */
async function sensors(
  everyMinutes: number,
): Promise<{ coll: TimeseriesCollection; engine: BucketEngine; now: number; n: number }> {
  const start = Date.UTC(2026, 0, 1);
  const now = start + 26 * 3_600_000;
  const engine = new BucketEngine({ clock: () => now, ttlMonitor: 'disabled' });
  const coll = await engine.createCollection('readings', {
    timeseries: { timeField: 'ts', metaField: 'sensor' },
  });
  await coll.createRollup('last24h', {
    layout: 'rolling',
    window: '24h',
    step: '1h',
    target: 'sensors',
    key: 'sensor',
  });
  let n = 0;
  for (let t = start; t < now; t += everyMinutes * 60_000) {
    const batch: Doc[] = [];
    for (let s = 0; s < 1000; s++) batch.push({ ts: new Date(t + s), sensor: s, value: s % 7 });
    n += batch.length;
    await coll.insertMany(batch, { ordered: false });
  }
  return { coll, engine, now, n };
}

/** Rolling reads per measured run. */
const kReads = 50;

/**
 * Run the rollup benchmarks and print their results.
 *
 * @param quick - smaller datasets and fewer runs.
 */
export async function runRollupsBench(quick: boolean): Promise<void> {
  const n = quick ? 50_000 : 200_000;
  const runs = quick ? 3 : 5;
  const docs = tsbsCpuOnly(100, n);
  heading(
    `rollups: ingest with one slots and one calendar rollup vs none (TSBS cpu-only, 100 hosts, ${n} measurements)`,
  );
  const [none, withRollups] = await compare(
    [
      { name: 'no rollup', run: () => ingest(docs, 'none') },
      { name: 'slots + calendar rollups', run: () => ingest(docs, 'slots+calendar') },
    ],
    runs,
    // Each run from a collected heap: the closed engines of earlier runs are garbage that a major
    // collection would otherwise charge to whichever run it lands in.
    { beforeRun: collectGarbage },
  );
  console.log(
    `${none!.name}: ${rate(none!.perSecond)}   ${withRollups!.name}: ${rate(withRollups!.perSecond)}`,
  );
  console.log(
    `cost ratio with / without = ${(withRollups!.medianMs / none!.medianMs).toFixed(2)}x (goal <= 1.3x)`,
  );

  const everyMinutes = quick ? 15 : 5;
  const { coll, engine, now, n: stored } = await sensors(everyMinutes);
  heading(
    `rollups: last-24h total per sensor, 1 000 sensors, ${stored} measurements (one every ${everyMinutes} min)`,
  );
  const since = new Date(Math.floor(now / 3_600_000) * 3_600_000 - 23 * 3_600_000);
  let check = 0;
  const [rolling, raw] = await compare(
    [
      {
        name: `rolling rollup (1 000 entity documents, ${kReads} reads per run)`,
        run: async () => {
          // Several reads per run: one read takes about a millisecond, too short to time alone.
          let n = 0;
          for (let i = 0; i < kReads; i++) {
            const docs = await coll.rollup('last24h').find({}, { projection: { totals: 0 } });
            if (i === 0) for (const d of docs) check += d.count as number;
            n += docs.length;
          }
          return n;
        },
      },
      {
        name: '$group over raw measurements',
        run: async () => {
          const docs = await coll
            .aggregate([
              { $match: { ts: { $gte: since } } },
              { $group: { _id: '$sensor', count: { $sum: 1 } } },
            ])
            .toArray();
          for (const d of docs) check -= d.count as number;
          // The aggregation's garbage is collected in its own timing, not in the next contender's.
          collectGarbage();
          return docs.length;
        },
      },
    ],
    runs,
  );
  const perRead = rolling!.medianMs / kReads;
  console.log(
    `rolling rollup: ${perRead.toFixed(2)} ms per read   ${raw!.name}: ${raw!.medianMs.toFixed(1)} ms`,
  );
  console.log(
    `speed-up rolling / raw = ${(raw!.medianMs / perRead).toFixed(0)}x (goal >= 100x); totals agree: ${check === 0}`,
  );
  await engine.close();
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`)
  await runRollupsBench(process.argv.includes('--quick'));
