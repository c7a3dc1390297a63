/**
 * The catalog's heap under memory pressure against its threshold: 100 000 series ingested (one
 * measurement each, then a second round one span later, so that each series has an open or archived
 * bucket and the catalog expires and archives as it goes) into an engine whose storage keeps nothing,
 * with `timeseriesIdleBucketExpiryMemoryUsageThreshold` set. The heap held by the engine (after a full
 * GC) is reported as a ratio of the threshold, next to the catalog's own estimate (`memoryUsage`).
 *
 *   npx tsx bench/archived-memory.ts            # threshold 16 MiB
 *   npx tsx bench/archived-memory.ts 33554432   # another threshold, in bytes
 */
import { BucketEngine } from '../src/index.js';
import { DiscardingStorage } from './discarding-storage.js';
import { collectGarbage } from './harness.js';

const series = 100_000;
const threshold = Number(process.argv[2] ?? 16 * 1024 * 1024);
const hour = 3_600_000;
const docsAt = (t: number) =>
  Array.from({ length: series }, (_, i) => ({ ts: new Date(t), sensor: `sensor-${i}`, temp: 20.5, hum: 40 }));
const rounds = [docsAt(Date.UTC(2026, 0, 1)), docsAt(Date.UTC(2026, 0, 1) + 2 * hour)];
// Warm-up: code compiled and module state created on first use are not the catalog's.
{
  const warm = new BucketEngine({ storage: new DiscardingStorage(), ttlMonitor: 'disabled' });
  const c = await warm.createCollection('warm', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
  await c.insertMany(docsAt(0).slice(0, 2000), { ordered: false });
  await warm.close();
}
collectGarbage();
const before = process.memoryUsage().heapUsed;
const engine = new BucketEngine({
  storage: new DiscardingStorage(),
  ttlMonitor: 'disabled',
  parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: threshold },
});
const coll = await engine.createCollection('pressure', {
  timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'seconds' },
});
for (const docs of rounds) {
  for (let i = 0; i < series; i += 1000) await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
}
collectGarbage();
// The measurements stay alive until here (they were allocated before `before`): the growth is the engine's.
const heap = process.memoryUsage().heapUsed - before;
const status = engine.serverStatus().bucketCatalog;
// The catalog's share: what dropping the collection's buckets and archived records from the catalog frees
// (the engine's meta cache, bounded on its own, stays).
await engine.catalog.drop(coll.namespace);
collectGarbage();
const catalogHeap = heap - (process.memoryUsage().heapUsed - before);
if (rounds.length !== 2) throw new Error('the datasets must outlive the measurement');
console.log(
  [
    `series ${series}, threshold ${threshold} B`,
    `open ${status.numOpenBuckets}, archived ${status.numArchivedBuckets}`,
    `estimate ${status.memoryUsage} B (${(status.memoryUsage / threshold).toFixed(2)}x threshold)`,
    `catalog heap ${catalogHeap} B (${(catalogHeap / threshold).toFixed(2)}x threshold)`,
    `engine heap ${heap} B (${(heap / threshold).toFixed(2)}x threshold)`,
  ].join('\n'),
);
await engine.close();
